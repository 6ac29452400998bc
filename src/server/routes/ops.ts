/**
 * Operations: health, metrics, stats and version.
 */
import type { FastifyInstance } from 'fastify';
import { VERSION } from '../../version.js';
import type { ServerContext } from '../context.js';
import { systemMetrics } from '../stats.js';

export function opsRoutes(app: FastifyInstance, ctx: ServerContext, isHealthy: () => boolean): void {
  // No key needed: load balancers probe it. Hot in the benchmark as the HTTP ceiling.
  app.get('/health', (_req, reply) => {
    if (isHealthy()) void reply.type('application/json; charset=utf-8').send('{"ok":true}');
    else void reply.code(503).type('application/json; charset=utf-8').send('{"ok":false}');
  });
  app.get('/metrics.json', { config: { auth: { action: 'metrics.json:list' } } }, async () => systemMetrics(ctx.engine.dir));
  app.get('/stats.json', { config: { auth: { action: 'stats.json:list' } } }, async () => ctx.stats.snapshot());
  app.get('/debug', { config: { auth: { action: 'debug:list' } } }, async () => ({ state: 1, version: VERSION }));
}
