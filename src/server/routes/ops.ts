/**
 * Operations: health, metrics, stats and version.
 *
 * `/health` and `/debug` report a full disk (storage/diskfull.ts): `/health` as
 * `{"ok": true, "resource_error": "OUT_OF_DISK"}`, `/debug` with the free space and the last
 * write that failed for lack of it.
 */
import type { FastifyInstance } from 'fastify';
import { API_VERSION, VERSION } from '../../version.js';
import { diskStatus } from '../../storage/diskfull.js';
import type { ServerContext } from '../context.js';
import { systemMetrics } from '../stats.js';

export function opsRoutes(app: FastifyInstance, ctx: ServerContext, isHealthy: () => boolean): void {
  // No key needed: load balancers probe it. Hot in the benchmark as the HTTP ceiling.
  // A full disk fails writes but not reads, so the server stays `ok` and says why writes
  // fail in the reference's own field (`resource_error`); clients read `ok`.
  // It passes no door (gate.ts): it reads no data, so compaction never holds it.
  app.get('/health', { config: { door: 'none' } }, (_req, reply) => {
    if (!isHealthy()) void reply.code(503).type('application/json; charset=utf-8').send('{"ok":false}');
    else if (diskStatus(ctx.engine.dir).full) void reply.type('application/json; charset=utf-8').send('{"ok":true,"resource_error":"OUT_OF_DISK"}');
    else void reply.type('application/json; charset=utf-8').send('{"ok":true}');
  });
  app.get('/metrics.json', { config: { auth: { action: 'metrics.json:list' } } }, async () => systemMetrics(ctx.engine.dir));
  app.get('/stats.json', { config: { auth: { action: 'stats.json:list' } } }, async () => ctx.stats.snapshot());
  // `state` 1 is the reference's leader, 4 a follower; a single node is its own leader
  app.get('/debug', { config: { auth: { action: 'debug:list' } } }, async () => {
    const cluster = ctx.clusterState?.();
    return { state: cluster && cluster.role !== 'leader' ? 4 : 1, version: API_VERSION, fathom_version: VERSION, disk: diskStatus(ctx.engine.dir), ...(cluster ? { cluster } : {}) };
  });
}
