/**
 * Shared benchmark helpers: the Debian dataset, query sets, percentiles, tables, sizes.
 * Benchmarks read the dataset from ../shared/datasets (or --dataset PATH); tests never do.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The project root: the nearest folder above this script with bin/fathom.js (benchmarks run bundled, from bench/out/ or node_modules/.cache/). */
function projectRoot(): string {
  let d = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(d, 'bin', 'fathom.js'))) {
    const up = path.dirname(d);
    if (up === d) throw new Error('cannot find the project root');
    d = up;
  }
  return d;
}
export const ROOT = projectRoot();
export const DEFAULT_DATASET = path.resolve(ROOT, '..', 'shared', 'datasets', 'debian-packages.jsonl.gz');

/** `--name value` from the command line; a bare `--name` (a flag) gives 'true'. */
export function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = process.argv[i + 1];
  return v === undefined || v.startsWith('--') ? 'true' : v;
}

/** Ends a benchmark run over a bad argument: one line on stderr, exit status 2. */
export function usage(message: string): never {
  console.error(message);
  process.exit(2);
}

export function datasetPath(): string {
  const p = arg('dataset', DEFAULT_DATASET)!;
  if (!fs.existsSync(p)) usage(`dataset not found: ${p} (give --dataset PATH)`);
  return p;
}

/** The dataset as JSON Lines text (decompressed when it ends in .gz). */
export function datasetText(p = datasetPath()): string {
  const raw = fs.readFileSync(p);
  return (p.endsWith('.gz') ? zlib.gunzipSync(raw) : raw).toString('utf8');
}

export interface DebianPackage {
  name: string;
  version: string;
  section: string;
  priority?: string;
  installed_size: number | null;
  maintainer: string;
  depends: string[];
  summary: string;
  description: string;
}

export function debianDocs(limit = Infinity): DebianPackage[] {
  const out: DebianPackage[] = [];
  for (const line of datasetText().split('\n')) {
    if (!line) continue;
    out.push(JSON.parse(line));
    if (out.length >= limit) break;
  }
  return out;
}

/** The benchmark schema: package names split into words on - . + _ / */
export const DEBIAN_SCHEMA = {
  name: 'packages',
  token_separators: ['-', '.', '+', '_', '/', ':'],
  fields: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string', index: false, optional: true },
    { name: 'section', type: 'string', facet: true },
    { name: 'priority', type: 'string', facet: true, optional: true },
    { name: 'installed_size', type: 'int32', optional: true, sort: true },
    { name: 'maintainer', type: 'string', index: false, optional: true },
    { name: 'depends', type: 'string[]' },
    { name: 'summary', type: 'string' },
    { name: 'description', type: 'string' },
  ],
};

/** Deterministic pseudo-random numbers (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface BenchQuery {
  q: string;
  typo: boolean;
  facet: boolean;
}

/**
 * 1-3 word queries drawn (seeded) from summaries: half of them get one typo (a swapped,
 * dropped or replaced letter in a word of 5+ letters), a third also ask for a facet.
 */
export function queryset(docs: DebianPackage[], n = 300, seed = 42): BenchQuery[] {
  const r = rng(seed);
  const words = (s: string) => s.toLowerCase().match(/[a-z]{3,}/g) ?? [];
  const out: BenchQuery[] = [];
  while (out.length < n) {
    const d = docs[Math.floor(r() * docs.length)]!;
    const ws = words(d.summary);
    if (ws.length === 0) continue;
    const len = 1 + Math.floor(r() * 3);
    const start = Math.floor(r() * Math.max(1, ws.length - len + 1));
    const picked = ws.slice(start, start + len);
    const typo = out.length % 2 === 1;
    if (typo) {
      const i = picked.findIndex((w) => w.length >= 5);
      if (i < 0) continue;
      const w = picked[i]!;
      const p = 1 + Math.floor(r() * (w.length - 2));
      const kind = Math.floor(r() * 3);
      picked[i] = kind === 0 ? w.slice(0, p) + w[p + 1] + w[p] + w.slice(p + 2) : kind === 1 ? w.slice(0, p) + w.slice(p + 1) : w.slice(0, p) + 'aeiou'[Math.floor(r() * 5)] + w.slice(p + 1);
    }
    out.push({ q: picked.join(' '), typo, facet: out.length % 3 === 0 });
  }
  return out;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

export function dirSize(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of fs.readdirSync(p)) total += dirSize(path.join(p, e));
  return total;
}

export function tmpdir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1) + ' MB';
}

export function table(head: string[], rows: (string | number)[][]): string {
  const cells = rows.map((r) => r.map(String));
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => '| ' + r.map((c, i) => c.padEnd(w[i]!)).join(' | ') + ' |';
  return [line(head), '|' + w.map((x) => '-'.repeat(x + 2)).join('|') + '|', ...cells.map(line)].join('\n');
}

/**
 * The environment without NODE_EXTRA_CA_CERTS, or undefined when it is not set. Node reads
 * and parses that certificate file before running any script (50 ms or more per process on
 * the shared machines, where it is set), so benchmarks of whole CLI processes also run
 * without it.
 */
export const envWithoutCaCerts: NodeJS.ProcessEnv | undefined = (() => {
  if (process.env.NODE_EXTRA_CA_CERTS === undefined) return undefined;
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
})();

/** Runs a command, returning its stdout, wall time and peak RSS (kB, from /proc via `time`-like polling). */
export function runMeasured(cmd: string, args: string[], opts: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string; stderr: string; ms: number; maxRssKb: number; code: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ stdout, stderr, ms: performance.now() - t0, maxRssKb: maxRssOf(stderr), code: code ?? -1 });
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

function maxRssOf(stderr: string): number {
  const m = /MAXRSS_KB=(\d+)/.exec(stderr);
  return m ? Number(m[1]) : NaN;
}

/** Wraps a command so that it reports its own peak RSS on stderr (GNU time). */
export function withTime(cmd: string, args: string[]): [string, string[]] {
  if (fs.existsSync('/usr/bin/time')) return ['/usr/bin/time', ['-f', 'MAXRSS_KB=%M', cmd, ...args]];
  return [cmd, args];
}
