/**
 * A full disk (issue #25, part 4) on a real small filesystem: a tmpfs mounted by this file
 * (as root; skipped with the reason printed otherwise), filled with a filler file and
 * imports, under the real `fathom` binary and a real `fathom serve` on loopback. A write that
 * does not fit is answered as failed and stores nothing; everything acknowledged is still
 * there afterwards (exported and compared, after a restart too); the server keeps answering
 * reads and /health; writes work again once the filler is deleted, without a restart.
 *
 * Two ways to run out: the reserve (writes refused before LMDB tries them, the default), and
 * FATHOM_DISK_RESERVE_BYTES=0, where LMDB itself fills the filesystem to the last byte and its
 * failed commits must be survived. Last, a model download that finds no room.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { closeEmbedders, loadEmbedder } from '../src/embed/index.js';
import { BIN, ROOT, cli, jsonLines, lines } from './helpers.js';

const MiB = 1024 * 1024;
const RESERVE = 8 * MiB; // DISK_DEFAULTS.reserveBytes
const KEY = 'disk-full-key';
const SCHEMA = { name: 'notes', fields: [{ name: 'title', type: 'string' }, { name: 'n', type: 'int32' }] };

// ---------------------------------------------------------------------------
// A tmpfs per scenario, unmounted after the file (lazily if something still holds it)
// ---------------------------------------------------------------------------

const mounts: string[] = [];
const children: ChildProcess[] = [];

/** Why the tests cannot run here, or undefined. */
function cannotMount(): string | undefined {
  if (process.platform !== 'linux') return 'tmpfs mounts need Linux';
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-tmpfs-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { stdio: 'pipe' });
    execFileSync('umount', [probe], { stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return `mount -t tmpfs failed: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

const skipReason = cannotMount();
if (skipReason) console.warn(`disk-full tests skipped: ${skipReason}`);

function mountTmpfs(sizeMiB: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-diskfull-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  mounts.push(dir);
  return dir;
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 100));
  for (const dir of mounts) {
    try {
      execFileSync('umount', [dir], { stdio: 'pipe' });
    } catch {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bfree * s.bsize;
}

/** Writes `<mount>/filler` so that about `leave` bytes stay free (or adds to it). */
function fill(mount: string, leave: number): void {
  const file = path.join(mount, 'filler');
  const grow = freeBytes(mount) - leave;
  if (grow > 0) fs.appendFileSync(file, Buffer.alloc(grow));
}

function unfill(mount: string): void {
  fs.rmSync(path.join(mount, 'filler'), { force: true });
}

// ---------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------

const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma omega'.split(' ');

function note(i: number): { id: string; title: string; n: number } {
  const words: string[] = [];
  for (let j = 0; j < 40; j++) words.push(`${WORDS[(i * 7 + j * j) % WORDS.length]}${(i * 31 + j) % 1009}`);
  return { id: `n${i}`, title: words.join(' '), n: i };
}

function jsonl(from: number, to: number): string {
  const out: string[] = [];
  for (let i = from; i < to; i++) out.push(JSON.stringify(note(i)));
  return out.join('\n') + '\n';
}

/** Result lines of an import: the ids acknowledged, and the lines that failed (as sent). */
function outcome(results: Array<{ success: boolean; code?: number; error?: string; document?: string }>, from: number) {
  const acked: string[] = [];
  const failed: string[] = [];
  results.forEach((r, k) => {
    if (r.success) acked.push(note(from + k).id);
    else {
      // every failure is the disk's, and echoes its line
      expect(r).toMatchObject({ success: false, code: 507 });
      expect(r.error).toMatch(/^no space left on device/);
      expect(r.document).toBe(JSON.stringify(note(from + k)));
      failed.push(r.document!);
    }
  });
  return { acked, failed };
}

/** Exported documents are exactly the acknowledged ones, as they were sent. */
function expectExactly(exported: Array<Record<string, unknown>>, ids: Iterable<string>): void {
  const want = [...new Set(ids)].sort();
  expect(exported.map((d) => d.id).sort()).toEqual(want);
  for (const d of exported) expect(d).toEqual(note(Number(String(d.id).slice(1))));
}

/** Output that must never reach a user: LMDB's own lines, lmdb-js's errors, stack traces. */
const RAW = /mdb_|Commit failed|Input\/output error|Unhandled|^\s+at /m;

// ---------------------------------------------------------------------------
// fathom serve
// ---------------------------------------------------------------------------

interface Served {
  child: ChildProcess;
  port: number;
  url: string;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function serve(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '-d', dataDir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', '0', '--log-level', 'info', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const j = JSON.parse(line);
        if (j.msg === 'serving' || (j.msg === 'listening' && j.role === 'server')) {
          resolve({ child, port: j.port, url: `http://127.0.0.1:${j.port}`, stderr: () => err, stdout: () => out, exited });
          return;
        }
      }
    });
    void exited.then((code) => reject(new Error(`fathom serve exited with ${code}: ${err}`)));
  });
}

