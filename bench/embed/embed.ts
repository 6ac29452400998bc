/**
 * bench/embed: import with auto-embedding of 5,000 Debian descriptions, with the tiny ONNX
 * fixture model and with the offline built-in ts/use-lite, and the latency of semantic
 * search (embedding plus vector search), p50/p99.
 *
 *   node bench/run.mjs embed [--dataset PATH] [--n 5000] [--queries 100]
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, debianDocs, percentile, queryset, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';

const N = Number(arg('n', '5000'));
const NQ = Number(arg('queries', '100'));
const docs = debianDocs(N);
const queries = queryset(docs, NQ).map((q) => q.q);
const rows: (string | number)[][] = [];

for (const model of ['tiny', 'ts/use-lite']) {
  const work = tmpdir('fathom-bench-embed-');
  const dir = path.join(work, 'data');
  fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-bert'), path.join(dir, 'models', 'tiny'), { recursive: true });
  const e = Engine.open(dir, { merges: 'inline' });
  const tLoad = performance.now();
  await e.createCollection({
    name: 'p',
    fields: [
      { name: 'name', type: 'string' },
      { name: 'description', type: 'string' },
      { name: 'emb', type: 'float[]', embed: { from: ['description'], model_config: { model_name: model } } },
    ],
  });
  const loadMs = performance.now() - tLoad;
  const lines = docs.map((d) => JSON.stringify({ id: d.name, name: d.name, description: d.description })).join('\n');
  const t = performance.now();
  await e.import('p', [Buffer.from(lines)], { batchSize: 100 }, () => {});
  await e.idle();
  e.syncVectors('p');
  const importMs = performance.now() - t;
  for (const q of queries.slice(0, 10)) await e.search('p', { q, query_by: 'emb', exclude_fields: 'emb' });
  const lat: number[] = [];
  for (const q of queries) {
    const s = performance.now();
    await e.search('p', { q: q + ' x', query_by: 'emb', exclude_fields: 'emb' }); // new text: not cached
    lat.push(performance.now() - s);
  }
  const cached: number[] = [];
  for (const q of queries) {
    const s = performance.now();
    await e.search('p', { q: q + ' x', query_by: 'emb', exclude_fields: 'emb' });
    cached.push(performance.now() - s);
  }
  lat.sort((a, b) => a - b);
  cached.sort((a, b) => a - b);
  rows.push([model, (loadMs / 1000).toFixed(2) + ' s', (importMs / 1000).toFixed(1) + ' s', Math.round(N / (importMs / 1000)).toLocaleString('en'), percentile(lat, 50).toFixed(2) + ' ms', percentile(lat, 99).toFixed(2) + ' ms', percentile(cached, 50).toFixed(2) + ' ms']);
  await e.close();
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(`\n${N.toLocaleString('en')} Debian descriptions, batch_size 100, ${NQ} semantic queries\n`);
console.log(table(['model', 'model load', 'import', 'docs/s', 'query p50', 'query p99', 'repeated query p50 (cached embedding)'], rows));
