/**
 * Cluster benchmark on one machine: a three-server NATS JetStream cluster and three
 * `fathom serve --cluster` nodes, against one `fathom serve --processes 1`, on the Debian set.
 *
 *   node bench/run.mjs cluster [--dataset path] [--batch-size 40] [--duration 10] [--failovers 3] [--settle 15]
 *
 * Reports, in one run:
 *   - import of the whole set through the HTTP API: one node against the cluster (ratio);
 *   - replication lag under that import: how long a document written on one node takes to
 *     be readable on another (p50 / p99), and the commands a follower is behind (p50 / p99);
 *   - search throughput (autocannon, 16 connections per node): one node against three;
 *   - failover: after `kill -9` of the stream leader's NATS server, how long until a write
 *     through the cluster is acknowledged again, against how long JetStream itself takes
 *     to accept a publish to the stream again (the same kill, no Fathom).
 * The machine has 2 cores: three nodes and three NATS servers share them, so the cluster
 * figures measure replication's cost, not a cluster's capacity on separate machines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import autocannon from 'autocannon';
import { DEBIAN_SCHEMA, ROOT, arg, datasetText, percentile } from '../common.js';
import { fathomNode, freePort, removeTemporaryDirectories, startNats, tmpDir, type FathomNode, type NatsCluster } from '../../test/cluster-harness.js';

const KEY = 'bench-key';
const batchSize = Number(arg('batch-size', '40'));
const duration = Number(arg('duration', '10'));
const failovers = Number(arg('failovers', '3'));
/** Wait after an import before searching: merges run in the background. */
const settleMs = Number(arg('settle', '15')) * 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(url: string, method: string, p: string, body?: string) {
  const r = await fetch(`${url}${p}`, { method, headers: { 'x-typesense-api-key': KEY }, body, signal: AbortSignal.timeout(600_000) });
  return { status: r.status, text: await r.text() };
}

async function single(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const dir = path.join(tmpDir('fathom-bench-single-'), 'data');
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'fathom.js'), 'serve', '-d', dir, '--api-key', KEY, '--api-address', '127.0.0.1', '--api-port', String(port), '--processes', '1', '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  return { url, child };
}

async function importAll(url: string, text: string): Promise<number> {
  const t0 = performance.now();
  const r = await call(url, 'POST', `/collections/packages/documents/import?batch_size=${batchSize}`, text);
  const ms = performance.now() - t0;
  const ok = r.text.split('\n').filter((l) => l.includes('"success":true')).length;
  if (r.status !== 200 || ok < 60_000) throw new Error(`import: ${r.status}, ${ok} lines succeeded: ${r.text.slice(0, 300)}`);
  return ms;
}

