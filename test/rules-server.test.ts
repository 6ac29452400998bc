/**
 * Synonyms, curation and presets through `fathom serve`, driven by the official `typesense`
 * client in both of its API generations: per-collection synonyms and overrides (Typesense
 * <= 29) and synonym sets and curation sets (30), presets, key actions, scoped keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import AdapterModule from 'typesense-instantsearch-adapter';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath } from './helpers.js';

const ADMIN = 'rules-admin-key';
let server: RunningServer;
let client: Client;

function clientWith(apiKey: string): Client {
  return new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey, connectionTimeoutSeconds: 5, logLevel: 'silent' });
}

async function call(method: string, path: string, body?: unknown, key = ADMIN) {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method,
    headers: { 'x-typesense-api-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json()) as any };
}

const PRODUCTS = [
  { id: '1', title: 'Winter coat', brand: 'North', in_stock: true },
  { id: '2', title: 'Blazer for men', brand: 'Tailor', in_stock: true },
  { id: '3', title: 'Leather jacket', brand: 'North', in_stock: false },
  { id: '4', title: 'iPhone 12', brand: 'Apple', in_stock: true },
  { id: '5', title: 'Samsung smart phone', brand: 'Samsung', in_stock: false },
  { id: '6', title: 'Smart watch', brand: 'Apple', in_stock: true },
];
const SCHEMA = {
  name: 'products',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'brand', type: 'string', facet: true },
    { name: 'in_stock', type: 'bool' },
  ],
};

const search = async (c: Client, params: Record<string, unknown>, collection = 'products') =>
  (await c.collections(collection).documents().search({ query_by: 'title', ...params } as never)) as any;
const ids = (r: any): string[] => r.hits.map((h: any) => h.document.id);

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = clientWith(ADMIN);
  await client.collections().create(SCHEMA as never);
  await client.collections().create({ ...SCHEMA, name: 'other' } as never);
  await client.collections('products').documents().import(PRODUCTS, { action: 'create' });
  await client.collections('other').documents().import(PRODUCTS, { action: 'create' });
});

afterAll(async () => {
  await server?.stop();
});

describe('synonyms, Typesense <= 29: per collection', () => {
  it('upserts, lists, retrieves and deletes a collection\'s synonyms', async () => {
    const s = await client.collections('products').synonyms().upsert('coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect(s).toEqual({ id: 'coats', root: '', synonyms: ['blazer', 'coat', 'jacket'] });
    await client.collections('products').synonyms().upsert('phones', { root: 'smart phone', synonyms: ['iphone'] });
    expect((await client.collections('products').synonyms().retrieve()).synonyms.map((x) => x.id)).toEqual(['coats', 'phones']);
    expect(await client.collections('products').synonyms('phones').retrieve()).toEqual({ id: 'phones', root: 'smart phone', synonyms: ['iphone'] });
    expect(ids(await search(client, { q: 'coat' })).sort()).toEqual(['1', '2', '3']);
    expect(ids(await search(client, { q: 'smart phone' })).slice(0, 2).sort()).toEqual(['4', '5']);
    // the other collection has synonyms of its own: none
    expect(ids(await search(client, { q: 'coat' }, 'other'))).toEqual(['1']);
    expect(await client.collections('products').synonyms('phones').delete()).toEqual({ id: 'phones' });
    await expect(client.collections('products').synonyms('phones').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
    expect(ids(await search(client, { q: 'smart phone' }))).toEqual(['5']);
  });

  it('refuses a malformed synonym with a precise 400', async () => {
    await expect(client.collections('products').synonyms().upsert('one', { synonyms: ['coat'] })).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/at least two words/) });
    const r = await call('PUT', '/collections/products/synonyms/x', { synonyms: 'coat' });
    expect(r).toEqual({ status: 400, json: { message: '`synonyms` must be a non-empty array of words or phrases' } });
    expect((await call('PUT', '/collections/nope/synonyms/x', { synonyms: ['a', 'b'] })).status).toBe(404);
  });
});

describe('synonym sets, Typesense 30', () => {
  it('upserts, lists and retrieves sets and their items, and links them to collections', async () => {
    const set = await client.synonymSets('clothing').upsert({ items: [{ id: 'watches', synonyms: ['watch', 'clock'] }] });
    expect(set).toEqual({ name: 'clothing', items: [{ id: 'watches', root: '', synonyms: ['watch', 'clock'] }] });
    expect(await client.synonymSets().retrieve()).toEqual([set]);
    expect(await client.synonymSets('clothing').items().upsert('tech', { synonyms: ['iphone', 'apple phone'] })).toEqual({ id: 'tech', root: '', synonyms: ['iphone', 'apple phone'] });
    expect((await client.synonymSets('clothing').items().retrieve()).map((i) => i.id)).toEqual(['watches', 'tech']);
    expect(await client.synonymSets('clothing').items('tech').retrieve()).toEqual({ id: 'tech', root: '', synonyms: ['iphone', 'apple phone'] });
    // not linked: a search that names the set uses it
    expect(ids(await search(client, { q: 'clock' }))).toEqual([]);
    expect(ids(await search(client, { q: 'clock', synonym_sets: 'clothing' }))).toEqual(['6']);
    // linked by PATCH
    const patched = await client.collections('other').update({ synonym_sets: ['clothing'] } as never);
    expect(patched).toMatchObject({ synonym_sets: ['clothing'] });
    expect((await client.collections('other').retrieve()) as any).toMatchObject({ synonym_sets: ['clothing'] });
    expect(ids(await search(client, { q: 'clock' }, 'other'))).toEqual(['6']);
    // linked at creation
    await client.collections().create({ ...SCHEMA, name: 'linked', synonym_sets: ['clothing'] } as never);
    await client.collections('linked').documents().import(PRODUCTS, { action: 'create' });
    expect(ids(await search(client, { q: 'clock' }, 'linked'))).toEqual(['6']);
    expect(await client.synonymSets('clothing').items('tech').delete()).toEqual({ id: 'tech' });
    await expect(client.synonymSets('clothing').items('tech').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('refuses links to sets that do not exist, and malformed sets, with 400', async () => {
    await expect(client.collections('other').update({ synonym_sets: ['nope'] } as never)).rejects.toMatchObject({ httpStatus: 400 });
    const r = await call('PUT', '/synonym_sets/bad', { items: [{ id: 'a', synonyms: ['x'] }] });
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(/^items\[0\] \(`a`\): a multi-way synonym needs at least two/);
    expect((await call('PUT', '/synonym_sets/bad/items/a', { synonyms: ['x', 'y'] })).status).toBe(404);
    expect((await call('GET', '/synonym_sets/nope')).status).toBe(404);
  });

  it('deletes a set', async () => {
    await client.synonymSets('gone').upsert({ items: [] });
    expect(await client.synonymSets('gone').delete()).toEqual({ name: 'gone' });
    await expect(client.synonymSets('gone').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });
});

describe('curation, Typesense <= 29: overrides', () => {
  it('upserts, lists, retrieves and deletes overrides, and a search shows what they do', async () => {
    const o = await client.collections('products').overrides().upsert('apple', {
      rule: { query: 'watch', match: 'exact' },
      includes: [{ id: '2', position: 1 }],
      excludes: [{ id: '6' }],
      metadata: { banner: 'Watch week' },
    });
    expect(o).toMatchObject({ id: 'apple', rule: { query: 'watch', match: 'exact' } });
    expect((await client.collections('products').overrides().retrieve()).overrides.map((x) => x.id)).toEqual(['apple']);
    expect(await client.collections('products').overrides('apple').retrieve()).toEqual(o);
    const r = await search(client, { q: 'watch', synonym_sets: '' });
    expect(ids(r)).toEqual(['2']);
    expect(r.hits[0].curated).toBe(true);
    expect(r.metadata).toEqual({ banner: 'Watch week' });
    expect(await client.collections('products').overrides('apple').delete()).toEqual({ id: 'apple' });
    expect(ids(await search(client, { q: 'watch' }))).toEqual(['6']);
  });

  it('refuses malformed rules with a precise 400', async () => {
    await expect(
      client.collections('products').overrides().upsert('bad', { rule: { query: 'a', match: 'exact' }, includes: [{ id: '1', position: 0 }] }),
    ).rejects.toMatchObject({ httpStatus: 400, message: expect.stringMatching(/position` must be a whole number from 1/) });
    expect((await call('PUT', '/collections/products/overrides/bad', { rule: { query: 'a', match: 'sometimes' }, excludes: [{ id: '1' }] })).status).toBe(400);
  });
});

describe('curation sets, Typesense 30', () => {
  it('upserts sets and items, links them, and a search applies them', async () => {
    const set = await client.curationSets('promos').upsert({ items: [{ id: 'coat', rule: { query: 'coat', match: 'exact' }, includes: [{ id: '4', position: 1 }] }] });
    expect(set).toMatchObject({ name: 'promos', items: [{ id: 'coat' }] });
    expect((await client.curationSets().retrieve()).map((s) => s.name)).toEqual(['promos']);
    expect(await client.curationSets('promos').items('hide').upsert({ rule: { query: 'coat', match: 'exact' }, excludes: [{ id: '3' }] } as never)).toMatchObject({ id: 'hide' });
    expect((await client.curationSets('promos').items().retrieve()).map((i) => i.id)).toEqual(['coat', 'hide']);
    expect(await client.curationSets('promos').items('hide').retrieve()).toMatchObject({ id: 'hide', excludes: [{ id: '3' }] });
    await client.collections('other').update({ curation_sets: ['promos'] } as never);
    const r = await search(client, { q: 'coat' }, 'other');
    expect(ids(r)[0]).toBe('4');
    expect(r.hits[0].curated).toBe(true);
    expect(await client.curationSets('promos').items('coat').delete()).toEqual({ id: 'coat' });
    expect(await client.curationSets('promos').delete()).toEqual({ name: 'promos' });
    // a linked set deleted since: searches go on without it
    expect(ids(await search(client, { q: 'coat' }, 'other'))).toEqual(['1']);
  });
});

// the adapter's types pull in instantsearch.js, which a server-side test does not install
type AdapterCtor = new (options: Record<string, unknown>) => { searchClient: { search(requests: unknown): Promise<unknown> } };
const TypesenseInstantSearchAdapter = AdapterModule as unknown as AdapterCtor;

/** An InstantSearch page's data loader: its curation set, and the collection that links it. */
async function loadShop(c: Client): Promise<void> {
  await c.curationSets('shop-promos').upsert({
    items: [{ id: 'coat-week', rule: { query: 'coat', match: 'contains' }, includes: [{ id: '3', position: 1 }], excludes: [{ id: '2' }], metadata: { banner: 'Coat week' } }],
  } as never);
  await c.collections().create({ ...SCHEMA, name: 'shop', curation_sets: ['shop-promos'] } as never);
  await c.collections('shop').documents().import(PRODUCTS, { action: 'create' });
}