async function stop(s: Served): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

const headers = { 'x-typesense-api-key': KEY };

async function importOver(s: Served, body: string): Promise<{ status: number; results: any[] }> {
  const res = await fetch(`${s.url}/collections/notes/documents/import`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body });
  return { status: res.status, results: jsonLines(await res.text()) };
}

async function exportOver(s: Served): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${s.url}/collections/notes/documents/export`, { headers });
  expect(res.status).toBe(200);
  return jsonLines(await res.text());
}

async function health(s: Served): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.url}/health`);
  return { status: res.status, body: await res.json() };
}

function clientFor(s: Served): Client {
  return new Client({ nodes: [{ host: '127.0.0.1', port: s.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 5, numRetries: 0, logLevel: 'silent' });
}

/** Waits (up to a few seconds) for /health to stop reporting a full disk. */
async function healthyAgain(s: Served): Promise<void> {
  const until = Date.now() + 5000;
  for (;;) {
    const h = await health(s);
    if (h.status === 200 && h.body.resource_error === undefined) return;
    if (Date.now() > until) throw new Error(`/health still says ${JSON.stringify(h.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// ---------------------------------------------------------------------------

describe.skipIf(skipReason !== undefined)('a full disk', () => {
  it('the CLI answers with one line and exit status 1, and stores exactly what it acknowledged', async () => {
    const mount = mountTmpfs(40);
    const dir = path.join(mount, 'data');
    expect((await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify(SCHEMA) })).code).toBe(0);
    expect((await cli(['import', 'notes', '-d', dir], { input: jsonl(0, 1000) })).code).toBe(0);

    // room for a few batches beyond the reserve, not for 10,000 documents (~4 MB of JSON)
    fill(mount, RESERVE + 2 * MiB);
    const imp = await cli(['import', 'notes', '-d', dir], { input: jsonl(1000, 11_000) });
    expect(imp.code).toBe(1);
    expect(lines(imp.stderr)).toHaveLength(1);
    expect(imp.stderr).toMatch(/^error: no space left on device while writing to .*: imported \d+ of 10000 documents into notes; \d+ lines were not stored\n$/);
    const results = jsonLines(imp.stdout);
    expect(results).toHaveLength(10_000);
    const { acked, failed } = outcome(results, 1000);
    expect(acked.length).toBeGreaterThan(0);
    expect(failed.length).toBeGreaterThan(0);

    // other writes: one line each, nothing printed as done, nothing done
    fill(mount, RESERVE - MiB);
    const del = await cli(['documents', 'delete', 'notes', 'n5', '-d', dir]);
    expect(del).toMatchObject({ code: 1, stdout: '' });
    expect(del.stderr).toMatch(/^error: no space left on device while writing to the data directory[^\n]*\n$/);
    const create = await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ ...SCHEMA, name: 'more' }) });
    expect(create).toMatchObject({ code: 1, stdout: '' });
    expect(lines(create.stderr)).toHaveLength(1);
    for (const r of [imp, del, create]) expect(r.stderr).not.toMatch(RAW);

    const acknowledged = [...Array.from({ length: 1000 }, (_, i) => note(i).id), ...acked];
    expectExactly(jsonLines((await cli(['export', 'notes', '-d', dir])).stdout), acknowledged);

    // space freed: the same commands work, no restart of anything needed
    unfill(mount);
    const again = await cli(['import', 'notes', '-d', dir], { input: failed.join('\n') + '\n' });
    expect(again.code).toBe(0);
    expect(jsonLines(again.stdout).every((r) => r.success)).toBe(true);
    expect((await cli(['documents', 'delete', 'notes', 'n5', '-d', dir])).code).toBe(0);
    const all = Array.from({ length: 11_000 }, (_, i) => note(i).id).filter((id) => id !== 'n5');
    expectExactly(jsonLines((await cli(['export', 'notes', '-d', dir])).stdout), all);
  });

  it('the CLI prints one line when background merges find no room either; --debug shows their failures', async () => {
    /** Short documents: the import gets far, so merges come due, and find no room. */
    const short = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => JSON.stringify({ id: `s${from + k}`, title: `alpha beta gamma ${from + k} delta epsilon zeta eta theta iota kappa lambda omicron sigma omega`, n: from + k })).join('\n') + '\n';
    const run = async (extra: string[]) => {
      const mount = mountTmpfs(40);
      const dir = path.join(mount, 'data');
      expect((await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify(SCHEMA) })).code).toBe(0);
      expect((await cli(['import', 'notes', '-d', dir], { input: short(0, 1000) })).code).toBe(0);
      fill(mount, RESERVE + 2 * MiB);
      return cli(['import', 'notes', '-d', dir, ...extra], { input: short(1000, 11_000) });
    };
    const debug = await run(['--debug']);
    expect(debug.code).toBe(1);
    // (what the plain run leaves out: the merges did fail)
    expect(debug.stderr).toMatch(/"msg":"a background segment merge failed".*no space left on device/);
    const plain = await run([]);
    expect(plain.code).toBe(1);
    expect(lines(plain.stderr), plain.stderr).toHaveLength(1);
    expect(plain.stderr).toMatch(/^error: no space left on device while writing to .*: imported \d+ of 10000 documents into notes; \d+ lines were not stored\n$/);
  });

  it('the CLI survives LMDB filling the disk to the last byte (no reserve)', async () => {
    const mount = mountTmpfs(40);
    const dir = path.join(mount, 'data');
    const env = { FATHOM_DISK_RESERVE_BYTES: '0' };
    expect((await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify(SCHEMA) })).code).toBe(0);
    fill(mount, 3 * MiB);
    const imp = await cli(['import', 'notes', '-d', dir], { input: jsonl(0, 10_000), env });
    // before: the import died on an unhandled "Commit failed" with lmdb-js's stack trace,
    // or, when the last commit failed, hung on closing and exited 0 without a word
    expect(imp.code).toBe(1);
    expect(imp.stderr).toMatch(/^error: no space left on device while writing to /);
    expect(imp.stderr).not.toMatch(/Commit failed|Unhandled|^\s+at /m);
    const { acked, failed } = outcome(jsonLines(imp.stdout), 0);
    expect(acked.length + failed.length).toBe(10_000);
    expect(failed.length).toBeGreaterThan(0);
    expect(freeBytes(mount)).toBeLessThan(MiB); // LMDB took the disk to the last pages

    expectExactly(jsonLines((await cli(['export', 'notes', '-d', dir])).stdout), acked);
    unfill(mount);
    expect((await cli(['import', 'notes', '-d', dir], { input: failed.join('\n') + '\n', env })).code).toBe(0);
    expectExactly(jsonLines((await cli(['export', 'notes', '-d', dir])).stdout), Array.from({ length: 10_000 }, (_, i) => note(i).id));
  });

  it('one server process answers failed lines, reads and /health while LMDB finds no room, and writes again once space is freed', async () => {
    const mount = mountTmpfs(32);
    const dir = path.join(mount, 'data');
    const env = { FATHOM_DISK_RESERVE_BYTES: '0' };
    let s = await serve(dir, ['--processes', '1'], env);
    const client = clientFor(s);
    await client.collections().create(SCHEMA as never);
    expect((await importOver(s, jsonl(0, 500))).results.every((r) => r.success)).toBe(true);

    fill(mount, 3 * MiB);
    // before: the server exited on an unhandled "Commit failed" and this import's answer
    // stopped with a connection reset
    const imp = await importOver(s, jsonl(500, 10_500));
    expect(imp.status).toBe(200);
    expect(imp.results).toHaveLength(10_000);
    const { acked, failed } = outcome(imp.results, 500);
    expect(failed.length).toBeGreaterThan(0);
    const acknowledged = [...Array.from({ length: 500 }, (_, i) => note(i).id), ...acked];

    // reads and /health go on, and say why writes fail
    expect(await health(s)).toEqual({ status: 200, body: { ok: true, resource_error: 'OUT_OF_DISK' } });
    expect(await client.health.retrieve()).toMatchObject({ ok: true });
    expect((await client.collections('notes').documents().search({ q: '*', query_by: 'title' })).found).toBe(acknowledged.length);
    expect(await client.collections('notes').documents('n1').retrieve()).toEqual(note(1));
    const debug = (await (await fetch(`${s.url}/debug`, { headers })).json()) as any;
    expect(debug.disk).toMatchObject({ full: true });
    // a single write either fits in what LMDB already holds, or is refused: never half of it
    const single = await fetch(`${s.url}/collections/notes/documents`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(note(90_000)) });
    if (single.status === 201) acknowledged.push(note(90_000).id);
    else expect({ status: single.status, body: await single.json() }).toMatchObject({ status: 507, body: { message: expect.stringMatching(/^no space left on device/) } });
    expectExactly(await exportOver(s), acknowledged);

    unfill(mount);
    await healthyAgain(s);
    const again = await importOver(s, failed.join('\n'));
    expect(again.results.every((r) => r.success)).toBe(true);
    acknowledged.push(...failed.map((l) => JSON.parse(l).id as string));
    expectExactly(await exportOver(s), acknowledged);
    expect(s.stderr()).not.toMatch(/Commit failed|Unhandled|^\s+at /m);
    await stop(s);

    s = await serve(dir, ['--processes', '1'], env);
    expectExactly(await exportOver(s), acknowledged);
    await stop(s);
  });

  it('with several server processes (the default on a multi-core machine) a full disk answers 507 and no process dies', async () => {
    const mount = mountTmpfs(40);
    const dir = path.join(mount, 'data');
    let s = await serve(dir, ['--processes', '2']);
    const client = clientFor(s);
    await client.collections().create(SCHEMA as never);
    expect((await importOver(s, jsonl(0, 500))).results.every((r) => r.success)).toBe(true);

    fill(mount, RESERVE + 2 * MiB);
    const imp = await importOver(s, jsonl(500, 10_500));
    expect(imp.status).toBe(200);
    expect(imp.results).toHaveLength(10_000);
    const { acked, failed } = outcome(imp.results, 500);
    expect(failed.length).toBeGreaterThan(0);
    const acknowledged = [...Array.from({ length: 500 }, (_, i) => note(i).id), ...acked];

    fill(mount, RESERVE - MiB);
    // every process says so (connections go round-robin), and refuses writes with 507
    for (let i = 0; i < 4; i++) expect(await health(s)).toEqual({ status: 200, body: { ok: true, resource_error: 'OUT_OF_DISK' } });
    await expect(client.collections('notes').documents().create(note(90_000))).rejects.toMatchObject({ httpStatus: 507 });
    const res = await fetch(`${s.url}/collections/notes/documents/n3`, { method: 'DELETE', headers });
    expect(res.status).toBe(507);
    expect(((await res.json()) as any).message).toMatch(/^no space left on device while writing to the data directory/);
    expect((await client.collections('notes').documents().search({ q: '*', query_by: 'title' })).found).toBe(acknowledged.length);

    unfill(mount);
    await healthyAgain(s);
    await client.collections('notes').documents().create(note(90_000));
    acknowledged.push(note(90_000).id);
    expectExactly(await exportOver(s), acknowledged);
    expect(s.stdout()).not.toMatch(/a server process died/);
    expect(s.stderr()).not.toMatch(RAW);
    await stop(s);

    s = await serve(dir, ['--processes', '1']);
    expectExactly(await exportOver(s), acknowledged);
    await stop(s);
  });

  it('a model download that finds no room fails with NO_SPACE, leaves nothing behind, and works once space is freed', async () => {
    // a model repository on loopback serving the tiny BERT fixture, the model in small chunks
    const fixture = path.join(ROOT, 'fixtures', 'models', 'tiny-bert');
    const model = fs.readFileSync(path.join(fixture, 'model.onnx'));
    const vocab = fs.readFileSync(path.join(fixture, 'vocab.txt'));
    const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
    const server = http.createServer((req, res) => {
      const file = req.url!.split('/').pop();
      if (file === 'config.json') {
        return void res.end(JSON.stringify({ model_type: 'bert', vocab_file_name: 'vocab.txt', model_md5: md5(model), vocab_md5: md5(vocab), max_seq_length: 16 }));
      }
      if (file === 'vocab.txt') return void res.end(vocab);
      if (file !== 'model.onnx') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': String(model.length) });
      let at = 0;
      const next = () => {
        res.write(model.subarray(at, (at += 2048)));
        if (at < model.length) setTimeout(next, 1);
        else res.end();
      };
      next();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const env = { dataDir: path.join(mountTmpfs(2), 'data'), modelRepositoryUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/public/` };
    try {
      fs.mkdirSync(path.join(env.dataDir, 'models'), { recursive: true });
      fill(path.dirname(env.dataDir), 8192);
      // before: the failed write's rejection went unobserved and ended the process
      await expect(loadEmbedder({ model_name: 'ts/tiny' }, env)).rejects.toMatchObject({ code: 'NO_SPACE', message: expect.stringMatching(/^no space left on device while downloading the model `ts\/tiny`/) });
      expect(fs.readdirSync(path.join(env.dataDir, 'models'))).toEqual(['ts']);
      unfill(path.dirname(env.dataDir));
      expect((await loadEmbedder({ model_name: 'ts/tiny' }, env)).dims).toBe(32);
    } finally {
      await closeEmbedders();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
