/**
 * Compaction on the Debian set: import it through `fathom serve`, delete every other
 * document, compact (`POST /operations/db/compact`) while a client searches without pause,
 * and report the data directory's size before and after (target: at most 60% of before),
 * the compaction's time, and the search latencies measured during it.
 *
 *   node bench/run.mjs compact [--dataset path]
 */
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { startServer } from '../../src/server/serve.js';
import { DEBIAN_SCHEMA, datasetText, percentile, queryset, debianDocs } from '../common.js';

const KEY = 'bench-key';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-compact-'));
const dataDir = path.join(dir, 'data');

function dirBytes(d: string): number {
  let total = 0;
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
  }
  return total;
}

const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;

const server = await startServer({ dataDir, apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'warn' });
const call = async (method: string, p: string, body?: string) => {
  const r = await fetch(`${server.url}${p}`, { method, headers: { 'x-typesense-api-key': KEY }, body });
  return { status: r.status, text: await r.text() };
};
try {
  await call('POST', '/collections', JSON.stringify(DEBIAN_SCHEMA));
  const text = datasetText();
  const imp = await call('POST', '/collections/packages/documents/import?batch_size=1000', text);
  const lines = imp.text.split('\n');
  const ok = lines.filter((l) => l.includes('"success":true')).length;
  await server.engine.idle();
  const ids = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).name as string);
  // the dataset has no ids: they were generated as the seqs 0..n-1
  const all = JSON.parse((await call('GET', '/collections/packages')).text).num_documents as number;
  console.log(`imported ${ok} of ${lines.length} lines (${ids.length} packages), ${all} documents`);
  const sizeFull = dirBytes(dataDir);

  const exported = (await call('GET', '/collections/packages/documents/export?include_fields=id')).text.split('\n').map((l) => JSON.parse(l).id as string);
  const drop = exported.filter((_, i) => i % 2 === 1);
  for (let i = 0; i < drop.length; i += 1000) {
    const r = await call('DELETE', `/collections/packages/documents?filter_by=${encodeURIComponent(`id:[${drop.slice(i, i + 1000).join(',')}]`)}`);
    if (r.status !== 200) throw new Error(r.text);
  }
  await server.engine.idle();
  const sizeBefore = dirBytes(dataDir);
  const left = JSON.parse((await call('GET', '/collections/packages')).text).num_documents as number;

  const queries = queryset(debianDocs(), 500);
  let searching = true;
  const during: number[] = [];
  const errors: number[] = [];
  const loop = (async () => {
    for (let i = 0; searching; i++) {
      const q = queries[i % queries.length]!;
      const t = performance.now();
      const r = await call('GET', `/collections/packages/documents/search?q=${encodeURIComponent(q.q)}&query_by=name,summary,description`);
      during.push(performance.now() - t);
      if (r.status !== 200) errors.push(r.status);
    }
  })();
  const t0 = performance.now();
  const res = await call('POST', '/operations/db/compact');
  const took = performance.now() - t0;
  searching = false;
  await loop;
  if (res.status !== 200) throw new Error(res.text);
  const sizeAfter = dirBytes(dataDir);
  during.sort((a, b) => a - b);

  console.log(`data directory: ${mb(sizeFull)} with ${all} documents; ${mb(sizeBefore)} after deleting ${all - left} (every other one)`);
  console.log(`compaction: ${(took / 1000).toFixed(2)} s, ${JSON.stringify(JSON.parse(res.text))}`);
  console.log(`after: ${mb(sizeAfter)} = ${((sizeAfter / sizeBefore) * 100).toFixed(1)}% of before (target <= 60%)`);
  console.log(
    `searches during compaction: ${during.length}, errors ${errors.length}, p50 ${percentile(during, 50).toFixed(2)} ms, p99 ${percentile(during, 99).toFixed(2)} ms, max ${during[during.length - 1]!.toFixed(1)} ms`,
  );
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
