/**
 * HTTP benchmark: wrk or autocannon against `fathom serve` on the Debian packages collection.
 *
 *   node bench/http/run.mjs bench.ts [--dataset FILE] [--data-dir DIR] [--processes 1,2]
 *        [--threads N] [--connections 64] [--duration 10] [--warmup 3] [--during-import] [--rate R] [--use-cache]
 *        [--client auto|wrk|autocannon]
 *
 * The load generator shares the machine's two cores with the server, so its own cost shows
 * in the figures: autocannon (Node) takes ~30% of a core at 3,000 searches/s, wrk (C) much
 * less. `--client wrk` uses wrk (`apt-get install wrk`), `--client auto` wrk when it is on
 * PATH and autocannon otherwise; the default stays autocannon so that figures compare with
 * earlier runs. The report names the client used. Searches during an import always use
 * the paced client below.
 *
 * For each process count it starts the real binary (dist/, so run `npm run build`
 * first) with logging at warn, and measures in one run:
 *   - GET /health        the ceiling of the HTTP stack (no key, no engine work)
 *   - GET .../search     typo-tolerant 1-3 word queries over name,summary
 * With --during-import it then imports the whole data set through the API into a new
 * collection while searches run at a steady --rate (default 50/s) and reports their
 * latency during the import against the same searches without it. Those searches are
 * paced (open loop): each leaves on a clock, one every 1/rate s, on a free keep-alive
 * connection (up to --connections), as independent users' searches arrive. A closed-loop
 * client at a capped rate (autocannon's overallRate) sends each connection's share in
 * bursts: with 64 connections it measured p50 19 ms, p99 85 ms at 50 searches/s on an
 * idle server, the queue of a burst rather than the server's latency.
 * With --use-cache every search asks for the search cache (use_cache=true): the 5,000
 * queries repeat, so after the first pass this measures cached answers, not the engine.
 * With --threads N the server runs searches on N worker threads instead (bench-only
 * experiment, threads-server.ts) for the worker-threads-vs-processes comparison.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { QUERY_BY, loadDebian, makeQueries, vocabulary } from './debian.js';
import { DEBIAN_SCHEMA, DEFAULT_DATASET, ROOT, arg, percentile, usage } from '../common.js';

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
/** Searches per second during --during-import (open loop: sent on a clock, whatever the answers do). */
const rate = Number(arg('rate', '50'));
if (!(rate > 0 && rate <= 2000)) usage('--rate must be between 1 and 2000 searches/s');
const useCache = arg('use-cache') !== undefined;
const clientArg = arg('client', 'autocannon')!;
if (!['auto', 'wrk', 'autocannon'].includes(clientArg)) usage(`--client must be auto, wrk or autocannon, not ${clientArg}`);
const haveWrk = clientArg !== 'autocannon' && spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
if (clientArg === 'wrk' && !haveWrk) usage('--client wrk: wrk is not on PATH (apt-get install wrk)');
const client: 'wrk' | 'autocannon' = haveWrk ? 'wrk' : 'autocannon';

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

/**
 * wrk's Lua side: cycles through the search paths (each thread from its own offset) and
 * prints the run's figures as one JSON line at the end, so nothing parses wrk's text.
 */
function wrkScript(paths: string[] | undefined, headers: Record<string, string>): string {
  const file = path.join(os.tmpdir(), `fathom-bench-wrk-${process.pid}-${paths ? 'search' : 'plain'}.lua`);
  const q = (s: string) => JSON.stringify(s); // a JSON string of ASCII text is a valid Lua string
  const hdrs = Object.entries(headers).map(([k, v]) => `[${q(k)}] = ${q(v)}`).join(', ');
  const lua = [
    paths ? `local paths = {\n${paths.map((p) => `  ${q(p)},`).join('\n')}\n}` : '',
    // (setup runs once per thread in wrk's main Lua state; thread:set makes a global in the thread's)
    'local n = 0',
    'function setup(thread) n = n + 1; thread:set("offset", n * 997) end',
    paths ? 'local i = 0' : '',
    paths ? 'function init(args) i = offset or 0 end' : '',
    paths ? `function request() i = i % #paths + 1; return wrk.format("GET", paths[i], { ${hdrs} }) end` : '',
    'function done(s, lat, req)',
    '  local e = s.errors',
    '  io.write(string.format(\'{"requests":%d,"duration_us":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"errors":%d,"non2xx":%d}\\n\',',
    '    s.requests, s.duration, math.floor(lat:percentile(50)), math.floor(lat:percentile(90)), math.floor(lat:percentile(99)), lat.max, e.connect + e.read + e.write + e.timeout, e.status))',
    'end',
  ].join('\n');
  fs.writeFileSync(file, lua);
  return file;
}

/** One wrk run (2 threads) against `url`; latencies in ms like autocannon's. */
function runWrk(label: string, url: string, script: string, seconds: number): Result {
  const out = execFileSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '-s', script, url], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no summary:\n${out}`);
  const w = JSON.parse(line) as { requests: number; duration_us: number; p50: number; p90: number; p99: number; max: number; errors: number; non2xx: number };
  const ms = (us: number) => Math.round(us / 100) / 10;
  return { label, rps: Math.round(w.requests / (w.duration_us / 1e6)), p50: ms(w.p50), p90: ms(w.p90), p99: ms(w.p99), max: ms(w.max), errors: w.errors, non2xx: w.non2xx };
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

const searchPath = (q: string) => `/collections/packages/documents/search?q=${encodeURIComponent(q)}&query_by=${QUERY_BY}&per_page=10${useCache ? '&use_cache=true' : ''}`;

function searchRequests(paths: string[]) {
  let i = 0;
  return [
    {
      method: 'GET' as const,
      setupRequest: (req: { path: string }) => {
        req.path = paths[i++ % paths.length]!;
        return req;
      },
    },
  ];
}

interface Paced {
  /** Milliseconds each search took, from its scheduled send to the end of its answer. */
  latencies: number[];
  errors: number;
  seconds: number;
}

const ms1 = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(1));

function printPaced(label: string, r: Paced) {
  const l = [...r.latencies].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(44)} ${String(Math.round(l.length / r.seconds)).padStart(7)} req/s   p50 ${ms1(percentile(l, 50))} ms   p90 ${ms1(percentile(l, 90))} ms   p99 ${ms1(percentile(l, 99))} ms   max ${ms1(percentile(l, 100))} ms` +
      (r.errors ? `   errors ${r.errors}` : ''),
  );
}

