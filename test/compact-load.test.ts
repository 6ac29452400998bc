/**
 * Compaction on a busy server: writes, searches and an import held open go on while
 * `POST /operations/db/compact` runs. `/health` answers throughout, searches and writes
 * succeed or get a 503 that says to retry, the compaction answers 200, or 503 saying why
 * once its wait for quiet runs out, and no acknowledged write is lost. On one process,
 * across the processes of `fathom serve --processes 2`, and on a cluster node that takes
 * writes (where pausing the applier before the writes waiting on it deadlocked).
 */
import http from 'node:http';
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { natsServerPath, removeTemporaryDirectories, startNats, type NatsCluster } from './cluster-harness.js';
import { BIN, dataDirPath, jsonLines } from './helpers.js';

const KEY = 'compact-load-key';
const HAVE_NATS = natsServerPath() !== undefined;
if (!HAVE_NATS) console.warn('the cluster node case is skipped: nats-server is not installed (apt-get install nats-server)');

/** How long /health may take at any moment, ms (a loaded 2-core machine included). */
const HEALTH_BOUND_MS = 1000;

const SCHEMA = { name: 'c', fields: [{ name: 'title', type: 'string' }, { name: 'n', type: 'int32' }] };
const doc = (id: string, n: number) => ({ id, title: `item ${n} of the ${['red', 'green', 'blue'][n % 3]} kind ${'filler '.repeat(12)}`, n });
const docLines = (prefix: string, from: number, to: number) => Array.from({ length: to - from }, (_, k) => JSON.stringify(doc(`${prefix}${from + k}`, from + k))).join('\n');

async function call(base: string, method: string, p: string, body?: unknown, timeoutMs = 60_000) {
  const started = Date.now();
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, text, ms: Date.now() - started, json: () => JSON.parse(text) };
}

async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Outcome {
  status: number;
  ms: number;
  message?: string;
}

/** Clients that keep probing /health, searching and writing new documents (each id once) until stopped. */
function load(base: string, prefix: string, writers = 2) {
  let running = true;
  const health: Outcome[] = [];
  const searches: Outcome[] = [];
  const writes = new Map<string, Outcome>();
  let next = 0;
  const outcome = (r: Awaited<ReturnType<typeof call>>): Outcome => ({ status: r.status, ms: r.ms, ...(r.status >= 300 ? { message: String(r.json().message) } : {}) });
  const loops = [
    (async () => {
      while (running) {
        health.push(outcome(await call(base, 'GET', '/health')));
        await new Promise((r) => setTimeout(r, 20));
      }
    })(),
    (async () => {
      while (running) searches.push(outcome(await call(base, 'GET', '/collections/c/documents/search?q=kind&query_by=title&per_page=20')));
    })(),
    ...Array.from({ length: writers }, () =>
      (async () => {
        while (running) {
          const n = next++;
          const id = `${prefix}${n}`;
          writes.set(id, outcome(await call(base, 'POST', '/collections/c/documents', doc(id, n))));
        }
      })(),
    ),
  ];
  return {
    writes,
    /** The slowest /health answer so far, ms. */
    slowestHealth: () => Math.max(0, ...health.map((h) => h.ms)),
    async stop() {
      running = false;
      await Promise.all(loops);
      return { health, searches, writes };
    },
  };
}

type Load = Awaited<ReturnType<ReturnType<typeof load>['stop']>>;

/** What every client saw: /health always at once, the rest done or told to retry. */
function expectServedThroughout(seen: Load): void {
  expect(seen.health.length).toBeGreaterThan(10);
  expect(seen.health.filter((h) => h.status !== 200)).toEqual([]);
  expect(Math.max(...seen.health.map((h) => h.ms)), '/health answered slowly').toBeLessThan(HEALTH_BOUND_MS);
  expect(seen.searches.filter((s) => s.status !== 200 && !(s.status === 503 && /retry/.test(s.message ?? '')))).toEqual([]);
  expect(seen.searches.filter((s) => s.status === 200).length).toBeGreaterThan(0);
  const writes = [...seen.writes.values()];
  expect(writes.filter((w) => w.status !== 201 && !(w.status === 503 && /retry/.test(w.message ?? '')))).toEqual([]);
  expect(writes.filter((w) => w.status === 201).length).toBeGreaterThan(0);
}

