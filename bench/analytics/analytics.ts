/**
 * Search analytics benchmark: what recording searches costs, and how many events one
 * process accepts.
 *
 *   node bench/run.mjs analytics [--dataset FILE] [--data-dir DIR] [--connections 64]
 *        [--duration 10] [--warmup 3] [--rounds 5] [--users 1000] [--processes 1]
 *
 * In one run, on the Debian packages (63,666 documents; bench/http's typo-heavy 1-3 word
 * queries over name,summary):
 *
 *   1. searches/s with analytics off and on, taking turns (--rounds pairs), each a fresh
 *      `fathom serve` (the real binary, dist/: `npm run build` first) with --processes N
 *      (default 1). "On" runs with --enable-search-analytics and two rules on `packages`:
 *      popular_queries and nohits_queries; every search is then logged durably (an LMDB
 *      commit in the analytics directory) before it is answered, and the server compacts
 *      the log every 5 s. Searches carry `x-typesense-user-id` from --users ids in turn.
 *      Target: on at most 5% slower than off.
 *   2. POST /analytics/events flat out against one process (a counter rule on a collection
 *      of 10,000 products, clicks on random products). Target: >= 10,000 events/s. Then
 *      exactly 20,000 events from this process's own client, a flush, and a check that the
 *      counters rose by exactly the events accepted.
 *
 * The load generator (autocannon, in this process) shares the machine's two cores with the
 * server, and the machine is shared with other work, so throughput swings from run to run:
 * each round is an off/on pair back to back, and the median of the pairs' ratios is quoted.
 * The server's CPU time per request (all its threads and processes, from /proc) is reported
 * beside it, and then the recording's own CPU cost measured in this process without HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { QUERY_BY, loadDebian, makeQueries, vocabulary } from '../http/debian.js';
import { DEFAULT_DATASET, ROOT, arg, rng, usage } from '../common.js';

const KEY = 'bench-key';
const dataset = arg('dataset', DEFAULT_DATASET)!;
const dataDir = arg('data-dir', path.join(os.tmpdir(), 'fathom-bench-analytics'))!;
const connections = Number(arg('connections', '64'));
const duration = Number(arg('duration', '10'));
const warmup = Number(arg('warmup', '3'));
const rounds = Number(arg('rounds', '5'));
const users = Number(arg('users', '1000'));
const processes = Number(arg('processes', '1'));
if (!(rounds >= 1 && rounds <= 20)) usage('--rounds must be between 1 and 20');
if (!fs.existsSync(dataset)) usage(`dataset not found: ${dataset} (give --dataset PATH)`);

interface Run {
  rps: number;
  /** Server CPU (all its threads and processes) per request answered, ms. */
  cpuMs?: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
  non2xx: number;
}

function runCannon(opts: Record<string, unknown>): Promise<Run> {
  return new Promise((resolve, reject) => {
    autocannon(opts as unknown as autocannon.Options, (err, r) => {
      if (err) return reject(err);
      const res = r as autocannon.Result & { '2xx': number };
      resolve({ rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, ok: res['2xx'], errors: r.errors + r.timeouts, non2xx: r.non2xx });
    });
  });
}

function call(port: number, method: string, p: string, body?: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers: { 'x-typesense-api-key': KEY, ...(data ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function waitHealthy(port: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    try {
      if ((await call(port, 'GET', '/health')).status === 200) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become healthy');
}

async function start(analytics: boolean, procs: number): Promise<{ child: ChildProcess; port: number }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const args = [path.join(ROOT, 'bin', 'fathom.js'), 'serve', '-d', dataDir, '--api-port', String(port), '--api-address', '127.0.0.1', '--api-key', KEY, '--processes', String(procs), '--log-level', 'warn'];
  if (analytics) args.push('--enable-search-analytics');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  await waitHealthy(port);
  return { child, port };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

function print(label: string, r: Run) {
  console.log(
    `${label.padEnd(34)} ${String(r.rps).padStart(7)} req/s   p50 ${r.p50} ms   p99 ${r.p99} ms` +
      (r.cpuMs !== undefined ? `   server CPU ${r.cpuMs.toFixed(3)} ms/request` : '') +
      (r.errors || r.non2xx ? `   errors ${r.errors} non-2xx ${r.non2xx}` : ''),
  );
}

const TICK_MS = 1000 / 100; // USER_HZ: /proc reports CPU time in 1/100 s on Linux

/** CPU time (user + system) of a process and its descendants so far, ms (Linux /proc; 0 elsewhere). */
function treeCpuMs(root: number): number {
  let total = 0;
  const kids = new Map<number, number[]>();
  const own = new Map<number, number>();
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return 0;
  }
  for (const d of entries) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(f[1]);
      own.set(Number(d), (Number(f[11]) + Number(f[12])) * TICK_MS);
      const list = kids.get(ppid) ?? [];
      list.push(Number(d));
      kids.set(ppid, list);
    } catch {
      /* gone meanwhile */
    }
  }
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    total += own.get(p) ?? 0;
    stack.push(...(kids.get(p) ?? []));
  }
  return total;
}

