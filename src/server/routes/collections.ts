/**
 * Collections: create, list, get, delete, PATCH (add or drop fields).
 */
import type { FastifyInstance } from 'fastify';
import { FathomError } from '../../errors.js';
import { isPlainObject } from '../../json.js';
import { collectionAllowed } from '../../keys/scope.js';
import { authorize, target } from '../access.js';
import { one, type Query } from '../params.js';
import type { ServerContext } from '../context.js';

type P = { collection: string };

/** `exclude_fields` of a collection answer: top-level attributes left out (`fields` the usual one). */
function excluded(q: Query): Set<string> | undefined {
  const v = one(q, 'exclude_fields');
  if (v === undefined || v.trim() === '') return undefined;
  return new Set(v.split(',').map((s) => s.trim()).filter(Boolean));
}

function without(info: object, exclude: Set<string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(info).filter(([k]) => !exclude.has(k)));
}

export function collectionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { engine, auth } = ctx;

  app.post('/collections', { config: { auth: { action: 'collections:create' } } }, async (req, reply) => {
    const body = req.body;
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', 'the request body must be a collection schema (a JSON object)');
    if (typeof body.name === 'string') authorize(auth, req, { action: 'collections:create', collections: [{ name: body.name }] });
    const srcName = one(req.query as Query, 'src_name');
    // copying a collection's schema reads it: the key must reach the source too
    if (srcName !== undefined) authorize(auth, req, { action: 'collections:get', collections: [target(engine, srcName)] });
    const info = await engine.createCollection(body, srcName !== undefined ? { srcName } : {});
    return reply.code(201).send(info);
  });

  app.get('/collections', { config: { auth: { action: 'collections:list' } } }, async (req) => {
    const all = engine.listCollections();
    const scope = req.principal!.scope.collections;
    // A key scoped to some collections lists only those.
    const shown = scope.includes('*') ? all : all.filter((c) => collectionAllowed(scope, c.name));
    const exclude = excluded(req.query as Query);
    return exclude ? shown.map((c) => without(c, exclude)) : shown;
  });

  app.get<{ Params: P }>('/collections/:collection', { config: { auth: { action: 'collections:get', collectionParam: 'collection' } } }, async (req) => {
    const info = engine.getCollection(req.params.collection);
    const exclude = excluded(req.query as Query);
    return exclude ? without(info, exclude) : info;
  });

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
