/**
 * The real `fathom serve` process: a cluster of server processes over one data
 * directory, the key generated on first start, and the graceful stop on SIGTERM.
 * (Needs `node bin/build.mjs` first, as every test that runs the binary.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, BOOKS_SCHEMA, ROOT, dataDirPath } from './helpers.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

interface Served {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function withoutKey(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { FATHOM_API_KEY: _k, ...rest } = env;
  return rest;
}

/** Starts `fathom serve`, resolving once a log line gives the port. */
function serve(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--api-address', '127.0.0.1', '--api-port', '0', ...args], {
    cwd: ROOT,
    env: { ...withoutKey(process.env), ...env },
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
          resolve({ child, port: j.port, stderr: () => err, stdout: () => out, exited });
          return;
        }
      }
    });
    void exited.then((code) => reject(new Error(`fathom serve exited with ${code}: ${err}`)));
  });
}

async function call(port: number, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'x-typesense-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json()) as any };
}

describe('fathom serve as a process', () => {
  it('serves from several processes over one data directory and stops on SIGTERM', async () => {
    const s = await serve(['--data-dir', dataDirPath(), '--api-key', 'cluster-key', '--processes', '2', '--log-level', 'info']);
    expect((await call(s.port, 'POST', '/collections', 'cluster-key', BOOKS_SCHEMA)).status).toBe(201);
    const doc = { id: '1', title: 'Dune', author: 'Frank Herbert', year: 1965 };
    expect((await call(s.port, 'POST', '/collections/books/documents', 'cluster-key', doc)).status).toBe(201);
    // Imports run on each process's import thread (the compiled one, here).
    const jsonl = [2, 3, 4].map((i) => JSON.stringify({ id: String(i), title: `Book ${i}`, author: 'A', year: 1990 + i })).join('\n') + '\n{"id":"5"}';
    const imported = await fetch(`http://127.0.0.1:${s.port}/collections/books/documents/import?return_id=true`, {
      method: 'POST',
      headers: { 'x-typesense-api-key': 'cluster-key', 'content-type': 'text/plain' },
      body: jsonl,
    });
    const lines = (await imported.text()).split('\n').map((l) => JSON.parse(l));
    expect(lines.slice(0, 3)).toEqual([{ success: true, id: '2' }, { success: true, id: '3' }, { success: true, id: '4' }]);
    expect(lines[3].success).toBe(false);
    // New connections go round-robin, so both processes answer and both see the write.
    const pids = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const r = await call(s.port, 'GET', '/collections/books/documents/search?q=dune&query_by=title', 'cluster-key');
      expect(r.json.found).toBe(1);
    }
    for (const line of s.stdout().split('\n')) {
      if (line.includes('"msg":"request"') && line.includes('/documents/search')) pids.add(JSON.parse(line).pid);
    }
    expect(pids.size).toBe(2);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.stdout()).toMatch(/"role":"primary".*"msg":"stopped"/);
  });

  it('creates an admin key on first start without --api-key, shows it once, and keeps it', async () => {
    const dir = dataDirPath();
    const first = await serve(['--data-dir', dir, '--processes', '1', '--log-level', 'info']);
    const key = /created an admin key[^\n]*\n\n\s+(\S+)/.exec(first.stderr())?.[1];
    expect(key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await call(first.port, 'GET', '/collections', key!)).status).toBe(200);
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);

    const second = await serve(['--data-dir', dir, '--processes', '1', '--log-level', 'info']);
    expect(second.stderr()).not.toMatch(/created an admin key/);
    expect((await call(second.port, 'GET', '/collections', key!)).status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('refuses a bad option with a usage error', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--api-port', 'eighty'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err).toMatch(/--api-port/);
  });
});
