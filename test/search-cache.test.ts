/**
 * The search cache (`use_cache`, `cache_ttl`, `fathom serve --cache-num-entries`): a
 * repeated search is answered from it until its TTL runs out, and never after the
 * collection has changed, whichever process changed it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { SearchCache } from '../src/search/cache.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { BOOKS_SCHEMA, cli, dataDirPath, openEngine } from './helpers.js';

describe('the search cache', () => {
  it('forgets an answer once its time to live has passed', () => {
    let now = 1000;
    const cache = new SearchCache<string>(10, () => now);
    const v = [{}];
    cache.set('k', v, 'answer', 5000);
    now += 4999;
    expect(cache.get('k', v)).toBe('answer');
    now += 1;
    expect(cache.get('k', v)).toBeUndefined();
  });

  it('keeps at most the configured number of answers, dropping the least recently used', () => {
    const cache = new SearchCache<number>(2);
    const v = [{}];
    cache.set('a', v, 1, 60_000);
    cache.set('b', v, 2, 60_000);
    expect(cache.get('a', v)).toBe(1); // `b` is now the least recently used
    cache.set('c', v, 3, 60_000);
    expect([cache.get('a', v), cache.get('b', v), cache.get('c', v)]).toEqual([1, undefined, 3]);
    expect(cache.size).toBe(2);
    const none = new SearchCache<number>(0);
    none.set('a', v, 1, 60_000);
    expect(none.get('a', v)).toBeUndefined();
  });

  it('does not answer from an entry made for an older version of the collection', () => {
    const cache = new SearchCache<string>(10);
    const record = {};
    cache.set('k', [record, {}], 'old', 60_000);
    expect(cache.get('k', [record, {}])).toBeUndefined();
  });

  it('keys a search by collection and parameters, in any order, without the cache parameters', () => {
    const a = SearchCache.key('books', { q: 'dune', query_by: 'title', use_cache: 'true' });
    expect(SearchCache.key('books', { query_by: 'title', q: 'dune', cache_ttl: '5' })).toBe(a);
    expect(SearchCache.key('films', { q: 'dune', query_by: 'title' })).not.toBe(a);
    expect(SearchCache.key('books', { q: 'dune', query_by: 'title', filter_by: 'year:>1900' })).not.toBe(a);
  });

  it('answers a repeated use_cache search from the cache, and a search without it afresh', async () => {
    const e = openEngine(undefined, { merges: 'off' });
    await e.createCollection(BOOKS_SCHEMA);
    await e.writeDocument('books', { id: '1', title: 'Dune', author: 'Herbert', year: 1965 });
    const p = { q: 'dune', query_by: 'title', use_cache: 'true' };
    const first = await e.search('books', p);
    expect(await e.search('books', { ...p })).toBe(first);
    expect(await e.search('books', { q: 'dune', query_by: 'title' })).not.toBe(first);
    // a write makes the next cached search fresh
    await e.writeDocument('books', { id: '2', title: 'Dune Messiah', author: 'Herbert', year: 1969 });
    const after = await e.search('books', p);
    expect(after).not.toBe(first);
    expect(after.found).toBe(2);
    await e.close();
  });

  it('rejects a cache_ttl or use_cache that is not a valid value', async () => {
    const e = openEngine(undefined, { merges: 'off' });
    await e.createCollection(BOOKS_SCHEMA);
    await expect(e.search('books', { q: 'x', query_by: 'title', use_cache: 'yes' })).rejects.toThrow(/use_cache/);
    await expect(e.search('books', { q: 'x', query_by: 'title', use_cache: 'true', cache_ttl: '-1' })).rejects.toThrow(/cache_ttl/);
    await e.close();
  });
});

describe('the search cache behind fathom serve', () => {
  const KEY = 'cache-test-key';
  let server: RunningServer;
  let dir: string;
  let client: Client;

  beforeAll(async () => {
    dir = dataDirPath();
    server = await startServer({ dataDir: dir, apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', cacheNumEntries: 100 }, { engine: { merges: 'inline' } });
    client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 10 });
    await client.collections().create(BOOKS_SCHEMA as never);
    await client.collections('books').documents().create({ id: '1', title: 'Dune', author: 'Herbert', year: 1965 });
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('sees a document another process imported into the directory, though the search was cached', async () => {
    const search = () => client.collections('books').documents().search({ q: 'dune', query_by: 'title', use_cache: true, cache_ttl: 600 } as never) as Promise<{ found: number }>;
    expect((await search()).found).toBe(1);
    expect((await search()).found).toBe(1);
    const r = await cli(['import', 'books', '-', '-d', dir], { input: JSON.stringify({ id: '2', title: 'Dune Messiah', author: 'Herbert', year: 1969 }) + '\n' });
    expect(r.code).toBe(0);
    expect((await search()).found).toBe(2);
  });

  it('answers a multi_search whose searches ask for the cache', async () => {
    const body = { searches: [{ collection: 'books', q: 'dune', query_by: 'title', use_cache: true }, { collection: 'books', q: 'messiah', query_by: 'title' }] };
    const a = (await client.multiSearch.perform(body as never)) as unknown as { results: Array<{ found: number }> };
    const b = (await client.multiSearch.perform(body as never)) as unknown as { results: Array<{ found: number }> };
    expect(a.results.map((x) => x.found)).toEqual([2, 1]);
    expect(b.results.map((x) => x.found)).toEqual([2, 1]);
  });
});
