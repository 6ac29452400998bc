/**
 * Aliases, keys and stopwords: small resources with the same create/list/get/delete shape.
 */
import type { FastifyInstance } from 'fastify';
import { FathomError } from '../../errors.js';
import { isPlainObject } from '../../json.js';
import { collectionAllowed } from '../../keys/scope.js';
import { authorize } from '../access.js';
import type { ServerContext } from '../context.js';

type N = { name: string };
type I = { id: string };

export function aliasRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine, auth } = ctx;
  app.put<{ Params: N }>('/aliases/:name', { config: { auth: { action: 'aliases:create' } } }, async (req) => {
    const body = req.body;
    if (!isPlainObject(body) || typeof body.collection_name !== 'string') {
      throw new FathomError('BAD_REQUEST', 'the request body must be a JSON object with a `collection_name`');
    }
    // The key must cover both the alias and the collection it will stand for.
    authorize(auth, req, { action: 'aliases:create', collections: [{ name: req.params.name }, { name: body.collection_name }] });
    return engine.upsertAlias(req.params.name, body);
  });
  app.get('/aliases', { config: { auth: { action: 'aliases:list' } } }, async (req) => {
    const scope = req.principal!.scope.collections;
    const all = engine.listAliases();
    return { aliases: scope.includes('*') ? all : all.filter((a) => collectionAllowed(scope, a.name) || collectionAllowed(scope, a.collection_name)) };
  });
  app.get<{ Params: N }>('/aliases/:name', { config: { auth: { action: 'aliases:get', collectionParam: 'name' } } }, async (req) => engine.getAlias(req.params.name));
  app.delete<{ Params: N }>('/aliases/:name', { config: { auth: { action: 'aliases:delete', collectionParam: 'name' } } }, async (req) =>
    engine.deleteAlias(req.params.name),
  );
}

export function keyRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;
  app.post('/keys', { config: { auth: { action: 'keys:create' } } }, async (req, reply) => reply.code(201).send(await engine.createKey(req.body)));
  app.get('/keys', { config: { auth: { action: 'keys:list' } } }, async () => ({ keys: engine.listKeys() }));
  app.get<{ Params: I }>('/keys/:id', { config: { auth: { action: 'keys:get' } } }, async (req) => engine.getKey(req.params.id));
  app.delete<{ Params: I }>('/keys/:id', { config: { auth: { action: 'keys:delete' } } }, async (req) => engine.deleteKey(req.params.id));
}

export function stopwordRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine } = ctx;
  app.put<{ Params: N }>('/stopwords/:name', { config: { auth: { action: 'stopwords:upsert' } } }, async (req) => engine.putStopwords(req.params.name, req.body));
  app.get('/stopwords', { config: { auth: { action: 'stopwords:list' } } }, async () => ({ stopwords: engine.listStopwords() }));
  // The reference wraps a single set in `{"stopwords": {...}}`.
  app.get<{ Params: N }>('/stopwords/:name', { config: { auth: { action: 'stopwords:get' } } }, async (req) => ({ stopwords: engine.getStopwords(req.params.name) }));
  app.delete<{ Params: N }>('/stopwords/:name', { config: { auth: { action: 'stopwords:delete' } } }, async (req) => engine.deleteStopwords(req.params.name));
}
