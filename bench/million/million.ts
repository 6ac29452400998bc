/**
 * bench/million: a generated collection of 1,000,000 documents (Zipf-distributed words
 * from a 50,000-word vocabulary, a category facet, a price). Imports through the CLI, then
 * reports query latency p50/p99 (1-3 word queries, half with a typo) and the wall-clock
 * time of a cold `fathom search` process.
 *
 *   node bench/run.mjs million [--n 1000000] [--queries 200] [--keep DIR]
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, dirSize, envWithoutCaCerts, mb, median, percentile, rng, runMeasured, table, tmpdir, withTime } from '../common.js';

const N = Number(arg('n', '1000000'));
const NQ = Number(arg('queries', '200'));
const keep = arg('keep');
const r = rng(3);
const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'si', 'po', 'de', 'fa', 'gu', 'ha', 'ji', 'ko', 'lu', 'mo', 'na', 're', 'so', 'ti', 'vo', 'ze'];
const vocab = Array.from({ length: 50000 }, (_, i) => {
  let w = '';
  let x = i + 7;
  for (let k = 0; k < 2 + (i % 3); k++) {
    w += syll[x % syll.length];
    x = Math.floor(x / syll.length) + k * 13;
  }
  return w + (i >= 10648 ? String.fromCharCode(97 + (i % 26)) : '');
});
const uniqueVocab = [...new Set(vocab)];
// Zipf: word rank k has weight 1/k
const cdf: number[] = [];
let acc = 0;
for (let k = 1; k <= uniqueVocab.length; k++) cdf.push((acc += 1 / k));
const zipf = () => {
  const x = r() * acc;
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return uniqueVocab[lo]!;
};

const dir = keep ?? path.join(tmpdir('fathom-bench-million-'), 'data');
const bin = path.join(ROOT, 'bin', 'fathom.js');
if (!fs.existsSync(path.join(dir, 'data.mdb'))) {
  const file = path.join(path.dirname(dir), 'million.jsonl');
  const out = fs.openSync(file, 'w');
  for (let i = 0; i < N; i += 10000) {
    let s = '';
    for (let j = i; j < Math.min(N, i + 10000); j++) {
      const title = Array.from({ length: 3 + Math.floor(r() * 5) }, zipf).join(' ');
      const body = Array.from({ length: 15 + Math.floor(r() * 25) }, zipf).join(' ');
      s += JSON.stringify({ id: String(j), title, body, category: `c${Math.floor(r() * 40)}`, price: Math.floor(r() * 1000) }) + '\n';
    }
    fs.writeSync(out, s);
  }
  fs.closeSync(out);
  await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], {
    input: JSON.stringify({ name: 'docs', fields: [{ name: 'title', type: 'string' }, { name: 'body', type: 'string' }, { name: 'category', type: 'string', facet: true }, { name: 'price', type: 'int32' }] }),
  });
  const [cmd, args] = withTime(process.execPath, [bin, 'import', 'docs', file, '--quiet', '--no-progress', '-d', dir]);
  const imp = await runMeasured(cmd, args);
  if (imp.code !== 0) throw new Error(imp.stderr);
  console.error(`import: ${(imp.ms / 1000).toFixed(1)} s, ${Math.round(N / (imp.ms / 1000))} docs/s, peak RSS ${mb(imp.maxRssKb * 1024)}`);
  fs.rmSync(file, { force: true });
}

// queries: 1-3 Zipf words, half with a typo in a word of 5+ letters
const queries: string[] = [];
while (queries.length < NQ) {
  const ws = Array.from({ length: 1 + Math.floor(r() * 3) }, zipf);
  if (queries.length % 2) {
    const i = ws.findIndex((w) => w.length >= 5);
    if (i < 0) continue;
    const w = ws[i]!;
    ws[i] = w.slice(0, 2) + w[3] + w[2] + w.slice(4);
  }
  queries.push(ws.join(' '));
}
const { Engine } = await import('../../src/engine.js');
const e = Engine.open(dir, { readOnly: true, merges: 'off' });
for (const q of queries.slice(0, 20)) e.searchSync('docs', { q, query_by: 'title,body' });
const lat: number[] = [];
const facetLat: number[] = [];
for (const q of queries) {
  let t = performance.now();
  e.searchSync('docs', { q, query_by: 'title,body' });
  lat.push(performance.now() - t);
  t = performance.now();
  e.searchSync('docs', { q, query_by: 'title,body', facet_by: 'category' });
  facetLat.push(performance.now() - t);
}
await e.close();
lat.sort((a, b) => a - b);
facetLat.sort((a, b) => a - b);

// cold `fathom search`: a new process each time (file cache warm, as after any earlier use);
// also without NODE_EXTRA_CA_CERTS when it is set (Node parses that file before any script)
async function coldSearches(env: NodeJS.ProcessEnv): Promise<number[]> {
  const ms: number[] = [];
  for (const q of queries.slice(0, 5)) {
    const res = await runMeasured(process.execPath, [bin, 'search', 'docs', '-q', q, '--query-by', 'title,body', '--json', '-d', dir], { env });
    if (res.code !== 0) throw new Error(res.stderr);
    ms.push(res.ms);
  }
  return ms;
}
const cold = await coldSearches(process.env);
const coldPlain = envWithoutCaCerts && (await coldSearches(envWithoutCaCerts));
console.log(`\n${N.toLocaleString('en')} documents, data directory ${mb(dirSize(dir))}\n`);
console.log(
  table(
    ['measure', 'value'],
    [
      ['query p50 (title,body, half with a typo)', percentile(lat, 50).toFixed(2) + ' ms'],
      ['query p99', percentile(lat, 99).toFixed(2) + ' ms'],
      ['query with category facet p50', percentile(facetLat, 50).toFixed(2) + ' ms'],
      ['query with category facet p99', percentile(facetLat, 99).toFixed(2) + ' ms'],
      ['cold `fathom search` process, median of 5', median(cold).toFixed(0) + ' ms'],
      ...(coldPlain ? [['the same without NODE_EXTRA_CA_CERTS', median(coldPlain).toFixed(0) + ' ms']] : []),
    ],
  ),
);
if (!keep) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
