/**
 * Search analytics with the real binary: several server processes counting one user and
 * every event exactly once, `kill -9` between an acknowledged event and the flush, a flush
 * killed half-way, and `fathom analytics` on the data directory.
 * (Needs `node bin/build.mjs` first, as every test that runs the binary.)
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, cli, dataDirPath, tmpDir } from './helpers.js';

const KEY = 'analytics-process-key';
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface Served {
  child: ChildProcess;
  port: number;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `fathom serve` with analytics on, resolving once a log line gives the port. */
function serve(dataDir: string, processes: number): Promise<Served> {
  const args = ['serve', '-d', dataDir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', '0', '--processes', String(processes), '--log-level', 'info', '--enable-search-analytics'];
  const { FATHOM_API_KEY: _k, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d) => (err += d));
    child.stdout!.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const j = JSON.parse(line);
        if (j.msg === 'serving' || (j.msg === 'listening' && j.role === 'server')) return resolve({ child, port: j.port, stdout: () => out, exited });
      }
    });
    void exited.then(({ code }) => reject(new Error(`fathom serve exited with ${code}: ${err}`)));
  });
}

/** One request on a connection of its own (so that a cluster hands requests to different processes). */
function request(port: number, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      { host: '127.0.0.1', port, method, path: p, agent: false, headers: { 'x-typesense-api-key': KEY, ...(data ? { 'content-type': 'application/json' } : {}), ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setUp(port: number): Promise<void> {
  const ok = (r: { status: number; json: any }) => {
    if (r.status >= 300) throw new Error(`${r.status} ${JSON.stringify(r.json)}`);
  };
  ok(await request(port, 'POST', '/collections', { name: 'products', fields: [{ name: 'title', type: 'string' }, { name: 'popularity', type: 'int32', optional: true }] }));
  ok(await request(port, 'POST', '/collections', { name: 'queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] }));
  for (const [id, title] of [
    ['1', 'Tent for four'],
    ['2', 'Tent pegs'],
  ]) ok(await request(port, 'POST', '/collections/products/documents', { id, title }));
  ok(await request(port, 'PUT', '/analytics/rules/popular', { type: 'popular_queries', params: { source: { collections: ['products'] }, destination: { collection: 'queries' }, limit: 100 } }));
  ok(
    await request(port, 'PUT', '/analytics/rules/clicks', {
      type: 'counter',
      params: { source: { collections: ['products'], events: [{ type: 'click', weight: 1, name: 'click' }] }, destination: { collection: 'products', counter_field: 'popularity' } },
    }),
  );
}

const click = (doc: string) => ({ type: 'click', name: 'click', data: { doc_id: doc, user_id: 'u' } });
const search = (port: number, q: string, user: string) => request(port, 'GET', `/collections/products/documents/search?q=${encodeURIComponent(q)}&query_by=title`, undefined, { 'x-typesense-user-id': user });

async function queryCounts(port: number): Promise<Record<string, number>> {
  const r = await request(port, 'GET', '/collections/queries/documents/search?q=*&per_page=100');
  return Object.fromEntries(r.json.hits.map((h: any) => [h.document.q, h.document.count]));
}

describe('analytics across server processes', () => {
  it('counts a user whose searches land on different processes once, every event exactly once, and flushes at the stop', async () => {
    const dir = dataDirPath();
    const s = await serve(dir, 2);
    await setUp(s.port);
    // 300 clicks, 30 at a time, each on a connection of its own.
    let accepted = 0;
    for (let round = 0; round < 10; round++) {
      const rs = await Promise.all(Array.from({ length: 30 }, () => request(s.port, 'POST', '/analytics/events', click('1'))));
      accepted += rs.filter((r) => r.status === 201).length;
    }
    expect(accepted).toBe(300);
    // A click on a document that does not exist: skipped at the flush, and said so in its log line.
    expect((await request(s.port, 'POST', '/analytics/events', click('gone'))).status).toBe(201);
    // One user typing, each keystroke on another connection.
    for (const q of ['t', 'te', 'ten', 'tent']) expect((await search(s.port, q, 'user-x')).status).toBe(200);
    const pidsOf = (url: RegExp) =>
      new Set(
        s
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('{') && url.test(JSON.parse(l).url ?? ''))
          .map((l) => JSON.parse(l).pid),
      );
    await sleep(200); // (the request log lines are written once the answers have gone)
    expect(pidsOf(/^\/analytics\/events$/).size).toBe(2);
    expect(pidsOf(/^\/collections\/products\/documents\/search\?q=te?n?t?&/).size).toBe(2);
    await search(s.port, 'tent', 'user-y');
    await sleep(4300);
    expect((await request(s.port, 'POST', '/analytics/flush')).json).toMatchObject({ ok: true, batches: 1, counters: 1, queries: 1, skipped_documents: 1 });
    expect((await request(s.port, 'GET', '/collections/products/documents/1')).json.popularity).toBe(300);
    expect(await queryCounts(s.port)).toEqual({ tent: 2 });
    await sleep(200);
    const flushLine = s
      .stdout()
      .split('\n')
      .find((l) => l.includes('"msg":"analytics flush"'));
    expect(JSON.parse(flushLine!)).toMatchObject({ level: 30, counters: 1, skipped_documents: 1, failed: 0 });
    // Pending at the stop: the primary flushes once the workers have stopped.
    for (let i = 0; i < 7; i++) expect((await request(s.port, 'POST', '/analytics/events', click('2'))).status).toBe(201);
    s.child.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
    expect(JSON.parse((await cli(['documents', 'get', 'products', '2', '-d', dir])).stdout).popularity).toBe(7);
  });
});

describe('analytics durability', () => {
  const dir = dataDirPath();

  it('keeps acknowledged events and searches across kill -9, and applies them after the restart', async () => {
    let s = await serve(dir, 1);
    await setUp(s.port);
    for (let i = 0; i < 5; i++) expect((await request(s.port, 'POST', '/analytics/events', click('2'))).status).toBe(201);
    expect((await search(s.port, 'tent pegs', 'z')).status).toBe(200);
    const searchedAt = Date.now();
    s.child.kill('SIGKILL');
    expect((await s.exited).signal).toBe('SIGKILL');
    s = await serve(dir, 1);
    await sleep(Math.max(0, searchedAt + 4300 - Date.now()));
    expect((await request(s.port, 'POST', '/analytics/flush')).json).toMatchObject({ batches: 1, counters: 1, queries: 1 });
    expect((await request(s.port, 'GET', '/collections/products/documents/2')).json.popularity).toBe(5);
    expect(await queryCounts(s.port)).toEqual({ 'tent pegs': 1 });
    // Three more clicks, then another kill -9, for the next test.
    for (let i = 0; i < 3; i++) expect((await request(s.port, 'POST', '/analytics/events', click('2'))).status).toBe(201);
    s.child.kill('SIGKILL');
    await s.exited;
  });

  it('never applies events twice when a flush is killed after writing the collections', async () => {
    const killed = await cli(['analytics', 'flush', '-d', dir], { env: { FATHOM_ANALYTICS_FAILPOINT: 'after-apply' } });
    expect(killed.code).toBe(-1); // died of SIGKILL
    expect(JSON.parse((await cli(['documents', 'get', 'products', '2', '-d', dir])).stdout).popularity).toBe(8);
    const again = await cli(['analytics', 'flush', '-d', dir, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ batches: 0 });
    expect(JSON.parse((await cli(['documents', 'get', 'products', '2', '-d', dir])).stdout).popularity).toBe(8);
    expect((await cli(['analytics', 'flush', '-d', dir])).stdout).toBe('nothing pending to flush\n');
  });
});

describe('fathom analytics', () => {
  const dir = path.join(tmpDir(), 'data');
  const rule = { type: 'popular_queries', params: { source: { collections: ['products'] }, destination: { collection: 'queries' }, limit: 10 } };

  it('puts, lists, gets and deletes rules on the data directory', async () => {
    await cli(['collections', 'create', '-d', dir], { input: JSON.stringify({ name: 'queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] }) });
    const put = await cli(['analytics', 'rules', 'put', 'suggestions', '-d', dir], { input: JSON.stringify(rule) });
    expect(put.code).toBe(0);
    expect(JSON.parse(put.stdout)).toEqual({ name: 'suggestions', ...rule });
    const list = await cli(['analytics', 'rules', 'list', '-d', dir]);
    expect(list.stdout).toMatch(/^NAME +TYPE +SOURCE +DESTINATION +EVENTS \/ LIMIT\nsuggestions +popular_queries +products +queries +limit 10\n$/);
    expect(JSON.parse((await cli(['analytics', 'rules', 'list', '--json', '-d', dir])).stdout)).toEqual({ rules: [{ name: 'suggestions', ...rule }] });
    expect(JSON.parse((await cli(['analytics', 'rules', 'get', 'suggestions', '-d', dir])).stdout)).toEqual({ name: 'suggestions', ...rule });
    expect(JSON.parse((await cli(['analytics', 'rules', 'delete', 'suggestions', '-d', dir])).stdout)).toEqual({ name: 'suggestions' });
    expect((await cli(['analytics', 'rules', 'list', '-d', dir])).stdout).toBe('no analytics rules\n');
  });

  it('flushes nothing, and creates nothing, where analytics never ran', async () => {
    const r = await cli(['analytics', 'flush', '-d', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`nothing pending to flush (no analytics directory at ${path.join(dir, 'analytics')})\n`);
    expect(fs.existsSync(path.join(dir, 'analytics'))).toBe(false);
  });

  it('flushes every 3600 seconds unless told otherwise, and refuses an interval under 60', async () => {
    const help = await cli(['serve', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toMatch(/--analytics-flush-interval <seconds> seconds between flushes [^-]*\(default: 3600\)/);
    const short = await cli(['serve', '-d', dir, '--api-key', KEY, '--enable-search-analytics', '--analytics-flush-interval', '59']);
    expect(short.code).toBe(2);
    expect(short.stderr).toBe('error: --analytics-flush-interval must be between 60 and 31536000, got 59\n');
  });

  it('reports a bad rule in one line with a non-zero status', async () => {
    const missing = await cli(['analytics', 'rules', 'put', 'x', '-d', dir], { input: JSON.stringify({ ...rule, params: { ...rule.params, destination: { collection: 'nowhere' } } }) });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('error: destination collection `nowhere` does not exist; create it first\n');
    const notJson = await cli(['analytics', 'rules', 'put', 'x', '-d', dir], { input: '{nope' });
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/^error: the rule is not valid JSON/);
    const absent = await cli(['analytics', 'rules', 'get', 'nope', '-d', dir]);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toBe('error: analytics rule `nope` not found\n');
  });
});
