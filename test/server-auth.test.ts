/**
 * The permission matrix: every route against an admin key, a search-only key, a key
 * scoped to one collection pattern, an expired key, a scoped search key and no key.
 * A refused request answers 401 with `{"message"}`; an allowed one never does (it may
 * still answer 404 for a collection or document that does not exist).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { generateScopedSearchKey } from '../src/keys/scoped.js';
import { BOOKS_SCHEMA, dataDirPath } from './helpers.js';

const BOOTSTRAP = 'matrix-bootstrap-key';
let server: RunningServer;
const keys: Record<string, string | undefined> = {};

type Who = 'bootstrap' | 'admin' | 'searchOnly' | 'pattern' | 'expired' | 'scoped' | 'none';
const EVERYONE: Who[] = ['bootstrap', 'admin', 'searchOnly', 'pattern', 'expired', 'scoped', 'none'];

async function call(method: string, path: string, key: string | undefined, body?: unknown, contentType = 'application/json') {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers['x-typesense-api-key'] = key;
  if (body !== undefined) headers['content-type'] = contentType;
  const res = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: BOOTSTRAP, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  const admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: BOOTSTRAP, connectionTimeoutSeconds: 2, logLevel: 'silent' });
  await admin.collections().create(BOOKS_SCHEMA as never);
  await admin.collections().create({ ...BOOKS_SCHEMA, name: 'org_a_books' } as never);
  const docs = [
    { id: '1', title: 'Dune', author: 'Frank Herbert', year: 1965 },
    { id: '2', title: 'Children of Dune', author: 'Frank Herbert', year: 1976 },
    { id: '3', title: 'The Dispossessed', author: 'Ursula K. Le Guin', year: 1974 },
  ];
  await admin.collections('books').documents().import(docs);
  await admin.collections('org_a_books').documents().import(docs);
  await admin.aliases().upsert('library', { collection_name: 'books' });
  keys.bootstrap = BOOTSTRAP;
  keys.admin = (await admin.keys().create({ description: 'admin', actions: ['*'], collections: ['*'] })).value;
  keys.searchOnly = (await admin.keys().create({ description: 'search books', actions: ['documents:search'], collections: ['books'] })).value;
  keys.pattern = (await admin.keys().create({ description: 'org a', actions: ['documents:*', 'collections:get'], collections: ['org_a_.*'] })).value;
  keys.expired = (await admin.keys().create({ description: 'old', actions: ['*'], collections: ['*'], expires_at: Math.floor(Date.now() / 1000) - 60 })).value;
  keys.scoped = admin.keys().generateScopedSearchKey(keys.searchOnly!, { filter_by: 'author:=Frank Herbert' });
  keys.none = undefined;
});

afterAll(async () => {
  await server?.stop();
});

interface Row {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
  allowed: Who[];
}

const ADMINS: Who[] = ['bootstrap', 'admin'];
const jsonl = '{"id":"9","title":"Solaris","author":"Stanislaw Lem","year":1961}';

const ROWS: Row[] = [
  { name: 'health', method: 'GET', path: '/health', allowed: EVERYONE },
  { name: 'metrics', method: 'GET', path: '/metrics.json', allowed: ADMINS },
  { name: 'stats', method: 'GET', path: '/stats.json', allowed: ADMINS },
  { name: 'debug', method: 'GET', path: '/debug', allowed: ADMINS },
  { name: 'list collections', method: 'GET', path: '/collections', allowed: ADMINS },
  { name: 'create a collection', method: 'POST', path: '/collections', body: { ...BOOKS_SCHEMA, name: 'org_a_new' }, allowed: ADMINS },
  { name: 'get a collection in the pattern', method: 'GET', path: '/collections/org_a_books', allowed: [...ADMINS, 'pattern'] },
  { name: 'get a collection outside the pattern', method: 'GET', path: '/collections/books', allowed: ADMINS },
  { name: 'delete a collection', method: 'DELETE', path: '/collections/org_a_ghost', allowed: ADMINS },
  { name: 'patch a collection', method: 'PATCH', path: '/collections/org_a_ghost', body: { fields: [] }, allowed: ADMINS },
  { name: 'create a document in the pattern', method: 'POST', path: '/collections/org_a_ghost/documents', body: { id: 'x' }, allowed: [...ADMINS, 'pattern'] },
  { name: 'create a document outside the pattern', method: 'POST', path: '/collections/ghost/documents', body: { id: 'x' }, allowed: ADMINS },
  { name: 'upsert a document', method: 'POST', path: '/collections/org_a_ghost/documents?action=upsert', body: { id: 'x' }, allowed: [...ADMINS, 'pattern'] },
  { name: 'get a document', method: 'GET', path: '/collections/books/documents/1', allowed: ADMINS },
  { name: 'get a document in the pattern', method: 'GET', path: '/collections/org_a_books/documents/1', allowed: [...ADMINS, 'pattern'] },
  { name: 'patch a document', method: 'PATCH', path: '/collections/books/documents/ghost', body: { year: 1 }, allowed: ADMINS },
  { name: 'delete a document', method: 'DELETE', path: '/collections/books/documents/ghost', allowed: ADMINS },
  { name: 'update by filter', method: 'PATCH', path: '/collections/ghost/documents?filter_by=id:x', body: { year: 1 }, allowed: ADMINS },
  { name: 'delete by filter', method: 'DELETE', path: '/collections/ghost/documents?filter_by=id:x', allowed: ADMINS },
  { name: 'import', method: 'POST', path: '/collections/ghost/documents/import', body: jsonl, contentType: 'text/plain', allowed: ADMINS },
  { name: 'import in the pattern', method: 'POST', path: '/collections/org_a_ghost/documents/import', body: jsonl, contentType: 'text/plain', allowed: [...ADMINS, 'pattern'] },
  { name: 'export', method: 'GET', path: '/collections/books/documents/export', allowed: ADMINS },
  { name: 'search books', method: 'GET', path: '/collections/books/documents/search?q=dune&query_by=title', allowed: [...ADMINS, 'searchOnly', 'scoped'] },
  { name: 'search books through an alias', method: 'GET', path: '/collections/library/documents/search?q=dune&query_by=title', allowed: [...ADMINS, 'searchOnly', 'scoped'] },
  { name: 'search in the pattern', method: 'GET', path: '/collections/org_a_books/documents/search?q=dune&query_by=title', allowed: [...ADMINS, 'pattern'] },
  { name: 'multi-search books', method: 'POST', path: '/multi_search', body: { searches: [{ collection: 'books', q: 'dune', query_by: 'title' }] }, allowed: [...ADMINS, 'searchOnly', 'scoped'] },
  {
    name: 'multi-search books and a collection of the pattern',
    method: 'POST',
    path: '/multi_search',
    body: { searches: [{ collection: 'books', q: 'dune', query_by: 'title' }, { collection: 'org_a_books', q: 'dune', query_by: 'title' }] },
    allowed: ADMINS,
  },
  { name: 'put an alias', method: 'PUT', path: '/aliases/shelf', body: { collection_name: 'books' }, allowed: ADMINS },
  { name: 'list aliases', method: 'GET', path: '/aliases', allowed: ADMINS },
  { name: 'get an alias', method: 'GET', path: '/aliases/library', allowed: ADMINS },
  { name: 'delete an alias', method: 'DELETE', path: '/aliases/ghost', allowed: ADMINS },
  { name: 'create a key', method: 'POST', path: '/keys', body: { description: 'x', actions: ['documents:search'], collections: ['books'] }, allowed: ADMINS },
  { name: 'list keys', method: 'GET', path: '/keys', allowed: ADMINS },
  { name: 'get a key', method: 'GET', path: '/keys/1', allowed: ADMINS },
  { name: 'delete a key', method: 'DELETE', path: '/keys/99999', allowed: ADMINS },
  { name: 'put stopwords', method: 'PUT', path: '/stopwords/common', body: { stopwords: ['the'] }, allowed: ADMINS },
  { name: 'list stopwords', method: 'GET', path: '/stopwords', allowed: ADMINS },
  { name: 'get stopwords', method: 'GET', path: '/stopwords/common', allowed: ADMINS },
  { name: 'delete stopwords', method: 'DELETE', path: '/stopwords/ghost', allowed: ADMINS },
];

describe('the permission matrix', () => {
  for (const row of ROWS) {
    for (const who of EVERYONE) {
      const allowed = row.allowed.includes(who);
      it(`${allowed ? 'lets' : 'refuses'} ${who} ${row.name} (${row.method} ${row.path.split('?')[0]})`, async () => {
        const r = await call(row.method, row.path, keys[who], row.body, row.contentType);
        if (allowed) expect(r.status, r.text).not.toBe(401);
        else {
          expect(r.status, r.text).toBe(401);
          expect(r.json()).toEqual({ message: expect.any(String) });
        }
      });
    }
  }
});

describe('keys and scopes', () => {
  it('says why a request without a key was refused', async () => {
    const r = await call('GET', '/collections', undefined);
    expect(r.json().message).toMatch(/API key is required/);
  });

  it('says that an expired key has expired', async () => {
    const r = await call('GET', '/collections', keys.expired);
    expect(r.json().message).toMatch(/expired/);
  });

  it('names the action a key does not allow', async () => {
    const r = await call('GET', '/collections/books/documents/1', keys.searchOnly);
    expect(r.json().message).toMatch(/documents:get/);
  });

  it('accepts the key as a query parameter, and the X-SERVICE-API-KEY header', async () => {
    expect((await call('GET', `/collections?x-typesense-api-key=${keys.admin}`, undefined)).status).toBe(200);
    expect((await call('GET', `/collections?x-service-api-key=${keys.admin}`, undefined)).status).toBe(200);
    const r = await fetch(`${server.url}/collections`, { headers: { 'X-SERVICE-API-KEY': keys.admin! } });
    expect(r.status).toBe(200);
  });

  it('does not echo a key given in the query string back in request_params', async () => {
    const r = await call('GET', `/collections/books/documents/search?q=dune&query_by=title&x-typesense-api-key=${keys.searchOnly}`, undefined);
    expect(r.status).toBe(200);
    expect(r.text).not.toContain(keys.searchOnly!);
  });

  it('lists only the collections a key covers', async () => {
    const admin = await call('POST', '/keys', BOOTSTRAP, { description: 'list org a', actions: ['collections:list'], collections: ['org_a_.*'] });
    const r = await call('GET', '/collections', admin.json().value);
    const names = r.json().map((c: { name: string }) => c.name);
    expect(names).toContain('org_a_books');
    expect(names.every((n: string) => n.startsWith('org_a_'))).toBe(true);
  });

  it('stops accepting a key once it is deleted', async () => {
    const k = (await call('POST', '/keys', BOOTSTRAP, { description: 'short-lived', actions: ['*'], collections: ['*'] })).json();
    expect((await call('GET', '/collections', k.value)).status).toBe(200);
    expect((await call('DELETE', `/keys/${k.id}`, BOOTSTRAP)).json()).toEqual({ id: k.id });
    expect((await call('GET', '/collections', k.value)).status).toBe(401);
  });

  it('refuses to create a second key with the same value', async () => {
    const body = { description: 'fixed', actions: ['*'], collections: ['*'], value: 'fixed-value-1234' };
    expect((await call('POST', '/keys', BOOTSTRAP, body)).status).toBe(201);
    expect((await call('POST', '/keys', BOOTSTRAP, body)).status).toBe(409);
  });

  it('refuses a collections entry that is not a regular expression', async () => {
    const r = await call('POST', '/keys', BOOTSTRAP, { description: 'bad', actions: ['*'], collections: ['(unclosed'] });
    expect(r.status).toBe(400);
    expect(r.json().message).toMatch(/regular expression/);
  });

  it('answers a key whose pattern is `(a+)+$` at once, where backtracking would take seconds', async () => {
    const k = await call('POST', '/keys', BOOTSTRAP, { description: 'catastrophic', actions: ['documents:search'], collections: ['(a+)+$'] });
    expect(k.status).toBe(201);
    const t0 = performance.now();
    // 28 `a`s and a `!`: a backtracking engine tries every way of splitting the `a`s (seconds); 75 of them took minutes
    const refused = await call('GET', `/collections/${'a'.repeat(28)}!/documents/search?q=*`, k.json().value);
    expect(refused.status).toBe(401);
    const allowed = await call('GET', `/collections/${'a'.repeat(75)}/documents/search?q=*`, k.json().value);
    expect(allowed.status).toBe(404);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('refuses a collections entry no linear-time engine can match, saying why', async () => {
    const cases: Array<[string, RegExp]> = [
      ['(a)\\1', /`collections` entry `\(a\)\\1` cannot be used as a pattern: backreferences/],
      ['(?<t>a)\\k<t>', /backreferences/],
      ['org_(?!secret).*', /lookahead and lookbehind/],
      ['(?<=x)y', /lookahead and lookbehind/],
      ['a{2000}', /repetition count above 1000/],
      ['[a-z]{400}[0-9]{400}', /too complex/],
    ];
    for (const [entry, message] of cases) {
      const r = await call('POST', '/keys', BOOTSTRAP, { description: 'refused', actions: ['*'], collections: ['books', entry] });
      expect([entry, r.status]).toEqual([entry, 400]);
      expect(r.json().message).toMatch(message);
    }
  });

  it('keeps keys with ordinary patterns working as before', async () => {
    const k = (await call('POST', '/keys', BOOTSTRAP, { description: 'ordinary', actions: ['documents:search'], collections: ['org_[a-z]_books', 'lib.*'] })).json();
    expect((await call('GET', '/collections/org_a_books/documents/search?q=dune&query_by=title', k.value)).status).toBe(200);
    expect((await call('GET', '/collections/library/documents/search?q=dune&query_by=title', k.value)).status).toBe(200);
    expect((await call('GET', '/collections/books/documents/search?q=dune&query_by=title', k.value)).status).toBe(401);
    expect((await call('GET', '/collections/org_ab_books/documents/search?q=dune&query_by=title', k.value)).status).toBe(401);
  });
});

describe('scoped search keys', () => {
  const ids = (r: { json(): { hits: Array<{ document: { id: string } }> } }) => r.json().hits.map((h) => h.document.id).sort();

  it('force their embedded filter onto every search', async () => {
    const r = await call('GET', '/collections/books/documents/search?q=*&query_by=title', keys.scoped);
    expect(ids(r)).toEqual(['1', '2']);
  });

  it('cannot be widened by a filter of the request, even with ||', async () => {
    const f = encodeURIComponent('author:=Ursula K. Le Guin || year:>0');
    const r = await call('GET', `/collections/books/documents/search?q=*&query_by=title&filter_by=${f}`, keys.scoped);
    expect(r.status).toBe(200);
    expect(ids(r)).toEqual(['1', '2']);
    const narrower = await call('GET', `/collections/books/documents/search?q=*&query_by=title&filter_by=year:>1970`, keys.scoped);
    expect(ids(narrower)).toEqual(['2']);
  });

  it('force their filter onto each search of a multi-search', async () => {
    const r = await call('POST', '/multi_search', keys.scoped, { searches: [{ collection: 'books', q: '*', filter_by: 'year:>0' }] });
    expect(r.json().results[0].hits.map((h: { document: { id: string } }) => h.document.id).sort()).toEqual(['1', '2']);
  });

  it('match the key that the reference client generates', () => {
    const params = { filter_by: 'author:=Frank Herbert' };
    expect(generateScopedSearchKey(keys.searchOnly!, params)).toBe(keys.scoped);
  });

  it('are refused when tampered with', async () => {
    const decoded = Buffer.from(keys.scoped!, 'base64').toString('utf8').replace('Frank Herbert', 'Ursula K. Le Guin');
    const forged = Buffer.from(decoded).toString('base64');
    expect((await call('GET', '/collections/books/documents/search?q=*&query_by=title', forged)).status).toBe(401);
  });

  it('are refused once their embedded expires_at has passed', async () => {
    const old = generateScopedSearchKey(keys.searchOnly!, { filter_by: 'year:>0', expires_at: Math.floor(Date.now() / 1000) - 10 });
    const r = await call('GET', '/collections/books/documents/search?q=*&query_by=title', old);
    expect(r.status).toBe(401);
    expect(r.json().message).toMatch(/expired/);
  });

  it('are refused when derived from a key that can do more than search', async () => {
    const fromAdmin = generateScopedSearchKey(keys.admin!, { filter_by: 'year:>0' });
    expect((await call('GET', '/collections/books/documents/search?q=*&query_by=title', fromAdmin)).status).toBe(401);
  });

  it('honour the parent key collections', async () => {
    expect((await call('GET', '/collections/org_a_books/documents/search?q=*&query_by=title', keys.scoped)).status).toBe(401);
  });

  it('cap the searches of one multi-search with limit_multi_searches', async () => {
    const capped = generateScopedSearchKey(keys.searchOnly!, { limit_multi_searches: 1 });
    const two = { searches: [{ collection: 'books', q: '*' }, { collection: 'books', q: '*' }] };
    expect((await call('POST', '/multi_search', capped, two)).status).toBe(400);
    expect((await call('POST', '/multi_search', capped, { searches: [{ collection: 'books', q: '*' }] })).status).toBe(200);
  });
});
