import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dataDirPath, openEngine } from './helpers.js';
import type { Engine } from '../src/engine.js';
import { expandSynonyms, type CompiledSynonyms } from '../src/synonyms/synonyms.js';

const PRODUCTS = [
  { id: 'iphone', title: 'iPhone 12 case' },
  { id: 'samsung', title: 'Samsung smart phone' },
  { id: 'blazer', title: 'Blazer for men' },
  { id: 'coat', title: 'Winter coat' },
  { id: 'jacket', title: 'Leather jacket' },
  { id: 'watch', title: 'Smart watch' },
  { id: 'cpp', title: 'C++ primer' },
  { id: 'chat', title: 'Le chat noir' },
];

let engines: Engine[] = [];
afterEach(async () => {
  for (const e of engines) await e.close();
  engines = [];
});

async function products(extra: Record<string, unknown> = {}, dir = dataDirPath()): Promise<Engine> {
  const e = openEngine(dir);
  engines.push(e);
  await e.createCollection({ name: 'products', fields: [{ name: 'title', type: 'string' }], symbols_to_index: ['+'], ...extra });
  await e.import('products', [Buffer.from(PRODUCTS.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  return e;
}

const ids = (r: { hits?: { document: Record<string, unknown> }[] }) => r.hits!.map((h) => h.document.id as string);
const search = async (e: Engine, q: string, more: Record<string, unknown> = {}) => ids(await e.search('products', { q, query_by: 'title', ...more }));

describe('synonyms in search', () => {
  it('finds nothing more than the typed word without synonyms', async () => {
    const e = await products();
    expect(await search(e, 'coat')).toEqual(['coat']);
  });

  it('a multi-way synonym finds every word of the set, each match scored as the typed word', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect((await search(e, 'coat')).sort()).toEqual(['blazer', 'coat', 'jacket']);
    expect((await search(e, 'jacket')).sort()).toEqual(['blazer', 'coat', 'jacket']);
    // "Winter coat" and "Leather jacket": the same match, through the typed word or its synonym
    const r = await e.search('products', { q: 'coat', query_by: 'title' });
    const score = (id: string) => r.hits!.find((h) => h.document.id === id)!.text_match_info;
    expect(score('jacket')).toEqual(score('coat'));
    expect(r.hits!.find((h) => h.document.id === 'jacket')!.highlight).toMatchObject({ title: { matched_tokens: ['jacket'] } });
  });

  it('a one-way synonym works from its root only', async () => {
    const e = await products();
    await e.synonyms().put('products', 'phones', { root: 'smart phone', synonyms: ['iphone'] });
    const hits = await search(e, 'smart phone');
    expect(hits.slice(0, 2).sort()).toEqual(['iphone', 'samsung']);
    expect(await search(e, 'iphone')).toEqual(['iphone']);
  });

  it('a multi-word synonym counts as the words it stands for', async () => {
    const e = await products();
    await e.synonyms().put('products', 'phones', { root: 'smart phone', synonyms: ['iphone'] });
    // (drop_tokens_threshold: also the documents with one of the two typed words)
    const r = await e.search('products', { q: 'smart phone', query_by: 'title', drop_tokens_threshold: 10 });
    const order = ids(r);
    expect(order.slice(0, 2).sort()).toEqual(['iphone', 'samsung']);
    expect(order).toContain('watch');
    const iphone = r.hits!.find((h) => h.document.id === 'iphone')!;
    expect(iphone.text_match_info).toMatchObject({ tokens_matched: 2, num_tokens_dropped: 0 });
    // the typed words, matched as typed, rank no lower than their synonym
    const samsung = r.hits!.find((h) => h.document.id === 'samsung')!;
    expect(samsung.text_match).toBeGreaterThanOrEqual(iphone.text_match!);
    // a match through the synonym ranks above a match of one typed word of two
    expect(order.indexOf('watch')).toBeGreaterThan(order.indexOf('iphone'));
  });

  it('matches the words of a multi-word synonym put in for one word', async () => {
    const e = await products();
    await e.synonyms().put('products', 'phones', { synonyms: ['smart phone', 'iphone'] });
    expect((await search(e, 'iphone')).sort()).toEqual(['iphone', 'samsung']);
  });

  it('never replaces the words of a quoted phrase', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect(await search(e, '"coat"')).toEqual(['coat']);
  });

  it('enable_synonyms=false searches the typed words only', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect(await search(e, 'coat', { enable_synonyms: 'false' })).toEqual(['coat']);
  });

  it('applies a linked synonym set, and a set the search names', async () => {
    const e = await products();
    await e.synonyms().putSet('clothing', { items: [{ id: 'coats', synonyms: ['blazer', 'coat'] }] });
    expect(await search(e, 'blazer')).toEqual(['blazer']);
    expect((await search(e, 'blazer', { synonym_sets: 'clothing' })).sort()).toEqual(['blazer', 'coat']);
    await e.updateCollection('products', { synonym_sets: ['clothing'] });
    expect((await search(e, 'blazer')).sort()).toEqual(['blazer', 'coat']);
    // an item added to the set applies to the next search
    await e.synonyms().putItem('clothing', 'jackets', { synonyms: ['blazer', 'jacket'] });
    expect((await search(e, 'blazer')).sort()).toEqual(['blazer', 'coat', 'jacket']);
    await e.synonyms().deleteItem('clothing', 'coats');
    expect((await search(e, 'blazer')).sort()).toEqual(['blazer', 'jacket']);
    await expect(e.search('products', { q: 'blazer', query_by: 'title', synonym_sets: 'nope' })).rejects.toThrow(/synonym set `nope` not found/);
  });

  it('refuses to link a synonym set that does not exist', async () => {
    const e = await products();
    await expect(e.updateCollection('products', { synonym_sets: ['nope'] })).rejects.toThrow(/synonym set `nope` not found/);
    await expect(e.createCollection({ name: 'other', fields: [{ name: 'title', type: 'string' }], synonym_sets: ['nope'] })).rejects.toThrow(/synonym set `nope` not found/);
  });

  it('applies a synonym with a locale only to fields of that locale', async () => {
    const e = await products();
    await e.synonyms().put('products', 'fr', { synonyms: ['chat', 'coat'], locale: 'fr' });
    expect(await search(e, 'chat')).toEqual(['chat']);
    await e.synonyms().put('products', 'any', { synonyms: ['chat', 'coat'] });
    expect((await search(e, 'chat')).sort()).toEqual(['chat', 'coat']);
  });

  it('keeps the symbols a synonym lists', async () => {
    const e = await products();
    await e.synonyms().put('products', 'cpp', { synonyms: ['c++', 'cpp'], symbols_to_index: ['+'] });
    expect(await search(e, 'cpp')).toEqual(['cpp']);
  });

  it('synonym_num_typos lets a misspelt word reach its synonyms', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect(await search(e, 'blazzer')).toEqual(['blazer']);
    expect((await search(e, 'blazzer', { synonym_num_typos: 1 })).sort()).toEqual(['blazer', 'coat', 'jacket']);
  });

  it('synonym_prefix lets the last word reach synonyms it begins', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat', 'jacket'] });
    expect(await search(e, 'jack')).toEqual(['jacket']);
    expect((await search(e, 'jack', { synonym_prefix: true })).sort()).toEqual(['blazer', 'coat', 'jacket']);
  });

  it('stores synonyms in the data directory: another engine on it sees them', async () => {
    const dir = dataDirPath();
    const e = await products({}, dir);
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat'] });
    await e.close();
    engines = [];
    const again = openEngine(dir);
    engines.push(again);
    expect(again.synonyms().list('products')).toEqual([{ id: 'coats', root: '', synonyms: ['blazer', 'coat'] }]);
    expect((await search(again, 'coat')).sort()).toEqual(['blazer', 'coat']);
  });

  it('carries synonyms, sets, curation rules and presets into a snapshot', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat'] });
    await e.synonyms().putSet('extra', { items: [{ id: 'x', synonyms: ['watch', 'clock'] }] });
    await e.curation().put('products', 'pin', { rule: { query: 'coat', match: 'exact' }, includes: [{ id: 'cpp', position: 1 }] });
    await e.putPreset('p', { value: { query_by: 'title' } });
    const target = path.join(path.dirname(dataDirPath()), 'snap');
    await e.snapshot(target);
    const copy = openEngine(target);
    engines.push(copy);
    expect(copy.synonyms().list('products')).toEqual(e.synonyms().list('products'));
    expect(copy.synonyms().listSets()).toEqual(e.synonyms().listSets());
    expect(copy.curation().list('products')).toEqual(e.curation().list('products'));
    expect(copy.listPresets()).toEqual(e.listPresets());
    expect(ids(await copy.search('products', { q: 'coat', preset: 'p' }))).toEqual(['cpp', 'coat', 'blazer']);
  });

  it('deletes a collection\'s synonyms with it', async () => {
    const e = await products();
    await e.synonyms().put('products', 'coats', { synonyms: ['blazer', 'coat'] });
    await e.deleteCollection('products');
    await e.createCollection({ name: 'products', fields: [{ name: 'title', type: 'string' }] });
    expect(e.synonyms().list('products')).toEqual([]);
  });
});

