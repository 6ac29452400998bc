/**
 * bench/vector: 100,000 clustered 384-dimensional vectors (seeded). Fathom's vector query
 * path (a full search: parameters, vector_query, k-NN, documents) against raw hnswlib-node
 * with the same M / ef_construction, and an exact scan, in one run.
 *
 *   node bench/run.mjs vector [--n 100000] [--dims 384] [--queries 200]
 *
 * Reports graph build time, recall@10 and latency (p50, queries/s) at ef 10, 40 and 100,
 * and a filtered query at 10% selectivity.
 */
import fs from 'node:fs';
import path from 'node:path';
import hnswlib from 'hnswlib-node';
import { arg, percentile, rng, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';

const N = Number(arg('n', '100000'));
const DIMS = Number(arg('dims', '384'));
const NQ = Number(arg('queries', '200'));
const CLUSTERS = 100;
const r = rng(7);

function clustered(n: number, centres: Float32Array[]): Float32Array[] {
  return Array.from({ length: n }, () => {
    const c = centres[Math.floor(r() * centres.length)]!;
    const v = new Float32Array(DIMS);
    for (let i = 0; i < DIMS; i++) v[i] = c[i]! + (r() - 0.5) * 0.5;
    return v;
  });
}
const centres = Array.from({ length: CLUSTERS }, () => Float32Array.from({ length: DIMS }, () => r() * 2 - 1));
const vecs = clustered(N, centres);
const queries = clustered(NQ, centres);

function norm(v: Float32Array): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}
const norms = vecs.map(norm);

/** Exact top 10 by cosine distance (the reference), with its latency. */
function exact(q: Float32Array, allow?: (i: number) => boolean): number[] {
  const qn = norm(q);
  const best: Array<[number, number]> = [];
  for (let i = 0; i < N; i++) {
    if (allow && !allow(i)) continue;
    const v = vecs[i]!;
    let dot = 0;
    for (let k = 0; k < DIMS; k++) dot += q[k]! * v[k]!;
    const d = 1 - dot / (qn * norms[i]!);
    if (best.length < 10) {
      best.push([d, i]);
      best.sort((a, b) => a[0] - b[0]);
    } else if (d < best[9]![0]) {
      best[9] = [d, i];
      best.sort((a, b) => a[0] - b[0]);
    }
  }
  return best.map((b) => b[1]);
}

console.error(`computing exact neighbours for ${NQ} queries over ${N} vectors ...`);
const tExact = performance.now();
const truth = queries.map((q) => exact(q));
const exactMs = (performance.now() - tExact) / NQ;
const group = (i: number) => i % 10;
const truthFiltered = queries.map((q) => exact(q, (i) => group(i) === 3));

const recall = (got: number[][], want: number[][]) => got.reduce((s, g, qi) => s + g.filter((x) => want[qi]!.includes(x)).length, 0) / (want.length * 10);

// --- raw hnswlib-node --------------------------------------------------------------
const tRaw = performance.now();
const raw = new hnswlib.HierarchicalNSW('cosine', DIMS);
raw.initIndex(N, 16, 200, 100);
for (let i = 0; i < N; i++) raw.addPoint(Array.from(vecs[i]!), i);
const rawBuildMs = performance.now() - tRaw;

// --- Fathom ------------------------------------------------------------------------
const work = tmpdir('fathom-bench-vector-');
const dir = path.join(work, 'data');
const e = Engine.open(dir, { merges: 'inline' });
await e.createCollection({ name: 'v', fields: [{ name: 'group', type: 'int32' }, { name: 'emb', type: 'float[]', num_dim: DIMS }] });
const tImport = performance.now();
const lines = function* () {
  for (let i = 0; i < N; i += 1000) {
    let s = '';
    for (let j = i; j < Math.min(N, i + 1000); j++) s += JSON.stringify({ id: String(j), group: group(j), emb: Array.from(vecs[j]!) }) + '\n';
    yield Buffer.from(s);
  }
};
await e.import('v', lines(), { batchSize: 1000 }, () => {});
await e.idle();
const importMs = performance.now() - tImport;
const tGraph = performance.now();
e.syncVectors('v');
const graphMs = performance.now() - tGraph;

