/**
 * src/server/serve.ts: running the daemon in this process.
 *
 * `startServer` opens the data directory, builds the app and listens; `stop()` shuts it
 * down gracefully: stop accepting, let in-flight requests (writes included) finish within
 * the grace period, then close the LMDB environment. `fathom serve` runs this directly
 * with one process, or once per worker process of a cluster (cluster.ts).
 */
import type { Writable } from 'node:stream';
import { KEY_LIMITS, SERVER_DEFAULTS, SERVE_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { Engine, type EngineOptions } from '../engine.js';
import { buildApp, type AppOptions } from './app.js';
import type { LogLevel } from './log.js';
import type { ServerContext } from './context.js';
import { Replicator, type ClusterOptions } from '../cluster/replicator.js';
import { compact, processParticipant } from './compact.js';

import { closeAnalytics, openAnalytics, type AnalyticsServeOptions } from './analytics.js';

export interface ServeOptions {
  dataDir: string;
  /** Bootstrap admin key; never stored. */
  apiKey?: string;
  /** Listen address (default SERVER_DEFAULTS.address). */
  address?: string;
  /** Port; 0 picks a free one (default SERVER_DEFAULTS.port). */
  port?: number;
  enableCors?: boolean;
  logLevel?: LogLevel;
  logStream?: Writable;
  /** Answers kept for `use_cache` searches, per process (default SEARCH_CACHE_ENTRIES). */
  cacheNumEntries?: number;
  /** The longest any search may run, ms (default SERVE_DEFAULTS.searchCutoffMs; 0: no ceiling). */
  searchCutoffMs?: number;
  /** In-flight requests get this long after a stop request, ms (default SERVE_DEFAULTS.shutdownGraceMs). */
  shutdownGraceMs?: number;
  /** Search analytics (`--enable-search-analytics`, `--analytics-dir`, `--analytics-flush-interval`). */
  analytics?: AnalyticsServeOptions;
  /** Overrides of the protective limits (tests use short ones). */
  limits?: Pick<AppOptions, 'bodyLimit' | 'maxQueryStringLength' | 'connectionsCheckIntervalMs' | 'headersTimeoutMs' | 'socketIdleTimeoutMs' | 'compactQuietMs'>;
  /** Join a cluster replicated through NATS JetStream (src/cluster); one serving process per node. */
  cluster?: ClusterOptions;
  /** Serve the web dashboard on `/` (default SERVE_DEFAULTS.dashboard; `--no-dashboard` turns it off). */
  dashboard?: boolean;
}

export interface RunningServer {
  address: string;
  port: number;
  /** `http://host:port` for clients on this machine. */
  url: string;
  engine: Engine;
  /** What the routes share (the engine, the door, the importer...). */
  context: ServerContext;
  /** This node's place in its cluster, when it joined one. */
  replicator?: Replicator;
  /** Graceful stop; safe to call more than once. */
  stop(): Promise<void>;
}

/** Options a serving process needs beyond ServeOptions (cluster workers differ). */
export interface ProcessRole {
  engine?: EngineOptions;
  role?: string;
  afterWrite?: (collection: string) => void;
  /** Purge expired `autodelete` keys on a timer (one process of a cluster does). */
  purgeKeys?: boolean;
  /** How `/operations/db/compact` runs (default: this process alone). */
  compact?: AppOptions['compact'];
  /** How `/operations/vote` runs (default: a single node). */
  vote?: AppOptions['vote'];
  /** Compact and flush analytics on schedule and at the stop (one process of a cluster does). */
  analyticsOwner?: boolean;
}

/** Periodically deletes expired keys that have `autodelete`, and expired conversations. Returns a canceller. */
export function schedulePurge(engine: Engine, onError: (e: unknown) => void, everyMs: number = KEY_LIMITS.purgeIntervalMs, when?: () => boolean): () => void {
  const run = () => (when && !when() ? Promise.resolve() : engine.purgeExpired().catch(onError));
  void run();
  const t = setInterval(run, everyMs);
  t.unref();
  return () => clearInterval(t);
}

export async function startServer(opts: ServeOptions, role: ProcessRole = {}): Promise<RunningServer> {
  const engine = Engine.open(opts.dataDir, { ...(role.engine ?? { merges: 'worker' }), searchCacheEntries: opts.cacheNumEntries, searchCutoffMs: opts.searchCutoffMs ?? SERVE_DEFAULTS.searchCutoffMs });
  const member = engine.clusterMembership();
  if (member && !opts.cluster) {
    await engine.close();
    throw new FathomError('DATA_DIR', `${opts.dataDir} is the data directory of cluster node ${member.node ?? '?'} (stream ${member.name}): start it with --cluster, so that it keeps following the stream`);
  }
  let replicator: Replicator | undefined;
  const { app, ctx, setHealthy } = buildApp({
    engine,
    apiKey: opts.apiKey,
    enableCors: opts.enableCors,
    logLevel: opts.logLevel,
    logStream: opts.logStream,
    role: role.role,
    afterWrite: role.afterWrite,
    // a cluster node's applier pauses too, once the writes waiting for it are done (compact.ts)
    compact: opts.cluster ? (c) => compact(engine, [processParticipant(c, () => replicator)], opts.limits?.compactQuietMs) : role.compact,
    vote: opts.cluster ? async () => ({ success: (await replicator?.stepDown()) ?? false }) : role.vote,
    healthy: opts.cluster ? () => replicator?.healthy() ?? false : undefined,
    clusterState: opts.cluster ? () => replicator?.status() ?? { state: 'joining' } : undefined,
    // a cluster node's imports are commands published from this thread
    importThread: !opts.cluster,
    dashboard: opts.dashboard,
    ...opts.limits,
  });
  // background failures (merges, vector graph upkeep) go to the request log
  engine.log = app.log;
  let cancelPurge: () => void = () => {};
  const analyticsOwner = role.analyticsOwner ?? true;
  try {
    if (opts.cluster) {
      const log = app.log;
      replicator = await Replicator.start(engine, opts.cluster, (level, msg, fields) => log[level](fields ?? {}, msg));
      // a restore while serving quiets this process as compaction does (the applier is the caller)
      replicator.quiesce = () => processParticipant(ctx);
    }
    if (opts.analytics?.enabled) {
      ctx.analytics = await openAnalytics(engine, opts.dataDir, opts.analytics, {
        owner: analyticsOwner,
        log: (level, msg, fields) => app.log[level](fields ?? {}, msg),
        afterWrite: role.afterWrite,
      });
    }
    if (role.purgeKeys !== false) {
      // in a cluster the leader purges for everyone (a purge is a replicated write)
      cancelPurge = schedulePurge(engine, (e) => app.log.error({ err: e }, 'purging expired keys failed'), undefined, replicator ? () => replicator!.isLeader() : undefined);
    }
    await app.listen({ host: opts.address ?? SERVER_DEFAULTS.address, port: opts.port ?? SERVER_DEFAULTS.port });
  } catch (e) {
    cancelPurge();
    await replicator?.close();
    await app.close().catch(() => {});
    await ctx.analytics?.close();
    await engine.close();
    throw e;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? SERVER_DEFAULTS.port);
  const address = opts.address ?? SERVER_DEFAULTS.address;
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;
  app.log.info({ address, port, dataDir: engine.dir }, 'listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      setHealthy(false);
      cancelPurge();
      app.log.info('stopping: no new connections; waiting for requests in flight');
      const grace = opts.shutdownGraceMs ?? SERVE_DEFAULTS.shutdownGraceMs;
      const timer = setTimeout(() => {
        app.log.warn({ graceMs: grace }, 'requests still running after the grace period; closing their connections');
        app.server.closeAllConnections();
      }, grace);
      timer.unref();
      // A connection whose request finishes during the stop becomes idle; close it then
      // rather than after the keep-alive timeout.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
      try {
        await app.close();
      } finally {
        clearTimeout(timer);
        clearInterval(sweep);
        if (ctx.analytics) await closeAnalytics(ctx.analytics, analyticsOwner, (e) => app.log.error({ err: e }, 'the analytics flush at the stop failed'));
        await replicator?.close();
        await engine.close();
        app.log.info('stopped');
      }
    })());
  return { address, port, url: `http://${host}:${port}`, engine, context: ctx, stop, ...(replicator ? { replicator } : {}) };
}
