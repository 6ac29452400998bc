/**
 * Union multi-search through `fathom serve`: the official typesense client with
 * `union: true`, the InstantSearch adapter's union mode, and the merged ranking checked
 * against a reference (every search's full answer, concatenated and sorted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import AdapterModule from 'typesense-instantsearch-adapter';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath } from './helpers.js';

let server: RunningServer;
let client: Client;
const KEY = 'union-key';

const POSTS = Array.from({ length: 30 }, (_, i) => ({ id: `p${i}`, user: i % 3 === 0 ? 'stark' : i % 3 === 1 ? 'rogers' : 'banner', title: `post ${i} about ${i % 2 ? 'shields' : 'armour'}`, likes: (i * 37) % 101 }));
const COMMENTS = Array.from({ length: 12 }, (_, i) => ({ id: `c${i}`, user: i % 2 ? 'stark' : 'rogers', title: `comment ${i} on shields`, likes: (i * 53) % 97 }));

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  for (const name of ['posts', 'comments']) {
    await client.collections().create({
      name,
      fields: [
        { name: 'user', type: 'string', facet: true },
        { name: 'title', type: 'string' },
        { name: 'likes', type: 'int32', facet: true },
      ],
    });
  }
  await client.collections('posts').documents().import(POSTS, { action: 'create' });
  await client.collections('comments').documents().import(COMMENTS, { action: 'create' });
});

afterAll(async () => {
  await server?.stop();
});

// the adapter's types pull in instantsearch.js, which a server-side test does not install
type AdapterCtor = new (options: Record<string, unknown>) => { searchClient: { search(requests: unknown): Promise<unknown> } };
const TypesenseInstantSearchAdapter = AdapterModule as unknown as AdapterCtor;

type Doc = { id: string; user: string; title: string; likes: number };
type Union = any;

describe('union multi-search', () => {
  it('merges the searches into one list ranked by their sort, paged at the top level', async () => {
    const searches = [
      { collection: 'posts', q: '*', filter_by: 'user:=stark', sort_by: 'likes:desc' },
      { collection: 'comments', q: '*', filter_by: 'user:=rogers', sort_by: 'likes:desc' },
    ];
    // the reference: every document either search finds, by likes descending (ties: the earlier search)
    const all = [...POSTS.filter((d) => d.user === 'stark').map((d) => ({ ...d, s: 0 })), ...COMMENTS.filter((d) => d.user === 'rogers').map((d) => ({ ...d, s: 1 }))];
    const want = all.sort((a, b) => b.likes - a.likes || a.s - b.s);
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const r: Union = await client.multiSearch.perform({ union: true, searches } as never, { page, per_page: 6 } as never);
      expect(r.found).toBe(want.length);
      expect(r.page).toBe(page);
      expect(r.hits.map((h: { document: Doc }) => h.document.id)).toEqual(want.slice((page - 1) * 6, page * 6).map((d) => d.id));
      for (const h of r.hits) {
        expect(h.collection).toBe(h.document.id.startsWith('p') ? 'posts' : 'comments');
        expect(h.search_index).toBe(h.collection === 'posts' ? 0 : 1);
        seen.push(h.document.id);
      }
      expect(r.union_request_params).toHaveLength(2);
      expect(r.union_request_params[0]).toMatchObject({ collection: 'posts', q: '*', per_page: 6, found: 10 });
      expect(r.union_request_params[1]).toMatchObject({ collection: 'comments', found: 6 });
      expect(r.results).toBeUndefined();
    }
    expect(seen).toHaveLength(want.length);
  });

  it('ranks text matches across collections by text_match, ignores per-search paging, and counts facets per search', async () => {
    const r: Union = await client.multiSearch.perform(
      {
        union: true,
        searches: [
          { collection: 'posts', q: 'shields', query_by: 'title', facet_by: 'user', per_page: 1, page: 3 },
          { collection: 'comments', q: 'shields', query_by: 'title', facet_by: 'user,likes' },
        ],
      } as never,
      { per_page: 50 } as never,
    );
    expect(r.found).toBe(15 + 12);
    expect(r.hits).toHaveLength(27);
    const scores = r.hits.map((h: { text_match: number }) => h.text_match);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const facets = r.facet_counts.map((f: { field_name: string; search_index: number; collection: string }) => [f.search_index, f.collection, f.field_name]);
    expect(facets).toEqual([
      [0, 'posts', 'user'],
      [1, 'comments', 'user'],
      [1, 'comments', 'likes'],
    ]);
    expect(r.facet_counts[1].counts.map((c: { value: string; count: number }) => [c.value, c.count]).sort()).toEqual([
      ['rogers', 6],
      ['stark', 6],
    ]);
  });

  it('removes a document two searches both find, unless remove_duplicates is false', async () => {
    const searches = [
      { collection: 'posts', q: '*', filter_by: 'likes:>50', sort_by: 'likes:desc' },
      { collection: 'posts', q: '*', filter_by: 'likes:>70', sort_by: 'likes:desc' },
    ];
    const once: Union = await client.multiSearch.perform({ union: true, searches } as never, { per_page: 100 } as never);
    const ids = once.hits.map((h: { document: Doc }) => h.document.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(POSTS.filter((d) => d.likes > 50).sort((a, b) => b.likes - a.likes).map((d) => d.id));
    const res = await fetch(`http://127.0.0.1:${server.port}/multi_search?per_page=100`, {
      method: 'POST',
      headers: { 'X-TYPESENSE-API-KEY': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ union: true, remove_duplicates: false, searches }),
    });
    const twice = (await res.json()) as Union;
    expect(twice.hits.length).toBe(POSTS.filter((d) => d.likes > 50).length + POSTS.filter((d) => d.likes > 70).length);
  });

  it('refuses searches whose sorts cannot be merged, and group_by, with 400 naming the problem', async () => {
    await expect(
      client.multiSearch.perform({
        union: true,
        searches: [
          { collection: 'posts', q: '*', sort_by: 'likes:desc' },
          { collection: 'comments', q: '*', sort_by: 'likes:asc' },
        ],
      } as never),
    ).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/same types, in the same order and directions/) });
    await expect(client.multiSearch.perform({ union: true, searches: [{ collection: 'posts', q: '*', group_by: 'user' }] } as never)).rejects.toMatchObject({
      httpStatus: 400,
      message: expect.stringMatching(/group_by/),
    });
    await expect(client.multiSearch.perform({ union: true, searches: [{ collection: 'nope', q: '*' }] } as never)).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('gives the InstantSearch adapter in union mode one merged result', async () => {
    const adapter = new TypesenseInstantSearchAdapter({
      server: { apiKey: KEY, nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }] },
      additionalSearchParameters: { query_by: 'title', sort_by: 'likes:desc' },
      union: true,
    });
    const { results } = (await adapter.searchClient.search([
      { indexName: 'posts', params: { query: 'shields', hitsPerPage: 5, page: 0 } },
      { indexName: 'comments', params: { query: 'shields', hitsPerPage: 5, page: 0 } },
    ] as never)) as { results: Array<{ hits: Array<Doc & { collection: string }>; nbHits: number }> };
    expect(results).toHaveLength(2);
    expect(results[0]).toBe(results[1]);
    expect(results[0]!.nbHits).toBe(27);
    const want = [...POSTS.filter((d) => d.title.includes('shields')), ...COMMENTS].sort((a, b) => b.likes - a.likes).slice(0, 5);
    expect(results[0]!.hits.map((h) => h.id)).toEqual(want.map((d) => d.id));
    expect(new Set(results[0]!.hits.map((h) => h.collection))).toEqual(new Set(want.map((d) => (d.id.startsWith('p') ? 'posts' : 'comments'))));
  });
});
