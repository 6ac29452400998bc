/**
 * limit_hits through `fathom serve` and the official typesense client: no hit ranked beyond
 * it is ever returned (a page reaching past it is cut, a page starting past it is refused
 * with 422), `found` still counts every match, and a scoped key that embeds it bounds every
 * search made with it: GET search, multi_search and union alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { cli, dataDirPath } from './helpers.js';

const ADMIN = 'limit-hits-admin';
const TOTAL = 50;
const SECTIONS = ['a', 'b', 'c', 'd', 'e'];
const REFUSED = (n: number) => `Only upto ${n} hits can be fetched. Ensure that \`page\` and \`per_page\` parameters are within this range.`;

let server: RunningServer;
let dataDir = '';
let admin: Client;
let parent = '';

async function get(query: string, key = ADMIN) {
  const res = await fetch(`${server.url}/collections/items/documents/search?${query}`, { headers: { 'x-typesense-api-key': key } });
  return { status: res.status, body: (await res.json()) as any };
}

async function multi(body: Record<string, unknown>, key = ADMIN, query = '') {
  const res = await fetch(`${server.url}/multi_search${query}`, {
    method: 'POST',
    headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** The ranks of a page's hits (the documents sort by rank: rank r is position r + 1). */
const ranks = (body: any): number[] => body.hits.map((h: any) => h.document.rank);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

beforeAll(async () => {
  dataDir = dataDirPath();
  server = await startServer({ dataDir, apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: ADMIN, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await admin.collections().create({
    name: 'items',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'section', type: 'string', facet: true },
      { name: 'rank', type: 'int32' },
    ],
  });
  await admin.collections('items').documents().import(
    range(0, TOTAL).map((i) => ({ id: `d${i}`, title: `item ${i}`, section: SECTIONS[i % SECTIONS.length], rank: i })),
    { action: 'create' },
  );
  await admin.presets().upsert('capped', { value: { limit_hits: 4 } } as never);
  parent = (await admin.keys().create({ description: 'search items', actions: ['documents:search'], collections: ['items'] })).value!;
});

afterAll(async () => {
  await server?.stop();
});

