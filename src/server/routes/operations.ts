/**
 * Operations: snapshot, compaction, leader election and the search cache.
 *
 *   POST /operations/snapshot?snapshot_path=<dir>   a compacted point-in-time copy of the
 *                                                   data directory, openable as one
 *   POST /operations/db/compact                     gives disk space back (compact.ts)
 *   POST /operations/vote                           moves leadership in a cluster
 *   POST /operations/cache/clear                    forgets cached search answers
 *   GET  /operations/schema_changes                 schema changes in progress: always [] (a
 *                                                   PATCH /collections/:c applies in one
 *                                                   transaction and answers once it has)
 *
 * All four are admin operations: a key needs their action (`operations:snapshot`, ...) or `*`.
 */
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { one, type Query } from '../params.js';

export function operationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/operations/snapshot', { config: { auth: { action: 'operations:snapshot' }, door: 'read' } }, async (req) => {
    await ctx.engine.snapshot(one(req.query as Query, 'snapshot_path'));
    return { success: true };
  });
  // (no door: it closes them)
  app.post('/operations/db/compact', { config: { auth: { action: 'operations:compact' }, door: 'none' } }, async () => ctx.compact());
  app.post('/operations/vote', { config: { auth: { action: 'operations:vote' } } }, async () => ctx.vote());
  app.get('/operations/schema_changes', { config: { auth: { action: 'operations/schema_changes:list' } } }, async () => []);
  app.post('/operations/cache/clear', { config: { auth: { action: 'operations:cache_clear' } } }, async () => {
    ctx.engine.clearCache();
    return { success: true };
  });
}
