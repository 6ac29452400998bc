/**
 * bench/import: `fathom import` of the Debian dataset into a fresh data directory through
 * the CLI, with the full keyword index and with storage alone (a schema without indexed
 * fields). Reports docs/s, peak RSS and data-directory size, median of several runs.
 *
 *   node bench/run.mjs import [--dataset PATH] [--runs 3] [--batch-size N (default: the CLI's, 1000)]
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEBIAN_SCHEMA, ROOT, arg, datasetText, dirSize, mb, median, runMeasured, table, tmpdir, withTime } from '../common.js';

const runs = Number(arg('runs', '3'));
const batch = arg('batch-size', '');
const work = tmpdir('fathom-bench-import-');
const file = path.join(work, 'debian.jsonl');
fs.writeFileSync(file, datasetText());
const total = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
const bin = path.join(ROOT, 'bin', 'fathom.js');

async function once(schema: object) {
  const dir = path.join(work, `data-${Math.random().toString(36).slice(2)}`);
  const c = await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], { input: JSON.stringify(schema) });
  if (c.code !== 0) throw new Error(c.stderr);
  const [cmd, args] = withTime(process.execPath, [bin, 'import', 'packages', file, '--quiet', '--no-progress', ...(batch ? ['--batch-size', batch] : []), '-d', dir]);
  const r = await runMeasured(cmd, args);
  if (r.code !== 0) throw new Error(r.stderr);
  const size = dirSize(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  return { ms: r.ms, rssKb: r.maxRssKb, size };
}

const variants: Array<[string, object]> = [
  ['full keyword index', DEBIAN_SCHEMA],
  ['storage alone', { name: 'packages', fields: [] }],
];
const rows: (string | number)[][] = [];
for (const [label, schema] of variants) {
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await once(schema));
  const ms = median(results.map((r) => r.ms));
  rows.push([label, total, (ms / 1000).toFixed(2) + ' s', Math.round(total / (ms / 1000)).toLocaleString('en') + ' docs/s', mb(median(results.map((r) => r.rssKb)) * 1024), mb(median(results.map((r) => r.size)))]);
  console.error(`${label}: ${results.map((r) => (r.ms / 1000).toFixed(2)).join(', ')} s`);
}
console.log(`\nfathom import, batch_size ${batch || 'default (1000)'}, median of ${runs} runs (wall clock of the whole CLI process)\n`);
console.log(table(['variant', 'documents', 'time', 'rate', 'peak RSS', 'data dir'], rows));
fs.rmSync(work, { recursive: true, force: true });