describe('limit_hits in a search', () => {
  it('cuts the page that reaches past it, and leaves found counting every match', async () => {
    const r = await admin.collections('items').documents().search({ q: '*', sort_by: 'rank:asc', limit_hits: 25, per_page: 10, page: 3 } as never);
    expect(r.found).toBe(TOTAL);
    expect(r.hits!.map((h: any) => h.document.rank)).toEqual(range(20, 25));
    const first = await admin.collections('items').documents().search({ q: '*', sort_by: 'rank:asc', limit_hits: 25, per_page: 10, page: 1 } as never);
    expect(first.hits!.map((h: any) => h.document.rank)).toEqual(range(0, 10));
  });

  it('refuses a page that starts past it with 422 and the reference message', async () => {
    await expect(admin.collections('items').documents().search({ q: '*', sort_by: 'rank:asc', limit_hits: 25, per_page: 10, page: 4 } as never)).rejects.toMatchObject({
      httpStatus: 422,
      message: expect.stringContaining(REFUSED(25)),
    });
    const r = await get('q=*&limit_hits=25&per_page=5&page=6');
    expect(r.status).toBe(422);
    expect(r.body).toEqual({ message: REFUSED(25) });
  });

  it('returns, over every page and page size, exactly the hits ranked up to it', async () => {
    for (const perPage of [1, 3, 7, 10, 25, 40]) {
      const seen: number[] = [];
      for (let page = 1; ; page++) {
        const r = await get(`q=*&sort_by=rank:asc&limit_hits=25&per_page=${perPage}&page=${page}`);
        if ((page - 1) * perPage >= 25) {
          expect(r.status, `per_page ${perPage} page ${page}`).toBe(422);
          break;
        }
        expect(r.status).toBe(200);
        expect(r.body.found).toBe(TOTAL);
        seen.push(...ranks(r.body));
      }
      expect(seen, `per_page ${perPage}`).toEqual(range(0, 25));
    }
  });

  it('bounds offset and limit paging the same way', async () => {
    const r = await get('q=*&sort_by=rank:asc&limit_hits=25&offset=20&limit=10');
    expect(r.status).toBe(200);
    expect(ranks(r.body)).toEqual(range(20, 25));
    expect((await get('q=*&limit_hits=25&offset=25&limit=1')).status).toBe(422);
  });

  it('counts groups under group_by, as per_page and found do there', async () => {
    const r = await get('q=*&sort_by=rank:asc&group_by=section&group_limit=2&limit_hits=3&per_page=2&page=2');
    expect(r.status).toBe(200);
    expect(r.body.found).toBe(SECTIONS.length);
    expect(r.body.grouped_hits.map((g: any) => g.group_key)).toEqual([['c']]);
    expect((await get('q=*&group_by=section&limit_hits=3&per_page=2&page=3')).status).toBe(422);
  });

  it('refuses a value that is not a whole number from 1 with 400 naming it', async () => {
    for (const v of ['0', '-1', '2.5', 'many']) {
      const r = await get(`q=*&limit_hits=${v}`);
      expect(r.status, v).toBe(400);
      expect(r.body.message, v).toMatch(/`limit_hits`/);
    }
    const m = await multi({ searches: [{ collection: 'items', q: '*', limit_hits: 0 }] });
    expect(m.body.results[0]).toMatchObject({ code: 400, error: expect.stringMatching(/`limit_hits`/) });
    const u = await multi({ union: true, searches: [{ collection: 'items', q: '*', limit_hits: 1.5 }] });
    expect(u.status).toBe(400);
    expect(u.body.message).toMatch(/`limit_hits`/);
  });

  it('applies to each multi_search entry on its own', async () => {
    const m = await multi({
      searches: [
        { collection: 'items', q: '*', sort_by: 'rank:asc', limit_hits: 5, per_page: 10 },
        { collection: 'items', q: '*', sort_by: 'rank:asc', per_page: 10 },
        { collection: 'items', q: '*', limit_hits: 5, per_page: 5, page: 2 },
      ],
    });
    expect(ranks(m.body.results[0])).toEqual(range(0, 5));
    expect(m.body.results[0].found).toBe(TOTAL);
    expect(ranks(m.body.results[1])).toEqual(range(0, 10));
    expect(m.body.results[2]).toEqual({ code: 422, error: REFUSED(5) });
  });

  it('comes from a preset the search names', async () => {
    const r = await get('q=*&sort_by=rank:asc&preset=capped&per_page=10');
    expect(ranks(r.body)).toEqual(range(0, 4));
    expect((await get('q=*&preset=capped&per_page=4&page=2')).status).toBe(422);
  });
});

describe('limit_hits in a union', () => {
  const bySection = (s: string, extra: Record<string, unknown> = {}) => ({ collection: 'items', q: '*', filter_by: `section:=${s}`, sort_by: 'rank:asc', ...extra });

  it("keeps the merged list within any search's own limit_hits, and found whole", async () => {
    const r = await multi({ union: true, searches: [bySection('a', { limit_hits: 3 }), bySection('b')] }, ADMIN, '?per_page=20');
    expect(r.status).toBe(200);
    expect(ranks(r.body)).toEqual([0, 1, 5]);
    expect(r.body.found).toBe(20);
    const p2 = await multi({ union: true, searches: [bySection('a', { limit_hits: 3 }), bySection('b')] }, ADMIN, '?per_page=2&page=2');
    expect(ranks(p2.body)).toEqual([5]);
    const p3 = await multi({ union: true, searches: [bySection('a', { limit_hits: 3 }), bySection('b')] }, ADMIN, '?per_page=2&page=3');
    expect(p3.status).toBe(422);
    expect(p3.body.message).toBe(REFUSED(3));
  });

  it("keeps to the request's own limit_hits, in the query string or the body", async () => {
    const q = await multi({ union: true, searches: [bySection('a'), bySection('b')] }, ADMIN, '?per_page=20&limit_hits=4');
    expect(ranks(q.body)).toEqual([0, 1, 5, 6]);
    const b = await multi({ union: true, limit_hits: 4, per_page: 20, searches: [bySection('a'), bySection('b')] });
    expect(ranks(b.body)).toEqual([0, 1, 5, 6]);
    expect(b.body.found).toBe(20);
  });
});

