/**
 * Soak: does `fathom serve` hold its memory steady under a long mixed load?
 *
 *   node bench/run.mjs soak [--dataset FILE] [--minutes 10] [--connections 64]
 *        [--processes N] [--sample 10] [--data-dir DIR]
 *
 * Loads the Debian packages once into `<data-dir>/base` (default
 * $TMPDIR/fathom-soak-debian), copies it to `<data-dir>/run` for each run (the load writes),
 * starts the real binary (dist/, so `npm run build` first) on loopback with logging at
 * warn, and sends autocannon's bounded load (`--connections` at a time, each waiting for
 * its answer) for `--minutes`:
 *
 *   70%  GET search: 1-3 word queries (half with a typo) over name,summary, some with
 *        facets, a filter, a sort, a later page, use_cache, or a scoped search key
 *   10%  POST /multi_search of two searches
 *   12%  an upsert of one package (its summary changed), by id among the first 5,000
 *    5%  an import of 20 packages (action=upsert)
 *    3%  GET of one document by id
 *
 * Writes replace existing packages, so the collection keeps its size. Every `--sample`
 * seconds it adds up the resident memory (VmRSS) of the server process and all its
 * descendants (the serving processes and their threads' memory) and prints it; at the
 * end, the curve and the ratio of the largest to the smallest sample over the last five
 * minutes (or the last half of a shorter run). The figure to hold: 1.2 or less.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { QUERY_BY, loadDebian, makeQueries, vocabulary, datasetStream } from '../http/debian.js';
import { DEFAULT_DATASET, ROOT, arg, rng, usage } from '../common.js';
import { generateScopedSearchKey } from '../../src/keys/scoped.js';

const KEY = 'soak-bench-key';
const SEARCH_KEY = 'soak-search-only-key';

const dataset = arg('dataset', DEFAULT_DATASET)!;
const minutes = Number(arg('minutes', '10'));
if (!(minutes > 0 && minutes <= 24 * 60)) usage('--minutes must be a number of minutes above 0 (at most a day)');
const connections = Number(arg('connections', '64'));
if (!(Number.isInteger(connections) && connections >= 1 && connections <= 1024)) usage('--connections must be a whole number from 1 to 1024');
const processes = arg('processes');
if (processes !== undefined && !/^[1-9]\d?$/.test(processes)) usage('--processes must be a whole number from 1 to 99');
const sampleSeconds = Number(arg('sample', '10'));
if (!(sampleSeconds >= 1 && sampleSeconds <= 600)) usage('--sample must be 1 to 600 seconds');
const dataRoot = arg('data-dir', path.join(os.tmpdir(), 'fathom-soak-debian'))!;

/** Resident memory of a process, in kB: all of it, and the part that is file pages (the data file's memory map); zeros once it is gone. */
function rssKb(pid: number): { all: number; file: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { all: kb('VmRSS'), file: kb('RssFile') + kb('RssShmem') };
  } catch {
    return { all: 0, file: 0 };
  }
}

/** A process and all its descendants (from /proc/<pid>/stat's parent ids). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      // the command name may hold spaces and parentheses: the fields follow the last ')'
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(e));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

async function waitHealthy(port: number, ms = 60_000): Promise<void> {
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
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('server did not become healthy');
}

function request(port: number, method: string, p: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method, headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The first `n` packages of the data set, as parsed objects. */
async function firstPackages(n: number): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let rest = '';
  for await (const chunk of datasetStream(dataset)) {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) {
      if (l) out.push(JSON.parse(l) as Record<string, unknown>);
      if (out.length >= n) return out;
    }
  }
  return out;
}