describe('synonym validation', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['a body that is not an object', [], /must be a JSON object/],
    ['no synonyms', {}, /`synonyms` must be a non-empty array/],
    ['a multi-way synonym with one word', { synonyms: ['coat'] }, /at least two words/],
    ['a word that is not a string', { synonyms: ['coat', 3] }, /synonyms\[1\] must be a non-empty string/],
    ['a word with nothing to search', { synonyms: ['coat', '!!!'] }, /synonyms\[1\] \("!!!"\) has no word/],
    ['a root that is not a string', { root: 4, synonyms: ['coat'] }, /`root` must be a string/],
    ['symbols that are not single characters', { synonyms: ['a', 'b'], symbols_to_index: ['++'] }, /single characters/],
    ['an unknown attribute', { synonyms: ['a', 'b'], weight: 2 }, /unknown synonym attribute `weight`/],
  ];
  for (const [what, body, message] of cases) {
    it(`refuses ${what}`, async () => {
      const e = await products();
      await expect(e.synonyms().put('products', 's', body)).rejects.toThrow(message);
      expect(e.synonyms().list('products')).toEqual([]);
    });
  }

  it('refuses a set item without an id, and ids used twice', async () => {
    const e = await products();
    await expect(e.synonyms().putSet('s', { items: [{ synonyms: ['a', 'b'] }] })).rejects.toThrow(/items\[0\] needs an `id`/);
    await expect(e.synonyms().putSet('s', { items: [{ id: 'x', synonyms: ['a', 'b'] }, { id: 'x', synonyms: ['c', 'd'] }] })).rejects.toThrow(/used twice/);
    await expect(e.synonyms().putSet('s', { items: [{ id: 'x', synonyms: ['a'] }] })).rejects.toThrow(/items\[0\] \(`x`\): a multi-way synonym/);
    expect(e.synonyms().listSets()).toEqual([]);
  });
});

