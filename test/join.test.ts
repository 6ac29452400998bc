import { describe, expect, it } from 'vitest';
import { cli, dataDirPath, openEngine, rng } from './helpers.js';
import type { Engine } from '../src/engine.js';

async function shop(): Promise<Engine> {
  const e = openEngine();
  await e.createCollection({ name: 'products', fields: [{ name: 'name', type: 'string' }, { name: 'price', type: 'float' }, { name: 'category', type: 'string', facet: true }] });
  await e.createCollection({ name: 'customers', fields: [{ name: 'name', type: 'string' }, { name: 'country', type: 'string', facet: true }] });
  await e.createCollection({
    name: 'orders',
    fields: [
      { name: 'customer_id', type: 'string', reference: 'customers.id' },
      { name: 'product_id', type: 'string', reference: 'products.id' },
      { name: 'qty', type: 'int32' },
    ],
  });
  for (const p of [
    { id: 'p1', name: 'red shoes', price: 50, category: 'shoes' },
    { id: 'p2', name: 'blue hat', price: 15, category: 'hats' },
    { id: 'p3', name: 'green scarf', price: 25, category: 'scarves' },
  ])
    await e.writeDocument('products', p);
  for (const c of [
    { id: 'c1', name: 'Ana', country: 'NZ' },
    { id: 'c2', name: 'Bo', country: 'SE' },
    { id: 'c3', name: 'Cy', country: 'NZ' },
  ])
    await e.writeDocument('customers', c);
  for (const o of [
    { id: 'o1', customer_id: 'c1', product_id: 'p1', qty: 1 },
    { id: 'o2', customer_id: 'c1', product_id: 'p2', qty: 3 },
    { id: 'o3', customer_id: 'c2', product_id: 'p2', qty: 2 },
  ])
    await e.writeDocument('orders', o);
  return e;
}
const ids = (r: { hits?: { document: Record<string, unknown> }[] }) => r.hits!.map((h) => h.document.id).sort();