async function main(): Promise<void> {
  const base = path.join(dataRoot, 'base');
  const run = path.join(dataRoot, 'run');
  fs.mkdirSync(base, { recursive: true, mode: 0o700 });
  const t0 = performance.now();
  const count = await loadDebian(base, dataset);
  console.log(`packages: ${count} documents in ${base} (ready in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  fs.rmSync(run, { recursive: true, force: true });
  fs.cpSync(base, run, { recursive: true });
  fs.chmodSync(run, 0o700);

  const queries = makeQueries(await vocabulary(dataset), 5000);
  const docs = await firstPackages(5000);
  const port = 20000 + Math.floor(Math.random() * 20000);
  const args = [path.join(ROOT, 'bin', 'fathom.js'), 'serve', '--data-dir', run, '--api-port', String(port), '--api-address', '127.0.0.1', '--api-key', KEY, '--log-level', 'warn'];
  if (processes) args.push('--processes', processes);
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitHealthy(port);
    const made = await request(port, 'POST', '/keys', { description: 'soak search', actions: ['documents:search'], collections: ['packages'], value: SEARCH_KEY });
    if (made.status !== 201 && made.status !== 409) throw new Error(`creating the search key: ${made.status} ${made.text}`);
    const scoped = generateScopedSearchKey(SEARCH_KEY, { filter_by: 'section:!=games' });

    const r = rng(7);
    let edits = 0;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const search = (q: string) => {
      let p = `/collections/packages/documents/search?q=${encodeURIComponent(q)}&query_by=${QUERY_BY}`;
      const x = r();
      if (x < 0.15) p += '&facet_by=section,priority';
      else if (x < 0.25) p += `&filter_by=${encodeURIComponent('installed_size:>100')}`;
      else if (x < 0.32) p += '&sort_by=installed_size:desc';
      else if (x < 0.38) p += `&page=${2 + Math.floor(r() * 5)}`;
      if (r() < 0.2) p += '&use_cache=true';
      return p;
    };
    const edited = (d: Record<string, unknown>) => ({ ...d, id: String(d.name), summary: `${String(d.summary)} (edit ${++edits})` });
    const setup = (req: { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string> }) => {
      const x = r();
      req.headers = { 'x-typesense-api-key': KEY, 'content-type': 'application/json' };
      req.body = undefined;
      if (x < 0.7) {
        req.method = 'GET';
        req.path = search(pick(queries));
        if (r() < 0.1) req.headers = { 'x-typesense-api-key': scoped };
      } else if (x < 0.8) {
        req.method = 'POST';
        req.path = '/multi_search';
        req.body = JSON.stringify({ searches: [0, 1].map(() => ({ collection: 'packages', q: pick(queries), query_by: QUERY_BY })) });
      } else if (x < 0.92) {
        req.method = 'POST';
        req.path = '/collections/packages/documents?action=upsert';
        req.body = JSON.stringify(edited(pick(docs)));
      } else if (x < 0.97) {
        req.method = 'POST';
        req.path = '/collections/packages/documents/import?action=upsert';
        req.headers['content-type'] = 'text/plain';
        req.body = Array.from({ length: 20 }, () => JSON.stringify(edited(pick(docs)))).join('\n');
      } else {
        req.method = 'GET';
        req.path = `/collections/packages/documents/${encodeURIComponent(String(pick(docs).name))}`;
      }
      return req;
    };

    const seconds = Math.round(minutes * 60);
    console.log(
      `soak: ${minutes} min, ${connections} connections, ${processes ?? 'default'} serving processes, sample every ${sampleSeconds} s; ` +
        `machine ${os.cpus().length} x ${os.cpus()[0]?.model}, node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
    const samples: { t: number; mb: number; fileMb: number; pids: number; requests: number }[] = [];
    let done = 0;
    let non2xx = 0;
    const started = performance.now();
    const sample = () => {
      const pids = processTree(child.pid!);
      const rss = pids.map(rssKb);
      const mb = rss.reduce((s, r) => s + r.all, 0) / 1024;
      const fileMb = rss.reduce((s, r) => s + r.file, 0) / 1024;
      const t = Math.round((performance.now() - started) / 1000);
      const prev = samples.at(-1);
      samples.push({ t, mb, fileMb, pids: pids.length, requests: done });
      const rate = prev ? Math.round((done - prev.requests) / Math.max(1, t - prev.t)) : 0;
      const each = pids.map((p, i) => `${p}:${(rss[i]!.all / 1024).toFixed(0)}`).join(' ');
      console.log(`  t=${String(t).padStart(4)} s  rss ${mb.toFixed(0).padStart(6)} MB (files ${fileMb.toFixed(0).padStart(5)} MB; by pid ${each})  ${String(rate).padStart(5)} req/s  (load ${os.loadavg()[0]!.toFixed(2)})`);
    };
    sample();
    const timer = setInterval(sample, sampleSeconds * 1000);
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const inst = autocannon({ url: `http://127.0.0.1:${port}`, connections, duration: seconds, requests: [{ setupRequest: setup }] } as autocannon.Options, (err, res) => (err ? reject(err) : resolve(res)));
      (inst as EventEmitter).on('response', (_c: unknown, status: number) => {
        done++;
        if (status < 200 || status > 299) non2xx++;
      });
    });
    clearInterval(timer);
    sample();

    const tail = Math.min(300, seconds / 2);
    const last = samples.filter((s) => s.t >= seconds - tail);
    const max = Math.max(...last.map((s) => s.mb));
    const min = Math.min(...last.map((s) => s.mb));
    console.log(
      `\n${done} requests (${Math.round(result.requests.average)}/s), p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, errors ${result.errors + result.timeouts}, non-2xx ${non2xx}`,
    );
    console.log(`rss curve (MB, every ${sampleSeconds} s): ${samples.map((s) => s.mb.toFixed(0)).join(' ')}`);
    console.log(`  of which file pages (the data file's map): ${samples.map((s) => s.fileMb.toFixed(0)).join(' ')}`);
    console.log(`data.mdb: ${(fs.statSync(path.join(run, 'data.mdb')).size / 1048576).toFixed(0)} MB (${(fs.statSync(path.join(base, 'data.mdb')).size / 1048576).toFixed(0)} MB at the start)`);
    console.log(`last ${tail} s: min ${min.toFixed(0)} MB, max ${max.toFixed(0)} MB, max/min ${(max / min).toFixed(2)} (${max / min <= 1.2 ? 'level' : 'RISING'}: the bound is 1.2)`);
    console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    await stop();
  }
}

await main();
