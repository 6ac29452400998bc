import { afterEach, describe, expect, it } from 'vitest';
import { dataDirPath, openEngine } from './helpers.js';
import type { Engine } from '../src/engine.js';
import type { SearchScope } from '../src/query/scope.js';

const PHONES = [
  { id: '1', name: 'Apple iPhone 12', brand: 'Apple', in_stock: true, price: 800 },
  { id: '2', name: 'Apple iPhone 11', brand: 'Apple', in_stock: false, price: 600 },
  { id: '3', name: 'Samsung Galaxy phone', brand: 'Samsung', in_stock: true, price: 700 },
  { id: '4', name: 'Sony Ericsson phone', brand: 'Sony Ericsson', in_stock: true, price: 300 },
  { id: '5', name: 'Nokia phone', brand: 'Nokia', in_stock: false, price: 100 },
  { id: '6', name: 'Apple pie recipes', brand: 'Penguin', in_stock: true, price: 20 },
];

const SCHEMA = {
  name: 'phones',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'brand', type: 'string', facet: true },
    { name: 'in_stock', type: 'bool' },
    { name: 'price', type: 'int32' },
  ],
};

let engines: Engine[] = [];
afterEach(async () => {
  for (const e of engines) await e.close();
  engines = [];
});

async function phones(): Promise<Engine> {
  const e = openEngine(dataDirPath());
  engines.push(e);
  await e.createCollection(SCHEMA);
  await e.import('phones', [Buffer.from(PHONES.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  return e;
}

type Res = Awaited<ReturnType<Engine['search']>>;
const ids = (r: Res) => r.hits!.map((h) => h.document.id as string);
const curated = (r: Res) => r.hits!.filter((h) => h.curated === true).map((h) => h.document.id as string);
const search = (e: Engine, q: string, more: Record<string, unknown> = {}, scope?: SearchScope) => e.search('phones', { q, query_by: 'name', ...more }, scope);

describe('curation rules in search', () => {
  it('pins included documents at their positions and keeps the rest in order, once each', async () => {
    const e = await phones();
    const plain = ids(await search(e, 'apple'));
    await e.curation().put('phones', 'apple', { rule: { query: 'apple', match: 'exact' }, includes: [{ id: '5', position: 1 }, { id: '2', position: 2 }] });
    const r = await search(e, 'apple');
    expect(ids(r)).toEqual(['5', '2', ...plain.filter((id) => id !== '2')]);
    expect(curated(r)).toEqual(['5', '2']);
    expect(r.found).toBe(plain.length + 1);
  });

  it('an exact rule needs the whole query; a contains rule a run of its words', async () => {
    const e = await phones();
    await e.curation().put('phones', 'exact', { rule: { query: 'apple', match: 'exact' }, includes: [{ id: '5', position: 1 }] });
    expect(ids(await search(e, 'apple iphone'))[0]).not.toBe('5');
    await e.curation().put('phones', 'contains', { rule: { query: 'iphone', match: 'contains' }, includes: [{ id: '4', position: 1 }] });
    expect(ids(await search(e, 'apple iphone'))[0]).toBe('4');
    expect(ids(await search(e, 'Apple!'))[0]).toBe('5');
  });

  it('hides excluded documents: not shown, not found', async () => {
    const e = await phones();
    const before = await search(e, 'apple');
    await e.curation().put('phones', 'hide', { rule: { query: 'apple', match: 'exact' }, excludes: [{ id: '1' }] });
    const r = await search(e, 'apple');
    expect(ids(r)).toEqual(ids(before).filter((id) => id !== '1'));
    expect(r.found).toBe(before.found - 1);
  });

  it('puts a pin past the end after the last hit, and pages through pins', async () => {
    const e = await phones();
    await e.curation().put('phones', 'far', { rule: { query: 'nokia', match: 'exact' }, includes: [{ id: '3', position: 50 }, { id: '6', position: 2 }] });
    expect(ids(await search(e, 'nokia'))).toEqual(['5', '6', '3']);
    expect(ids(await search(e, 'nokia', { per_page: 1, page: 2 }))).toEqual(['6']);
    expect(ids(await search(e, 'nokia', { per_page: 1, page: 3 }))).toEqual(['3']);
  });

  it('adds a rule\'s filter_by and searches the words left', async () => {
    const e = await phones();
    await e.curation().put('phones', 'cheap', { rule: { query: 'cheap', match: 'contains' }, filter_by: 'price:<500' });
    const r = await search(e, 'cheap phone');
    expect(ids(r).sort()).toEqual(['4', '5']);
    // the matched word went from q (remove_matched_tokens defaults to true for a filtering rule)
    expect(r.request_params.q).toBe('phone');
  });

  it('fills a placeholder with the field value the query names', async () => {
    const e = await phones();
    await e.curation().put('phones', 'brand', { rule: { query: '{brand} phone', match: 'contains' }, filter_by: 'brand:={brand}' });
    expect(ids(await search(e, 'sony ericsson phone'))).toEqual(['4']);
    expect(ids(await search(e, 'nokia phone'))).toEqual(['5']);
    // no brand named: the rule does not apply
    expect(ids(await search(e, 'galaxy phone'))).toEqual(['3']);
  });

  it('sorts by a rule\'s sort_by, keeping the words it matched unless it says remove_matched_tokens', async () => {
    const e = await phones();
    await e.curation().put('phones', 'sort', { rule: { query: 'phone', match: 'exact' }, sort_by: 'price:asc' });
    const r = await search(e, 'phone');
    expect(ids(r)).toEqual(['5', '4', '3']);
    expect(r.request_params.q).toBe('phone');
    // without its word, q is empty and every document is found, cheapest first
    await e.curation().put('phones', 'sort', { rule: { query: 'phone', match: 'exact' }, sort_by: 'price:asc', remove_matched_tokens: true });
    expect(ids(await search(e, 'phone'))).toEqual(['6', '5', '4', '2', '3', '1']);
  });

  it('searches replace_query instead of q', async () => {
    const e = await phones();
    await e.curation().put('phones', 'cell', { rule: { query: 'cellphone', match: 'exact' }, replace_query: 'phone' });
    expect(ids(await search(e, 'cellphone')).sort()).toEqual(['3', '4', '5']);
  });

  it('filter_curated_hits keeps pinned documents the filter refuses out', async () => {
    const e = await phones();
    await e.curation().put('phones', 'pin', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '2', position: 1 }] });
    expect(ids(await search(e, 'phone', { filter_by: 'in_stock:true' }))[0]).toBe('2');
    expect(ids(await search(e, 'phone', { filter_by: 'in_stock:true', filter_curated_hits: true }))).not.toContain('2');
    await e.curation().put('phones', 'pin', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '2', position: 1 }], filter_curated_hits: true });
    expect(ids(await search(e, 'phone', { filter_by: 'in_stock:true' }))).not.toContain('2');
  });

  it('applies a rule only while it is effective', async () => {
    const e = await phones();
    const now = Math.floor(Date.now() / 1000);
    await e.curation().put('phones', 'later', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '6', position: 1 }], effective_from_ts: now + 3600 });
    await e.curation().put('phones', 'past', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '1', position: 1 }], effective_to_ts: now - 3600 });
    expect(curated(await search(e, 'phone'))).toEqual([]);
    await e.curation().put('phones', 'now', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '2', position: 1 }], effective_from_ts: now - 10, effective_to_ts: now + 3600 });
    expect(curated(await search(e, 'phone'))).toEqual(['2']);
  });

  it('stops at the first rule that applies unless it says stop_processing: false', async () => {
    const e = await phones();
    await e.curation().put('phones', 'a', { rule: { query: 'phone', match: 'contains' }, includes: [{ id: '1', position: 1 }] });
    await e.curation().put('phones', 'b', { rule: { query: 'phone', match: 'contains' }, includes: [{ id: '2', position: 2 }] });
    expect(curated(await search(e, 'phone'))).toEqual(['1']);
    await e.curation().put('phones', 'a', { rule: { query: 'phone', match: 'contains' }, includes: [{ id: '1', position: 1 }], stop_processing: false });
    expect(curated(await search(e, 'phone'))).toEqual(['1', '2']);
  });

  it('applies tagged rules only when their tags are asked for, and untagged ones only when none are', async () => {
    const e = await phones();
    await e.curation().put('phones', 'plain', { rule: { query: 'phone', match: 'exact' }, includes: [{ id: '1', position: 1 }] });
    await e.curation().put('phones', 'promo', { rule: { query: 'phone', match: 'exact', tags: ['promo'] }, includes: [{ id: '2', position: 1 }] });
    await e.curation().put('phones', 'banner', { rule: { tags: ['banner'] }, metadata: { banner: 'sale' } });
    expect(curated(await search(e, 'phone'))).toEqual(['1']);
    expect(curated(await search(e, 'phone', { override_tags: 'promo' }))).toEqual(['2']);
    const r = await search(e, 'anything', { override_tags: 'banner' });
    expect(r.metadata).toEqual({ banner: 'sale' });
  });

  it('matches rule.filter_by against the request\'s filter_by', async () => {
    const e = await phones();
    await e.curation().put('phones', 'stock', { rule: { filter_by: 'in_stock:true' }, includes: [{ id: '6', position: 1 }] });
    expect(curated(await search(e, 'phone', { filter_by: 'in_stock:true' }))).toEqual(['6']);
    expect(curated(await search(e, 'phone', { filter_by: 'in_stock:false' }))).toEqual([]);
  });

  it('returns the metadata of the rules that applied', async () => {
    const e = await phones();
    await e.curation().put('phones', 'm', { rule: { query: 'nokia', match: 'exact' }, metadata: { banner: 'Nokia week', link: '/nokia' } });
    expect((await search(e, 'nokia')).metadata).toEqual({ banner: 'Nokia week', link: '/nokia' });
    expect((await search(e, 'apple')).metadata).toBeUndefined();
  });

  it('enable_overrides=false applies no rule', async () => {
    const e = await phones();
    await e.curation().put('phones', 'hide', { rule: { query: 'apple', match: 'exact' }, excludes: [{ id: '1' }], metadata: { x: 1 } });
    const r = await search(e, 'apple', { enable_overrides: false });
    expect(ids(r)).toContain('1');
    expect(r.metadata).toBeUndefined();
  });

  it('pinned_hits and hidden_hits place and hide documents, hidden winning', async () => {
    const e = await phones();
    const r = await search(e, 'apple', { pinned_hits: '4:1,5:3', hidden_hits: '1,5' });
    expect(ids(r)[0]).toBe('4');
    expect(ids(r)).not.toContain('1');
    expect(ids(r)).not.toContain('5');
    expect(curated(r)).toEqual(['4']);
    expect(ids(await search(e, '*', { pinned_hits: '6:1', per_page: 2 }))[0]).toBe('6');
    await expect(search(e, 'apple', { pinned_hits: '4:0' })).rejects.toThrow(/pinned_hits: `4:0` must look like `id:position`/);
    await expect(search(e, 'apple', { pinned_hits: '4' })).rejects.toThrow(/pinned_hits/);
  });

  it('keeps a scoped key\'s filter over pins and over a rule\'s filter', async () => {
    const e = await phones();
    const key: SearchScope = { filter_by: 'in_stock:true' };
    // a pinned document outside the key's filter is never shown
    const r = await search(e, 'phone', { pinned_hits: '5:1,2:2,6:3' }, key);
    expect(ids(r)).not.toContain('5');
    expect(ids(r)).not.toContain('2');
    expect(ids(r)[0]).toBe('6');
    // a rule's filter narrows; it cannot widen the key's
    await e.curation().put('phones', 'wide', { rule: { query: 'phone', match: 'contains' }, filter_by: 'in_stock:false || in_stock:true', includes: [{ id: '5', position: 1 }], remove_matched_tokens: false });
    const w = await search(e, 'phone', {}, key);
    expect(ids(w).sort()).toEqual(['3', '4']);
  });

  it('applies the curation sets a collection links', async () => {
    const e = await phones();
    await e.curation().putSet('promos', { description: 'spring', items: [{ id: 'nokia', rule: { query: 'nokia', match: 'exact' }, includes: [{ id: '1', position: 1 }] }] });
    expect(curated(await search(e, 'nokia'))).toEqual([]);
    await e.updateCollection('phones', { curation_sets: ['promos'] });
    expect(curated(await search(e, 'nokia'))).toEqual(['1']);
    expect(e.getCollection('phones').curation_sets).toEqual(['promos']);
    await e.updateCollection('phones', { curation_sets: [] });
    expect(curated(await search(e, 'nokia'))).toEqual([]);
  });

  it('names the rule of a curation set whose filter_by or sort_by the collection refuses', async () => {
    const e = await phones();
    await e.curation().putSet('loose', { items: [{ id: 'by-colour', rule: { query: 'phone', match: 'contains' }, filter_by: 'colour:=red' }] });
    await e.updateCollection('phones', { curation_sets: ['loose'] });
    await expect(search(e, 'phone')).rejects.toThrow(/^the filter_by of curation rule `by-colour`: filter_by: no field named `colour`/);
    // the request's own bad filter is still the request's
    await expect(search(e, 'phone', { filter_by: 'size:=1' })).rejects.toThrow(/^filter_by: no field named `size`/);
    await e.curation().putSet('loose', { items: [{ id: 'by-weight', rule: { query: 'phone', match: 'contains' }, sort_by: 'weight:asc' }] });
    await expect(search(e, 'phone')).rejects.toThrow(/^the sort_by of curation rule `by-weight`: .*weight/);
    expect(ids(await search(e, 'apple'))).toContain('1');
  });

  it('places pinned documents as groups of their own in a grouped search', async () => {
    const e = await phones();
    const r = await search(e, 'phone', { group_by: 'brand', pinned_hits: '1:1' });
    expect(r.grouped_hits![0]).toMatchObject({ group_key: ['Apple'], found: 1 });
    expect(r.grouped_hits![0]!.hits[0]!.curated).toBe(true);
  });
});