const rows: (string | number)[][] = [];
const summary: Record<string, number> = {};
for (const ef of [10, 40, 100]) {
  raw.setEf(ef);
  const rawLat: number[] = [];
  const rawGot: number[][] = [];
  const ourLat: number[] = [];
  const ourGot: number[][] = [];
  // warm-up
  for (const q of queries.slice(0, 20)) {
    raw.searchKnn(Array.from(q), 10);
    e.searchSync('v', { q: '*', vector_query: `emb:([${Array.from(q).join(',')}], k: 10, ef: ${ef} )`, include_fields: 'id' });
  }
  const qstrings = queries.map((q) => `emb:([${Array.from(q).join(',')}], k: 10, ef: ${ef})`);
  // Each side runs its own pass over all queries, twice, alternating: interleaving the two
  // indexes query by query makes each evict the other's graph from the CPU caches (which
  // measured the cache, not the code). Our pass includes parsing the vector_query text.
  for (let round = 0; round < 2; round++) {
    for (let qi = 0; qi < NQ; qi++) {
      const q = Array.from(queries[qi]!);
      const t = performance.now();
      const res = raw.searchKnn(q, 10);
      rawLat.push(performance.now() - t);
      if (round === 0) rawGot.push(res.neighbors);
    }
    for (let qi = 0; qi < NQ; qi++) {
      // a fresh string each time, so that no parse is remembered from an earlier pass
      const qs = round === 0 ? qstrings[qi]! : qstrings[qi]!.replace('k: 10', 'k:10');
      const t = performance.now();
      const ours = e.searchSync('v', { q: '*', vector_query: qs, include_fields: 'id' });
      ourLat.push(performance.now() - t);
      if (round === 0) ourGot.push(ours.hits!.map((h) => Number(h.document.id)));
    }
  }
  rawLat.sort((a, b) => a - b);
  ourLat.sort((a, b) => a - b);
  const p50r = percentile(rawLat, 50);
  const p50o = percentile(ourLat, 50);
  summary[`ratio_ef${ef}`] = p50o / p50r;
  rows.push([`ef ${ef}`, recall(ourGot, truth).toFixed(3), p50o.toFixed(3) + ' ms', Math.round(1000 / p50o).toLocaleString('en'), recall(rawGot, truth).toFixed(3), p50r.toFixed(3) + ' ms', Math.round(1000 / p50r).toLocaleString('en'), (p50o / p50r).toFixed(2) + 'x']);
}

// filtered query at 10% selectivity
const filtLat: number[] = [];
const filtGot: number[][] = [];
for (let qi = 0; qi < NQ; qi++) {
  const qs = `emb:([${Array.from(queries[qi]!).join(',')}], k: 10, ef: 100)`;
  const t = performance.now();
  const res = e.searchSync('v', { q: '*', vector_query: qs, filter_by: 'group:=3', include_fields: 'id' });
  filtLat.push(performance.now() - t);
  filtGot.push(res.hits!.map((h) => Number(h.document.id)));
}
filtLat.sort((a, b) => a - b);

console.log(`\n${N.toLocaleString('en')} vectors, ${DIMS} dimensions, ${CLUSTERS} clusters, ${NQ} queries, M 16, ef_construction 200\n`);
console.log(
  table(
    ['step', 'time'],
    [
      ['fathom import (documents + vectors into LMDB)', (importMs / 1000).toFixed(1) + ' s'],
      ['fathom HNSW graph build (from LMDB) and save', (graphMs / 1000).toFixed(1) + ' s'],
      ['raw hnswlib-node build', (rawBuildMs / 1000).toFixed(1) + ' s'],
      ['exact scan, per query', exactMs.toFixed(1) + ' ms'],
    ],
  ),
);
console.log('');
console.log(table(['ef', 'fathom recall@10', 'fathom p50', 'fathom q/s', 'raw recall@10', 'raw p50', 'raw q/s', 'fathom / raw'], rows));
console.log(`\nfiltered (group:=3, 10% of documents), ef 100: p50 ${percentile(filtLat, 50).toFixed(2)} ms, p99 ${percentile(filtLat, 99).toFixed(2)} ms, recall@10 ${recall(filtGot, truthFiltered).toFixed(3)}`);
await e.close();
fs.rmSync(work, { recursive: true, force: true });
