/**
 * The smaller gaps a Typesense user meets (issue #32), each through `fathom serve` and the
 * official typesense client: facet_by patterns, facet counts under group_by, alias names
 * that need URL encoding, collection creation (read-only attributes, src_name,
 * exclude_fields), facetable object fields, /metrics.json and /debug, the search
 * parameters that are implemented or refused, highlight v2, stopword set names, and the
 * answer of an update by filter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath, rng } from './helpers.js';

const KEY = 'gaps-key';
let server: RunningServer;
let client: Client;
const url = (p: string) => `http://127.0.0.1:${server.port}${p}`;
const call = async (method: string, p: string, body?: unknown) => {
  const res = await fetch(url(p), { method, headers: { 'X-TYPESENSE-API-KEY': KEY, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
};

const r = rng(5);
const ITEMS = Array.from({ length: 60 }, (_, i) => ({
  id: `i${i}`,
  title: `item ${i} ${i % 2 ? 'red lamp' : 'blue chair'}`,
  brand: ['acme', 'globex', 'initech', 'umbrella'][i % 4]!,
  colour_facet: ['red', 'blue', 'green'][Math.floor(r() * 3)]!,
  size_facet: ['s', 'm', 'l'][Math.floor(r() * 3)]!,
  price: Math.floor(r() * 50),
  model: `m${i % 7}`,
}));

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await client.collections().create({
    name: 'items',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'brand', type: 'string', facet: true },
      { name: 'colour_facet', type: 'string', facet: true },
      { name: 'size_facet', type: 'string', facet: true },
      { name: 'price', type: 'int32', facet: true },
      { name: 'model', type: 'string', facet: true },
    ],
  });
  await client.collections('items').documents().import(ITEMS, { action: 'create' });
});

afterAll(async () => {
  await server?.stop();
});

type Facet = { field_name: string; counts: Array<{ value: string; count: number }> };

describe('facets', () => {
  it('facets every facetable field with facet_by=*, and those a pattern matches', async () => {
    const all = await client.collections('items').documents().search({ q: '*', facet_by: '*' });
    expect((all.facet_counts as Facet[]).map((f) => f.field_name).sort()).toEqual(['brand', 'colour_facet', 'model', 'price', 'size_facet']);
    const some = await client.collections('items').documents().search({ q: '*', facet_by: '*_facet,brand' });
    expect((some.facet_counts as Facet[]).map((f) => f.field_name)).toEqual(['colour_facet', 'size_facet', 'brand']);
    const none = await client.collections('items').documents().search({ q: '*', facet_by: 'nothing*' });
    expect(none.facet_counts).toEqual([]);
  });

  it('leaves a field a scoped key hides out of facet_by=*', async () => {
    const parent = await client.keys().create({ description: 's', actions: ['documents:search'], collections: ['items'] });
    const scoped = client.keys().generateScopedSearchKey(parent.value!, { exclude_fields: 'brand' });
    const c = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: scoped, connectionTimeoutSeconds: 5, logLevel: 'silent' });
    const res = await c.collections('items').documents().search({ q: '*', facet_by: '*' });
    expect((res.facet_counts as Facet[]).map((f) => f.field_name)).not.toContain('brand');
  });

  it('counts groups, not documents, for each facet value under group_by (the reference test)', async () => {
    const res = await client.collections('items').documents().search({ q: '*', facet_by: 'brand,colour_facet,price', group_by: 'model', max_facet_values: 100 });
    // the reference: for each value, the distinct models among the documents that have it
    const want = (field: 'brand' | 'colour_facet' | 'price') => {
      const groups = new Map<string, Set<string>>();
      for (const d of ITEMS) {
        const v = String(d[field]);
        if (!groups.has(v)) groups.set(v, new Set());
        groups.get(v)!.add(d.model);
      }
      return [...groups].map(([v, g]) => [v, g.size]).sort();
    };
    for (const f of res.facet_counts as Facet[]) {
      expect(f.counts.map((c) => [c.value, c.count]).sort(), f.field_name).toEqual(want(f.field_name as 'brand' | 'colour_facet' | 'price'));
    }
    // without group_by: documents
    const flat = await client.collections('items').documents().search({ q: '*', facet_by: 'brand' });
    expect((flat.facet_counts as Facet[])[0]!.counts.map((c) => c.count)).toEqual([15, 15, 15, 15]);
  });

  it('makes the leaves of an object field with facet: true facets', async () => {
    await client.collections().create({ name: 'people', enable_nested_fields: true, fields: [{ name: 'name', type: 'string' }, { name: 'address', type: 'object', facet: true }] });
    await client.collections('people').documents().import(
      [
        { id: '1', name: 'ann', address: { city: 'Paris', zip: 75001 } },
        { id: '2', name: 'bob', address: { city: 'Paris', zip: 75002 } },
        { id: '3', name: 'cy', address: { city: 'Lyon', zip: 69001 } },
      ],
      { action: 'create' },
    );
    const res = await client.collections('people').documents().search({ q: '*', facet_by: 'address.city' });
    expect((res.facet_counts as Facet[])[0]!.counts.map((c) => [c.value, c.count])).toEqual([
      ['Paris', 2],
      ['Lyon', 1],
    ]);
    await expect(client.collections('people').documents().search({ q: '*', facet_by: 'address' })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('gives each facet value the object holding it with facet_return_parent', async () => {
    await client.collections().create({ name: 'shops', enable_nested_fields: true, fields: [{ name: 'name', type: 'string' }, { name: 'branches', type: 'object[]', facet: true }] });
    await client.collections('shops').documents().import(
      [
        { id: '1', name: 'north', branches: [{ city: 'Oslo', code: 'OS' }, { city: 'Bergen', code: 'BG' }] },
        { id: '2', name: 'south', branches: [{ city: 'Oslo', code: 'OS' }] },
      ],
      { action: 'create' },
    );
    const res = await call('GET', '/collections/shops/documents/search?q=*&facet_by=branches.city,branches.code&facet_return_parent=branches.city');
    expect(res.status).toBe(200);
    const [city, code] = res.json.facet_counts as Array<{ counts: Array<{ value: string; count: number; parent?: unknown }> }>;
    expect(city!.counts).toEqual([
      { value: 'Oslo', count: 2, highlighted: 'Oslo', parent: { city: 'Oslo', code: 'OS' } },
      { value: 'Bergen', count: 1, highlighted: 'Bergen', parent: { city: 'Bergen', code: 'BG' } },
    ]);
    // only the fields named carry parents
    expect(code!.counts.every((c) => c.parent === undefined)).toBe(true);
    // a scoped key that hides a field hides it in the parents too
    const parent = await client.keys().create({ description: 'search', actions: ['documents:search'], collections: ['shops'] });
    const scoped = client.keys().generateScopedSearchKey(parent.value!, { exclude_fields: 'branches.code' });
    const viaKey = await fetch(url('/collections/shops/documents/search?q=*&facet_by=branches.city&facet_return_parent=branches.city'), { headers: { 'X-TYPESENSE-API-KEY': scoped } });
    expect(viaKey.status).toBe(200);
    const viaKeyCounts = ((await viaKey.json()) as { facet_counts: Array<{ counts: Array<{ parent?: unknown }> }> }).facet_counts[0]!.counts;
    expect(viaKeyCounts.map((c) => c.parent)).toEqual([{ city: 'Oslo' }, { city: 'Bergen' }]);
    // a field not in facet_by is refused
    const bad = await call('GET', '/collections/shops/documents/search?q=*&facet_by=branches.code&facet_return_parent=branches.city');
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('`facet_return_parent`');
  });
});

describe('aliases and collections', () => {
  it('serves alias names with spaces, /, ?, # and %', async () => {
    for (const name of ['my items', 'a/b', 'what?', 'tag#1', '100%']) {
      expect(await client.aliases().upsert(name, { collection_name: 'items' })).toEqual({ name, collection_name: 'items' });
      expect(await client.aliases(name).retrieve()).toEqual({ name, collection_name: 'items' });
      expect((await client.collections(name).documents().search({ q: 'lamp', query_by: 'title' })).found).toBe(30);
      expect(await client.aliases(name).delete()).toEqual({ name, collection_name: 'items' });
    }
  });

  it('ignores read-only attributes in a submitted schema, as a schema copied from GET carries them', async () => {
    const got = await client.collections('items').retrieve();
    const created = await client.collections().create({ ...got, name: 'items_copy' } as never);
    expect(created).toMatchObject({ name: 'items_copy', num_documents: 0 });
    expect(created.fields).toEqual(got.fields);
  });

  it('creates a collection with the schema of another (src_name)', async () => {
    const res = await call('POST', '/collections?src_name=items', { name: 'items_clone' });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ name: 'items_clone', num_documents: 0 });
    expect(res.json.fields).toEqual((await client.collections('items').retrieve()).fields);
    expect((await call('POST', '/collections?src_name=nope', { name: 'x' })).status).toBe(404);
  });

  it('leaves attributes out of GET /collections and /collections/:c with exclude_fields', async () => {
    const list = await call('GET', '/collections?exclude_fields=fields');
    expect(list.json.length).toBeGreaterThan(0);
    for (const c of list.json as unknown as Array<Record<string, unknown>>) {
      expect(c).not.toHaveProperty('fields');
      expect(c).toHaveProperty('num_documents');
    }
    const one = await call('GET', '/collections/items?exclude_fields=fields,created_at');
    expect(one.json).not.toHaveProperty('fields');
    expect(one.json).not.toHaveProperty('created_at');
    expect(one.json.num_documents).toBe(60);
  });
});

describe('operations', () => {
  it('reports the metrics keys the reference clients read', async () => {
    const m = await client.metrics.retrieve();
    for (const k of [
      'system_network_received_bytes',
      'system_network_sent_bytes',
      'typesense_memory_active_bytes',
      'typesense_memory_allocated_bytes',
      'typesense_memory_fragmentation_ratio',
      'typesense_memory_mapped_bytes',
      'typesense_memory_metadata_bytes',
      'typesense_memory_resident_bytes',
      'typesense_memory_retained_bytes',
      'fathom_memory_resident_bytes',
    ]) {
      expect(m, k).toHaveProperty(k);
      expect(Number((m as unknown as Record<string, string>)[k]), k).toBeGreaterThanOrEqual(0);
    }
    expect(Number((m as unknown as Record<string, string>).system_network_received_bytes)).toBeGreaterThan(0);
  });

  it('reports on /debug an API version a client reads as v30, and its own version', async () => {
    const d = (await client.debug.retrieve()) as unknown as { version: string; fathom_version: string };
    // the typesense client's test suite reads the major number this way
    expect(Number(d.version.split('v')[1]!.split('.')[0])).toBe(30);
    expect(d.fathom_version).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('search parameters: implemented, or refused with 400 naming them', () => {
  const search = (p: Record<string, unknown>) => call('GET', `/collections/items/documents/search?${new URLSearchParams({ q: 'lamp', query_by: 'title', ...p } as Record<string, string>)}`);

  it('refuses the values Fathom does not implement, naming the parameter', async () => {
    for (const [k, v] of [
      ['text_match_type', 'sum_score'],
      ['text_match_type', 'nope'],
      // (title was not created with infix: true)
      ['infix', 'always'],
      ['infix', 'fallback'],
      ['infix', 'sometimes'],
      // (one value, or one per query_by field)
      ['infix', 'off,off,off'],
      ['facet_strategy', 'guess'],
      // (not in facet_by)
      ['facet_return_parent', 'address.city'],
    ]) {
      const res = await search({ [k!]: v! });
      expect(res.status, `${k}=${v}`).toBe(400);
      expect(res.json.message, `${k}=${v}`).toContain(`\`${k}\``);
    }
  });

  it('accepts the values it implements, with the same answer as without them', async () => {
    const base = (await search({})).json;
    for (const [k, v] of [
      ['text_match_type', 'max_score'],
      ['prioritize_token_position', 'false'],
      ['infix', 'off'],
      ['facet_strategy', 'top_values'],
      ['facet_strategy', 'exhaustive'],
    ]) {
      const res = await search({ [k!]: v! });
      expect(res.status, `${k}=${v}`).toBe(200);
      expect(res.json.hits.map((h: { document: { id: string } }) => h.document.id)).toEqual(base.hits.map((h: { document: { id: string } }) => h.document.id));
    }
  });

  it('scores a document by its heaviest matching field with text_match_type=max_weight', async () => {
    await client.collections().create({
      name: 'weights',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'body', type: 'string' },
      ],
    });
    // the body holds both words, the title (heavier) only one
    await client.collections('weights').documents().import([{ id: '1', title: 'shoes', body: 'cheap red shoes' }], { action: 'create' });
    const info = async (text_match_type?: string) =>
      ((await client.collections('weights').documents().search({ q: 'red shoes', query_by: 'title,body', query_by_weights: '2,1', ...(text_match_type ? { text_match_type: text_match_type as 'max_score' } : {}) })).hits![0]!
        .text_match_info as { best_field_weight: number });
    expect((await info()).best_field_weight).toBe(1);
    expect((await info('max_score')).best_field_weight).toBe(1);
    expect((await info('max_weight')).best_field_weight).toBe(2);
  });

  it('finds words inside document words in fields created with infix: true (infix=always, fallback)', async () => {
    await client.collections().create({
      name: 'parts',
      fields: [
        { name: 'sku', type: 'string', infix: true },
        { name: 'title', type: 'string' },
      ],
    });
    await client.collections('parts').documents().import(
      [
        { id: 'a', sku: 'XB4000PRO', title: 'a drill' },
        { id: 'b', sku: 'PRO2', title: 'a saw' },
        { id: 'c', sku: 'LX500', title: 'a pro hammer' },
      ],
      { action: 'create' },
    );
    const ids = async (q: string, infix?: string, query_by = 'sku') =>
      (await client.collections('parts').documents().search({ q, query_by, prefix: false, ...(infix ? { infix: infix as 'always' } : {}) })).hits!.map((h) => (h.document as { id: string }).id);
    // off (the default): whole words only
    expect(await ids('4000')).toEqual([]);
    // always: inside words too, whole words first
    expect(await ids('4000', 'always')).toEqual(['a']);
    expect((await ids('pro', 'always')).sort()).toEqual(['a', 'b']);
    // fallback: only when nothing matches as typed
    expect(await ids('4000', 'fallback')).toEqual(['a']);
    expect(await ids('pro', 'fallback,off', 'sku,title')).toEqual(['c']);
    // one mode per query_by field; a whole word ranks above a word found inside another
    expect(await ids('pro', 'always,off', 'sku,title')).toEqual(['c', 'b', 'a']);
    // a field without infix: true is refused
    const res = await call('GET', `/collections/parts/documents/search?q=pro&query_by=title&infix=always`);
    expect(res.status).toBe(400);
    expect(res.json.message).toMatch(/`infix`: field `title` was not created with `infix: true`/);
  });

  it('drops words from both sides for queries of up to N words with drop_tokens_mode=both_sides:N', async () => {
    await client.collections().create({ name: 'drops', fields: [{ name: 't', type: 'string' }] });
    await client.collections('drops').documents().import([{ id: 'head', t: 'alpha beta gamma' }, { id: 'tail', t: 'beta gamma delta' }], { action: 'create' });
    const ids = async (q: string, mode: string) =>
      (await client.collections('drops').documents().search({ q, query_by: 't', prefix: false, drop_tokens_mode: mode as 'both_sides:3' })).hits!.map((h) => (h.document as { id: string }).id).sort();
    // four words: `alpha beta gamma` (the last dropped) and `beta gamma delta` (the first)
    expect(await ids('alpha beta gamma delta', 'both_sides:4')).toEqual(['head', 'tail']);
    // longer than N: right to left only
    expect(await ids('alpha beta gamma delta', 'both_sides:3')).toEqual(['head']);
    expect(await ids('alpha beta gamma delta', 'left_to_right')).toEqual(['tail']);
    for (const bad of ['both_sides:0', 'both_sides', 'both_sides:x']) {
      const res = await call('GET', `/collections/drops/documents/search?q=alpha&query_by=t&drop_tokens_mode=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.json.message, bad).toContain('`drop_tokens_mode`');
    }
  });

  it('with exhaustive_search, finds typo matches even when exact matches were enough', async () => {
    await client.collections().create({ name: 'words', fields: [{ name: 't', type: 'string' }] });
    await client.collections('words').documents().import([{ id: '1', t: 'lamp' }, { id: '2', t: 'lamps' }, { id: '3', t: 'camp' }], { action: 'create' });
    const plain = await client.collections('words').documents().search({ q: 'lamp', query_by: 't', prefix: false });
    expect(plain.hits!.map((h) => (h.document as { id: string }).id)).toEqual(['1']);
    const all = await client.collections('words').documents().search({ q: 'lamp', query_by: 't', prefix: false, exhaustive_search: true });
    expect(all.hits!.map((h) => (h.document as { id: string }).id).sort()).toEqual(['1', '2', '3']);
    expect((all.hits![0]!.document as { id: string }).id).toBe('1');
  });

  it('shapes highlight like the document, and leaves out highlights with enable_highlight_v1=false', async () => {
    const res = await client.collections('items').documents().search({ q: 'lamp', query_by: 'title', per_page: 1, highlight_full_fields: 'title' });
    const h = res.hits![0]!;
    const doc = h.document as { id: string; title: string };
    const marked = doc.title.replace('lamp', '<mark>lamp</mark>');
    // (no top-level `full` or `snippet`: the InstantSearch adapter would take those for the older format)
    expect(h.highlight).toEqual({ title: { matched_tokens: ['lamp'], snippet: marked, value: marked } });
    expect(h.highlights).toHaveLength(1);
    const v2 = await client.collections('items').documents().search({ q: 'lamp', query_by: 'title', per_page: 1, enable_highlight_v1: false });
    expect(v2.hits![0]).not.toHaveProperty('highlights');
    expect(v2.hits![0]!.highlight).toEqual({ title: { matched_tokens: ['lamp'], snippet: marked } });
  });
});

describe('writes', () => {
  it('answers a stopword set with its name', async () => {
    expect(await client.stopwords().upsert('common', { stopwords: ['the'] })).toMatchObject({ id: 'common', stopwords: ['the'] });
    expect(await client.stopwords('common').retrieve()).toMatchObject({ stopwords: { id: 'common' } });
  });

  it('answers an update by filter with the applied fields, coerced, and num_updated', async () => {
    const res = await call('PATCH', '/collections/items/documents?filter_by=brand:=acme&dirty_values=coerce_or_reject', { price: '7' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ price: 7, num_updated: 15 });
    expect((await client.collections('items').documents().search({ q: '*', filter_by: 'price:=7 && brand:=acme' })).found).toBe(15);
  });
});
