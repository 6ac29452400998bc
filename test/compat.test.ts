/**
 * Issue #42, paths, shapes and rules: what the official clients send, answered as the
 * reference answers it, each through `fathom serve` on loopback and the `typesense` client
 * (its typed methods where it has one, its own `apiCall` for the paths the Python client
 * writes with a trailing slash).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath, tmpDir } from './helpers.js';

const KEY = 'compat-key';
let server: RunningServer;
let client: Client;

const BOOKS = {
  name: 'books',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'year', type: 'int32' },
    { name: 'tags', type: 'string[]', optional: true },
  ],
};

/** The client's error for a request that failed: its HTTP status and message. */
async function failure(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as { httpStatus?: number; message: string };
    return { status: err.httpStatus ?? 0, message: err.message };
  }
  throw new Error('the request succeeded');
}

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await client.collections().create(BOOKS as never);
});

afterAll(async () => {
  await server?.stop();
});

describe('a trailing slash names the collection-level endpoint', () => {
  const api = () => client.apiCall;

  it('creates and upserts a document with POST /collections/c/documents/', async () => {
    expect(await api().post('/collections/books/documents/', { id: 's1', title: 'Slash one', year: 2001 }, { action: 'create' })).toMatchObject({ id: 's1' });
    expect(await api().post('/collections/books/documents/', { id: 's1', title: 'Slash one again', year: 2002 }, { action: 'upsert' })).toMatchObject({ year: 2002 });
    expect(await client.collections('books').documents('s1').retrieve()).toMatchObject({ title: 'Slash one again' });
  });

  it('updates by filter with PATCH /collections/c/documents/', async () => {
    await client.collections('books').documents().import([{ id: 's2', title: 'Two', year: 1990 }, { id: 's3', title: 'Three', year: 1990 }], { action: 'create' });
    expect(await api().patch('/collections/books/documents/', { tags: ['old'] }, { filter_by: 'year:1990' })).toMatchObject({ num_updated: 2 });
    expect(await client.collections('books').documents('s3').retrieve()).toMatchObject({ tags: ['old'] });
  });

  it('deletes by filter with DELETE /collections/c/documents/, and answers num_deleted 0 when nothing matches', async () => {
    expect(await api().delete('/collections/books/documents/', { filter_by: 'year:1990' })).toEqual({ num_deleted: 2 });
    expect(await api().delete('/collections/books/documents/', { filter_by: 'year:1234', ignore_not_found: true })).toEqual({ num_deleted: 0 });
  });

  it('lists and reads every sub-resource and top-level resource with a trailing slash', async () => {
    expect(await api().get('/collections/books/synonyms/')).toEqual({ synonyms: [] });
    expect(await api().get('/collections/books/overrides/')).toEqual({ overrides: [] });
    expect(await api().get('/collections/books/')).toMatchObject({ name: 'books' });
    expect(((await api().get('/collections/')) as Array<{ name: string }>).map((c) => c.name)).toContain('books');
    expect(await api().get('/aliases/')).toEqual({ aliases: [] });
    expect(await api().get('/keys/')).toMatchObject({ keys: [] });
    expect(await api().get('/synonym_sets/')).toEqual([]);
    expect(await api().get('/presets/')).toEqual({ presets: [] });
    expect(await api().get('/collections/books/documents/s1/')).toMatchObject({ id: 's1' });
  });
});

describe('collection answers carry the reference defaults', () => {
  const defaults = { truncate_len: 100, stem_dictionary: '' };

  it('shows truncate_len and stem_dictionary on every field and the linked sets, on create, retrieve and list', async () => {
    const created = (await client.collections().create({ name: 'shapes', fields: [{ name: 'title', type: 'string' }, { name: 'n', type: 'int32' }] } as never)) as any;
    for (const info of [created, await client.collections('shapes').retrieve(), ((await client.collections().retrieve()) as any[]).find((c) => c.name === 'shapes')]) {
      expect(info.fields).toEqual([expect.objectContaining({ name: 'title', ...defaults }), expect.objectContaining({ name: 'n', ...defaults })]);
      expect(info).toMatchObject({ synonym_sets: [], curation_sets: [] });
    }
  });

  it('shows the defaults on the fields an update adds', async () => {
    const r = (await client.collections('shapes').update({ fields: [{ name: 'extra', type: 'string', optional: true }] } as never)) as any;
    expect(r.fields).toEqual([expect.objectContaining({ name: 'extra', ...defaults })]);
    expect(((await client.collections('shapes').retrieve()) as any).fields[2]).toMatchObject({ name: 'extra', ...defaults });
  });

  it('takes back a schema copied from an answer, and keeps a field’s own truncate_len', async () => {
    const copied = (await client.collections('shapes').retrieve()) as any;
    copied.name = 'shapes_copy';
    copied.fields[0].truncate_len = 50;
    const made = (await client.collections().create(copied)) as any;
    expect(made.fields[0]).toMatchObject({ name: 'title', truncate_len: 50, stem_dictionary: '' });
    expect((await failure(client.collections().create({ name: 'bad_len', fields: [{ name: 't', type: 'string', truncate_len: 0 }] } as never))).status).toBe(400);
  });
});