/** A measured run: the load, and the server's CPU over it. */
async function measured(pid: number, opts: Record<string, unknown>): Promise<Run> {
  const c0 = treeCpuMs(pid);
  const r = await runCannon(opts);
  const c1 = treeCpuMs(pid);
  const answered = r.ok + r.non2xx;
  return { ...r, cpuMs: answered > 0 && c1 > 0 ? (c1 - c0) / answered : undefined };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function ensureRules(): Promise<void> {
  const { child, port } = await start(false, 1);
  try {
    const have = (await call(port, 'GET', '/collections')).json.map((c: { name: string }) => c.name) as string[];
    for (const name of ['package_queries', 'package_nohits']) {
      if (!have.includes(name)) await call(port, 'POST', '/collections', { name, fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] });
    }
    if (!have.includes('products')) {
      await call(port, 'POST', '/collections', { name: 'products', fields: [{ name: 'title', type: 'string' }, { name: 'popularity', type: 'int32', optional: true }] });
      const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ id: String(i), title: `product ${i}` })).join('\n');
      await new Promise<void>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/collections/products/documents/import?batch_size=1000', headers: { 'x-typesense-api-key': KEY, 'content-type': 'text/plain' } }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end(lines);
      });
    }
    const rule = (type: string, dest: string) => ({ type, params: { source: { collections: ['packages'] }, destination: { collection: dest }, limit: 1000 } });
    for (const [name, body] of [
      ['package_queries', rule('popular_queries', 'package_queries')],
      ['package_nohits', rule('nohits_queries', 'package_nohits')],
      [
        'product_clicks',
        { type: 'counter', params: { source: { collections: ['products'], events: [{ type: 'click', weight: 1, name: 'product_click' }] }, destination: { collection: 'products', counter_field: 'popularity' } } },
      ],
    ] as const) {
      const r = await call(port, 'PUT', `/analytics/rules/${name}`, body);
      if (r.status !== 200) throw new Error(`rule ${name}: ${r.status} ${JSON.stringify(r.json)}`);
    }
  } finally {
    await stop(child);
  }
}

/** The sum of every product's counter, read from an export. */
function popularityTotal(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/collections/products/documents/export?include_fields=popularity', headers: { 'x-typesense-api-key': KEY } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(text.split('\n').reduce((sum, l) => sum + (l ? ((JSON.parse(l) as { popularity?: number }).popularity ?? 0) : 0), 0)));
      })
      .on('error', reject);
  });
}

/**
 * The recording's own cost, without HTTP and the load generator: in this process, passes of
 * the same searches (64 at a time) with and without recording each answer, taking turns.
 * CPU from process.cpuUsage (every thread, LMDB's writer included).
 */
