/**
 * Collections: create, list, get, delete, PATCH (add or drop fields).
 */
import type { FastifyInstance } from 'fastify';
import { FathomError } from '../../errors.js';
import { isPlainObject } from '../../json.js';
import { collectionAllowed } from '../../keys/scope.js';
import { authorize } from '../access.js';
import type { ServerContext } from '../context.js';

type P = { collection: string };

export function collectionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine, auth } = ctx;

  app.post('/collections', { config: { auth: { action: 'collections:create' } } }, async (req, reply) => {
    const body = req.body;
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'the request body must be a collection schema (a JSON object)');
    if (typeof body.name === 'string') authorize(auth, req, { action: 'collections:create', collections: [{ name: body.name }] });
    const info = await engine.createCollection(body);
    return reply.code(201).send(info);
  });

  app.get('/collections', { config: { auth: { action: 'collections:list' } } }, async (req) => {
    const all = engine.listCollections();
    const scope = req.principal!.scope.collections;
    // A key scoped to some collections lists only those.
    return scope.includes('*') ? all : all.filter((c) => collectionAllowed(scope, c.name));
  });

  app.get<{ Params: P }>('/collections/:collection', { config: { auth: { action: 'collections:get', collectionParam: 'collection' } } }, async (req) =>
    engine.getCollection(req.params.collection),
  );

  app.delete<{ Params: P }>(
    '/collections/:collection',
    { config: { auth: { action: 'collections:delete', collectionParam: 'collection' } } },
    async (req) => engine.deleteCollection(req.params.collection),
  );

  app.patch<{ Params: P }>(
    '/collections/:collection',
    { config: { auth: { action: 'collections:update', collectionParam: 'collection' } } },
    async (req) => {
      const r = await engine.updateCollection(req.params.collection, req.body);
      ctx.afterWrite(req.params.collection);
      return r;
    },
  );
}
