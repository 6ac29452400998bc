/**
 * The web dashboard: `GET /` and `GET /dashboard/...` serve one page (dashboard/, built by
 * bin/build.mjs into dist/dashboard/), and `GET /dashboard/api/access` tells the page what
 * the presented key may do and see.
 *
 * What holds:
 *   - the page is public and holds no data and no key: every call it makes carries the key
 *     the user typed, in the `X-TYPESENSE-API-KEY` header, and the API decides as for any
 *     client. Nothing here relaxes CORS or any route's check;
 *   - every dashboard answer has a Content-Security-Policy with no inline script, no eval and
 *     no other origin (the page talks to this server only), and `X-Content-Type-Options:
 *     nosniff`;
 *   - assets are read once, when the app is built, and served from memory; names carry a
 *     content hash, so they are cached for good while index.html is revalidated;
 *   - `/dashboard/api/access` lists only collections the key may search or read (by name),
 *     with the fields a scoped key hides left out, and document counts only where the key may read
 *     the collection itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FathomError } from '../../errors.js';
import type { Principal } from '../../keys/auth.js';
import { hiddenBy, scopeOf } from '../../query/scope.js';
import { presentedKey } from '../access.js';
import type { ServerContext } from '../context.js';

/** No inline script or style, no eval, nothing from another origin; `data:` only for images. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const HEADERS: Record<string, string> = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};

interface Asset {
  type: string;
  body: Buffer;
  /** The gzipped body, when the build wrote one (`<name>.gz`). */
  gz?: Buffer;
  cache: string;
}

/** Where the built page lives: beside the bundled program (dist/), or dist/ of the sources' package. */
export function dashboardDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const dir of [path.join(here, 'dashboard'), path.resolve(here, '..', '..', '..', 'dist', 'dashboard')]) {
    if (fs.existsSync(path.join(dir, 'index.html'))) return dir;
  }
  return undefined;
}

/** Reads the built page into memory: `index.html` and `assets/*` (their `.gz` twins beside them). */
export function loadDashboard(dir: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  const html = fs.readFileSync(path.join(dir, 'index.html'));
  files.set('index.html', { type: TYPES['.html']!, body: html, cache: 'no-cache' });
  const assets = path.join(dir, 'assets');
  for (const name of fs.existsSync(assets) ? fs.readdirSync(assets) : []) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const gzFile = path.join(assets, `${name}.gz`);
    files.set(`assets/${name}`, {
      type,
      body: fs.readFileSync(path.join(assets, name)),
      ...(fs.existsSync(gzFile) ? { gz: fs.readFileSync(gzFile) } : {}),
      cache: 'public, max-age=31536000, immutable',
    });
  }
  return files;
}

function send(req: FastifyRequest, reply: FastifyReply, a: Asset): FastifyReply {
  void reply.headers(HEADERS).header('content-type', a.type).header('cache-control', a.cache);
  if (a.gz) {
    void reply.header('vary', 'Accept-Encoding');
    if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(a.gz);
  }
  return reply.send(a.body);
}

/** Actions the page offers, checked against the key without a collection. */
const GLOBAL_ACTIONS = ['collections:list', 'collections:create', 'keys:list', 'keys:create', 'keys:delete'] as const;
/** Actions the page offers on one collection. */
const COLLECTION_ACTIONS = [
  'documents:search',
  'collections:get',
  'collections:delete',
  'documents:import',
  'documents:export',
  'documents:get',
  'documents:upsert',
  'documents:delete',
] as const;

interface AccessCollection {
  name: string;
  /** The collection an alias stands for. */
  alias_of?: string;
  actions: string[];
  fields?: Record<string, unknown>[];
  default_sorting_field?: string;
  num_documents?: number;
}

/** What the key may do, and the collections (with the fields) it may see. */
export function describeAccess(ctx: ServerContext, p: Principal): { kind: string; actions: string[]; collections: AccessCollection[] } {
  const { engine, auth } = ctx;
  const may = (action: string, name?: string, target?: string) =>
    auth.authorize(p, { action, collections: name === undefined ? [] : [{ name, ...(target !== undefined ? { target } : {}) }] });
  const hidden = p.embedded ? hiddenBy(scopeOf(p.embedded)) : undefined;
  const infos = new Map(engine.listCollections().map((c) => [c.name, c]));
  const entries: Array<{ name: string; target?: string }> = [...infos.keys()].map((name) => ({ name }));
  for (const a of engine.listAliases()) if (infos.has(a.collection_name)) entries.push({ name: a.name, target: a.collection_name });
  // by name: a picker's order, the same from one call to the next
  entries.sort((a, b) => a.name.localeCompare(b.name));
  const collections: AccessCollection[] = [];
  for (const { name, target } of entries) {
    const actions = COLLECTION_ACTIONS.filter((a) => may(a, name, target));
    if (actions.length === 0) continue;
    const info = infos.get(target ?? name)!;
    const c: AccessCollection = { name, ...(target !== undefined ? { alias_of: target } : {}), actions };
    const reads = actions.includes('collections:get') || may('collections:list', name, target);
    if (reads || actions.includes('documents:search')) {
      c.fields = hidden ? info.fields.filter((f) => !hidden(String(f.name))) : info.fields;
      if (info.default_sorting_field && !hidden?.(info.default_sorting_field)) c.default_sorting_field = info.default_sorting_field;
    }
    if (reads) c.num_documents = info.num_documents;
    collections.push(c);
  }
  return { kind: p.kind === 'key' ? 'stored' : p.kind, actions: GLOBAL_ACTIONS.filter((a) => may(a)), collections };
}

export function dashboardRoutes(app: FastifyInstance, ctx: ServerContext, dir: string | undefined = dashboardDir()): void {
  const files = dir ? loadDashboard(dir) : undefined;
  const notBuilt = () => new FathomError('NOT_FOUND', 'the dashboard is not built: run `npm run build`');
  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    const index = files?.get('index.html');
    if (!index) throw notBuilt();
    return send(req, reply, index);
  };
  app.get('/', page);
  app.get('/dashboard', page);
  // the page's own paths (/dashboard/collections, ...) all load the page, which routes itself
  app.get('/dashboard/*', page);
  app.get<{ Params: { file: string } }>('/dashboard/assets/:file', async (req, reply) => {
    if (!files) throw notBuilt();
    const a = files.get(`assets/${req.params.file}`);
    if (!a) throw new FathomError('NOT_FOUND', `no dashboard asset ${req.params.file}`);
    return send(req, reply, a);
  });
  // Any valid key may ask what it may do; the answer never holds the key or another key.
  app.get('/dashboard/api/access', async (req, reply) => {
    const id = ctx.auth.identify(presentedKey(req));
    if (!id.ok) {
      throw new FathomError('UNAUTHORIZED', id.reason === 'missing' ? 'an API key is required' : id.reason === 'expired' ? 'the API key has expired' : 'the API key is not valid');
    }
    req.principal = id.principal;
    void reply.headers(HEADERS).header('cache-control', 'no-store');
    return describeAccess(ctx, id.principal);
  });
}