describe('stopword sets', () => {
  it('answer {id, stopwords, locale} on PUT and GET and {id} on DELETE, with no name key', async () => {
    expect(await client.stopwords().upsert('common', { stopwords: ['the', 'of'], locale: 'en' })).toEqual({ id: 'common', stopwords: ['the', 'of'], locale: 'en' });
    expect(await client.stopwords('common').retrieve()).toEqual({ stopwords: { id: 'common', stopwords: ['the', 'of'], locale: 'en' } });
    expect(await client.stopwords().retrieve()).toEqual({ stopwords: [{ id: 'common', stopwords: ['the', 'of'], locale: 'en' }] });
    expect(await client.stopwords('common').delete()).toEqual({ id: 'common' });
  });
});

describe('export', () => {
  it('writes each document as the reference does: keys sorted with id in its place, its number forms', async () => {
    await client.collections().create({ name: 'exported', fields: [{ name: 'title', type: 'string' }, { name: 'price', type: 'float' }] } as never);
    const lines = [
      '{"title": "Zebra", "price": 3.0, "id": "b", "meta": {"z": 1, "a": [1e2, -0.5]}, "Upper": true}',
      '{"price": 0.00001, "title": "Ärger", "id": "a1", "big": 9223372036854775807}',
    ];
    const results = (await client.collections('exported').documents().import(lines.join('\n'), { action: 'create' })) as unknown as string;
    expect(results.split('\n').map((l) => JSON.parse(l))).toEqual([{ success: true }, { success: true }]);
    expect(await client.collections('exported').documents().export()).toBe(
      [
        '{"Upper":true,"id":"b","meta":{"a":[100.0,-0.5],"z":1},"price":3.0,"title":"Zebra"}',
        '{"big":9223372036854775807,"id":"a1","price":1e-05,"title":"Ärger"}',
      ].join('\n'),
    );
    // with a projection the documents come from their parsed form, in the same key order
    expect(await client.collections('exported').documents().export({ include_fields: 'title,id' })).toBe('{"id":"b","title":"Zebra"}\n{"id":"a1","title":"Ärger"}');
  });
});

describe('import error lines', () => {
  const importLines = async (lines: string[], params: Record<string, unknown> = {}) =>
    ((await client.collections('books').documents().import(lines.join('\n'), { action: 'create', ...params } as never).catch((e) => e.importResults)) as unknown as string | Array<Record<string, unknown>>);
  const parsed = (r: string | Array<Record<string, unknown>>) => (typeof r === 'string' ? r.split('\n').map((l) => JSON.parse(l)) : r);

  it('carry the reference text and keys for a missing field, a wrong type, a duplicate id and bad JSON', async () => {
    await client.collections('books').documents().create({ id: 'dup', title: 'Here first', year: 1 });
    const lines = ['{"id": "m1", "title": "No year"}', '{"id": "w1", "title": 123, "year": 2}', '{"id": "w2", "title": "T", "year": "soon"}', '{"id": "dup", "title": "Again", "year": 3}', '{', '[]', '{"id": "w3", "title": "T", "year": 1, "tags": "one"}'];
    const results = parsed(await importLines(lines));
    expect(results).toEqual([
      { code: 400, document: lines[0], error: 'Field `year` has been declared in the schema, but is not found in the document.', success: false },
      { code: 400, document: lines[1], error: 'Field `title` must be a string.', success: false },
      { code: 400, document: lines[2], error: 'Field `year` must be an int32.', success: false },
      { code: 409, document: lines[3], error: 'A document with id dup already exists.', success: false },
      { code: 400, document: '{', error: 'Bad JSON: [json.exception.parse_error.101] parse error at line 1, column 2: syntax error while parsing object key - unexpected end of input; expected string literal', success: false },
      { code: 400, document: '[]', error: 'Bad JSON: not a properly formed document.', success: false },
      { code: 400, document: lines[6], error: 'Field `tags` must be an array.', success: false },
    ]);
  });

  it('writes each result line with its keys in the reference order', async () => {
    const r = await fetch(`${server.url}/collections/books/documents/import?return_id=true`, { method: 'POST', headers: { 'x-typesense-api-key': KEY }, body: '{"id":"k1","title":"T","year":1}\n{"id":"k1","title":"T","year":1}' });
    expect((await r.text()).split('\n')).toEqual(['{"id":"k1","success":true}', '{"code":409,"document":"{\\"id\\":\\"k1\\",\\"title\\":\\"T\\",\\"year\\":1}","error":"A document with id k1 already exists.","success":false}']);
  });

  it('gives a single write the same text', async () => {
    expect(await failure(client.collections('books').documents().create({ id: 'solo', title: 'x' } as never))).toMatchObject({ status: 400, message: expect.stringContaining('Field `year` has been declared in the schema, but is not found in the document.') });
    expect(await failure(client.collections('books').documents().create({ id: 'solo', title: 'x', year: 1, tags: [1.5] } as never))).toMatchObject({ message: expect.stringContaining('Field `tags` must be an array of string.') });
  });
});