describe('curation rule validation', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['a rule without `rule`', { includes: [{ id: '1', position: 1 }] }, /needs `rule`/],
    ['a query without match', { rule: { query: 'a' }, excludes: [{ id: '1' }] }, /`rule.match` must be `exact` or `contains`/],
    ['a rule that matches nothing', { rule: {}, excludes: [{ id: '1' }] }, /needs `rule.query`/],
    ['a rule that does nothing', { rule: { query: 'a', match: 'exact' } }, /must do something/],
    ['a position below 1', { rule: { query: 'a', match: 'exact' }, includes: [{ id: '1', position: 0 }] }, /`includes\[0\].position` must be a whole number from 1/],
    ['two documents at one position', { rule: { query: 'a', match: 'exact' }, includes: [{ id: '1', position: 1 }, { id: '2', position: 1 }] }, /two documents at position 1/],
    ['a placeholder the query does not have', { rule: { query: 'a', match: 'contains' }, filter_by: 'brand:={brand}' }, /placeholder `\{brand\}`, which `rule.query` does not have/],
    ['a placeholder on a field that is not a facet', { rule: { query: '{name} x', match: 'contains' }, filter_by: 'name:={name}' }, /needs a string field with `facet: true`/],
    ['a sort_by the schema refuses', { rule: { query: 'a', match: 'exact' }, sort_by: 'nope:asc' }, /`sort_by`/],
    ['a rule.filter_by that cannot be parsed', { rule: { filter_by: 'price:>' }, excludes: [{ id: '1' }] }, /^`rule.filter_by`: filter_by: expected a value/],
    ['both replace_query and remove_matched_tokens', { rule: { query: 'a', match: 'exact' }, replace_query: 'b', remove_matched_tokens: true }, /`replace_query` or `remove_matched_tokens: true`, not both/],
    ['an end before the start', { rule: { query: 'a', match: 'exact' }, excludes: [{ id: '1' }], effective_from_ts: 10, effective_to_ts: 5 }, /never apply/],
    ['metadata that is not an object', { rule: { query: 'a', match: 'exact' }, metadata: 'x' }, /`metadata` must be a JSON object/],
    ['an unsupported attribute', { rule: { query: 'a', match: 'exact' }, diversity: {} }, /`diversity`/],
    ['an unknown attribute', { rule: { query: 'a', match: 'exact' }, excludes: [{ id: '1' }], boost: 2 }, /unknown curation attribute `boost`/],
    ['a document both included and excluded', { rule: { query: 'a', match: 'exact' }, includes: [{ id: '1', position: 1 }], excludes: [{ id: '1' }] }, /both in `includes` and in `excludes`/],
  ];
  for (const [what, body, message] of cases) {
    it(`refuses ${what}`, async () => {
      const e = await phones();
      await expect(e.curation().put('phones', 'r', body)).rejects.toThrow(message);
      expect(e.curation().list('phones')).toEqual([]);
    });
  }

  it('checks a set\'s items for their shape (their ids are checked when a search uses them)', async () => {
    const e = await phones();
    await expect(e.curation().putSet('s', { items: [{ id: 'x', rule: { query: 'a', match: 'exact' }, includes: [{ id: '1', position: -1 }] }] })).rejects.toThrow(/items\[0\] \(`x`\): `includes\[0\].position`/);
    await expect(e.curation().putItem('nope', 'x', { rule: { query: 'a', match: 'exact' }, excludes: [{ id: '1' }] })).rejects.toThrow(/curation set `nope` not found/);
    const set = await e.curation().putSet('s', { items: [{ id: 'x', rule: { query: 'a', match: 'exact' }, includes: [{ id: 'later', position: 1 }] }] });
    expect(set.items).toHaveLength(1);
  });
});