async function searchRate(urls: string[]): Promise<number> {
  const queries = ['libssl', 'pyhton parser', 'gnome shell extension', 'rust compiler', 'mail server', 'font', 'kernel module', 'postgres client'];
  const runs = urls.map(
    (url) =>
      new Promise<autocannon.Result>((resolve, reject) =>
        autocannon(
          {
            url,
            connections: 16,
            duration,
            requests: queries.map((q) => ({ method: 'GET', path: `/collections/packages/documents/search?q=${encodeURIComponent(q)}&query_by=name,summary`, headers: { 'x-typesense-api-key': KEY } })),
          },
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      ),
  );
  const results = await Promise.all(runs);
  return results.reduce((s, r) => s + r.requests.average, 0);
}

const text = datasetText();
const out: string[] = [];

// ---------------------------------------------------------------------------
// one node
// ---------------------------------------------------------------------------
{
  const s = await single();
  try {
    await call(s.url, 'POST', '/collections', JSON.stringify(DEBIAN_SCHEMA));
    const ms = await importAll(s.url, text);
    await sleep(settleMs); // background merges after the import
    const rate = await searchRate([s.url]);
    out.push(`one node: import ${(ms / 1000).toFixed(1)} s; searches ${rate.toFixed(0)}/s`);
    (globalThis as { singleImport?: number; singleRate?: number }).singleImport = ms;
    (globalThis as { singleImport?: number; singleRate?: number }).singleRate = rate;
  } finally {
    s.child.kill('SIGTERM');
  }
}

// ---------------------------------------------------------------------------
// three nodes
// ---------------------------------------------------------------------------
let nats: NatsCluster | undefined;
const nodes: FathomNode[] = [];
try {
  nats = await startNats(3);
  for (let i = 0; i < 3; i++) {
    const urls = [nats.urls[i]!, ...nats.urls.filter((_, j) => j !== i)];
    const n = await fathomNode(`node${i + 1}`, urls, KEY);
    await n.start();
    nodes.push(n);
  }
  await call(nodes[0]!.url, 'POST', '/collections', JSON.stringify(DEBIAN_SCHEMA));
  await call(nodes[0]!.url, 'POST', '/collections', JSON.stringify({ name: 'probe', fields: [{ name: 'n', type: 'int32' }] }));

  // the import on node 1, while node 2 takes probe writes that node 3 must see
  let importing = true;
  const visible: number[] = [];
  const behind: number[] = [];
  const probe = (async () => {
    for (let i = 0; importing; i++) {
      const id = `p${i}`;
      const w = await call(nodes[1]!.url, 'POST', '/collections/probe/documents', JSON.stringify({ id, n: i }));
      if (w.status !== 201) continue;
      const t0 = performance.now();
      while ((await call(nodes[2]!.url, 'GET', `/collections/probe/documents/${id}`)).status !== 200) await sleep(2);
      visible.push(performance.now() - t0);
      const d = JSON.parse((await call(nodes[2]!.url, 'GET', '/debug')).text).cluster;
      behind.push(d.lag);
      await sleep(50);
    }
  })();
  const ms = await importAll(nodes[0]!.url, text);
  importing = false;
  await probe;
  const g = globalThis as { singleImport?: number; singleRate?: number };
  out.push(`three nodes: import ${(ms / 1000).toFixed(1)} s (${(ms / g.singleImport!).toFixed(2)}x one node; target <= 3x)`);
  visible.sort((a, b) => a - b);
  behind.sort((a, b) => a - b);
  out.push(
    `replication lag during the import: a write on node 2 readable on node 3 after p50 ${percentile(visible, 50).toFixed(1)} ms, p99 ${percentile(visible, 99).toFixed(1)} ms (${visible.length} probes); node 3 behind by p50 ${percentile(behind, 50)} / p99 ${percentile(behind, 99)} commands`,
  );
  // every node has everything before searching
  for (;;) {
    const s = await Promise.all(nodes.map(async (n) => JSON.parse((await call(n.url, 'GET', '/debug')).text).cluster));
    if (s.every((x) => x.lag === 0)) break;
    await sleep(200);
  }
  await sleep(settleMs); // background merges after the import, on every node
  const rate3 = await searchRate(nodes.map((n) => n.url));
  out.push(`searches from three nodes: ${rate3.toFixed(0)}/s (${(rate3 / g.singleRate!).toFixed(2)}x one node)`);

  // failover: kill the stream leader's NATS server, time the next acknowledged write
  for (let f = 0; f < failovers; f++) {
    const d = JSON.parse((await call(nodes[0]!.url, 'GET', '/debug')).text).cluster;
    const leader = nats.servers.find((s) => s.name === d.leader_server)!;
    const survivor = nodes[0]!;
    const t0 = Date.now();
    await leader.kill('SIGKILL');
    for (;;) {
      try {
        const w = await fetch(`${survivor.url}/collections/probe/documents`, { method: 'POST', headers: { 'x-typesense-api-key': KEY }, body: JSON.stringify({ id: `f${f}-${Date.now()}`, n: f }), signal: AbortSignal.timeout(30_000) });
        if (w.status === 201) break;
      } catch {
        /* retry */
      }
      await sleep(20);
    }
    out.push(`failover ${f + 1}: a write was acknowledged again ${Date.now() - t0} ms after kill -9 of the stream leader's NATS server (${leader.name})`);
    await leader.start();
    await sleep(3000);
  }
} finally {
  for (const n of nodes) await n.kill('SIGTERM');
  await nats?.stop();
}

// JetStream alone: the same kill, a plain publish
{
  const req = createRequire(import.meta.url);
  const { connect } = req('@nats-io/transport-node') as typeof import('@nats-io/transport-node');
  const { jetstream, jetstreamManager, StorageType } = req('@nats-io/jetstream') as typeof import('@nats-io/jetstream');
  for (let f = 0; f < failovers; f++) {
    const n = await startNats(3);
    const nc = await connect({ servers: n.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      let jsm;
      for (;;) {
        try {
          jsm = await jetstreamManager(nc);
          await jsm.streams.add({ name: 'RAW', subjects: ['raw'], num_replicas: 3, storage: StorageType.File });
          break;
        } catch {
          await sleep(200);
        }
      }
      const js = jetstream(nc);
      for (let i = 0; i < 20; i++) await js.publish('raw', new Uint8Array(8));
      const leaderName = (await jsm.streams.info('RAW')).cluster!.leader!;
      const t0 = Date.now();
      await n.servers.find((s) => s.name === leaderName)!.kill('SIGKILL');
      for (;;) {
        try {
          await js.publish('raw', new Uint8Array(8), { timeout: 1000 });
          break;
        } catch {
          await sleep(20);
        }
      }
      out.push(`JetStream alone, failover ${f + 1}: a publish was acknowledged again ${Date.now() - t0} ms after the kill`);
    } finally {
      await nc.close();
      await n.stop();
    }
  }
}
removeTemporaryDirectories();
console.log(out.join('\n'));