describe('synonym variants', () => {
  const unit = (rules: Array<[string[], string[][]]>): CompiledSynonyms => {
    const all = rules.map(([from, to]) => ({ from, to }));
    const byFirst = new Map<string, typeof all>();
    for (const r of all) byFirst.set(r.from[0]!, [...(byFirst.get(r.from[0]!) ?? []), r]);
    return { all, byFirst };
  };
  const exact = { prefix: false, typos: () => 0 };

  it('makes one word for one word an alternative of the word, and other replacements variants', () => {
    const u = unit([
      [['smart', 'phone'], [['iphone']]],
      [['case'], [['cover'], ['sleeve']]],
      [['phone'], [['mobile', 'phone'], ['handset']]],
    ]);
    const x = expandSynonyms(['smart', 'phone', 'case'], () => false, [u], exact);
    expect(x.alternatives).toEqual([[], ['handset'], ['cover', 'sleeve']]);
    expect(x.variants.map((v) => v.tokens.join(' '))).toEqual(['iphone case', 'smart mobile phone case']);
    expect(x.variants[0]!.extra).toBe(1);
    expect(x.variants[1]!.extra).toBe(-1);
    expect([...x.variants[0]!.replaced]).toEqual([0]);
    expect(x.variants[0]!.origin).toEqual([-1, 2]);
  });

  it('combines replacements that do not overlap, fewest first, up to the limit', () => {
    const u = unit([
      [['a', 'b'], [['x']]],
      [['c', 'd'], [['y']]],
    ]);
    expect(expandSynonyms(['a', 'b', 'c', 'd'], () => false, [u], exact).variants.map((v) => v.tokens.join(' '))).toEqual(['x c d', 'a b y', 'x y']);
    const many = unit([[['a', 'b'], Array.from({ length: 50 }, (_, i) => [`w${i}`, 'z'])]]);
    expect(expandSynonyms(['a', 'b'], () => false, [many], exact, 5).variants).toHaveLength(5);
  });

  it('leaves fixed words alone', () => {
    const u = unit([[['a'], [['b']]]]);
    expect(expandSynonyms(['a', 'a'], (i) => i === 0, [u], exact).alternatives).toEqual([[], ['b']]);
  });
});