describe('a scoped key embedding limit_hits', () => {
  it('bounds GET search, whatever limit_hits, page or offset the request sends', async () => {
    const key = admin.keys().generateScopedSearchKey(parent, { limit_hits: 5 });
    const r = await get('q=*&sort_by=rank:asc&limit_hits=1000&per_page=50', key);
    expect(r.status).toBe(200);
    expect(ranks(r.body)).toEqual(range(0, 5));
    expect(r.body.found).toBe(TOTAL);
    for (const query of ['per_page=5&page=2&limit_hits=1000', 'offset=5&limit=5&limit_hits=1000', 'per_page=1&page=6&limit_hits=']) {
      const beyond = await get(`q=*&${query}`, key);
      expect(beyond.status, query).toBe(422);
      expect(beyond.body.message).toBe(REFUSED(5));
    }
    // a cached answer for a wider search is never the key's
    await get('q=*&sort_by=rank:asc&per_page=50&use_cache=true');
    expect(ranks((await get('q=*&sort_by=rank:asc&per_page=50&use_cache=true', key)).body)).toEqual(range(0, 5));
  });

  it('bounds every multi_search entry, over its own and the common limit_hits', async () => {
    const key = admin.keys().generateScopedSearchKey(parent, { limit_hits: 5 });
    const m = await multi(
      {
        searches: [
          { collection: 'items', q: '*', sort_by: 'rank:asc', per_page: 50, limit_hits: 1000 },
          { collection: 'items', q: '*', sort_by: 'rank:asc', per_page: 50 },
          { collection: 'items', q: '*', per_page: 5, page: 2, limit_hits: 1000 },
        ],
      },
      key,
      '?limit_hits=1000',
    );
    expect(ranks(m.body.results[0])).toEqual(range(0, 5));
    expect(ranks(m.body.results[1])).toEqual(range(0, 5));
    expect(m.body.results[2]).toEqual({ code: 422, error: REFUSED(5) });
  });

  it("bounds a union's merged list, whatever limit_hits its request or searches send", async () => {
    const key = admin.keys().generateScopedSearchKey(parent, { limit_hits: 5 });
    const searches = ['a', 'b', 'c'].map((s) => ({ collection: 'items', q: '*', filter_by: `section:=${s}`, sort_by: 'rank:asc', limit_hits: 1000 }));
    const r = await multi({ union: true, limit_hits: 1000, searches }, key, '?per_page=50&limit_hits=1000');
    expect(r.status).toBe(200);
    expect(ranks(r.body)).toEqual([0, 1, 2, 5, 6]);
    expect(r.body.found).toBe(30);
    const beyond = await multi({ union: true, searches }, key, '?per_page=5&page=2&limit_hits=1000');
    expect(beyond.status).toBe(422);
    expect(beyond.body.message).toBe(REFUSED(5));
  });

  it('counts groups under group_by, and with group_limit 1 embedded too bounds the documents there', async () => {
    const groups = admin.keys().generateScopedSearchKey(parent, { limit_hits: 3 });
    const g = await get('q=*&sort_by=rank:asc&group_by=section&group_limit=4&per_page=10', groups);
    expect(g.body.grouped_hits.map((x: any) => x.hits.length)).toEqual([4, 4, 4]);
    const docs = admin.keys().generateScopedSearchKey(parent, { limit_hits: 3, group_limit: 1 });
    const d = await get('q=*&sort_by=rank:asc&group_by=section&group_limit=99&per_page=10', docs);
    expect(d.body.grouped_hits.flatMap((x: any) => x.hits.map((h: any) => h.document.rank))).toEqual([0, 1, 2]);
  });

  it('holds when it comes from a preset the key embeds', async () => {
    const key = admin.keys().generateScopedSearchKey(parent, { preset: 'capped' });
    const r = await get('q=*&sort_by=rank:asc&limit_hits=1000&per_page=50', key);
    expect(ranks(r.body)).toEqual(range(0, 4));
    const u = await multi({ union: true, limit_hits: 1000, searches: [{ collection: 'items', q: '*', sort_by: 'rank:asc', limit_hits: 1000 }] }, key, '?per_page=50');
    expect(ranks(u.body)).toEqual(range(0, 4));
  });
});

describe('fathom search --limit-hits', () => {
  it('cuts the page, and refuses a page past it with a one-line message and a non-zero exit', async () => {
    const ok = await cli(['search', 'items', '--sort-by', 'rank:asc', '--limit-hits', '3', '--per-page', '10', '--json', '-d', dataDir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ranks(JSON.parse(ok.stdout))).toEqual([0, 1, 2]);
    const beyond = await cli(['search', 'items', '--limit-hits', '3', '--page', '2', '--per-page', '3', '-d', dataDir]);
    expect(beyond.code).not.toBe(0);
    expect(beyond.stderr.trim()).toBe(`error: ${REFUSED(3)}`);
  });
});