/** An import whose client sends its first 100 lines, then holds the request open until `sendRest`. */
async function heldImport(url: string, prefix: string) {
  let sendRest!: () => void;
  const rest = new Promise<void>((r) => (sendRest = r));
  let part = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (part++ === 0) return c.enqueue(new TextEncoder().encode(`${docLines(prefix, 0, 100)}\n`));
      await rest;
      c.enqueue(new TextEncoder().encode(docLines(prefix, 100, 200)));
      c.close();
    },
  });
  const done = fetch(`${url}/collections/c/documents/import?batch_size=50`, { method: 'POST', headers: { 'x-typesense-api-key': KEY }, body, duplex: 'half' } as RequestInit).then(async (r) => ({ status: r.status, text: await r.text() }));
  await until('the held import to store its first batch', async () => (await call(url, 'GET', `/collections/c/documents/${prefix}0`)).status === 200);
  return {
    ids: Array.from({ length: 200 }, (_, k) => `${prefix}${k}`),
    /** Sends the rest; resolves once every line was imported. */
    async finish() {
      sendRest();
      const r = await done;
      expect(r.status).toBe(200);
      expect(jsonLines(r.text).filter((l) => l.success !== true)).toEqual([]);
      expect(jsonLines(r.text).length).toBe(200);
    },
  };
}

const idsOf = (exported: string) => new Set(jsonLines(exported).map((d) => d.id as string));
const acknowledged = (seen: Load) => [...seen.writes].filter(([, w]) => w.status === 201).map(([id]) => id);
const refused = (seen: Load) => [...seen.writes].filter(([, w]) => w.status !== 201).map(([id]) => id);

const servers: RunningServer[] = [];
let nats: NatsCluster | undefined;
afterAll(async () => {
  for (const s of servers) await s.stop();
  await nats?.stop();
  removeTemporaryDirectories();
}, 60_000);