async function inProcess(queries: string[]): Promise<void> {
  const { Engine } = await import('../../src/engine.js');
  const { Analytics } = await import('../../src/analytics/analytics.js');
  const { stringifyJson } = await import('../../src/json.js');
  const engine = Engine.open(dataDir, { merges: 'off' });
  const adir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-bench-analytics-dir-'));
  const a = new Analytics(engine, { dir: adir });
  const N = 5000;
  const pass = async (record: boolean) => {
    let i = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const worker = async () => {
      while (i < N) {
        const k = i++;
        const params = { q: queries[k % queries.length]!, query_by: QUERY_BY, per_page: '10' };
        const json = stringifyJson(await engine.search('packages', params));
        if (record) await a.recordSearch('packages', params, json, `u:user-${k % users}`);
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    const c = process.cpuUsage(c0);
    return { rps: N / ((performance.now() - t0) / 1000), cpuMs: (c.user + c.system) / 1000 / N };
  };
  try {
    await pass(false);
    await pass(true);
    const off: number[] = [];
    const on: number[] = [];
    for (let r = 0; r < 5; r++) {
      for (const record of r % 2 === 0 ? [false, true] : [true, false]) (record ? on : off).push((await pass(record)).cpuMs);
    }
    const f = median(off);
    const o = median(on);
    console.log(`in one process, ${N} searches a pass, 5 passes each: CPU per search ${f.toFixed(3)} ms without recording, ${o.toFixed(3)} ms with: on/off ${(o / f).toFixed(3)} (${o >= f ? '+' : ''}${((o - f) * 1000).toFixed(1)} us a search)\n`);
  } finally {
    await a.close();
    await engine.close();
    fs.rmSync(adir, { recursive: true, force: true });
  }
}

async function main() {
  console.log(`data set ${dataset}; data directory ${dataDir}`);
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const n = await loadDebian(dataDir, dataset);
  await ensureRules();
  const queries = makeQueries(await vocabulary(dataset), 5000);
  const paths = queries.map((q) => `/collections/packages/documents/search?q=${encodeURIComponent(q)}&query_by=${QUERY_BY}&per_page=10`);
  console.log(`packages: ${n} documents; ${queries.length} queries; ${users} user ids`);
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0]?.model}; node ${process.version}; ${connections} connections, ${duration} s per run after ${warmup} s of warm-up; ${processes} server process(es)\n`);

  let i = 0;
  const searchOpts = (url: string, seconds: number) => ({
    url,
    connections,
    duration: seconds,
    headers: { 'x-typesense-api-key': KEY },
    requests: [
      {
        method: 'GET',
        setupRequest: (req: { path: string; headers?: Record<string, string> }) => {
          const k = i++;
          req.path = paths[k % paths.length]!;
          req.headers = { ...req.headers, 'x-typesense-api-key': KEY, 'x-typesense-user-id': `user-${k % users}` };
          return req;
        },
      },
    ],
  });

  {
    // An unmeasured first server: the data directory into the page cache, the queries' paths warm.
    const { child, port } = await start(false, processes);
    await runCannon(searchOpts(`http://127.0.0.1:${port}`, Math.max(warmup, 3)));
    await stop(child);
  }
  const off: Run[] = [];
  const on: Run[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Each round is a pair run back to back (the machine's speed drifts over minutes), the
    // order alternating from round to round.
    const got: Partial<Record<'off' | 'on', Run>> = {};
    for (const analytics of r % 2 === 0 ? [false, true] : [true, false]) {
      const { child, port } = await start(analytics, processes);
      try {
        const url = `http://127.0.0.1:${port}`;
        if (warmup > 0) await runCannon(searchOpts(url, warmup));
        const res = await measured(child.pid!, searchOpts(url, duration));
        print(`round ${r + 1}: searches, analytics ${analytics ? 'on ' : 'off'}`, res);
        got[analytics ? 'on' : 'off'] = res;
      } finally {
        await stop(child);
      }
    }
    off.push(got.off!);
    on.push(got.on!);
    ratios.push(got.on!.rps / got.off!.rps);
  }
  const offRps = median(off.map((x) => x.rps));
  const onRps = median(on.map((x) => x.rps));
  const ratio = median(ratios);
  console.log(`\nsearches/s over HTTP, median of ${rounds}: off ${offRps}, on ${onRps}; on/off per round ${ratios.map((x) => x.toFixed(3)).join(', ')}: median ${ratio.toFixed(3)} (${ratio >= 1 ? `${((ratio - 1) * 100).toFixed(1)}% faster` : `${((1 - ratio) * 100).toFixed(1)}% slower`}; target at most 5% slower)`);
  const offCpu = median(off.map((x) => x.cpuMs ?? NaN));
  const onCpu = median(on.map((x) => x.cpuMs ?? NaN));
  console.log(`server CPU per search, median: off ${offCpu.toFixed(3)} ms, on ${onCpu.toFixed(3)} ms: on/off ${(onCpu / offCpu).toFixed(3)}`);
  await inProcess(queries);

  // Events flat out against one process.
  const { child, port } = await start(true, 1);
  try {
    const url = `http://127.0.0.1:${port}`;
    const r = rng(7);
    const eventOpts = (seconds: number) => ({
      url,
      connections,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: '/analytics/events',
          setupRequest: (req: { path: string; headers?: Record<string, string>; body?: string }) => {
            req.headers = { 'x-typesense-api-key': KEY, 'content-type': 'application/json' };
            req.body = JSON.stringify({ type: 'click', name: 'product_click', data: { doc_id: String(Math.floor(r() * 10_000)), user_id: `user-${Math.floor(r() * users)}` } });
            return req;
          },
        },
      ],
    });
    if (warmup > 0) await runCannon(eventOpts(warmup));
    const ev = await measured(child.pid!, eventOpts(duration));
    print('POST /analytics/events, 1 process', ev);
    console.log(`events/s: ${ev.rps} (target >= 10,000): ${(ev.rps / 10_000).toFixed(2)}x the target`);
    let t0 = performance.now();
    const flushed = (await call(port, 'POST', '/analytics/flush')).json;
    console.log(`flush: ${flushed.counters} counters in ${Math.round(performance.now() - t0)} ms`);
    // Exactness under load: exactly N events from `connections` concurrent senders, counted here.
    const before = await popularityTotal(port);
    const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
    let sent = 0;
    let ok = 0;
    const N = 20_000;
    const sender = async () => {
      while (sent < N) {
        sent++;
        const body = JSON.stringify({ type: 'click', name: 'product_click', data: { doc_id: String(Math.floor(r() * 10_000)), user_id: 'exact' } });
        const status = await new Promise<number>((resolve) => {
          const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/analytics/events', agent, headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          });
          req.on('error', () => resolve(0));
          req.end(body);
        });
        if (status === 201) ok++;
      }
    };
    t0 = performance.now();
    await Promise.all(Array.from({ length: connections }, sender));
    const secs = (performance.now() - t0) / 1000;
    agent.destroy();
    await call(port, 'POST', '/analytics/flush');
    const rose = (await popularityTotal(port)) - before;
    console.log(`exactness: ${ok} of ${N} events accepted (${Math.round(N / secs)}/s from this process's own client), counters rose by ${rose}: ${rose === ok ? 'exact' : 'MISMATCH'}`);
  } finally {
    await stop(child);
  }
}

await main();