describe('an InstantSearch page', () => {
  it('shows what the curation set its data loader created says: pinned and hidden hits, and queryRuleCustomData', async () => {
    await loadShop(client);
    await client.synonymSets('shop-words').upsert({ items: [{ id: 'coats', synonyms: ['coat', 'blazer'] }] });
    await client.collections('shop').update({ synonym_sets: ['shop-words'] } as never);
    const adapter = new TypesenseInstantSearchAdapter({
      server: { apiKey: ADMIN, nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }] },
      additionalSearchParameters: { query_by: 'title' },
    });
    type Page = { hits: Array<{ id: string; curated?: boolean }>; nbHits: number; userData?: unknown[]; appliedRules?: string[] };
    const search = async (query: string) => ((await adapter.searchClient.search([{ indexName: 'shop', params: { query, hitsPerPage: 5, page: 0 } }] as never)) as { results: Page[] }).results[0]!;
    const page = await search('coat');
    // the leather jacket pinned first, the blazer (a synonym's match) hidden, the winter coat after
    expect(page.hits.map((h) => h.id)).toEqual(['3', '1']);
    expect(page.hits[0]!.curated).toBe(true);
    expect(page.hits[1]!.curated).toBeUndefined();
    expect(page.nbHits).toBe(2);
    expect(page.userData).toEqual([{ banner: 'Coat week' }]);
    expect(page.appliedRules).toEqual(['typesense-override']);
    // a query no rule matches: the synonym finds the blazer, and there is no custom data
    const plain = await search('blazer');
    expect(plain.hits.map((h) => h.id).sort()).toEqual(['1', '2']);
    expect(plain.userData).toBeUndefined();
  });
});