describe('compaction on a busy server', () => {
  it('answers 503 within its wait while an import is held open, then 200, with /health, searches and writes answering throughout', async () => {
    const quietMs = 1500;
    const server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', limits: { compactQuietMs: quietMs } });
    servers.push(server);
    const url = server.url;
    expect((await call(url, 'POST', '/collections', SCHEMA)).status).toBe(201);
    expect((await call(url, 'POST', '/collections/c/documents/import?batch_size=500', docLines('d', 0, 3000))).status).toBe(200);
    expect((await call(url, 'DELETE', '/collections/c/documents?filter_by=n:>=1500')).json().num_deleted).toBe(1500);
    const before = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);

    const held = await heldImport(url, 'imp');
    const clients = load(url, 'w');
    await until('writes to flow', async () => [...clients.writes.values()].some((w) => w.status === 201));
    const refusedWhileHeld = await call(url, 'POST', '/operations/db/compact');
    expect(refusedWhileHeld.status, refusedWhileHeld.text).toBe(503);
    expect(refusedWhileHeld.ms).toBeLessThan(quietMs + 3000);
    expect(clients.slowestHealth(), '/health answered slowly').toBeLessThan(HEALTH_BOUND_MS);
    expect(refusedWhileHeld.json().message).toMatch(/waits 1\.5 s for quiet\): 1 write request\(s\) in flight did not finish/);

    await held.finish();
    const compacted = await call(url, 'POST', '/operations/db/compact');
    expect(compacted.status, compacted.text).toBe(200);
    expect(compacted.ms).toBeLessThan(2 * quietMs + 5000);
    // writes go on after the swap
    const after = clients.writes.size;
    await until('writes after the swap', async () => [...clients.writes.values()].slice(after).some((w) => w.status === 201));
    const seen = await clients.stop();
    expectServedThroughout(seen);

    const ids = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
    const expected = new Set([...before, ...held.ids, ...acknowledged(seen)]);
    expect(ids.size).toBe(expected.size);
    expect([...expected].filter((id) => !ids.has(id))).toEqual([]);
    // a write told to retry was not made
    expect(refused(seen).filter((id) => ids.has(id))).toEqual([]);
  });

  it('holds writes at a closed door for its wait at most (then 503, nothing written), while /health and searches pass', async () => {
    const waitMs = 1000;
    const server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', limits: { compactQuietMs: waitMs } });
    servers.push(server);
    const url = server.url;
    expect((await call(url, 'POST', '/collections', SCHEMA)).status).toBe(201);
    const gate = server.context.gate;

    // 50 writes wait at the closed door and all go through once it opens
    gate.write.close();
    const waiting = Array.from({ length: 50 }, (_, i) => call(url, 'POST', '/collections/c/documents', doc(`a${i}`, i)));
    const health = await call(url, 'GET', '/health');
    const search = await call(url, 'GET', '/collections/c/documents/search?q=*');
    expect([health.status, search.status]).toEqual([200, 200]);
    expect(search.json().found).toBe(0);
    gate.write.open();
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual(Array(50).fill(201));

    // a door that stays closed: each is answered 503 after its wait, and nothing is written
    gate.write.close();
    const refusedWrites = await Promise.all(Array.from({ length: 50 }, (_, i) => call(url, 'POST', '/collections/c/documents', doc(`b${i}`, i))));
    gate.write.open();
    for (const r of refusedWrites) {
      expect(r.status).toBe(503);
      expect(r.json().message).toMatch(/held this request for 1 s; nothing was done: retry it/);
      expect(r.ms).toBeGreaterThanOrEqual(waitMs - 50);
      expect(r.ms).toBeLessThan(waitMs + 2000);
    }
    // a client that gives up while held: its write is not made, and the door counts it out
    gate.write.close();
    // (a connection of its own, destroyed: the client is surely gone)
    const gaveUp = new Promise<Error>((resolve) => {
      const req = http.request(`${url}/collections/c/documents`, { method: 'POST', headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' } });
      req.on('error', resolve);
      req.end(JSON.stringify(doc('gone', 0)));
      void until('the write to wait at the door', async () => gate.write.waiting === 1).then(() => req.destroy());
    });
    expect(await gaveUp).toBeInstanceOf(Error);
    // (time for the server to see the connection close)
    await new Promise((r) => setTimeout(r, 500));
    gate.write.open();
    await new Promise((r) => setTimeout(r, 100));
    expect(gate.write.active).toBe(0);
    expect((await call(url, 'GET', '/collections/c/documents/gone')).status).toBe(404);
    // the read door holds searches the same way, never /health
    gate.read.close();
    const [heldSearch, probe] = await Promise.all([call(url, 'GET', '/collections/c/documents/search?q=*'), call(url, 'GET', '/health')]);
    gate.read.open();
    expect(heldSearch.status).toBe(503);
    expect(probe.status).toBe(200);
    expect(probe.ms).toBeLessThan(waitMs);
    const ids = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
    expect([...ids].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `a${i}`).sort());
  });

  it('merges only the segments there when it began, so that writes landing all the while cannot keep it merging', async () => {
    const server = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' });
    servers.push(server);
    const url = server.url;
    expect((await call(url, 'POST', '/collections', SCHEMA)).status).toBe(201);
    expect((await call(url, 'POST', '/collections/c/documents/import?batch_size=250', docLines('d', 0, 2000))).status).toBe(200);
    expect((await call(url, 'DELETE', '/collections/c/documents?filter_by=n:>=1000')).json().num_deleted).toBe(1000);
    // segments left for the compaction to merge: the background merges done, then a few small ones
    await server.engine.idle();
    for (let i = 0; i < 4; i++) expect((await call(url, 'POST', '/collections/c/documents', doc(`s${i}`, i))).status).toBe(201);
    // A write lands after every merge's commit, before the merge goes on: writes as fast as merges.
    const store = server.engine.store;
    const transact = store.transact.bind(store);
    let writing = true;
    let n = 0;
    const written: string[] = [];
    store.transact = (async (fn: () => unknown, bytes?: number) => {
      const r = await transact(fn, bytes);
      // (a merge's commit answers whether it applied; a document write answers its results)
      if (writing && typeof r === 'boolean') {
        const id = `e${n}`;
        await server.engine.writeDocument('c', doc(id, n++));
        written.push(id);
      }
      return r;
    }) as typeof store.transact;
    const compacted = await call(url, 'POST', '/operations/db/compact', undefined, 20_000).catch((e: Error) => ({ status: 0, text: e.message, ms: 20_000 }));
    const during = written.length;
    writing = false;
    store.transact = transact;
    expect(compacted.status, compacted.text).toBe(200);
    expect(during).toBeGreaterThan(0);
    const ids = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
    expect(written.filter((id) => !ids.has(id))).toEqual([]);
    expect(ids.size).toBe(1000 + 4 + written.length);
  });

  it('answers across the processes of `fathom serve --processes 2`: 503 within 10 s while an import is held open, then 200, while writes flow', async () => {
    const dir = dataDirPath();
    const child = spawn(process.execPath, [BIN, 'serve', '-d', dir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', '0', '--processes', '2', '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stderr.on('data', (d) => (output += d));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          output += d;
          const m = /"port":(\d+)/.exec(output);
          if (m && output.includes('"serving"')) resolve(`http://127.0.0.1:${m[1]}`);
        });
        child.on('exit', (c) => reject(new Error(`serve exited ${c}: ${output.slice(-2000)}`)));
      });
      expect((await call(url, 'POST', '/collections', SCHEMA)).status).toBe(201);
      expect((await call(url, 'POST', '/collections/c/documents/import?batch_size=500', docLines('d', 0, 3000))).status).toBe(200);
      expect((await call(url, 'DELETE', '/collections/c/documents?filter_by=n:>=1500')).json().num_deleted).toBe(1500);
      const before = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
      const held = await heldImport(url, 'imp');
      const clients = load(url, 'w', 3);
      await until('writes to flow', async () => [...clients.writes.values()].some((w) => w.status === 201));
      // (the default wait for quiet: 10 s)
      const refusedWhileHeld = await call(url, 'POST', '/operations/db/compact', undefined, 40_000);
      expect(refusedWhileHeld.status, refusedWhileHeld.text).toBe(503);
      expect(refusedWhileHeld.ms).toBeLessThan(15_000);
      expect(clients.slowestHealth(), '/health answered slowly').toBeLessThan(HEALTH_BOUND_MS);
      expect(refusedWhileHeld.json().message).toMatch(/waits 10 s for quiet\): 1 write request\(s\) in flight did not finish/);
      await held.finish();
      const compacted = await call(url, 'POST', '/operations/db/compact', undefined, 40_000);
      expect(compacted.status, compacted.text).toBe(200);
      const seen = await clients.stop();
      expectServedThroughout(seen);
      const ids = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
      const expected = new Set([...before, ...held.ids, ...acknowledged(seen)]);
      expect(ids.size).toBe(expected.size);
      expect([...expected].filter((id) => !ids.has(id))).toEqual([]);
      // (the refused compaction is logged as such; nothing else failed)
      expect(output.split('\n').filter((l) => /"level":[56]0/.test(l) && !l.includes('"compaction failed"'))).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 120_000);
});

