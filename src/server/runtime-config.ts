/**
 * `POST /config` (the reference's runtime settings, src/runtime-config.ts) and what this
 * server does with them: the slow-request log.
 *
 * With `log-slow-requests-time-ms` at 0 or more, a request that took at least that long is
 * logged once more, at warn level, as `slow request` (so it shows under --log-level warn).
 * Each process reads the settings from the data directory at most once every
 * RUNTIME_CONFIG_REFRESH_MS, so a change made through any process reaches all of them
 * within that time (at once in the process that made it).
 */
import type { FastifyInstance } from 'fastify';
import { RUNTIME_CONFIG_REFRESH_MS } from '../defaults.js';
import type { ServerContext } from './context.js';
import { presentedValues, redactUrl } from './log.js';

export function runtimeConfigRoutes(app: FastifyInstance, ctx: ServerContext): void {
  let slowMs = -1;
  let readAt = -Infinity;
  const refresh = () => {
    readAt = Date.now();
    try {
      slowMs = ctx.engine.runtimeConfig()['log-slow-requests-time-ms'];
    } catch {
      // the environment is being swapped (compaction): keep the last value
    }
  };

  app.post('/config', { config: { auth: { action: 'config:create' } } }, async (req) => {
    await ctx.engine.updateRuntimeConfig(req.body);
    refresh();
    return { success: true };
  });

  app.addHook('onResponse', async (req, reply) => {
    if (Date.now() - readAt >= RUNTIME_CONFIG_REFRESH_MS) refresh();
    const ms = reply.elapsedTime;
    if (slowMs < 0 || ms < slowMs) return;
    const url = req.raw.url ?? '';
    req.log.warn(
      { method: req.method, url: redactUrl(url, presentedValues(req.headers, url)), status: reply.statusCode, ms: Math.round(ms * 100) / 100, key: req.principal?.keyId },
      'slow request',
    );
  });
}