describe('presets', () => {
  it('upserts, lists, retrieves and deletes presets', async () => {
    const p = await client.presets().upsert('in-stock', { value: { query_by: 'title', filter_by: 'in_stock:true', per_page: 2 } } as never);
    expect(p).toEqual({ name: 'in-stock', value: { query_by: 'title', filter_by: 'in_stock:true', per_page: 2 } });
    expect((await client.presets().retrieve()).presets.map((x) => x.name)).toEqual(['in-stock']);
    expect(await client.presets('in-stock').retrieve()).toEqual(p);
    await client.presets().upsert('tmp', { value: { q: '*' } } as never);
    expect(await client.presets('tmp').delete()).toEqual({ name: 'tmp' });
  });

  it('applies a preset to search and multi_search, the request\'s own parameters winning', async () => {
    const r = await client.collections('products').documents().search({ q: 'smart', preset: 'in-stock' } as never);
    expect(ids(r)).toEqual(['6']);
    const wider = await client.collections('products').documents().search({ q: 'smart', preset: 'in-stock', filter_by: 'in_stock:false' } as never);
    expect(ids(wider)).toEqual(['5']);
    const m = (await client.multiSearch.perform({ searches: [{ collection: 'products', q: 'smart', preset: 'in-stock' }] } as never)) as any;
    expect(ids(m.results[0])).toEqual(['6']);
    await client.presets().upsert('phones', { value: { collection: 'products', q: 'smart', query_by: 'title' } } as never);
    const viaPreset = (await client.multiSearch.perform({ searches: [{ preset: 'phones' }] } as never)) as any;
    expect(ids(viaPreset.results[0]).sort()).toEqual(['5', '6']);
  });

  it('runs the searches of a multi_search preset', async () => {
    await client.presets().upsert('two', { value: { searches: [{ collection: 'products', q: 'coat', query_by: 'title' }, { collection: 'other', q: 'watch', query_by: 'title' }] } } as never);
    const r = await call('POST', '/multi_search?preset=two', { searches: [] });
    expect(r.status).toBe(200);
    expect(r.json.results).toHaveLength(2);
  });

  it('refuses a preset that names itself, or that does not exist, with 400', async () => {
    const self = await call('PUT', '/presets/loop', { value: { preset: 'loop', q: '*' } });
    expect(self).toEqual({ status: 400, json: { message: 'the preset names itself (`preset: "loop"`)' } });
    await client.presets().upsert('a', { value: { preset: 'b' } } as never);
    await client.presets().upsert('b', { value: { preset: 'a' } } as never);
    const loop = await call('GET', '/collections/products/documents/search?q=*&preset=a');
    expect(loop).toEqual({ status: 400, json: { message: 'presets name each other in a loop: `a` -> `b` -> `a`' } });
    const none = await call('GET', '/collections/products/documents/search?q=*&preset=nope');
    expect(none).toEqual({ status: 400, json: { message: 'preset `nope` not found' } });
    const multi = await call('POST', '/multi_search', { searches: [{ collection: 'products', q: '*', preset: 'nope' }] });
    expect(multi.json.results[0]).toEqual({ code: 400, error: 'preset `nope` not found' });
  });
});

