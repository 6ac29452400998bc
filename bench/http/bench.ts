/**
 * HTTP benchmark: autocannon against `fathom serve` on the Debian packages collection.
 *
 *   node bench/http/run.mjs bench.ts [--dataset FILE] [--data-dir DIR] [--processes 1,2]
 *        [--threads N] [--connections 64] [--duration 10] [--warmup 3] [--during-import] [--rate R] [--use-cache]
 *
 * For each process count it starts the real binary (dist/, so run `npm run build`
 * first) with logging at warn, and measures in one run:
 *   - GET /health        the ceiling of the HTTP stack (no key, no engine work)
 *   - GET .../search     typo-tolerant 1-3 word queries over name,summary
 * With --during-import it then imports the whole data set through the API into a new
 * collection while searches run (at --rate requests/s if given, else flat out) and
 * reports search latency during the import.
 * With --use-cache every search asks for the search cache (use_cache=true): the 5,000
 * queries repeat, so after the first pass this measures cached answers, not the engine.
 * With --threads N the server runs searches on N worker threads instead (bench-only
 * experiment, threads-server.ts) for the worker-threads-vs-processes comparison.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { QUERY_BY, loadDebian, makeQueries, vocabulary } from './debian.js';
import { DEBIAN_SCHEMA, DEFAULT_DATASET, ROOT, arg } from '../common.js';

const KEY = 'bench-key';

const dataset = arg('dataset', DEFAULT_DATASET)!;
const dataDir = arg('data-dir', path.join(os.tmpdir(), 'fathom-bench-debian'))!;
const processesList = arg('processes', '1,2')!.split(',').map(Number);
const threads = Number(arg('threads', '0'));
const connections = Number(arg('connections', '64'));
const duration = Number(arg('duration', '10'));
/** Seconds of searches before measuring (JIT, page cache, the indexes' lazily built lookup structures). */
const warmup = Number(arg('warmup', '3'));
const duringImport = arg('during-import') !== undefined;
const rate = arg('rate') ? Number(arg('rate')) : undefined;
const useCache = arg('use-cache') !== undefined;

interface Result {
  label: string;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  non2xx: number;
}