describe.skipIf(!HAVE_NATS)('compaction on a cluster node that takes writes', () => {
  it('lets the writes in flight be applied before it pauses the applier, and answers 200 without stalling writes', async () => {
    nats = await startNats(3);
    const node = await startServer({ dataDir: dataDirPath(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', cluster: { servers: nats.urls, nodeName: 'a' }, limits: { compactQuietMs: 5000 } });
    servers.push(node);
    const url = node.url;
    expect((await call(url, 'POST', '/collections', SCHEMA)).status).toBe(201);
    expect((await call(url, 'POST', '/collections/c/documents/import?batch_size=500', docLines('d', 0, 1000))).status).toBe(200);

    // One write is held in flight (accepted by the node, not yet published) until the
    // compaction has made its first copy and started to hold the node.
    const replicator = node.replicator!;
    const submit = replicator.submit.bind(replicator);
    let holdOne = true;
    let reached!: () => void;
    const atSubmit = new Promise<void>((r) => (reached = r));
    let letGo!: () => void;
    const go = new Promise<void>((r) => (letGo = r));
    replicator.submit = async (cmd) => {
      if (holdOne && cmd.op === 'docs.write') {
        holdOne = false;
        reached();
        await go;
      }
      return submit(cmd);
    };
    const copy = node.engine.copyEnvironment.bind(node.engine);
    let copied = false;
    node.engine.copyEnvironment = async (dir) => {
      await copy(dir);
      if (!copied) setTimeout(letGo, 200);
      copied = true;
    };

    const heldWrite = call(url, 'POST', '/collections/c/documents', doc('held', 0));
    await atSubmit;
    const clients = load(url, 'w');
    await until('writes to flow', async () => [...clients.writes.values()].some((w) => w.status === 201));
    const compacted = await call(url, 'POST', '/operations/db/compact');
    const held = await heldWrite;
    const after = clients.writes.size;
    await until('writes after the compaction', async () => [...clients.writes.values()].slice(after).some((w) => w.status === 201));
    const seen = await clients.stop();

    expect(copied).toBe(true);
    expect(compacted.status, compacted.text).toBe(200);
    expect(held.status, held.text).toBe(201);
    expect(held.ms).toBeLessThan(5000);
    expectServedThroughout(seen);
    expect(Math.max(...[...seen.writes.values()].map((w) => w.ms)), 'a write stalled').toBeLessThan(5000);
    const ids = idsOf((await call(url, 'GET', '/collections/c/documents/export')).text);
    expect(acknowledged(seen).filter((id) => !ids.has(id))).toEqual([]);
    expect(ids.has('held')).toBe(true);
  });
});