describe('keys', () => {
  it('scopes synonyms:* and overrides:* by collection, sets and presets by action', async () => {
    const k = await client.keys().create({ description: 'syn', actions: ['synonyms:*', 'overrides:list'], collections: ['products'] });
    const c = clientWith(k.value!);
    await c.collections('products').synonyms().upsert('k', { synonyms: ['a', 'b'] });
    await expect(c.collections('other').synonyms().upsert('k', { synonyms: ['a', 'b'] })).rejects.toMatchObject({ httpStatus: 401 });
    expect((await c.collections('products').overrides().retrieve()).overrides).toBeDefined();
    await expect(c.collections('products').overrides().upsert('k', { rule: { query: 'a', match: 'exact' }, excludes: [{ id: '1' }] })).rejects.toMatchObject({ httpStatus: 401 });
    await expect(c.synonymSets().retrieve()).rejects.toMatchObject({ httpStatus: 401 });
    await expect(c.presets().retrieve()).rejects.toMatchObject({ httpStatus: 401 });
    await client.collections('products').synonyms('k').delete();

    const sets = clientWith((await client.keys().create({ description: 'items', actions: ['synonym_sets/items:*', 'presets:get'], collections: ['*'] })).value!);
    await client.synonymSets('keyed').upsert({ items: [] });
    await sets.synonymSets('keyed').items().upsert('x', { synonyms: ['a', 'b'] });
    await expect(sets.synonymSets('keyed').delete()).rejects.toMatchObject({ httpStatus: 401 });
    await expect(sets.presets('in-stock').retrieve()).resolves.toMatchObject({ name: 'in-stock' });
    await expect(sets.presets().upsert('x', { value: {} } as never)).rejects.toMatchObject({ httpStatus: 401 });
  });

  it('keeps a scoped key\'s bounds over presets, pins and rules', async () => {
    const parent = await client.keys().create({ description: 'search', actions: ['documents:search'], collections: ['products'] });
    const scopedKey = client.keys().generateScopedSearchKey(parent.value!, { filter_by: 'in_stock:true', per_page: 5 });
    const c = clientWith(scopedKey);
    // the preset's filter is the request's own: AND-ed with the key's, never replacing it
    await client.presets().upsert('all', { value: { query_by: 'title', filter_by: 'in_stock:false || in_stock:true', per_page: 1 } } as never);
    const r = await c.collections('products').documents().search({ q: 'smart', preset: 'all' } as never);
    expect(ids(r)).toEqual(['6']);
    expect(r.request_params.per_page).toBe(5);
    // a pinned document outside the key's filter is not shown
    const pinned = await c.collections('products').documents().search({ q: 'coat', query_by: 'title', pinned_hits: '3:1,5:2' } as never);
    expect(ids(pinned)).not.toContain('3');
    expect(ids(pinned)).not.toContain('5');
    // nor is a rule's include outside it
    await client.collections('products').overrides().upsert('leak', { rule: { query: 'watch', match: 'exact' }, includes: [{ id: '5', position: 1 }] });
    const viaRule = await c.collections('products').documents().search({ q: 'watch', query_by: 'title' } as never);
    expect(ids(viaRule)).toEqual(['6']);
    expect(ids(await search(client, { q: 'watch' }))).toEqual(['5', '6']);
    await client.collections('products').overrides('leak').delete();
  });
});
