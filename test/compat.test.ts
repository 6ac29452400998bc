/**
 * Issue #42, paths, shapes and rules: what the official clients send, answered as the
 * reference answers it, each through `fathom serve` on loopback and the `typesense` client
 * (its typed methods where it has one, its own `apiCall` for the paths the Python client
 * writes with a trailing slash).
 */
import fs from 'node:fs';
import path from 'node:path';
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
