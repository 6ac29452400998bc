/**
 * src/server/app.ts: the HTTP API as a Fastify instance over one Engine.
 *
 * Routes are thin: parameters are checked at the edge (params.ts, body.ts), the key is
 * checked before the body is read (access.ts), one Engine call does the work, and any
 * error becomes `{"message": ...}` with its status (errors.ts). The same app serves a
 * single process or each process of a cluster (cluster.ts).
 *
 * Request pipeline:
 *
 *   onRequest: query-string length -> CORS headers -> key and scope
 *   body:      JSON (limited) | raw stream (import only)
 *   handler:   one Engine call
 *   onResponse: one log line, stats
 */
import http from 'node:http';
import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import { OPERATIONS_DEFAULTS, SERVER_DEFAULTS, SERVE_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { stringifyJson } from '../json.js';
import type { Engine } from '../engine.js';
import type { SearchScope } from '../query/scope.js';
import { authHook } from './access.js';
import { installJsonParsers } from './body.js';
import { stemmingRoutes } from './routes/stemming.js';
import { Importer } from './importer.js';
import { loggerOptions, logs, presentedValues, redactUrl, type LogLevel } from './log.js';
import type { ServerContext } from './context.js';
import { sendError } from './errors.js';
import { clientErrorHandler, refuseExpectation, requireHost } from './refusals.js';
import { RequestStats, type Family } from './stats.js';
import { collectionRoutes } from './routes/collections.js';
import { documentRoutes } from './routes/documents.js';
import { searchRoutes } from './routes/search.js';
import { aliasRoutes, keyRoutes, stopwordRoutes } from './routes/admin.js';
import { opsRoutes } from './routes/ops.js';
import { conversationRoutes } from './routes/conversations.js';
import { operationRoutes } from './routes/operations.js';
import { RequestGate } from './gate.js';
import { compact, processParticipant, type CompactReport } from './compact.js';
import { analyticsRoutes } from './routes/analytics.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { presetRoutes, ruleRoutes } from './routes/rules.js';
import { runtimeConfigRoutes } from './runtime-config.js';

export interface AppOptions {
  engine: Engine;
  /** Bootstrap key (`--api-key`): an admin key that is never stored. */
  apiKey?: string;
  /** Answer CORS preflights and allow every origin. */
  enableCors?: boolean;
  /** Log level (default SERVE_DEFAULTS.logLevel). */
  logLevel?: LogLevel;
  /** Where log lines go (default stdout). */
  logStream?: Writable;
  /** `role` field of log lines. */
  role?: string;
  /** Largest JSON body in bytes (default SERVER_DEFAULTS.maxBodyBytes). Imports stream and are not limited. */
  bodyLimit?: number;
  /** Longest GET query string in characters (default SERVER_DEFAULTS.maxQueryStringLength). */
  maxQueryStringLength?: number;
  /** Node's check interval for slow clients, ms (default SERVE_DEFAULTS.connectionsCheckIntervalMs). */
  connectionsCheckIntervalMs?: number;
  /** Time allowed to send the request headers, ms (default SERVER_DEFAULTS.headersTimeoutMs). */
  headersTimeoutMs?: number;
  /** Idle connection limit, ms (default SERVE_DEFAULTS.socketIdleTimeoutMs). */
  socketIdleTimeoutMs?: number;
  /**
   * Runs one search and returns the JSON answer (default: the engine, on this thread).
   * The benchmark's worker-threads experiment plugs a thread pool in here.
   */
  searchExecutor?: (collection: string, params: Record<string, unknown>, scope?: SearchScope) => Promise<string>;
  /** Called after every write to a collection (cluster: tells the merging process). */
  afterWrite?: (collection: string) => void;
  /** Compacts the directory (default: this process alone; a cluster of processes coordinates through its primary). */
  compact?: (ctx: ServerContext) => Promise<CompactReport>;
  /** How long compaction waits for quiet, and a request at a closed door for it, ms (default OPERATIONS_DEFAULTS.quietTimeoutMs). */
  compactQuietMs?: number;
  /** Moves leadership (default: a single node, which answers `{success: false}`). */
  vote?: () => Promise<{ success: boolean }>;
  /** Extra health condition (a cluster node: caught up with the stream). */
  healthy?: () => boolean;
  /** Role and replication state for /debug (a cluster node). */
  clusterState?: () => Record<string, unknown>;
  /** Run HTTP imports in a thread of their own (default true; a cluster node publishes them from this thread). */
  importThread?: boolean;
  /** Serve the web dashboard on `/` and `/dashboard/...` (default SERVE_DEFAULTS.dashboard). */
  dashboard?: boolean;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Which stats family a route belongs to. */
function familyOf(method: string, route: string | undefined): Family {
  if (!route) return undefined;
  if (route.endsWith('/documents/search') || route === '/multi_search') return 'search';
  if (route.endsWith('/documents/import')) return 'import';
  if (route.includes('/documents')) {
    if (method === 'DELETE') return 'delete';
    if (method !== 'GET') return 'write';
  }
  return undefined;
}

export function buildApp(opts: AppOptions): { app: FastifyInstance; ctx: ServerContext; setHealthy(ok: boolean): void } {
  const bodyLimit = opts.bodyLimit ?? SERVER_DEFAULTS.maxBodyBytes;
  const maxQuery = opts.maxQueryStringLength ?? SERVER_DEFAULTS.maxQueryStringLength;
  const headersTimeout = opts.headersTimeoutMs ?? SERVER_DEFAULTS.headersTimeoutMs;
  // Node only closes silent connections when the idle limit is not above the headers limit.
  const idleTimeout = Math.min(opts.socketIdleTimeoutMs ?? SERVE_DEFAULTS.socketIdleTimeoutMs, headersTimeout);
  const keys = opts.engine.keyFinder(opts.apiKey);
  const app = Fastify({
    logger: loggerOptions(opts.logLevel ?? (SERVE_DEFAULTS.logLevel as LogLevel), opts.role ?? 'server', opts.logStream, keys),
    // One line per request comes from the onResponse hook below, not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    // As in the reference, a trailing slash names the same resource as the path without it:
    // `POST /collections/c/documents/` creates, `GET /collections/c/synonyms/` lists (a
    // document, synonym or collection id is never empty).
    routerOptions: { maxParamLength: SERVE_DEFAULTS.maxParamLength, ignoreTrailingSlash: true },
    return503OnClosing: true,
    connectionTimeout: idleTimeout,
    forceCloseConnections: 'idle',
    keepAliveTimeout: SERVER_DEFAULTS.keepAliveTimeoutMs,
    requestTimeout: SERVER_DEFAULTS.requestTimeoutMs, // 0: imports may run for minutes
    http: {
      connectionsCheckingInterval: opts.connectionsCheckIntervalMs ?? SERVE_DEFAULTS.connectionsCheckIntervalMs,
      headersTimeout,
      // checked by requireHost, which answers with a message (Node's own check sends no body)
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrorHandler(http.maxHeaderSize),
  });
  app.server.on('checkExpectation', refuseExpectation);

  const engine = opts.engine;
  const auth = engine.authenticator(opts.apiKey);
  const stats = new RequestStats();
  let compacting: Promise<CompactReport> = Promise.resolve(undefined as unknown as CompactReport);
  const quietMs = opts.compactQuietMs ?? OPERATIONS_DEFAULTS.quietTimeoutMs;
  const ctx: ServerContext = {
    engine,
    auth,
    stats,
    bodyLimit,
    afterWrite: opts.afterWrite ?? ((c) => engine.maintain(c)),
    search: opts.searchExecutor ?? (async (c, p, scope) => stringifyJson(await engine.search(c, p, scope))),
    importer: undefined as unknown as Importer,
    gate: new RequestGate(quietMs),
    // one compaction at a time
    compact: () => (compacting = compacting.catch(() => undefined).then(() => (opts.compact ? opts.compact(ctx) : compact(engine, [processParticipant(ctx)], quietMs)))),
    vote: opts.vote ?? (async () => ({ success: false })),
    ...(opts.clusterState ? { clusterState: opts.clusterState } : {}),
  };
  ctx.importer = new Importer(engine, ctx.afterWrite, opts.importThread ?? true);
  app.addHook('onClose', async () => ctx.importer.close());
  let healthy = true;

  app.decorateRequest('principal', null);
  app.setReplySerializer((payload) => stringifyJson(payload));
  installJsonParsers(app, bodyLimit);

  // Every request but /health passes its door first (compaction closes them for a moment).
  app.addHook('onRequest', ctx.gate.hook);
  app.addHook('onRequest', requireHost);
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const url = req.raw.url ?? '';
    const q = url.indexOf('?');
    if (q >= 0 && url.length - q - 1 > maxQuery && (req.method === 'GET' || req.method === 'HEAD')) {
      throw new FathomError('BAD_REQUEST', `the query string is longer than ${maxQuery} characters; send long searches with POST /multi_search`);
    }
  });
  if (opts.enableCors) {
    app.addHook('onRequest', async (req, reply) => {
      void reply.header('access-control-allow-origin', req.headers.origin ?? '*').header('vary', 'Origin');
    });
    app.options('*', (req, reply) => {
      void reply
        .code(204)
        .header('access-control-allow-methods', METHODS.join(', '))
        .header('access-control-allow-headers', req.headers['access-control-request-headers'] ?? 'content-type, x-typesense-api-key, x-service-api-key')
        .header('access-control-max-age', '86400')
        .send();
    });
  }
  app.addHook('onRequest', authHook(auth, engine));

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url;
    const ms = reply.elapsedTime;
    const url = req.raw.url ?? '';
    stats.record(`${req.method} ${route ?? '(unknown route)'}`, familyOf(req.method, route), ms);
    // (the line's every key value is masked as it is written: see loggerOptions)
    if (logs(req.log.level, 'info')) {
      req.log.info(
        { method: req.method, url: redactUrl(url, presentedValues(req.headers, url)), status: reply.statusCode, ms: Math.round(ms * 100) / 100, key: req.principal?.keyId },
        'request',
      );
    }
  });

  app.setErrorHandler((err, req, reply) => sendError(err, req, reply, req.log, bodyLimit));
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ message: `no route for ${req.method} ${(req.raw.url ?? '').split('?')[0]}` });
  });

  // 405 for a known path with a method it does not have: collect routes as they are added.
  const table = new Map<string, Set<string>>();
  app.addHook('onRoute', (r) => {
    if (r.config && (r.config as { methodNotAllowed?: boolean }).methodNotAllowed) return;
    if (r.url === '*') return;
    const set = table.get(r.url) ?? new Set<string>();
    for (const m of [r.method].flat()) set.add(String(m));
    table.set(r.url, set);
  });

  runtimeConfigRoutes(app, ctx); // first: its slow-request log hook sees every route
  opsRoutes(app, ctx, () => healthy && (opts.healthy?.() ?? true));
  operationRoutes(app, ctx);
  collectionRoutes(app, ctx);
  documentRoutes(app, ctx);
  searchRoutes(app, ctx);
  aliasRoutes(app, ctx);
  keyRoutes(app, ctx);
  stopwordRoutes(app, ctx);
  stemmingRoutes(app, ctx, bodyLimit);
  conversationRoutes(app, ctx);
  analyticsRoutes(app, ctx);
  if (opts.dashboard ?? SERVE_DEFAULTS.dashboard) dashboardRoutes(app, ctx);
  ruleRoutes(app, ctx);
  presetRoutes(app, ctx);

  app.register(async (child) => {
    for (const [url, methods] of table) {
      const others = METHODS.filter((m) => !methods.has(m));
      if (others.length === 0) continue;
      const allow = METHODS.filter((m) => methods.has(m)).join(', ');
      child.route({
        method: others as unknown as string[],
        url,
        config: { methodNotAllowed: true } as object,
        // Answer before any body is read or any key is checked.
        onRequest: async (req, reply) => reply.code(405).header('allow', allow).send({ message: `${req.method} is not allowed on ${url}; use ${allow}` }),
        handler: () => undefined,
      });
    }
  });

  return {
    app,
    ctx,
    setHealthy(ok: boolean) {
      healthy = ok;
    },
  };
}
