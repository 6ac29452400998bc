/**
 * `fathom serve` driven by the official `typesense` client, configured the way its users
 * configure it: collections, documents (import and export included), search,
 * multi-search, aliases, keys and stopwords.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { BOOKS_SCHEMA, dataDirPath } from './helpers.js';

const ADMIN = 'test-bootstrap-key';
let server: RunningServer;
let client: Client;

function clientWith(apiKey: string): Client {
  return new Client({
    nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }],
    apiKey,
    connectionTimeoutSeconds: 2,
    logLevel: 'silent',
  });
}

const BOOKS = [
  { id: '1', title: 'The Hobbit', author: 'J. R. R. Tolkien', year: 1937, tags: ['fantasy'], rating: 4.7 },
  { id: '2', title: 'Dune', author: 'Frank Herbert', year: 1965, tags: ['science fiction'], rating: 4.5 },
  { id: '3', title: 'The Left Hand of Darkness', author: 'Ursula K. Le Guin', year: 1969, tags: ['science fiction'], rating: 4.2 },
  { id: '4', title: 'A Wizard of Earthsea', author: 'Ursula K. Le Guin', year: 1968, tags: ['fantasy'], rating: 4.3 },
];

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = clientWith(ADMIN);
});

afterAll(async () => {
  await server?.stop();
});

describe('the typesense client against fathom serve', () => {
  it('reports health without a key', async () => {
    expect(await clientWith('no-such-key').health.retrieve()).toEqual({ ok: true });
  });

  it('creates a collection with 201 and refuses a duplicate name with 409', async () => {
    const created = await client.collections().create(BOOKS_SCHEMA as never);
    expect(created.name).toBe('books');
    expect(created.num_documents).toBe(0);
    await expect(client.collections().create(BOOKS_SCHEMA as never)).rejects.toMatchObject({ httpStatus: 409 });
  });

  it('lists and retrieves collections', async () => {
    const all = await client.collections().retrieve();
    expect(all.map((c) => c.name)).toContain('books');
    expect((await client.collections('books').retrieve()).fields.map((f) => f.name)).toContain('title');
    await expect(client.collections('nope').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('imports an array of documents and answers one result per document', async () => {
    const results = await client.collections('books').documents().import(BOOKS, { action: 'create' });
    expect(results).toEqual(BOOKS.map(() => ({ success: true })));
  });

  it('reports failed import lines inside a 200 answer, one per input line in order', async () => {
    const jsonl = ['{"id":"5","title":"Neuromancer","author":"William Gibson","year":1984}', '{"id":"6","title":"No year"}', 'not json'].join('\n');
    const text = await client.collections('books').documents().import(jsonl, { action: 'create', return_id: true } as never);
    const lines = String(text)
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({ success: true, id: '5' });
    expect(lines[1].success).toBe(false);
    expect(lines[2].success).toBe(false);
    expect(lines[2].document).toBe('not json');
  });

  it('creates, upserts, retrieves, updates and deletes single documents', async () => {
    const docs = client.collections('books').documents();
    expect(await docs.create({ id: '7', title: 'Solaris', author: 'Stanislaw Lem', year: 1961 })).toMatchObject({ id: '7', title: 'Solaris' });
    await expect(docs.create({ id: '7', title: 'Solaris', author: 'Stanislaw Lem', year: 1961 })).rejects.toMatchObject({ httpStatus: 409 });
    await docs.upsert({ id: '7', title: 'Solaris', author: 'Stanisław Lem', year: 1961 });
    expect(await client.collections('books').documents('7').retrieve()).toMatchObject({ author: 'Stanisław Lem' });
    expect(await client.collections('books').documents('7').update({ rating: 4.0 })).toMatchObject({ id: '7', rating: 4.0 });
    expect(await client.collections('books').documents('7').delete()).toMatchObject({ id: '7' });
    await expect(client.collections('books').documents('7').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
    await expect(client.collections('books').documents('7').delete()).rejects.toMatchObject({ httpStatus: 404 });
    expect(await client.collections('books').documents('7').delete({ ignore_not_found: true })).toBeDefined();
  });

  it('rejects a document of the wrong shape with 400 and a message', async () => {
    await expect(client.collections('books').documents().create({ id: '8', title: 'x', author: 'y', year: 'nineteen' })).rejects.toMatchObject({
      httpStatus: 400,
      message: expect.stringContaining('year'),
    });
  });

  it('searches with typos and filters', async () => {
    const r = await client.collections('books').documents().search({ q: 'hobit', query_by: 'title' });
    expect(r.found).toBe(1);
    expect(r.hits![0]!.document).toMatchObject({ id: '1' });
    const f = await client.collections('books').documents().search({ q: '*', query_by: 'title', filter_by: 'year:>1960', sort_by: 'year:asc' });
    expect(f.hits!.map((h) => (h.document as { id: string }).id)).toEqual(['2', '4', '3', '5']);
  });

  it('answers a bad search parameter with 400', async () => {
    await expect(client.collections('books').documents().search({ q: 'x', query_by: 'title', per_page: 'many' as never })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('runs multi-search where one failing search reports its own code without failing the others', async () => {
    const r = await client.multiSearch.perform(
      {
        searches: [
          { collection: 'books', q: 'dune' },
          { collection: 'missing', q: 'x' },
          { collection: 'books', q: 'earthsea', query_by: 'title' },
        ],
      },
      { query_by: 'title' },
    );
    const results = r.results as Array<{ found?: number; code?: number; error?: string }>;
    expect(results[0]!.found).toBe(1);
    expect(results[1]).toMatchObject({ code: 404 });
    expect(results[2]!.found).toBe(1);
  });

  it('exports documents as JSON Lines, filtered and projected, that import again as they are', async () => {
    const all = await client.collections('books').documents().export();
    const lines = all.split('\n').map((l) => JSON.parse(l));
    expect(lines.map((d) => d.id)).toEqual(['1', '2', '3', '4', '5']);
    const some = await client.collections('books').documents().export({ filter_by: 'author:=Ursula K. Le Guin', include_fields: 'id,title' });
    expect(some.split('\n').map((l) => JSON.parse(l))).toEqual([
      { id: '3', title: 'The Left Hand of Darkness' },
      { id: '4', title: 'A Wizard of Earthsea' },
    ]);
    await client.collections().create({ ...BOOKS_SCHEMA, name: 'books_copy' } as never);
    const again = await client.collections('books_copy').documents().import(all, { action: 'create' } as never);
    expect(String(again).split('\n').every((l) => JSON.parse(l).success)).toBe(true);
    expect((await client.collections('books_copy').retrieve()).num_documents).toBe(5);
  });

  it('streams an export through exportStream', async () => {
    const stream = await client.collections('books').documents().exportStream();
    let text = '';
    for await (const chunk of stream) text += chunk.toString();
    expect(text.split('\n')).toHaveLength(5);
  });

  it('updates and deletes documents by filter', async () => {
    expect(await client.collections('books_copy').documents().update({ rating: 5 }, { filter_by: 'year:<1966' })).toEqual({ rating: 5, num_updated: 2 });
    expect(await client.collections('books_copy').documents().delete({ filter_by: 'rating:=5' })).toEqual({ num_deleted: 2 });
    expect((await client.collections('books_copy').retrieve()).num_documents).toBe(3);
  });

  it('adds and drops fields with PATCH', async () => {
    const r = await client.collections('books_copy').update({ fields: [{ name: 'pages', type: 'int32', optional: true }] });
    expect(r.fields.map((f) => f.name)).toContain('pages');
  });

  it('puts an alias that works wherever a collection name does', async () => {
    expect(await client.aliases().upsert('library', { collection_name: 'books' })).toEqual({ name: 'library', collection_name: 'books' });
    expect(await client.aliases('library').retrieve()).toEqual({ name: 'library', collection_name: 'books' });
    expect((await client.aliases().retrieve()).aliases).toContainEqual({ name: 'library', collection_name: 'books' });
    expect((await client.collections('library').documents().search({ q: 'dune', query_by: 'title' })).found).toBe(1);
    expect(await client.collections('library').documents('2').retrieve()).toMatchObject({ title: 'Dune' });
    expect(await client.aliases('library').delete()).toEqual({ name: 'library', collection_name: 'books' });
    await expect(client.aliases('library').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('creates keys with 201 and shows the value only at creation', async () => {
    const k = await client.keys().create({ description: 'search books', actions: ['documents:search'], collections: ['books'] });
    expect(k.value).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(k.id).toBeTypeOf('number');
    const listed = await client.keys().retrieve();
    const mine = listed.keys.find((x) => x.id === k.id)!;
    expect(mine.value_prefix).toBe(k.value!.slice(0, 4));
    expect(mine).not.toHaveProperty('value');
    const one = await client.keys(k.id).retrieve();
    expect(one).not.toHaveProperty('value');
    expect(one.description).toBe('search books');
    expect(await client.keys(k.id).delete()).toEqual({ id: k.id });
    await expect(client.keys(k.id).retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('refuses a key without actions with 400', async () => {
    await expect(client.keys().create({ description: 'x', collections: ['*'] } as never)).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('manages stopword sets that searches then apply', async () => {
    const put = await client.stopwords().upsert('common', { stopwords: ['The', 'of a'] });
    expect(put).toMatchObject({ id: 'common', stopwords: ['the', 'of', 'a'] });
    expect((await client.stopwords().retrieve()).stopwords.map((s) => s.id)).toContain('common');
    expect(await client.stopwords('common').retrieve()).toMatchObject({ stopwords: { id: 'common' } });
    const r = await client.collections('books').documents().search({ q: 'the hobbit', query_by: 'title', stopwords: 'common' } as never);
    expect(r.found).toBe(1);
    expect(await client.stopwords('common').delete()).toEqual({ id: 'common' });
  });

  it('reports debug, stats and metrics', async () => {
    expect(await client.debug.retrieve()).toMatchObject({ version: expect.any(String) });
    expect(await client.stats.retrieve()).toHaveProperty('search_requests_per_second');
    expect(await client.metrics.retrieve()).toHaveProperty('system_memory_total_bytes');
  });

  it('deletes a collection', async () => {
    expect((await client.collections('books_copy').delete()).name).toBe('books_copy');
    await expect(client.collections('books_copy').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });
});
