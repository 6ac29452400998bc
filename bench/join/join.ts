/**
 * bench/join: 100,000 products and 100,000 orders referencing them. Import time of the
 * orders with the reference against the same import without it, and the p50/p99 of a
 * search with a join filter and joined fields in the results.
 *
 *   node bench/run.mjs join [--n 100000] [--queries 200]
 */
import fs from 'node:fs';
import path from 'node:path';
import { arg, percentile, rng, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';

const N = Number(arg('n', '100000'));
const NQ = Number(arg('queries', '200'));
const r = rng(11);
const WORDS = ['red', 'blue', 'green', 'steel', 'wooden', 'garden', 'kitchen', 'office', 'lamp', 'chair', 'table', 'knife', 'shoe', 'hat', 'scarf', 'bench', 'desk', 'cup', 'bowl', 'pan'];
const CATEGORIES = Array.from({ length: 50 }, (_, i) => `cat${i}`);
const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;

const products = Array.from({ length: N }, (_, i) => ({ id: `p${i}`, name: `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)}`, price: Math.round(r() * 10000) / 100, category: pick(CATEGORIES) }));
const orders = Array.from({ length: N }, (_, i) => ({ id: `o${i}`, product_id: `p${Math.floor(r() * N)}`, qty: 1 + Math.floor(r() * 9), note: `${pick(WORDS)} order` }));
const chunks = (docs: object[]) =>
  (function* () {
    for (let i = 0; i < docs.length; i += 5000) yield Buffer.from(docs.slice(i, i + 5000).map((d) => JSON.stringify(d)).join('\n') + '\n');
  })();

const work = tmpdir('fathom-bench-join-');
const e = Engine.open(path.join(work, 'data'), { merges: 'inline' });
await e.createCollection({ name: 'products', fields: [{ name: 'name', type: 'string' }, { name: 'price', type: 'float' }, { name: 'category', type: 'string', facet: true }] });
await e.createCollection({ name: 'orders', fields: [{ name: 'product_id', type: 'string', reference: 'products.id' }, { name: 'qty', type: 'int32' }, { name: 'note', type: 'string' }] });
await e.createCollection({ name: 'orders_plain', fields: [{ name: 'product_id', type: 'string' }, { name: 'qty', type: 'int32' }, { name: 'note', type: 'string' }] });

const time = async (label: string, coll: string, docs: object[]) => {
  const t = performance.now();
  await e.import(coll, chunks(docs), {}, () => {});
  await e.idle();
  await e.optimize(coll);
  const ms = performance.now() - t;
  console.error(`${label}: ${(ms / 1000).toFixed(1)} s`);
  return ms;
};
const tp = await time('products', 'products', products);
const tPlain = await time('orders without reference', 'orders_plain', orders);
const tRef = await time('orders with reference', 'orders', orders);

const lat: number[] = [];
let found = 0;
for (let i = 0; i < NQ + 20; i++) {
  const cat = pick(CATEGORIES);
  const price = Math.round(20 + r() * 60);
  const t = performance.now();
  const res = await e.search('orders', { q: '*', filter_by: `$products(category:=${cat} && price:<${price}) && qty:>2`, include_fields: 'id, qty, $products(name, price)', per_page: 10 });
  const ms = performance.now() - t;
  if (i >= 20) {
    lat.push(ms);
    found += res.found;
  }
}
lat.sort((a, b) => a - b);
const kw: number[] = [];
for (let i = 0; i < NQ; i++) {
  const t = performance.now();
  await e.search('orders', { q: pick(WORDS), query_by: 'note', filter_by: `$products(category:=${pick(CATEGORIES)})`, include_fields: 'id, $products(name) as product', per_page: 10 });
  kw.push(performance.now() - t);
}
kw.sort((a, b) => a - b);

console.log(`\n${N.toLocaleString('en')} products, ${N.toLocaleString('en')} orders (each references one product)\n`);
console.log(
  table(
    ['step', 'time', 'docs/s'],
    [
      ['import products', (tp / 1000).toFixed(1) + ' s', Math.round(N / (tp / 1000)).toLocaleString('en')],
      ['import orders without the reference', (tPlain / 1000).toFixed(1) + ' s', Math.round(N / (tPlain / 1000)).toLocaleString('en')],
      ['import orders with the reference', (tRef / 1000).toFixed(1) + ' s', Math.round(N / (tRef / 1000)).toLocaleString('en')],
      ['reference overhead', ((tRef / tPlain - 1) * 100).toFixed(0) + ' %', ''],
    ],
  ),
);
console.log('');
console.log(
  table(
    ['query', 'p50', 'p99', 'avg found'],
    [
      ['q=*, filter_by $products(category && price) && qty, include $products(name, price)', percentile(lat, 50).toFixed(2) + ' ms', percentile(lat, 99).toFixed(2) + ' ms', Math.round(found / NQ)],
      ['q=<word> on orders, filter_by $products(category), include $products(name) as product', percentile(kw, 50).toFixed(2) + ' ms', percentile(kw, 99).toFixed(2) + ' ms', ''],
    ],
  ),
);
await e.close();
fs.rmSync(work, { recursive: true, force: true });
