/**
 * Search behaviour as the InstantSearch adapter drives it (issue #42), through `fathom serve`
 * on loopback: the adapter's searches for a numericMenu, a refinementList and a union page,
 * and what the reference engine answers for them. The collections are shaped like the
 * adapter's own test fixtures (products, recipes, brands: the same schemas), with documents
 * made here so that each behaviour is decided by the words they hold:
 *
 *   - typo and prefix expansions of a query word are chosen among the terms the filtered
 *     documents hold (the reference's candidates pass its filter): `Charger` finds the
 *     phones of 500..1000 $ that say `charge`, `egg` reaches `eggs` in the salted recipes;
 *   - equal text matches rank by default_sorting_field, then the later document first;
 *   - a hit's `highlight` is shaped like the document and nothing else, in a union as in a
 *     single search, so the adapter renders the names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import AdapterModule from 'typesense-instantsearch-adapter';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath, rng } from './helpers.js';

const KEY = 'adapter-key';
let server: RunningServer;
let client: Client;

// the adapter's types pull in instantsearch.js, which a server-side test does not install
type Hit = Record<string, any> & { _highlightResult: Record<string, { value: string; matchLevel: string }>; _rawTypesenseHit: Record<string, any> };
type Result = { hits: Hit[]; nbHits: number };
type AdapterCtor = new (options: Record<string, unknown>) => { searchClient: { search(requests: unknown): Promise<{ results: Result[] }> } };
const TypesenseInstantSearchAdapter = AdapterModule as unknown as AdapterCtor;

function adapter(options: Record<string, unknown>) {
  return new TypesenseInstantSearchAdapter({ server: { apiKey: KEY, nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }] }, ...options });
}

async function search(options: Record<string, unknown>, requests: Array<{ indexName: string; params: Record<string, unknown> }>): Promise<Result[]> {
  return (await adapter(options).searchClient.search(requests)).results;
}

// ---------------------------------------------------------------------------------------
// products: chargers (10..90 $) whose words crowd the typo slots of `charger`, and phones
// ---------------------------------------------------------------------------------------

const r = rng(42);
const BRANDS = ['Belkin', 'Anker', 'mophie', 'Insignia', 'Dynex', 'Scosche'];
const KINDS = ['USB Wall', 'Vehicle', 'Wireless', 'Portable', 'Dual-Port', 'Travel'];
const CHARGERS = Array.from({ length: 40 }, (_, i) => ({
  name: `${BRANDS[i % BRANDS.length]} - ${KINDS[i % KINDS.length]} Charger ${i}`,
  // `charger` itself, `chargers` (a completion) and `charges`, `charged` (one typo) in many
  // descriptions: more documents than `charge`, so that the reference and Fathom take them
  // for the word's four candidates (max_candidates) unless a filter leaves them out
  description: `${i % 2 ? 'Works with most chargers and cables.' : 'Compact design.'} ${i % 3 ? 'It charges two devices at once.' : ''} ${i % 4 ? 'Arrives charged and ready.' : ''} ${i % 5 ? 'Replaces the charger in the box.' : ''}`,
  brand: BRANDS[i % BRANDS.length]!,
  categories: ['Cell Phone Accessories', 'Chargers'],
  price: 10 + Math.floor(r() * 80) + 0.99,
  popularity: 1000 + i,
}));
const PHONES = [
  // 500..1000 $ with `charge`: what the numericMenu finds
  { name: 'Motorola - Moto Z Play 4G', description: 'Stream all day: the battery lasts two days on a single charge.', price: 599.99 },
  { name: 'Sony - XPERIA XA Ultra', description: 'A 6-inch display and a battery that goes a long way on one charge.', price: 649.99 },
  { name: 'Samsung - Galaxy Note Edge', description: 'Fast charge takes it to half in thirty minutes.', price: 899.99 },
  // 500..1000 $ without any form of the word
  { name: 'Apple - iPhone 7 Plus 128GB', description: 'A dual camera and a Retina HD display.', price: 769.99 },
  { name: 'Google - Pixel XL 32GB', description: 'Unlimited storage for photos and videos.', price: 869.99 },
  // `charge` outside the range
  { name: 'Motorola - Moto G Play', description: 'A full day of use on one charge.', price: 149.99 },
  { name: 'Samsung - Galaxy Tab S3', description: 'Hours of video on a single charge.', price: 1099.99 },
].map((p, i) => ({ ...p, brand: p.name.split(' - ')[0]!, categories: ['Cell Phones'], popularity: 500 + i }));
const PRODUCTS = [...CHARGERS, ...PHONES].map((p, i) => ({ id: String(i), ...p, free_shipping: p.name.length % 2 === 1, rating: (p.description.length % 5) + 1 }));

// ---------------------------------------------------------------------------------------
// recipes: `egg` in titles, and longer words that start with it
// ---------------------------------------------------------------------------------------

const RECIPES = [
  { title: 'Egg Cheese Souffle', ingredient_names: ['egg', 'cheese', 'milk', 'salt'] },
  { title: 'Egg Salad Sandwich', ingredient_names: ['egg', 'mayonnaise', 'salt', 'bread'] },
  { title: 'Scrambled Egg Wrap', ingredient_names: ['egg', 'tortilla', 'salt', 'pepper'] },
  { title: 'Egg Fried Rice', ingredient_names: ['egg', 'rice', 'soy sauce', 'salt'] },
  { title: 'Egg Drop Soup', ingredient_names: ['egg', 'broth', 'salt', 'scallion'] },
  { title: 'Egg Custard Tart', ingredient_names: ['egg', 'sugar', 'milk'] },
  { title: 'Poached Egg Toast', ingredient_names: ['egg', 'bread', 'butter'] },
  // `eggs`, in one salted recipe and one other: fewer documents than the other completions
  { title: 'Deviled Eggs', ingredient_names: ['eggs', 'mustard', 'salt', 'paprika'] },
  { title: 'Baked Eggs Florentine', ingredient_names: ['eggs', 'spinach', 'cream'] },
  ...['Parmesan', 'Grilled', 'Stuffed', 'Roasted', 'Spicy', 'Baked'].map((w) => ({ title: `${w} Eggplant`, ingredient_names: ['eggplant', 'olive oil', 'garlic'] })),
  ...['Classic', 'Spiced', 'Vegan', 'Holiday', 'Frozen'].map((w) => ({ title: `${w} Eggnog`, ingredient_names: ['milk', 'nutmeg', 'sugar'] })),
  ...['Cake', 'Muffins', 'Brownies', 'Cookies'].map((w) => ({ title: `Eggless ${w}`, ingredient_names: ['flour', 'sugar', 'butter'] })),
].map((rec, i) => ({ id: String(i), recipe_id: i, ...rec }));

// ---------------------------------------------------------------------------------------
// brands, popularity = the name's length, as the adapter's fixture sets it
// ---------------------------------------------------------------------------------------

const BRAND_NAMES = ['Belkin', 'Boostcase', 'ChargeHub', 'ChargeIt', 'Duracell', 'mophie', 'myCharge', 'Scosche'];

beforeAll(async () => {
  server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, logLevel: 'silent' });
  await client.collections().create({
    name: 'products',
    fields: [
      { name: 'name', type: 'string' },
      { name: 'description', type: 'string' },
      { name: 'brand', type: 'string', facet: true },
      { name: 'categories', type: 'string[]', facet: true },
      { name: 'price', type: 'float', facet: true },
      { name: 'popularity', type: 'int32' },
      { name: 'free_shipping', type: 'bool', facet: true },
      { name: 'rating', type: 'int32', facet: true },
    ],
    default_sorting_field: 'popularity',
  });
  await client.collections('products').documents().import(PRODUCTS, { action: 'create' });
  await client.collections().create({
    name: 'recipes',
    fields: [
      { name: 'recipe_id', type: 'int32' },
      { name: 'title', type: 'string' },
      { name: 'ingredient_names', type: 'string[]', facet: true },
    ],
    default_sorting_field: 'recipe_id',
  });
  await client.collections('recipes').documents().import(RECIPES, { action: 'create' });
  await client.collections().create({ name: 'brands', fields: [{ name: 'name', type: 'string' }, { name: 'popularity', type: 'int32' }], default_sorting_field: 'popularity' });
  await client.collections('brands').documents().import(BRAND_NAMES.map((name) => ({ name, popularity: name.length })), { action: 'create' });
  // the same brands without a default_sorting_field: ties fall to the later document
  await client.collections().create({ name: 'brand_names', fields: [{ name: 'name', type: 'string' }] });
  await client.collections('brand_names').documents().import(BRAND_NAMES.map((name) => ({ name })), { action: 'create' });
});

afterAll(async () => {
  await server?.stop();
});

const PRODUCT_SEARCH = { additionalSearchParameters: { query_by: 'name,description,categories' } };

describe('typo and prefix expansions inside a filter', () => {
  it("finds the numericMenu's phones of 500..1000 $ for `Charger` by their `charge`", async () => {
    const [all] = await search(PRODUCT_SEARCH, [{ indexName: 'products', params: { query: 'Charger', hitsPerPage: 50 } }]);
    expect(all!.nbHits).toBe(CHARGERS.length);
    // between 500$ and 1000$: no charger there; the word's one-typo terms among those
    // documents' terms (`charge`), as the reference chooses them, not the most common ones
    // of the whole collection (`chargers`, `charges`, `charged`), which the filter removes
    const [menu] = await search(PRODUCT_SEARCH, [{ indexName: 'products', params: { query: 'Charger', numericFilters: ['price>=500', 'price<=1000'], hitsPerPage: 10 } }]);
    expect(menu!.nbHits).toBe(3);
    expect(menu!.hits.map((h) => h.name).sort()).toEqual(['Motorola - Moto Z Play 4G', 'Samsung - Galaxy Note Edge', 'Sony - XPERIA XA Ultra']);
    expect(menu!.hits.every((h) => h._highlightResult.description!.matchLevel === 'full' && /<mark>charge/.test(h._highlightResult.description!.value))).toBe(true);
  });

  it('reaches `eggs` for the prefix `egg` within an ingredient refinement', async () => {
    const options = { additionalSearchParameters: { query_by: 'title' } };
    const [salt] = await search(options, [{ indexName: 'recipes', params: { query: 'egg', facetFilters: ['ingredient_names:salt'], hitsPerPage: 20 } }]);
    // the five salted recipes with `egg`, and `Deviled Eggs`: among the salted recipes' terms,
    // `eggs` is one of the max_candidates (4) expansions of `egg`; over all recipes it is not
    expect(salt!.nbHits).toBe(6);
    expect(salt!.hits.map((h) => h.title)).toContain('Deviled Eggs');
    const [both] = await search(options, [{ indexName: 'recipes', params: { query: 'egg', facetFilters: ['ingredient_names:salt', 'ingredient_names:milk'], hitsPerPage: 20 } }]);
    expect(both!.hits.map((h) => h.title)).toEqual(['Egg Cheese Souffle']);
    // without a filter the most common completions are chosen, as before
    const plain = await client.collections('recipes').documents().search({ q: 'egg', query_by: 'title', per_page: 50 });
    expect(plain.found).toBe(RECIPES.length - 2);
  });

  it('keeps the query word itself, and a term no allowed document holds never takes a slot', async () => {
    // with max_candidates 1, `egg` (the word itself) is the only candidate: the filter allows only `eggs`
    const one = await client.collections('recipes').documents().search({ q: 'egg', query_by: 'title', filter_by: 'ingredient_names:=salt', max_candidates: 1 });
    expect(one.found).toBe(5);
    const two = await client.collections('recipes').documents().search({ q: 'egg', query_by: 'title', filter_by: 'ingredient_names:=salt', max_candidates: 2 });
    expect(two.found).toBe(6);
  });
});

describe('ties in text match', () => {
  it('ranks equal text matches by default_sorting_field, and without one the later document first', async () => {
    // `charger` is one typo and a completion from both `chargehub` and `chargeit`
    const [ranked, plain] = await search({ additionalSearchParameters: { query_by: 'name' } }, [
      { indexName: 'brands', params: { query: 'Charger', hitsPerPage: 4 } },
      { indexName: 'brand_names', params: { query: 'Charger', hitsPerPage: 4 } },
    ]);
    expect(ranked!.hits.map((h) => h.name)).toEqual(['ChargeHub', 'ChargeIt']);
    expect(ranked!.hits[0]!.text_match).toBe(ranked!.hits[1]!.text_match);
    expect(plain!.hits.map((h) => h.name)).toEqual(['ChargeIt', 'ChargeHub']);
  });
});

describe('highlights in a union', () => {
  const UNION = { union: true, collectionSpecificSearchParameters: { products: { query_by: 'name,description,categories' }, brands: { query_by: 'name' } } };

  it("renders every union hit's name, as the adapter's union page shows it", async () => {
    const [res] = await search(UNION, [
      { indexName: 'products', params: { query: 'Charger', hitsPerPage: 50 } },
      { indexName: 'brands', params: { query: 'Charger', hitsPerPage: 50 } },
    ]);
    expect(res!.hits.length).toBe(CHARGERS.length + 2);
    for (const h of res!.hits) {
      // (the union page sets no highlight_full_fields: the value comes from the snippet)
      expect(h._highlightResult.name!.value).toMatch(/<mark>/);
      expect(h._highlightResult.name!.value.replace(/<\/?mark>/g, '')).toBe(h.name);
    }
  });

  it('gives a union hit exactly the highlight of the same hit in a single search', async () => {
    const union = (await client.multiSearch.perform({ union: true, searches: [{ collection: 'brands', q: 'Charger', query_by: 'name' }] } as never)) as unknown as { hits: Array<{ document: { id: string }; highlight: unknown }> };
    const single = await client.collections('brands').documents().search({ q: 'Charger', query_by: 'name' });
    expect(union.hits.map((h) => h.highlight)).toEqual(single.hits!.map((h) => h.highlight));
    for (const h of union.hits) expect(Object.keys(h.highlight as object)).toEqual(['name']);
  });
});
