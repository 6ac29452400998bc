/**
 * The dashboard's HTTP side, without a browser: the page and its assets with their
 * security headers, `--no-dashboard`, the bundle's size, and `/dashboard/api/access`
 * telling each key only what it may see.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { generateScopedSearchKey } from '../src/keys/scoped.js';
import { BIN, BOOKS_SCHEMA, ROOT, dataDirPath } from './helpers.js';

const ADMIN = 'dashboard-route-admin-key';
const BUILT = path.join(ROOT, 'dist', 'dashboard');
let server: RunningServer;
let searchKey = '';
let docsKey = '';

async function call(p: string, key?: string, init: RequestInit = {}) {
  const headers: Record<string, string> = { ...(init.headers as Record<string, string>) };
  if (key) headers['x-typesense-api-key'] = key;
  return fetch(`${server.url}${p}`, { ...init, headers });
}

/** What /dashboard/api/access answers for a key. */
async function accessOf(key: string): Promise<any> {
  return (await call('/dashboard/api/access', key)).json();
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(BUILT, 'index.html'))) throw new Error('dist/dashboard is not built: run `npm run build` first (npm test does)');
  server = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  const json = { 'content-type': 'application/json' };
  for (const name of ['books', 'secret']) {
    expect((await call('/collections', ADMIN, { method: 'POST', headers: json, body: JSON.stringify({ ...BOOKS_SCHEMA, name }) })).status).toBe(201);
  }
  await call('/collections/books/documents/import', ADMIN, { method: 'POST', body: '{"id":"1","title":"Dune","author":"Frank Herbert","year":1965}' });
  await call('/aliases/library', ADMIN, { method: 'PUT', headers: json, body: JSON.stringify({ collection_name: 'books' }) });
  const make = async (spec: object) => ((await (await call('/keys', ADMIN, { method: 'POST', headers: json, body: JSON.stringify(spec) })).json()) as { value: string }).value;
  searchKey = await make({ description: 'search books', actions: ['documents:search'], collections: ['books'] });
  docsKey = await make({ description: 'docs of books', actions: ['documents:*', 'collections:get'], collections: ['books'] });
});

afterAll(async () => {
  await server?.stop();
});