describe('POST /operations/snapshot', () => {
  it('writes into an existing non-empty directory a snapshot directory of its own, leaving what is there', async () => {
    const parent = tmpDir('compat-snap-');
    fs.writeFileSync(path.join(parent, 'keep.txt'), 'mine');
    expect(await client.operations.perform('snapshot', { snapshot_path: parent })).toEqual({ success: true });
    const entries = fs.readdirSync(parent).sort();
    expect(entries).toEqual(['keep.txt', expect.stringMatching(/^snapshot-\d{8}T\d{6}Z$/)]);
    expect(fs.readFileSync(path.join(parent, 'keep.txt'), 'utf8')).toBe('mine');
    // a second one in the same second gets its own directory too
    expect(await client.operations.perform('snapshot', { snapshot_path: parent })).toEqual({ success: true });
    const snaps = fs.readdirSync(parent).filter((e) => e.startsWith('snapshot-'));
    expect(snaps.length).toBe(2);
    const copy = await startServer({ dataDir: path.join(parent, entries[1]!), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'off' } });
    try {
      const r = await fetch(`${copy.url}/collections/books/documents/s1`, { headers: { 'x-typesense-api-key': KEY } });
      expect(await r.json()).toMatchObject({ id: 's1' });
    } finally {
      await copy.stop();
    }
  });
});

describe('aliases', () => {
  it('accept a collection that does not exist yet, and answer 404 through it until the collection exists', async () => {
    expect(await client.aliases().upsert('later', { collection_name: 'later_v1' })).toEqual({ name: 'later', collection_name: 'later_v1' });
    expect(await client.aliases('later').retrieve()).toEqual({ name: 'later', collection_name: 'later_v1' });
    expect((await failure(client.collections('later').documents().search({ q: '*' }))).status).toBe(404);
    expect((await failure(client.collections('later').documents().create({ id: '1', title: 't' }))).status).toBe(404);
    await client.collections().create({ name: 'later_v1', fields: [{ name: 'title', type: 'string' }] } as never);
    await client.collections('later').documents().create({ id: '1', title: 'now here' });
    expect(await client.collections('later').documents().search({ q: 'here', query_by: 'title' })).toMatchObject({ found: 1 });
  });

  it('refuse to point references that go through an alias at a collection that does not exist', async () => {
    await client.collections().create({ name: 'authors', fields: [{ name: 'name', type: 'string' }] } as never);
    await client.aliases().upsert('writers', { collection_name: 'authors' });
    await client.collections().create({ name: 'novels', fields: [{ name: 'title', type: 'string' }, { name: 'author_id', type: 'string', reference: 'writers.id' }] } as never);
    const refused = await failure(client.aliases().upsert('writers', { collection_name: 'nobody_yet' }));
    expect(refused).toMatchObject({ status: 400, message: expect.stringContaining('references of `novels` go through alias `writers`') });
    expect(await client.aliases('writers').retrieve()).toEqual({ name: 'writers', collection_name: 'authors' });
  });
});