describe('joins', () => {
  it('filters through a reference (inner join by default)', async () => {
    const e = await shop();
    expect(ids(await e.search('orders', { q: '*', filter_by: '$products(price:<20)' }))).toEqual(['o2', 'o3']);
    expect(ids(await e.search('orders', { q: '*', filter_by: '$customers(country:=NZ) && qty:>1' }))).toEqual(['o2']);
    // reverse direction: customers who ordered something
    expect(ids(await e.search('customers', { q: '*', filter_by: '$orders(id:*)' }))).toEqual(['c1', 'c2']);
    // many-to-many through orders: customers who bought a hat, products bought by NZ customers
    expect(ids(await e.search('customers', { q: '*', filter_by: '$orders($products(category:=hats))' }))).toEqual(['c1', 'c2']);
    expect(ids(await e.search('products', { q: '*', filter_by: '$orders($customers(country:=NZ))' }))).toEqual(['p1', 'p2']);
    await e.close();
  });

  it('the left-join idiom keeps documents without a match', async () => {
    const e = await shop();
    expect(ids(await e.search('customers', { q: '*', filter_by: '$orders(qty:>2)' }))).toEqual(['c1']);
    expect(ids(await e.search('customers', { q: '*', filter_by: 'id:* || $orders(qty:>2)' }))).toEqual(['c1', 'c2', 'c3']);
    await e.close();
  });

  it('includes joined fields with each strategy and an alias', async () => {
    const e = await shop();
    const get = async (include: string) => (await e.search('orders', { q: '*', filter_by: 'id:=o1', include_fields: include })).hits![0]!.document;
    expect(await get('id, $products(name, price)')).toEqual({ id: 'o1', products: { name: 'red shoes', price: 50 } });
    expect(await get('id, $products(name, strategy: nest_array)')).toEqual({ id: 'o1', products: [{ name: 'red shoes' }] });
    expect(await get('id, qty, $products(name, price, strategy: merge)')).toEqual({ id: 'o1', qty: 1, name: 'red shoes', price: 50 });
    expect(await get('id, $products(name) as item')).toEqual({ id: 'o1', item: { name: 'red shoes' } });
    expect(Object.keys((await get('$customers(*)')).customers as object).sort()).toEqual(['country', 'id', 'name']);
    // one-to-many from the other side: an array when several relate
    const c1 = (await e.search('customers', { q: '*', filter_by: 'id:=c1', include_fields: 'id, $orders(qty)' })).hits![0]!.document;
    expect(c1).toEqual({ id: 'c1', orders: [{ qty: 1 }, { qty: 3 }] });
    const ex = (await e.search('orders', { q: '*', filter_by: 'id:=o1', include_fields: 'id, $products(*)', exclude_fields: '$products(price)' })).hits![0]!.document;
    expect(ex.products).toEqual({ id: 'p1', name: 'red shoes', category: 'shoes' });
    await e.close();
  });

  it('joined fields work in multi-search, document get and export', async () => {
    const e = await shop();
    const ms = await e.multiSearch([{ collection: 'orders', q: '*', filter_by: 'id:=o3', include_fields: 'id, $customers(name)' }]);
    expect((ms.results[0] as { hits: { document: unknown }[] }).hits[0]!.document).toEqual({ id: 'o3', customers: { name: 'Bo' } });
    expect(e.getDocument('orders', 'o2', { include: ['id', '$products(name)'] })).toEqual({ id: 'o2', products: { name: 'blue hat' } });
    expect([...e.exportDocuments('orders', { include: ['id', '$customers(country)'] })]).toEqual([
      { id: 'o1', customers: { country: 'NZ' } },
      { id: 'o2', customers: { country: 'NZ' } },
      { id: 'o3', customers: { country: 'SE' } },
    ]);
    await e.close();
  });

  it('sorts by a joined field', async () => {
    const e = await shop();
    const r = await e.search('orders', { q: '*', sort_by: '$products(price:desc)' });
    // o1 is the 50 shoes; o2 and o3 are both 15 hats, tied and then newest first
    expect(r.hits!.map((h) => h.document.id)).toEqual(['o1', 'o3', 'o2']);
    const prices = await Promise.all(r.hits!.map(async (h) => e.getDocument('products', h.document.product_id as string).price as number));
    expect(prices).toEqual([...prices].sort((a, b) => b - a));
    const asc = await e.search('orders', { q: '*', sort_by: '$products(price:asc)' });
    expect(asc.hits![asc.hits!.length - 1]!.document.id).toBe('o1');
    await e.close();
  });

  it('rejects a reference to a missing document, unless async_reference waits for it', async () => {
    const e = await shop();
    await expect(e.writeDocument('orders', { id: 'o9', customer_id: 'c1', product_id: 'p404', qty: 1 })).rejects.toThrow(
      /reference field `product_id`: no document of `products` has `id` = "p404"/,
    );
    await e.createCollection({ name: 'reviews', fields: [{ name: 'product_id', type: 'string', reference: 'products.id', async_reference: true }, { name: 'text', type: 'string' }] });
    await e.writeDocument('reviews', { id: 'r1', product_id: 'p4', text: 'great' });
    expect((await e.search('reviews', { q: '*', filter_by: '$products(id:*)' })).found).toBe(0);
    await e.writeDocument('products', { id: 'p4', name: 'late product', price: 5, category: 'misc' });
    expect(ids(await e.search('reviews', { q: '*', filter_by: '$products(price:<10)' }))).toEqual(['r1']);
    await e.close();
  });

  it('deleting a referenced document deletes (or trims) the documents that reference it', async () => {
    const e = await shop();
    await e.createCollection({ name: 'bundles', fields: [{ name: 'items', type: 'string[]', reference: 'products.id' }] });
    await e.writeDocument('bundles', { id: 'b1', items: ['p1', 'p2'] });
    await e.deleteDocument('products', 'p2');
    expect(ids(await e.search('orders', { q: '*' }))).toEqual(['o1']);
    expect(e.getDocument('bundles', 'b1').items).toEqual(['p1']);
    expect(ids(await e.search('bundles', { q: '*', filter_by: '$products(name:shoes)' }))).toEqual(['b1']);
    await e.close();
  });

  it('references by a non-id field, integer references, and arrays inside object[]', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'authors', fields: [{ name: 'author_no', type: 'int32' }, { name: 'name', type: 'string' }] });
    await e.createCollection({ name: 'books', fields: [{ name: 'title', type: 'string' }, { name: 'author_no', type: 'int32', reference: 'authors.author_no' }] });
    await e.createCollection({ name: 'carts', enable_nested_fields: true, fields: [{ name: 'lines', type: 'object[]' }, { name: 'lines.book', type: 'string[]', reference: 'books.id' }] });
    await e.writeDocument('authors', { id: 'a', author_no: 7, name: 'Le Guin' });
    await e.writeDocument('authors', { id: 'b', author_no: 9, name: 'Borges' });
    await e.writeDocument('books', { id: 'k1', title: 'The Dispossessed', author_no: 7 });
    await e.writeDocument('books', { id: 'k2', title: 'Ficciones', author_no: 9 });
    await e.writeDocument('books', { id: 'k3', title: 'Earthsea', author_no: 7 });
    await e.writeDocument('carts', { id: 'x', lines: [{ book: 'k1', n: 1 }, { book: 'k2', n: 2 }] });
    expect(ids(await e.search('books', { q: '*', filter_by: '$authors(name:guin)' }))).toEqual(['k1', 'k3']);
    expect(ids(await e.search('authors', { q: '*', filter_by: '$books(title:ficciones)' }))).toEqual(['b']);
    expect(ids(await e.search('carts', { q: '*', filter_by: '$books(title:earthsea)' }))).toEqual([]);
    expect(ids(await e.search('carts', { q: '*', filter_by: '$books(title:ficciones)' }))).toEqual(['x']);
    // updating the referenced value re-resolves lookups
    await e.writeDocument('authors', { id: 'c', author_no: 11, name: 'Calvino' });
    await e.writeDocument('books', { id: 'k4', title: 'Invisible Cities', author_no: 11 });
    expect(ids(await e.search('books', { q: '*', filter_by: '$authors(name:calvino)' }))).toEqual(['k4']);
    await e.close();
  });

  it('an alias swapped to a new collection re-resolves the references through it', async () => {
    const e = openEngine();
    for (const name of ['products_v1', 'products_v2']) {
      await e.createCollection({ name, fields: [{ name: 'name', type: 'string' }] });
    }
    await e.writeDocument('products_v1', { id: 'p1', name: 'old name' });
    await e.writeDocument('products_v2', { id: 'zz', name: 'filler' }); // shifts internal ids in v2
    await e.writeDocument('products_v2', { id: 'p1', name: 'new name' });
    await e.upsertAlias('products', { collection_name: 'products_v1' });
    await e.createCollection({ name: 'orders', fields: [{ name: 'product_id', type: 'string', reference: 'products.id' }] });
    await e.writeDocument('orders', { id: 'o1', product_id: 'p1' });
    const name = async () => (await e.search('orders', { q: '*', include_fields: '$products(name)' })).hits![0]!.document.products;
    expect(await name()).toEqual({ name: 'old name' });
    await e.upsertAlias('products', { collection_name: 'products_v2' });
    expect(await name()).toEqual({ name: 'new name' });
    expect(ids(await e.search('orders', { q: '*', filter_by: '$products(name:new)' }))).toEqual(['o1']);
    // deleting from the old collection no longer cascades into orders
    await e.deleteDocument('products_v1', 'p1');
    expect(ids(await e.search('orders', { q: '*' }))).toEqual(['o1']);
    await e.close();
  });

  it('join filters agree with a brute-force evaluation on generated data', async () => {
    const e = openEngine();
    const r = rng(77);
    await e.createCollection({ name: 'p', fields: [{ name: 'price', type: 'int32' }, { name: 'tag', type: 'string' }] });
    await e.createCollection({ name: 'o', fields: [{ name: 'pid', type: 'string', reference: 'p.id' }, { name: 'qty', type: 'int32' }] });
    const products = Array.from({ length: 200 }, (_, i) => ({ id: `p${i}`, price: Math.floor(r() * 100), tag: ['a', 'b', 'c'][i % 3]! }));
    const orders = Array.from({ length: 800 }, (_, i) => ({ id: `o${i}`, pid: `p${Math.floor(r() * 200)}`, qty: 1 + Math.floor(r() * 9) }));
    await e.import('p', [Buffer.from(products.map((x) => JSON.stringify(x)).join('\n'))], {}, () => {});
    await e.import('o', [Buffer.from(orders.map((x) => JSON.stringify(x)).join('\n'))], { batchSize: 50 }, () => {});
    const price = new Map(products.map((p) => [p.id, p]));
    for (let t = 0; t < 25; t++) {
      const lim = Math.floor(r() * 100);
      const q = 1 + Math.floor(r() * 9);
      const tag = ['a', 'b', 'c'][t % 3]!;
      const fwd = await e.search('o', { q: '*', filter_by: `$p(price:<${lim} && tag:=${tag}) && qty:>=${q}`, per_page: 0 });
      expect(fwd.found).toBe(orders.filter((o) => price.get(o.pid)!.price < lim && price.get(o.pid)!.tag === tag && o.qty >= q).length);
      const rev = await e.search('p', { q: '*', filter_by: `$o(qty:>=${q}) && price:<${lim}`, per_page: 0 });
      expect(rev.found).toBe(products.filter((p) => p.price < lim && orders.some((o) => o.pid === p.id && o.qty >= q)).length);
    }
    await e.close();
  });

  it('the CLI passes joins through search and export', async () => {
    const dir = dataDirPath();
    const e = await shop();
    await e.close();
    const e2 = openEngine(dir);
    await e2.createCollection({ name: 'products', fields: [{ name: 'name', type: 'string' }] });
    await e2.createCollection({ name: 'orders', fields: [{ name: 'product_id', type: 'string', reference: 'products.id' }] });
    await e2.writeDocument('products', { id: 'p1', name: 'red shoes' });
    await e2.writeDocument('orders', { id: 'o1', product_id: 'p1' });
    await e2.close();
    const s = await cli(['search', 'orders', '--filter-by', '$products(name:shoes)', '--include-fields', 'id,$products(name)', '--jsonl', '-d', dir]);
    expect(s.stdout.trim()).toBe('{"id":"o1","products":{"name":"red shoes"}}');
    const x = await cli(['export', 'orders', '--include-fields', 'id,$products(name)', '-d', dir]);
    expect(x.stdout.trim()).toBe('{"id":"o1","products":{"name":"red shoes"}}');
  });
});