describe('the page', () => {
  it('serves the page on / with a CSP that allows no inline script, nosniff, and no key in it', async () => {
    const res = await call('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const html = await res.text();
    // every script is a file of this server's, none inline
    expect(html).toMatch(/<script type="module" src="\/dashboard\/assets\/app-[A-Z0-9]+\.js"><\/script>/);
    expect(html.replace(/<script[^>]*src="[^"]+"[^>]*><\/script>/g, '')).not.toContain('<script');
    expect(html).not.toContain(ADMIN);
  });

  it('serves the page for its own paths and the hashed assets gzipped, 404 with a message for anything else', async () => {
    for (const p of ['/dashboard', '/dashboard/', '/dashboard/keys', '/dashboard/search/more']) {
      const res = await call(p);
      expect(res.status, p).toBe(200);
      expect(await res.text()).toContain('<div id="app">');
    }
    const html = await (await call('/')).text();
    const js = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const css = /href="(\/dashboard\/assets\/[^"]+\.css)"/.exec(html)![1]!;
    const res = await call(js, undefined, { headers: { 'accept-encoding': 'gzip' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toContain('immutable');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await res.text()).length).toBeGreaterThan(1000); // fetch gunzips
    expect((await call(css)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const missing = await call('/dashboard/assets/nothing.js');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: 'no dashboard asset nothing.js' });
    expect((await call('/dashboard/api/access')).status).toBe(401);
  });

  it('keeps the bundle within 300 KB gzipped, and names only its own files', async () => {
    const dir = path.join(BUILT, 'assets');
    const gz = fs.readdirSync(dir).filter((f) => f.endsWith('.gz'));
    const total = gz.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    expect(gz.some((f) => f.endsWith('.js.gz'))).toBe(true);
    expect(total).toBeLessThanOrEqual(300 * 1024);
    // the page names only its own files (the browser tests check that nothing else is fetched)
    const html = fs.readFileSync(path.join(BUILT, 'index.html'), 'utf8');
    for (const [, url] of html.matchAll(/(?:src|href)="([^"]*)"/g)) expect(url).toMatch(/^(\/dashboard\/assets\/|data:)/);
  });

  it('answers 404 on / with --no-dashboard, and the API is unchanged', async () => {
    const off = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent', dashboard: false }, { engine: { merges: 'inline' } });
    try {
      for (const p of ['/', '/dashboard/search', '/dashboard/api/access']) {
        const res = await fetch(`${off.url}${p}`, { headers: { 'x-typesense-api-key': ADMIN } });
        expect(res.status, p).toBe(404);
      }
      expect((await fetch(`${off.url}/health`)).status).toBe(200);
    } finally {
      await off.stop();
    }
  });

  it('is served by the built program from every process, and --no-dashboard turns it off there too', async () => {
    for (const [flags, status] of [[[], 200], [['--no-dashboard'], 404]] as const) {
      const child = spawn(process.execPath, [BIN, 'serve', '-d', dataDirPath(), '--api-address', '127.0.0.1', '--api-port', '0', '--api-key', ADMIN, '--processes', '2', ...flags], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        const port = await new Promise<number>((resolve, reject) => {
          let out = '';
          child.stdout!.on('data', (d) => {
            out += d;
            const m = /"msg":"serving"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"msg":"serving"/.exec(out);
            if (m) resolve(Number(m[1] ?? m[2]));
          });
          child.on('exit', (code) => reject(new Error(`fathom serve exited with ${code}`)));
        });
        // the two processes take connections in turn: ask both
        for (let i = 0; i < 4; i++) expect((await fetch(`http://127.0.0.1:${port}/`)).status, flags.join(' ')).toBe(status);
      } finally {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});

describe('/dashboard/api/access', () => {
  it('tells an admin key everything, with counts', async () => {
    const a = await accessOf(ADMIN);
    expect(a.kind).toBe('bootstrap');
    expect(a.actions).toEqual(['collections:list', 'collections:create', 'keys:list', 'keys:create', 'keys:delete']);
    expect(a.collections.map((c: { name: string }) => c.name)).toEqual(['books', 'library', 'secret']);
    const books = a.collections.find((c: { name: string }) => c.name === 'books');
    expect(books.num_documents).toBe(1);
    expect(books.actions).toContain('collections:delete');
    expect(a.collections.find((c: { name: string }) => c.name === 'library').alias_of).toBe('books');
  });

  it('shows a search-only key its collection and fields, but no counts and no other collection', async () => {
    const a = await accessOf(searchKey);
    expect(a.kind).toBe('stored');
    expect(a.actions).toEqual([]);
    expect(a.collections).toHaveLength(2); // books, and the alias that stands for it
    for (const c of a.collections) {
      expect(c.actions).toEqual(['documents:search']);
      expect(c.num_documents).toBeUndefined();
      expect(c.fields.map((f: { name: string }) => f.name)).toContain('title');
    }
    expect(JSON.stringify(a)).not.toContain('secret');
    expect(JSON.stringify(a)).not.toContain(searchKey);
  });

  it('leaves out the fields a scoped key hides', async () => {
    const scoped = generateScopedSearchKey(searchKey, { exclude_fields: 'author', filter_by: 'year:>2000' });
    const a = await accessOf(scoped);
    expect(a.kind).toBe('scoped');
    const books = a.collections.find((c: { name: string }) => c.name === 'books');
    expect(books.fields.map((f: { name: string }) => f.name)).not.toContain('author');
    expect(books.num_documents).toBeUndefined();
  });

  it('gives a documents key the document actions and the count, and no admin actions', async () => {
    const a = await accessOf(docsKey);
    expect(a.actions).toEqual([]);
    const books = a.collections.find((c: { name: string }) => c.name === 'books');
    expect(books.actions).toEqual(['documents:search', 'collections:get', 'documents:import', 'documents:export', 'documents:get', 'documents:upsert', 'documents:delete']);
    expect(books.num_documents).toBe(1);
  });

  it('refuses a wrong key with 401 and a message', async () => {
    const res = await call('/dashboard/api/access', 'not-a-key');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: 'the API key is not valid' });
  });
});
