/**
 * bench/import: `fathom import` of the Debian dataset into a fresh data directory through
 * the CLI, with the full keyword index and with storage alone (a schema without indexed
 * fields). Reports docs/s, peak RSS and data-directory size, median of several runs; the
 * variants take turns run by run, so a change in the machine's speed hits them alike.
 * When NODE_EXTRA_CA_CERTS is set (it is on the shared machines), Node parses that
 * certificate file before running any script, 50 ms or more per process: each variant
 * then also runs without it.
 *
 *   node bench/run.mjs import [--dataset PATH] [--runs 3] [--batch-size N (default: the CLI's, 1000)]
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEBIAN_SCHEMA, ROOT, envWithoutCaCerts, arg, datasetText, dirSize, mb, median, runMeasured, table, tmpdir, withTime } from '../common.js';

const runs = Number(arg('runs', '3'));
const batch = arg('batch-size', '');
const work = tmpdir('fathom-bench-import-');
const file = path.join(work, 'debian.jsonl');
fs.writeFileSync(file, datasetText());
const total = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
const bin = path.join(ROOT, 'bin', 'fathom.js');

async function once(schema: object, env: NodeJS.ProcessEnv) {
  const dir = path.join(work, `data-${Math.random().toString(36).slice(2)}`);
  const c = await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], { input: JSON.stringify(schema) });
  if (c.code !== 0) throw new Error(c.stderr);
  const [cmd, args] = withTime(process.execPath, [bin, 'import', 'packages', file, '--quiet', '--no-progress', ...(batch ? ['--batch-size', batch] : []), '-d', dir]);
  const r = await runMeasured(cmd, args, { env });
  if (r.code !== 0) throw new Error(r.stderr);
  const size = dirSize(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  return { ms: r.ms, rssKb: r.maxRssKb, size };
}

const variants: Array<[string, object, NodeJS.ProcessEnv]> = [
  ['full keyword index', DEBIAN_SCHEMA, process.env],
  ['storage alone', { name: 'packages', fields: [] }, process.env],
];
if (envWithoutCaCerts) {
  variants.push(['full keyword index, NODE_EXTRA_CA_CERTS unset', DEBIAN_SCHEMA, envWithoutCaCerts], ['storage alone, NODE_EXTRA_CA_CERTS unset', { name: 'packages', fields: [] }, envWithoutCaCerts]);
}
const results = variants.map(() => [] as Array<{ ms: number; rssKb: number; size: number }>);
for (let i = 0; i < runs; i++) for (const [v, [, schema, env]] of variants.entries()) results[v]!.push(await once(schema, env));
const rows: (string | number)[][] = [];
for (const [v, [label]] of variants.entries()) {
  const ms = median(results[v]!.map((r) => r.ms));
  rows.push([label, total, (ms / 1000).toFixed(2) + ' s', Math.round(total / (ms / 1000)).toLocaleString('en') + ' docs/s', mb(median(results[v]!.map((r) => r.rssKb)) * 1024), mb(median(results[v]!.map((r) => r.size)))]);
  console.error(`${label}: ${results[v]!.map((r) => (r.ms / 1000).toFixed(2)).join(', ')} s`);
}
console.log(`\nfathom import, batch_size ${batch || 'default (1000)'}, median of ${runs} runs (wall clock of the whole CLI process)\n`);
console.log(table(['variant', 'documents', 'time', 'rate', 'peak RSS', 'data dir'], rows));
fs.rmSync(work, { recursive: true, force: true });