function summarize(label: string, r: autocannon.Result): Result {
  return {
    label,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    max: r.latency.max,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

function print(r: Result) {
  console.log(
    `${r.label.padEnd(44)} ${String(r.rps).padStart(7)} req/s   p50 ${r.p50} ms   p90 ${r.p90} ms   p99 ${r.p99} ms   max ${r.max} ms` +
      (r.errors || r.non2xx ? `   errors ${r.errors} non-2xx ${r.non2xx}` : ''),
  );
}

async function waitHealthy(port: number, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      http
        .get({ host: '127.0.0.1', port, path: '/health' }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become healthy');
}

function startServer(processes: number, port: number): ChildProcess {
  const args =
    threads > 0
      ? [path.join(ROOT, 'node_modules', '.cache', 'fathom-bench', 'threads-server.mjs'), dataDir, String(port), KEY, String(threads)]
      : [path.join(ROOT, 'bin', 'fathom.js'), 'serve', '--data-dir', dataDir, '--api-port', String(port), '--api-address', '127.0.0.1', '--api-key', KEY, '--processes', String(processes), '--log-level', 'warn'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  return child;
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

function searchRequests(queries: string[]) {
  let i = 0;
  return [
    {
      method: 'GET' as const,
      setupRequest: (req: { path: string }) => {
        const q = queries[i++ % queries.length]!;
        req.path = `/collections/packages/documents/search?q=${encodeURIComponent(q)}&query_by=${QUERY_BY}&per_page=10${useCache ? '&use_cache=true' : ''}`;
        return req;
      },
    },
  ];
}

/** Imports the data set through POST .../import into `collection`; resolves with seconds taken. */
async function importThroughApi(port: number, collection: string): Promise<number> {
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const body = JSON.stringify({ ...DEBIAN_SCHEMA, name: collection });
    const req = http.request({ host: '127.0.0.1', port, path: '/collections', method: 'POST', headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`create collection: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
  // The import client runs in its own process, so that its work does not skew the
  // latencies autocannon measures in this one.
  const script = `
    const http = require('node:http'), fs = require('node:fs'), zlib = require('node:zlib');
    const [file, port, path, key] = process.argv.slice(1);
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'x-typesense-api-key': key, 'content-type': 'text/plain' } }, (res) => {
      let lines = 0, failed = 0, tail = '';
      res.on('data', (c) => { const s = tail + c; const parts = s.split('\\n'); tail = parts.pop(); for (const l of parts) { lines++; if (!l.startsWith('{"success":true')) failed++; } });
      res.on('end', () => { if (tail) { lines++; if (!tail.startsWith('{"success":true')) failed++; } console.log('  import through the API: ' + lines + ' result lines, ' + failed + ' failed'); });
    });
    const raw = fs.createReadStream(file);
    (file.endsWith('.gz') ? raw.pipe(zlib.createGunzip()) : raw).pipe(req);`;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, dataset, String(port), `/collections/${collection}/documents/import?batch_size=40`, KEY], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`import client exited with ${code}`))));
  });
  return (performance.now() - started) / 1000;
}

async function main() {
  console.log(`data set ${dataset}; data directory ${dataDir}`);
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const t0 = performance.now();
  const n = await loadDebian(dataDir, dataset);
  console.log(`packages: ${n} documents (ready in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  const queries = makeQueries(await vocabulary(dataset), 5000);
  console.log(`sample queries: ${queries.slice(0, 6).map((q) => JSON.stringify(q)).join(', ')}`);
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}; node ${process.version}; ${connections} connections, ${duration} s per run after ${warmup} s of warm-up searches\n`);
  if (useCache) console.log(`use_cache=true: the ${queries.length} queries repeat, so most searches are answered from the cache\n`);
  const headers = { 'x-typesense-api-key': KEY };

  for (const processes of threads > 0 ? [1] : processesList) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const label = threads > 0 ? `1 process + ${threads} search threads` : `${processes} process${processes > 1 ? 'es' : ''}`;
    console.log(`== ${label}`);
    const child = startServer(processes, port);
    try {
      await waitHealthy(port);
      const url = `http://127.0.0.1:${port}`;
      // Warm up: JIT, page cache, segment readers and their lazily built lookup structures.
      await run({ url, connections, duration: warmup, headers, requests: searchRequests(queries) });
      const health = summarize(`${label}: GET /health`, await run({ url: `${url}/health`, connections, duration }));
      print(health);
      const search = summarize(`${label}: GET search`, await run({ url, connections, duration, headers, requests: searchRequests(queries) }));
      print(search);
      console.log(`  search/health throughput ratio: ${(search.rps / Math.max(health.rps, 1)).toFixed(2)}`);
      if (duringImport) {
        const coll = `packages_import_${Date.now()}`;
        const importing = importThroughApi(port, coll);
        let importDone = false;
        void importing.then(() => (importDone = true));
        const results: autocannon.Result[] = [];
        // Search in 5 s slices until the import is over, so only in-import latency counts.
        while (!importDone) {
          results.push(
            await run({ url, connections, duration: 5, headers, requests: searchRequests(queries), ...(rate ? { overallRate: rate } : {}) }),
          );
        }
        const secs = await importing;
        const slice = results.map((r, i) => summarize(`${label}: search during import, slice ${i + 1}`, r));
        slice.forEach(print);
        const worst = Math.max(...slice.map((s) => s.p99));
        console.log(`  import of ${n} documents took ${secs.toFixed(1)} s (${Math.round(n / secs)} docs/s); worst p99 search latency during it: ${worst} ms`);
      }
    } finally {
      await stopServer(child);
    }
    console.log('');
  }
}

await main();
