/**
 * The engine alone, no HTTP: searches per second of one thread over the same queries
 * as bench.ts, in two passes (the first partly cold, the second steady). The gap between
 * this and the HTTP figures is the cost of the server.
 *
 *   node bench/http/run.mjs engine-only.ts [--data-dir DIR] [--dataset FILE] [--n 3000]
 */
import os from 'node:os';
import path from 'node:path';
import { Engine } from '../../src/engine.js';
import { QUERY_BY, loadDebian, makeQueries, vocabulary } from './debian.js';
import { DEFAULT_DATASET, arg, percentile } from '../common.js';

const dataset = arg('dataset', DEFAULT_DATASET)!;
const dataDir = arg('data-dir', path.join(os.tmpdir(), 'fathom-bench-debian'))!;
const n = Number(arg('n', '3000')!);

await loadDebian(dataDir, dataset);
const queries = makeQueries(await vocabulary(dataset), n);
const engine = Engine.open(dataDir, { merges: 'off' });
for (const q of queries.slice(0, 300)) engine.searchSync('packages', { q, query_by: QUERY_BY, per_page: '10' });
// Two passes over the same queries: the first meets most of them cold (code not yet
// optimised, and each segment's lookup structures built on first need), the second is
// the steady state of a long-running server.
for (const pass of ['first pass', 'second pass']) {
  const times: number[] = [];
  const t0 = performance.now();
  for (const q of queries) {
    const s = performance.now();
    engine.searchSync('packages', { q, query_by: QUERY_BY, per_page: '10' });
    times.push(performance.now() - s);
  }
  const total = performance.now() - t0;
  times.sort((a, b) => a - b);
  const pct = (p: number) => percentile(times, p).toFixed(2);
  console.log(`engine only, ${pass}: ${n} searches in ${total.toFixed(0)} ms = ${Math.round((n * 1000) / total)} searches/s on one thread; p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${pct(100)} ms`);
}
await engine.close();