describe('POST /config, GET /analytics/status, GET /operations/schema_changes', () => {
  it('takes the runtime settings, refuses a value of the wrong type in the reference’s words, and logs slow requests', async () => {
    const lines: string[] = [];
    const logStream = new Writable({
      write(chunk, _enc, cb) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        cb();
      },
    });
    const s = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'warn', logStream }, { engine: { merges: 'off' } });
    try {
      const c = new Client({ nodes: [{ host: '127.0.0.1', port: s.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
      await c.health.retrieve();
      expect(lines.filter((l) => l.includes('slow request'))).toEqual([]);
      expect(await c.apiCall.post('/config', { 'log-slow-requests-time-ms': 0, 'healthy-read-lag': 2000, 'skip-writes': false, 'some-future-setting': 1 })).toEqual({ success: true });
      await c.collections().retrieve();
      const slow = lines.filter((l) => l.includes('slow request')).map((l) => JSON.parse(l));
      // from the request that set it on (in the process that answered it, at once)
      expect(slow).toEqual([
        expect.objectContaining({ msg: 'slow request', method: 'POST', url: '/config', status: 200 }),
        expect.objectContaining({ msg: 'slow request', method: 'GET', url: '/collections', status: 200 }),
      ]);
      expect(JSON.stringify(slow)).not.toContain(KEY);
      expect(s.engine.runtimeConfig()).toEqual({ 'log-slow-requests-time-ms': 0, 'healthy-read-lag': 2000, 'healthy-write-lag': 500, 'skip-writes': false });
      expect(await c.apiCall.post('/config', { 'log-slow-requests-time-ms': -1 })).toEqual({ success: true });
      const before = lines.length;
      await c.collections().retrieve();
      expect(lines.slice(before).filter((l) => l.includes('slow request'))).toEqual([]);
      expect(await failure(c.apiCall.post('/config', { 'log-slow-requests-time-ms': '100' }))).toMatchObject({ status: 400, message: expect.stringContaining('Configuration `log-slow-requests-time-ms` must be an integer.') });
      expect(await failure(c.apiCall.post('/config', { 'healthy-write-lag': 0 }))).toMatchObject({ status: 400, message: expect.stringContaining('Configuration `healthy-write-lag` must be a positive integer.') });
      expect(await failure(c.apiCall.post('/config', { 'skip-writes': 'yes' }))).toMatchObject({ status: 400, message: expect.stringContaining('Configuration `skip-writes` must be a boolean.') });
      // a setting smuggled through the prototype changes nothing
      await fetch(`${s.url}/config`, { method: 'POST', headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' }, body: '{"__proto__": {"log-slow-requests-time-ms": 0}}' });
      expect(s.engine.runtimeConfig()['log-slow-requests-time-ms']).toBe(-1);
    } finally {
      await s.stop();
    }
  });

  it('answers the analytics status (nothing pending without analytics) and no schema change in progress', async () => {
    expect(await client.apiCall.get('/analytics/status')).toEqual({
      popular_prefix_queries: 0,
      nohits_prefix_queries: 0,
      log_prefix_queries: 0,
      query_log_events: 0,
      query_counter_events: 0,
      doc_log_events: 0,
      doc_counter_events: 0,
    });
    expect(await client.operations.getSchemaChanges()).toEqual([]);
  });
});

describe('curation and synonym rules', () => {
  beforeAll(async () => {
    await client.collections().create({ name: 'companies', fields: [{ name: 'company_name', type: 'string' }, { name: 'num_employees', type: 'int32' }] } as never);
    await client.collections('companies').documents().import(
      [
        { id: '1', company_name: 'Stark Industries', num_employees: 5215 },
        { id: '2', company_name: 'Acme Industries', num_employees: 20 },
      ],
      { action: 'create' },
    );
  });
  const search = async (q: string) => (await client.collections('companies').documents().search({ q, query_by: 'company_name' })) as any;

  it('accepts and echoes an include of a document that does not exist yet, and pins it once it does', async () => {
    const rule = { rule: { query: 'industries', match: 'exact' }, includes: [{ id: '125', position: 1 }] };
    const saved = await client.collections('companies').overrides().upsert('pin-125', rule as never);
    expect(saved).toMatchObject({ id: 'pin-125', includes: [{ id: '125', position: 1 }] });
    expect((await search('industries')).hits.map((h: any) => h.document.id)).not.toContain('125');
    await client.collections('companies').documents().create({ id: '125', company_name: 'Pinned Later', num_employees: 1 });
    expect((await search('industries')).hits[0].document.id).toBe('125');
    await client.collections('companies').overrides('pin-125').delete();
  });

  it('stores a filter_by that does not parse, and reports it when a search meets the rule', async () => {
    const rule = { rule: { query: 'stark', match: 'exact' }, filter_by: 'num_employees>10' };
    expect(await client.collections('companies').overrides().upsert('bad-filter', rule as never)).toMatchObject({ id: 'bad-filter', filter_by: 'num_employees>10' });
    expect(await client.collections('companies').overrides('bad-filter').retrieve()).toMatchObject({ filter_by: 'num_employees>10' });
    // a search the rule does not meet is untouched
    expect((await search('acme')).found).toBe(1);
    const refused = await failure(search('stark'));
    expect(refused.status).toBe(400);
    expect(refused.message).toContain('curation rule `bad-filter`');
    await client.collections('companies').overrides('bad-filter').delete();
  });

  it('answers curation and synonym items with the reference defaults filled in', async () => {
    const item = await client.curationSets('promos').upsert({ items: [{ id: 'plain', rule: { query: 'acme', match: 'exact' }, includes: [{ id: '2', position: 1 }] }] } as never);
    expect((item as any).items[0]).toEqual({ id: 'plain', rule: { query: 'acme', match: 'exact' }, includes: [{ id: '2', position: 1 }], remove_matched_tokens: false, filter_curated_hits: false, stop_processing: true });
    expect(await client.curationSets('promos').items('filtering').upsert({ rule: { query: 'big', match: 'exact' }, filter_by: 'num_employees:>100' } as never)).toEqual({
      id: 'filtering',
      rule: { query: 'big', match: 'exact' },
      filter_by: 'num_employees:>100',
      remove_matched_tokens: true,
      filter_curated_hits: false,
      stop_processing: true,
    });
    expect(await client.curationSets('promos').items('plain').retrieve()).toMatchObject({ stop_processing: true, remove_matched_tokens: false, filter_curated_hits: false });
    expect(await client.collections('companies').overrides().upsert('own', { rule: { query: 'acme', match: 'exact' }, excludes: [{ id: '1' }], stop_processing: false } as never)).toMatchObject({ stop_processing: false, remove_matched_tokens: false, filter_curated_hits: false });
    expect(await client.synonymSets('words').upsert({ items: [{ id: 'firms', synonyms: ['company', 'firm'] }] })).toEqual({ name: 'words', items: [{ id: 'firms', root: '', synonyms: ['company', 'firm'] }] });
    expect(await client.synonymSets('words').items().upsert('one-way', { root: 'business', synonyms: ['firm'] })).toEqual({ id: 'one-way', root: 'business', synonyms: ['firm'] });
    expect(await client.collections('companies').synonyms().upsert('own', { synonyms: ['acme', 'generic'] })).toEqual({ id: 'own', root: '', synonyms: ['acme', 'generic'] });
    // an answer sent back as it came is taken
    const back = await client.curationSets('promos').items('plain').retrieve();
    expect(await client.curationSets('promos').items('plain').upsert(back as never)).toEqual(back);
  });
});

describe('analytics rules in both generations’ shapes', () => {
  let a: RunningServer;
  let ac: Client;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  beforeAll(async () => {
    a = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', analytics: { enabled: true } }, { engine: { merges: 'inline' } });
    ac = new Client({ nodes: [{ host: '127.0.0.1', port: a.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
    await ac.collections().create({ name: 'products', fields: [{ name: 'title', type: 'string' }, { name: 'popularity', type: 'int32' }, { name: 'clicks', type: 'int32', optional: true }] } as never);
    await ac.collections().create({ name: 'product_queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] } as never);
    await ac.collections('products').documents().import([{ id: '1', title: 'shoe', popularity: 0 }, { id: '2', title: 'sock', popularity: 0 }], { action: 'create' });
  });
  afterAll(async () => {
    await a?.stop();
  });

  it('v1: accepts a counter rule on a required int32 field, and shows limit 1000 on a rule stored without one', async () => {
    const counter = { type: 'counter', params: { source: { collections: ['products'], events: [{ type: 'click', weight: 1, name: 'v1_click' }] }, destination: { collection: 'products', counter_field: 'popularity' } } };
    expect(await ac.analyticsV1.rules().upsert('v1_counter', counter as never)).toEqual({ name: 'v1_counter', ...counter });
    const popular = { type: 'popular_queries', params: { source: { collections: ['products'] }, destination: { collection: 'product_queries' } } };
    await ac.analyticsV1.rules().upsert('v1_popular', popular as never);
    expect(await ac.analytics.rules('v1_popular').retrieve()).toEqual({ name: 'v1_popular', type: 'popular_queries', params: { ...popular.params, limit: 1000 } });
    await ac.analytics.events().create({ type: 'click', name: 'v1_click', data: { doc_id: '2', user_id: 'u1' } } as never);
    expect(await ac.apiCall.post('/analytics/flush', {})).toMatchObject({ ok: true });
    expect(await ac.collections('products').documents('2').retrieve()).toMatchObject({ popularity: 1 });
  });

  it('v30: creates rules one at a time or as an array, lists them as a bare array, filters by rule_tag, and updates one in part', async () => {
    const popular = {
      name: 'v30_popular',
      type: 'popular_queries',
      collection: 'products',
      event_type: 'query',
      rule_tag: 'homepage',
      params: { destination_collection: 'product_queries', limit: 100, capture_search_requests: false },
    };
    expect(await ac.analytics.rules().create(popular as never)).toEqual({ ...popular, params: { ...popular.params, expand_query: false } });
    const clicks = { name: 'v30_clicks', type: 'counter', collection: 'products', event_type: 'click', params: { destination_collection: 'products', counter_field: 'clicks', weight: 2 } };
    const bad = { name: 'v30_log', type: 'log', collection: 'products', event_type: 'click' };
    const created = await ac.analytics.rules().create([clicks, bad] as never);
    expect(created).toEqual([clicks, { error: expect.stringContaining('`log` rules') }]);
    const all = (await ac.analytics.rules().retrieve()) as Array<{ name: string }>;
    expect(Array.isArray(all)).toBe(true);
    expect(all.map((r) => r.name)).toEqual(['v1_counter', 'v1_popular', 'v30_clicks', 'v30_popular']);
    // a v1 rule listed in the v30 shape
    expect(all[0]).toEqual({ name: 'v1_counter', type: 'counter', collection: 'products', event_type: 'click', params: { destination_collection: 'products', counter_field: 'popularity', weight: 1 } });
    expect(await ac.analytics.rules().retrieve('homepage')).toEqual([{ ...popular, params: { ...popular.params, expand_query: false } }]);
    expect(await ac.analytics.rules('v30_clicks').retrieve()).toEqual(clicks);
    const updated = await ac.analytics.rules().upsert('v30_popular', { rule_tag: 'search-page', params: { limit: 50 } });
    expect(updated).toMatchObject({ name: 'v30_popular', collection: 'products', rule_tag: 'search-page', params: { destination_collection: 'product_queries', limit: 50, capture_search_requests: false } });
    expect(await failure(ac.analytics.rules().create({ name: 'no_collection', type: 'popular_queries', event_type: 'query', params: { destination_collection: 'product_queries' } } as never))).toMatchObject({
      status: 400,
      message: expect.stringContaining('`collection` is required'),
    });
  });

  it('v30: counts the rule’s own click events, and the query events of a rule that does not capture searches', async () => {
    await ac.analytics.rules('v1_popular').delete(); // it writes to product_queries too, and counts searches
    await ac.analytics.events().create({ name: 'v30_clicks', event_type: 'click', data: { doc_id: '1', user_id: 'u2' } } as never);
    await ac.analytics.events().create({ name: 'v30_popular', event_type: 'query', data: { q: 'Running Shoes', user_id: 'u3' } } as never);
    // searches are not counted by a rule with capture_search_requests: false
    await ac.collections('products').documents().search({ q: 'sock', query_by: 'title' });
    await sleep(4300); // a user's query counts once they have paused (4 s)
    expect(await ac.apiCall.post('/analytics/flush', {})).toMatchObject({ ok: true });
    expect(await ac.collections('products').documents('1').retrieve()).toMatchObject({ clicks: 2 });
    const queries = (await ac.collections('product_queries').documents().search({ q: '*' })) as any;
    expect(queries.hits.map((h: any) => [h.document.q, h.document.count])).toEqual([['running shoes', 1]]);
    expect(await ac.apiCall.get('/analytics/status')).toMatchObject({ popular_prefix_queries: 0, doc_counter_events: 0 });
  });

  it('refuses hostile rule requests with a 400 and no harm: too many at once, prototype names, oversized query events', async () => {
    const many = Array.from({ length: 101 }, (_, i) => ({ name: `r${i}`, type: 'nohits_queries', collection: 'products', event_type: 'query', params: { destination_collection: 'product_queries' } }));
    expect(await failure(ac.analytics.rules().create(many as never))).toMatchObject({ status: 400, message: expect.stringContaining('at most 100') });
    expect(((await ac.analytics.rules().retrieve()) as Array<{ name: string }>).map((r) => r.name)).not.toContain('r0');
    // `__proto__`: stored rule records lose that key (their encoding renames it), which the
    // prototype-safe registries fix; until then no request about it may fail with a 5xx
    const proto = { name: '__proto__', type: 'nohits_queries', collection: 'products', event_type: 'query', params: { destination_collection: 'product_queries' } };
    for (const [method, body] of [['PUT', proto], ['GET', undefined], ['DELETE', undefined]] as const) {
      const res = await fetch(`${a.url}/analytics/rules/__proto__`, { method, headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
      expect(res.status, method).toBeLessThan(500);
    }
    for (const name of ['constructor', 'toString']) {
      const rule = { name, type: 'nohits_queries', collection: 'products', event_type: 'query', params: { destination_collection: 'product_queries' } };
      expect(await ac.analytics.rules().upsert(name, rule as never)).toMatchObject({ name, type: 'nohits_queries' });
      // (the client caches rule objects by name in a plain object, so `rules('__proto__')` is not usable: its apiCall is)
      expect(await ac.apiCall.get(`/analytics/rules/${name}`)).toMatchObject({ name, collection: 'products' });
      expect(await ac.apiCall.delete(`/analytics/rules/${name}`)).toEqual({ name });
    }
    const long = { name: 'v30_popular', event_type: 'query', data: { q: 'x'.repeat(5000), user_id: 'u' } };
    expect(await failure(ac.analytics.events().create(long as never))).toMatchObject({ status: 400, message: expect.stringContaining('`data.q`') });
  });

  it('v1 and v30: a rule deleted answers {name}', async () => {
    expect(await ac.analytics.rules('v30_clicks').delete()).toEqual({ name: 'v30_clicks' });
    expect(await ac.analyticsV1.rules('v1_counter').delete()).toEqual({ name: 'v1_counter' });
  });
});

describe('POST /analytics/flush without analytics', () => {
  it('answers {"ok": true}: nothing is pending', async () => {
    expect(await client.apiCall.post('/analytics/flush', {})).toEqual({ ok: true });
  });
});

describe('the API generation', () => {
  it('reports v30.0 on /debug, and serves the code paths of both generations', async () => {
    const d = (await client.debug.retrieve()) as unknown as { version: string };
    expect(d.version).toBe('v30.0');
    await client.collections().create({ name: 'gen', fields: [{ name: 'title', type: 'string' }] } as never);
    await client.collections('gen').documents().import([{ id: '1', title: 'an old book' }, { id: '2', title: 'a red car' }], { action: 'create' });
    const found = async (q: string, extra: Record<string, unknown> = {}) => ((await client.collections('gen').documents().search({ q, query_by: 'title', ...extra })) as any).hits.map((h: any) => h.document.id);
    expect(await found('tome')).toEqual([]);
    // v29: a collection's own synonyms and overrides
    await client.collections('gen').synonyms().upsert('tomes', { synonyms: ['tome', 'book'] });
    expect(await found('tome')).toEqual(['1']);
    await client.collections('gen').overrides().upsert('cars-first', { rule: { query: 'book', match: 'exact' }, includes: [{ id: '2', position: 1 }] } as never);
    expect(await found('book')).toEqual(['2', '1']);
    // v30: sets linked to the collection
    await client.synonymSets('vehicles').upsert({ items: [{ id: 'autos', synonyms: ['auto', 'car'] }] });
    await client.curationSets('no-cars').upsert({ items: [{ id: 'hide', rule: { query: 'auto', match: 'exact' }, excludes: [{ id: '2' }] }] } as never);
    expect(await found('auto')).toEqual([]);
    await client.collections('gen').update({ synonym_sets: ['vehicles'] } as never);
    expect(await found('auto')).toEqual(['2']);
    await client.collections('gen').update({ curation_sets: ['no-cars'] } as never);
    expect(await found('auto')).toEqual([]);
  });
});
