/**
 * A scoped search key's bounds hold whatever the request says: its filter_by cannot be
 * escaped by request filter text (unbalanced, nested, joins, backquotes), over GET search
 * and multi_search, and the fields it hides never reach a response.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath } from './helpers.js';

const BOOTSTRAP = 'scoped-bootstrap-key';
let server: RunningServer;
let parent = '';
let scopedGames = '';
let scopedHidden = '';
let scopedInclude = '';
let scopedPreset = '';
const SECTIONS = ['games', 'books', 'music'];

async function get(path: string, key: string) {
  const res = await fetch(`${server.url}${path}`, { headers: { 'x-typesense-api-key': key } });
  return { status: res.status, body: (await res.json()) as any };
}

async function multi(searches: unknown[], key: string, query = '') {
  const res = await fetch(`${server.url}/multi_search${query}`, {
    method: 'POST',
    headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ searches }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: BOOTSTRAP, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  const admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: BOOTSTRAP, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await admin.collections().create({ name: 'studios', fields: [{ name: 'name', type: 'string' }] } as never);
  await admin.collections().create({
    name: 'items',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'section', type: 'string', facet: true },
      { name: 'year', type: 'int32' },
      { name: 'secret', type: 'string', facet: true },
      { name: 'studio_id', type: 'string', reference: 'studios.id', optional: true },
    ],
  } as never);
  await admin.collections('studios').documents().import([
    { id: 's1', name: 'acme' },
    { id: 's2', name: 'globex' },
  ]);
  const docs = Array.from({ length: 60 }, (_, i) => ({
    id: `d${i}`,
    title: `item ${['red', 'blue', 'green'][i % 3]} (edition ${i})`,
    section: SECTIONS[i % 3],
    year: 1980 + i,
    secret: `classified${i}`,
    studio_id: i % 2 ? 's1' : 's2',
  }));
  await admin.collections('items').documents().import(docs);
  // (studios too: a join reaches only collections the key may search, security-joins.test.ts)
  parent = (await admin.keys().create({ description: 'search items', actions: ['documents:search'], collections: ['items', 'studios'] })).value!;
  scopedGames = admin.keys().generateScopedSearchKey(parent, { filter_by: 'section:=games' });
  scopedHidden = admin.keys().generateScopedSearchKey(parent, { filter_by: 'section:=games', exclude_fields: 'secret' });
  scopedInclude = admin.keys().generateScopedSearchKey(parent, { include_fields: 'id,title,section' });
  await admin.presets().upsert('games-only', { value: { filter_by: 'section:=games', exclude_fields: 'secret', per_page: 7 } } as never);
  scopedPreset = admin.keys().generateScopedSearchKey(parent, { preset: 'games-only', per_page: 250 });
});

afterAll(async () => {
  await server?.stop();
});

describe("a scoped key's filter", () => {
  it('cannot be escaped by an unbalanced request filter, over GET search', async () => {
    const r = await get(`/collections/items/documents/search?q=*&per_page=250&filter_by=${encodeURIComponent('id:*) || (id:*')}`, scopedGames);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/filter_by/);
    const ok = await get(`/collections/items/documents/search?q=*&per_page=250&filter_by=${encodeURIComponent('id:* || section:=books')}`, scopedGames);
    expect(ok.status).toBe(200);
    expect(ok.body.found).toBe(20);
    expect(ok.body.hits.every((h: any) => h.document.section === 'games')).toBe(true);
  });

  it('cannot be escaped by an unbalanced request filter, over multi_search and its common parameters', async () => {
    const r = await multi([{ collection: 'items', q: '*', per_page: 250, filter_by: 'id:*) || (id:*' }], scopedGames);
    expect(r.status).toBe(200);
    expect(r.body.results[0].code).toBe(400);
    expect(r.body.results[0].hits).toBeUndefined();
    const common = await multi([{ collection: 'items', q: '*', per_page: 250 }], scopedGames, `?filter_by=${encodeURIComponent('section:=books) || (id:*')}`);
    expect(common.body.results[0].code).toBe(400);
  });

  // Request filters made of pieces that, joined as text with the key's, could reorder it:
  // brackets in and out of balance, ||, joins, backquoted values holding operators.
  const piece = fc.constantFrom(
    'id:*',
    'section:=books',
    'section:=games',
    'section:[books, music]',
    'year:>1999',
    'year:[1980..1990]',
    'title:=`item red (edition 3)`',
    'title:=`x) || (id:*`',
    '$studios(name:=acme)',
    '$studios(id:*)',
    '$studios(id:*) || id:*',
    '(',
    ')',
    ') || (',
    '||',
    '&&',
    '((',
    '))',
  );
  const atom = fc.constantFrom(
    'id:*',
    'section:=books',
    'section:=games',
    'section:!=games',
    'section:[books, music]',
    'year:>1999',
    'year:[1980..1990]',
    'title:=`item red (edition 3)`',
    'title:=`x) || (id:*`',
    '$studios(name:=acme)',
    '$studios(id:*)',
  );
  // well-formed filters, nested: these reach the search, so the key's filter must hold in them
  const { node: wellFormed } = fc.letrec<{ node: string }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      atom,
      fc.tuple(tie('node'), tie('node')).map(([a, b]) => `${a} && ${b}`),
      fc.tuple(tie('node'), tie('node')).map(([a, b]) => `${a} || ${b}`),
      tie('node').map((a) => `(${a})`),
    ),
  }));
  const requestFilter = fc.oneof(
    wellFormed,
    wellFormed,
    fc.array(piece, { minLength: 1, maxLength: 8 }).map((ps) => ps.join(' ')),
    fc.tuple(wellFormed, wellFormed).map(([a, b]) => `${a}) || (${b}`),
  );

  it('holds for every generated request filter: no hit outside it, over GET and multi_search', async () => {
    let answered = 0;
    let withHits = 0;
    await fc.assert(
      fc.asyncProperty(requestFilter, fc.boolean(), async (filter, viaMulti) => {
        let status: number;
        let hits: any[] | undefined;
        if (viaMulti) {
          const r = await multi([{ collection: 'items', q: '*', per_page: 250, filter_by: filter }], scopedGames);
          expect(r.status).toBe(200);
          status = r.body.results[0].code ?? 200;
          hits = r.body.results[0].hits;
        } else {
          const r = await get(`/collections/items/documents/search?q=*&per_page=250&filter_by=${encodeURIComponent(filter)}`, scopedGames);
          status = r.status;
          hits = r.body.hits;
        }
        expect([200, 400]).toContain(status);
        if (status !== 200) return;
        answered++;
        if (hits!.length > 0) withHits++;
        for (const h of hits!) expect(h.document.section).toBe('games');
      }),
      { numRuns: 300, seed: 25 },
    );
    // the property must have been tested on answers that had hits
    expect(answered).toBeGreaterThan(30);
    expect(withHits).toBeGreaterThan(20);
  });
});

describe('a preset a scoped key embeds', () => {
  it("bounds the key as its own parameters would: the request's filter, fields and preset cannot widen it", async () => {
    for (const query of ['', '&filter_by=id:*', '&filter_by=section:=books', '&exclude_fields=title&include_fields=secret,id,section', '&preset=games-only&filter_by=id:*']) {
      const r = await get(`/collections/items/documents/search?q=*${query}`, scopedPreset);
      expect(r.status, query).toBe(200);
      expect(r.body.hits.every((h: any) => h.document.section === 'games'), query).toBe(true);
      expect(JSON.stringify(r.body), query).not.toContain('classified');
    }
    // the key's own parameters win over its preset's
    expect((await get('/collections/items/documents/search?q=*', scopedPreset)).body.found).toBe(20);
    expect((await get('/collections/items/documents/search?q=*', scopedPreset)).body.hits).toHaveLength(20);
    const m = await multi([{ collection: 'items', q: '*', filter_by: 'id:*', exclude_fields: '' }], scopedPreset);
    expect(m.body.results[0].found).toBe(20);
    expect(JSON.stringify(m.body)).not.toContain('classified');
  });
});

describe('fields a scoped key hides', () => {
  it('never appear in documents or highlights, whatever the request includes', async () => {
    const r = await get('/collections/items/documents/search?q=red&query_by=title&include_fields=id,secret,title&highlight_full_fields=title', scopedHidden);
    expect(r.status).toBe(200);
    expect(r.body.found).toBeGreaterThan(0);
    const text = JSON.stringify(r.body);
    expect(text).not.toContain('classified');
  });

  it('cannot be searched, filtered, sorted, faceted, grouped or highlighted', async () => {
    const base = '/collections/items/documents/search?q=*';
    for (const [query, where] of [
      ['&q=classified1&query_by=secret', 'query_by'],
      ['&filter_by=secret:=classified3', 'filter_by'],
      ['&facet_by=secret', 'facet_by'],
      ['&group_by=secret', 'group_by'],
      ['&q=red&query_by=title&highlight_fields=secret', 'highlight_fields'],
    ] as const) {
      const r = await get(base + query, scopedHidden);
      expect(r.status, query).toBe(401);
      expect(r.body.message).toContain(where);
      expect(r.body.message).toContain('secret');
    }
  });

  it("are bounded by the key's include_fields: the request can narrow them, never widen them", async () => {
    const all = await get('/collections/items/documents/search?q=*&include_fields=id,secret,year', scopedInclude);
    expect(all.status).toBe(200);
    expect(Object.keys(all.body.hits[0].document).sort()).toEqual(['id']);
    const some = await get('/collections/items/documents/search?q=*', scopedInclude);
    expect(Object.keys(some.body.hits[0].document).sort()).toEqual(['id', 'section', 'title']);
    const facet = await get('/collections/items/documents/search?q=*&facet_by=secret', scopedInclude);
    expect(facet.status).toBe(401);
  });

  it('are hidden in cached answers too: the cache keeps answers per key bounds', async () => {
    const q = '/collections/items/documents/search?q=*&per_page=250&use_cache=true';
    const admin = await get(q, BOOTSTRAP);
    expect(admin.body.found).toBe(60);
    const scoped = await get(q, scopedGames);
    expect(scoped.body.found).toBe(20);
    expect(JSON.stringify((await get(q, scopedHidden)).body)).not.toContain('classified');
  });
});