/** One GET on a keep-alive connection of `agent`; resolves with its latency from `due`, or undefined on failure. */
function timedGet(port: number, agent: http.Agent, p: string, due: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: p, agent, headers: { 'x-typesense-api-key': KEY } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - due : undefined));
      })
      .on('error', () => resolve(undefined));
  });
}

/**
 * Open-loop searches: one every 1/rate s for `seconds` (or until `stop()`), each on a free
 * keep-alive connection. Latency counts from the scheduled send time, so a stalled client
 * or server shows up as latency rather than as fewer requests.
 */
async function pacedSearches(port: number, paths: string[], perSecond: number, seconds: number, stop?: () => boolean): Promise<Paced> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const interval = 1000 / perSecond;
  const start = performance.now();
  const answers: Promise<number | undefined>[] = [];
  for (let sent = 0; ; sent++) {
    const due = start + sent * interval;
    if (due - start >= seconds * 1000 || stop?.()) break;
    // (a timer can fire late: the searches whose time has passed then leave at once)
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    answers.push(timedGet(port, agent, paths[sent % paths.length]!, due));
  }
  const got = await Promise.all(answers);
  agent.destroy();
  const latencies = got.filter((x): x is number => x !== undefined);
  return { latencies, errors: got.length - latencies.length, seconds: (performance.now() - start) / 1000 };
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
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}; node ${process.version}; ${connections} connections, ${duration} s per run after ${warmup} s of warm-up searches; load from ${client}${client === 'wrk' ? ' (2 threads)' : ''}\n`);
  if (useCache) console.log(`use_cache=true: the ${queries.length} queries repeat, so most searches are answered from the cache\n`);
  const headers = { 'x-typesense-api-key': KEY };
  const paths = queries.map(searchPath);
  const scripts = client === 'wrk' ? { search: wrkScript(paths, headers), plain: wrkScript(undefined, {}) } : undefined;
  /** One flat-out run of the chosen client against /health or the searches. */
  const flatOut = async (label: string, url: string, what: 'health' | 'search', seconds: number): Promise<Result> => {
    if (scripts) return what === 'health' ? runWrk(label, `${url}/health`, scripts.plain, seconds) : runWrk(label, url, scripts.search, seconds);
    const opts = what === 'health' ? { url: `${url}/health`, connections, duration: seconds } : { url, connections, duration: seconds, headers, requests: searchRequests(paths) };
    return summarize(label, await run(opts));
  };

  for (const processes of threads > 0 ? [1] : processesList) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const label = threads > 0 ? `1 process + ${threads} search threads` : `${processes} process${processes > 1 ? 'es' : ''}`;
    console.log(`== ${label}`);
    const child = startServer(processes, port);
    try {
      await waitHealthy(port);
      const url = `http://127.0.0.1:${port}`;
      // Warm up: JIT, page cache, segment readers and their lazily built lookup structures.
      if (warmup > 0) await flatOut('warm-up', url, 'search', warmup);
      const health = await flatOut(`${label}: GET /health`, url, 'health', duration);
      print(health);
      const search = await flatOut(`${label}: GET search`, url, 'search', duration);
      print(search);
      console.log(`  search/health throughput ratio: ${(search.rps / Math.max(health.rps, 1)).toFixed(2)}`);
      if (duringImport) {
        // The same paced searches first without an import (the baseline), then during one.
        const base = await pacedSearches(port, paths, rate, 5);
        printPaced(`${label}: paced searches, no import`, base);
        const coll = `packages_import_${Date.now()}`;
        const importing = importThroughApi(port, coll);
        let importDone = false;
        void importing.then(() => (importDone = true));
        const slices: Paced[] = [];
        // Search in 5 s slices until the import is over, so only in-import latency counts.
        while (!importDone) slices.push(await pacedSearches(port, paths, rate, 5, () => importDone));
        const secs = await importing;
        slices.forEach((sl, i) => printPaced(`${label}: during import, slice ${i + 1}`, sl));
        const all = slices.flatMap((sl) => sl.latencies).sort((a, b) => a - b);
        const baseSorted = [...base.latencies].sort((a, b) => a - b);
        console.log(
          `  import of ${n} documents took ${secs.toFixed(1)} s (${Math.round(n / secs)} docs/s); searches at ${rate}/s during it: ` +
            `${all.length} searches, p50 ${ms1(percentile(all, 50))} ms, p99 ${ms1(percentile(all, 99))} ms, max ${ms1(percentile(all, 100))} ms (without the import: p99 ${ms1(percentile(baseSorted, 99))} ms)`,
        );
      }
    } finally {
      await stopServer(child);
    }
    console.log('');
  }
  if (scripts) for (const f of Object.values(scripts)) fs.rmSync(f, { force: true });
}

await main();
