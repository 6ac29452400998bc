/**
 * Three `fathom serve --cluster` nodes over a three-server NATS JetStream cluster, all real
 * processes on 127.0.0.1: writes on any node reach every node; under a steady write load,
 * `kill -9` of a node and of the stream leader's NATS server loses no acknowledged write,
 * writes resume within 5 s and the killed node catches up; `/operations/vote` moves
 * leadership; a snapshot starts a fourth node that then follows the stream; and the nodes'
 * data end the same (the same export).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { fathomNode, natsServerPath, removeTemporaryDirectories, startNats, type FathomNode, type NatsCluster } from './cluster-harness.js';
import { ROOT, cli, dataDirPath, jsonLines, tmpDir } from './helpers.js';
import { startServer } from '../src/server/serve.js';
import { GREEN, RED, b64, pngBytes } from './image-fixtures.js';

const KEY = 'cluster-bootstrap-key';
const HAVE_NATS = natsServerPath() !== undefined;
if (!HAVE_NATS) console.warn('cluster tests skipped: nats-server is not installed (apt-get install nats-server; .ci/run installs it)');

let nats: NatsCluster;
const nodes: FathomNode[] = [];

async function call(node: FathomNode, method: string, p: string, body?: unknown, timeoutMs = 15_000) {
  const res = await fetch(`${node.url}${p}`, {
    method,
    headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

/** Writes each document with its own request (each its own command), 16 at a time. */
async function writeEach(node: FathomNode, docs: Array<Record<string, unknown>>): Promise<void> {
  for (let i = 0; i < docs.length; i += 16) {
    const rs = await Promise.all(docs.slice(i, i + 16).map((d) => call(node, 'POST', '/collections/items/documents', d, 60_000)));
    expect(rs.map((r) => r.status)).toEqual(rs.map(() => 201));
  }
}

const debug = async (n: FathomNode) => (await call(n, 'GET', '/debug')).json().cluster;

/** Waits until every running node has applied everything the stream holds. */
async function settled(ns: FathomNode[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(ns.map((n) => debug(n).catch(() => undefined)));
    const last = Math.max(...states.map((s) => s?.stream_last ?? 0));
    if (states.every((s) => s && s.applied === last && s.lag === 0)) return;
    if (Date.now() > deadline) throw new Error(`nodes did not settle: ${JSON.stringify(states)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** When a node first logged `msg` at or after `from` (ms), if it did. */
function loggedAfter(node: FathomNode, msg: string, from: number): number | undefined {
  for (const line of node.output.split('\n')) {
    if (!line.includes(`"msg":"${msg}"`)) continue;
    const at = Date.parse(/"time":"([^"]+)"/.exec(line)?.[1] ?? '');
    if (at >= from) return at;
  }
  return undefined;
}

/** The sequence of the latest snapshot any of these nodes stored. */
const latestSnapshot = async (ns: FathomNode[]) => Math.max(...(await Promise.all(ns.map(debug))).map((s) => s.last_snapshot as number));

const exportOf = async (n: FathomNode, c: string) => (await call(n, 'GET', `/collections/${c}/documents/export`)).text;

/** NATS URLs for node i: its own server first. */
const urlsFor = (i: number) => [nats.urls[i]!, ...nats.urls.filter((_, j) => j !== i)];

beforeAll(async () => {
  if (!HAVE_NATS) return;
  nats = await startNats(3);
  for (let i = 0; i < 3; i++) nodes.push(await fathomNode(`node${i + 1}`, urlsFor(i), KEY, ['--cluster-snapshot-every', '400', '--cluster-snapshot-keep', '50', '--enable-search-analytics']));
  await Promise.all(nodes.map((n) => n.start()));
}, 120_000);

afterAll(async () => {
  for (const n of nodes) await n.kill('SIGTERM').catch(() => undefined);
  await nats?.stop();
  removeTemporaryDirectories();
}, 60_000);

const SCHEMA = { name: 'items', fields: [{ name: 'title', type: 'string' }, { name: 'n', type: 'int32' }] };

describe.skipIf(!HAVE_NATS)('a three-node cluster', () => {
  it('takes writes on any node, each reading its own at once, and every node ends with the same data', async () => {
    const [a, b, c] = nodes as [FathomNode, FathomNode, FathomNode];
    expect((await call(a, 'POST', '/collections', SCHEMA)).status).toBe(201);
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: `i${i}`, title: `item ${i}`, n: i })).join('\n');
    const imp = await call(b, 'POST', '/collections/items/documents/import?batch_size=25', lines);
    expect(jsonLines(imp.text).every((l) => l.success)).toBe(true);
    // read your write on the node that took it
    expect((await call(b, 'GET', '/collections/items/documents/search?q=*&per_page=0')).json().found).toBe(300);
    expect((await call(c, 'POST', '/collections/items/documents', { id: 'solo', title: 'written on c', n: -1 })).status).toBe(201);
    expect((await call(c, 'GET', '/collections/items/documents/solo')).status).toBe(200);
    // other resources replicate too, through the typesense client
    const client = new Client({ nodes: [{ host: '127.0.0.1', port: a.port, protocol: 'http' }], apiKey: KEY, connectionTimeoutSeconds: 10, logLevel: 'silent' });
    const key = await client.keys().create({ description: 'search', actions: ['documents:search'], collections: ['items'] });
    await client.aliases().upsert('things', { collection_name: 'items' });
    await client.stopwords().upsert('common', { stopwords: ['the'] });
    await settled(nodes);
    const exports = await Promise.all(nodes.map((n) => exportOf(n, 'items')));
    expect(exports[0]!.split('\n')).toHaveLength(301);
    expect(exports[1]).toBe(exports[0]);
    expect(exports[2]).toBe(exports[0]);
    for (const n of nodes) {
      const r = await fetch(`${n.url}/collections/things/documents/search?q=item&query_by=title&stopwords=common`, { headers: { 'x-typesense-api-key': key.value! } });
      expect(r.status).toBe(200);
      expect((await call(n, 'GET', '/collections')).json()[0].created_at).toBe((await call(a, 'GET', '/collections')).json()[0].created_at);
    }
  });

  it('counts searches made on different nodes once each in a popular-queries collection', async () => {
    const [a, b, c] = nodes as [FathomNode, FathomNode, FathomNode];
    expect((await call(a, 'POST', '/collections', { name: 'item_queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] })).status).toBe(201);
    const rule = { name: 'popular', type: 'popular_queries', params: { source: { collections: ['items'] }, destination: { collection: 'item_queries' }, limit: 100 } };
    expect((await call(a, 'POST', '/analytics/rules', rule)).status).toBe(201);
    await settled(nodes);
    expect((await call(c, 'GET', '/analytics/rules/popular')).json().name).toBe('popular');
    for (const [n, user] of [[b, 'u1'], [c, 'u2'], [c, 'u3']] as const) {
      const r = await fetch(`${n.url}/collections/items/documents/search?q=item&query_by=title`, { headers: { 'x-typesense-api-key': KEY, 'x-typesense-user-id': user } });
      expect(r.status).toBe(200);
    }
    await new Promise((r) => setTimeout(r, 4500)); // the 4-second pause after a user's last query
    for (const n of [b, c]) expect((await call(n, 'POST', '/analytics/flush')).status).toBe(200);
    await settled(nodes);
    for (const n of nodes) expect((await call(n, 'GET', '/collections/item_queries/documents/search?q=*')).json().hits.map((h: any) => [h.document.q, h.document.count])).toEqual([['item', 3]]);
  }, 30_000);

  it('replicates a key by its hash: it works on every node, and its value is in no NATS server\'s store', async () => {
    const created = await call(nodes[0]!, 'POST', '/keys', { description: 'ops', actions: ['*'], collections: ['*'] });
    expect(created.status).toBe(201);
    const value = created.json().value as string;
    await settled(nodes);
    for (const n of nodes) {
      const r = await fetch(`${n.url}/collections`, { headers: { 'x-typesense-api-key': value } });
      expect(r.status).toBe(200);
    }
    const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    const stored = nats.servers.flatMap((s) => files(s.dir)).filter((f) => !f.endsWith('.conf'));
    expect(stored.length).toBeGreaterThan(0);
    for (const f of stored) expect(fs.readFileSync(f).includes(value), f).toBe(false);
  });

  it('keeps a `store: false` image out of every NATS server\'s store and every node\'s data, each node finding the picture by its embedding', async () => {
    const [a, b, c] = nodes as [FathomNode, FathomNode, FathomNode];
    const clip = path.join(ROOT, 'fixtures', 'models', 'tiny-clip');
    // (every node of a cluster has the models its collections use; a single node answers bad images for reference)
    for (const n of nodes) fs.cpSync(clip, path.join(n.dataDir, 'models', 'clip'), { recursive: true });
    const singleDir = dataDirPath();
    fs.mkdirSync(path.join(singleDir, 'models'), { recursive: true });
    fs.cpSync(clip, path.join(singleDir, 'models', 'clip'), { recursive: true });
    const single = await startServer({ dataDir: singleDir, apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' });
    try {
      const schema = {
        name: 'pictures',
        fields: [
          { name: 'name', type: 'string' },
          { name: 'image', type: 'image', store: false },
          { name: 'embedding', type: 'float[]', embed: { from: ['image'], model_config: { model_name: 'clip' } } },
        ],
      };
      expect((await call(a, 'POST', '/collections', schema)).status).toBe(201);
      expect((await call({ url: single.url } as FathomNode, 'POST', '/collections', schema)).status).toBe(201);
      const picture = (seed: number, base: [number, number, number]) => b64(pngBytes(12, 10, (x, y) => [(base[0] + x * 13 + seed * 7) % 256, (base[1] + y * 17 + seed * 3) % 256, (x * y * seed) % 256]));
      const one = picture(1, RED);
      const two = picture(2, GREEN);
      const mark = (img: string) => img.slice(Math.floor(img.length / 2) - 30, Math.floor(img.length / 2) + 30);
      expect((await call(b, 'POST', '/collections/pictures/documents', { id: 'marigold', name: 'marigold-under-glass', image: one })).status).toBe(201);
      const imported = await call(c, 'POST', '/collections/pictures/documents/import', JSON.stringify({ id: 'fern', name: 'fern-in-the-shade', image: two }));
      expect(jsonLines(imported.text)).toEqual([{ success: true }]);
      // a bad image is refused on a cluster node as on a single node, in a write and in an import line
      const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;').toString('base64');
      for (const [p, body] of [['/collections/pictures/documents', { id: 'bad', name: 'x', image: gif }], ['/collections/pictures/documents/import', JSON.stringify({ id: 'bad', name: 'x', image: 'not an image' })]] as const) {
        const [cluster, alone] = [await call(a, 'POST', p, body), await call({ url: single.url } as FathomNode, 'POST', p, body)];
        expect({ status: cluster.status, text: cluster.text }).toEqual({ status: alone.status, text: alone.text });
        expect(cluster.text).toMatch(/field `image` is (a GIF image|not valid Base64)/);
      }
      await settled(nodes);
      const exports = await Promise.all(nodes.map((n) => exportOf(n, 'pictures')));
      expect(exports[1]).toBe(exports[0]);
      expect(exports[2]).toBe(exports[0]);
      const docs = jsonLines(exports[0]!);
      expect(docs.map((d) => [d.id, d.image, (d.embedding as number[]).length])).toEqual([['marigold', undefined, 8], ['fern', undefined, 8]]);
      for (const n of nodes) {
        for (const d of docs) {
          const r = (await call(n, 'GET', `/collections/pictures/documents/search?q=*&vector_query=${encodeURIComponent(`embedding:([${(d.embedding as number[]).join(',')}], k: 2)`)}`)).json();
          expect(r.hits.find((h: any) => h.document.id === d.id)?.vector_distance, `${d.id} on ${n.name}`).toBeLessThan(1e-5);
        }
      }
      // the files hold what was written (the names), and no image
      const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
      const natsFiles = nats.servers.flatMap((s) => files(s.dir)).filter((f) => !f.endsWith('.conf'));
      const dataFiles = nodes.map((n) => path.join(n.dataDir, 'data.mdb'));
      for (const name of ['marigold-under-glass', 'fern-in-the-shade']) {
        expect(natsFiles.some((f) => fs.readFileSync(f).includes(name)), name).toBe(true);
        for (const f of dataFiles) expect(fs.readFileSync(f).includes(name), f).toBe(true);
      }
      for (const f of [...natsFiles, ...dataFiles]) for (const img of [one, two]) expect(fs.readFileSync(f).includes(mark(img)), f).toBe(false);
    } finally {
      await single.stop();
    }
  }, 60_000);

  it('applies a synonym, a curation rule, a synonym set and a preset written on one node in searches on every node', async () => {
    const [a, b, c] = nodes as [FathomNode, FathomNode, FathomNode];
    expect((await call(a, 'PUT', '/collections/items/synonyms/things', { synonyms: ['item', 'thing'] })).status).toBe(200);
    expect((await call(b, 'PUT', '/collections/items/overrides/pin', { rule: { query: 'thing', match: 'exact' }, includes: [{ id: 'solo', position: 1 }] })).status).toBe(200);
    expect((await call(c, 'PUT', '/synonym_sets/extra', { items: [{ id: 'x', synonyms: ['written', 'scribed'] }] })).status).toBe(200);
    expect((await call(a, 'PUT', '/presets/two', { value: { query_by: 'title', per_page: 2 } })).status).toBe(200);
    await settled(nodes);
    for (const n of nodes) {
      const r = (await call(n, 'GET', '/collections/items/documents/search?q=thing&preset=two')).json();
      expect(r.hits).toHaveLength(2);
      expect(r.hits[0]).toMatchObject({ document: { id: 'solo' }, curated: true });
      expect(r.found).toBe(301);
      const s = (await call(n, 'GET', '/collections/items/documents/search?q=scribed&query_by=title&synonym_sets=extra')).json();
      expect(s.hits.map((h: any) => h.document.id)).toEqual(['solo']);
    }
  });

  it('answers /health with ok false while a node is further behind the stream than its healthy lag', async () => {
    // two nodes in this process, on a stream of their own
    const node = (name: string, i: number) =>
      startServer({ dataDir: path.join(tmpDir(), 'data'), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', cluster: { servers: urlsFor(i), nodeName: name, stream: 'LAG', healthyLag: 3 } });
    const writer = await node('lag-writer', 0);
    const behind = await node('lag-behind', 1);
    const health = async () => {
      const r = await fetch(`${behind.url}/health`);
      return { status: r.status, body: (await r.json()) as { ok: boolean } };
    };
    /** The node's lag once it has heard of the stream's end (it looks every second). */
    const lagReaches = async (n: number) => {
      const deadline = Date.now() + 15_000;
      let lag = -1;
      while (Date.now() < deadline && (lag = (await call({ url: behind.url } as FathomNode, 'GET', '/debug')).json().cluster.lag) !== n) await new Promise((r) => setTimeout(r, 100));
      return lag;
    };
    const post = (p: string, body: unknown) => fetch(`${writer.url}${p}`, { method: 'POST', headers: { 'x-typesense-api-key': KEY }, body: JSON.stringify(body) });
    try {
      expect((await post('/collections', SCHEMA)).status).toBe(201);
      expect(await lagReaches(0)).toBe(0);
      await behind.replicator!.pause();
      for (let i = 0; i < 3; i++) expect((await post('/collections/items/documents', { id: `l${i}`, title: 'lag', n: i })).status).toBe(201);
      // three commands behind, as allowed: healthy; a fourth is one too many
      expect(await lagReaches(3)).toBe(3);
      expect(await health()).toEqual({ status: 200, body: { ok: true } });
      expect((await post('/collections/items/documents', { id: 'l3', title: 'lag', n: 3 })).status).toBe(201);
      expect(await lagReaches(4)).toBe(4);
      expect(await health()).toEqual({ status: 503, body: { ok: false } });
      behind.replicator!.resume();
      expect(await lagReaches(0)).toBe(0);
      expect(await health()).toEqual({ status: 200, body: { ok: true } });
    } finally {
      await behind.stop();
      await writer.stop();
    }
  });

  it('refuses a CLI write to a node\'s data directory, and reads it', async () => {
    const r = await cli(['documents', 'delete', 'items', 'i1', '-d', nodes[0]!.dataDir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/cluster node node1/);
    const ex = await cli(['export', 'items', '-d', nodes[0]!.dataDir, '--include-fields', 'id']);
    expect(jsonLines(ex.stdout).length).toBe(301);
  });

  it('loses no acknowledged write when a node and the stream leader\'s NATS server are killed under load, and catches up', async () => {
    const acked: string[] = [];
    /** When each acknowledged write was answered, and by which node. */
    const answers: Array<{ node: number; at: number }> = [];
    const failures: number[] = [];
    let writing = true;
    let k = 0;
    let killedAt = Infinity;
    /** When the last write refused after the kill was refused, and the longest a write waited from the kill on. */
    let lastFailure = 0;
    let longestWait = 0;
    const writers = [0, 1].map(async (w) => {
      while (writing) {
        const id = `w${w}-${k++}`;
        const n = (k + w) % 2; // nodes 1 and 2; node 3 is killed
        const t0 = Date.now();
        try {
          const r = await call(nodes[n]!, 'POST', '/collections/items/documents', { id, title: `load ${id}`, n: k }, 20_000);
          const at = Date.now();
          if (at > killedAt) longestWait = Math.max(longestWait, at - Math.max(t0, killedAt));
          if (r.status === 201) {
            acked.push(id);
            answers.push({ node: n, at });
          } else {
            failures.push(r.status);
            lastFailure = at;
          }
        } catch {
          failures.push(0);
          lastFailure = Date.now();
        }
      }
    });
    let leader: NatsCluster['servers'][number] | undefined;
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const leaderServer = (await debug(nodes[0]!)).leader_server as string;
      leader = nats.servers.find((s) => s.name === leaderServer)!;
      killedAt = Date.now();
      await Promise.all([nodes[2]!.kill('SIGKILL'), leader.kill('SIGKILL')]);
      const before = acked.length;
      // keep writing until writes have flowed again for a while
      const deadline = killedAt + 30_000;
      while (Date.now() < deadline && (acked.length < before + 50 || Date.now() - killedAt < 5000)) await new Promise((r) => setTimeout(r, 100));
      expect(acked.length).toBeGreaterThan(before);
    } finally {
      writing = false;
      await Promise.all(writers);
      // bring them back whatever happened: the node catches up from the stream
      if (leader && !leader.process) await leader.start();
      if (!nodes[2]!.process) await nodes[2]!.start();
    }
    const resumedIn = Math.max(lastFailure > killedAt ? lastFailure - killedAt : 0, longestWait);
    // JetStream's own part: when the stream took a write again after refusing it (the new
    // leader elected), as each writing node logged it; Fathom's part: from then to the node's
    // next acknowledged write (a new reader of the stream where the old one died with its server)
    const tookAgain = [0, 1].map((i) => loggedAfter(nodes[i]!, 'the cluster took the write', killedAt));
    const ownPart = tookAgain.map((t, i) => (t === undefined ? 0 : Math.min(...answers.filter((a) => a.node === i && a.at >= t).map((a) => a.at - t))));
    const jetStreamIn = Math.min(...tookAgain.filter((t): t is number => t !== undefined)) - killedAt;
    console.log(`cluster kill test: ${acked.length} writes acknowledged, ${failures.length} refused; writes resumed ${resumedIn} ms after the kill; JetStream took writes again after ${jetStreamIn} ms, and the nodes acknowledged them ${ownPart.join(' and ')} ms later`);
    await settled(nodes, 60_000);
    // JetStream elects a new stream leader after a random 4-9 s without one (nats-server 2.9
    // fixes that range) and a loaded machine stretches it: writes wait for it. What a node adds
    // after it stays short (well under the bound on a quiet machine; the bound leaves room
    // for the rest of the suite running beside it on two cores).
    expect(tookAgain.some((t) => t !== undefined)).toBe(true);
    expect(Math.max(...ownPart)).toBeLessThan(5000);
    expect(resumedIn).toBeLessThan(20_000);
    const exports = await Promise.all(nodes.map((n) => exportOf(n, 'items')));
    expect(exports[1]).toBe(exports[0]);
    expect(exports[2]).toBe(exports[0]);
    const ids = new Set(jsonLines(exports[0]!).map((d) => d.id));
    const lost = acked.filter((id) => !ids.has(id));
    expect(lost).toEqual([]);
  }, 120_000);

  it('moves leadership with /operations/vote', async () => {
    const before = (await debug(nodes[0]!)).leader_server;
    const v = await call(nodes[1]!, 'POST', '/operations/vote');
    expect(v.json()).toEqual({ success: true });
    const deadline = Date.now() + 10_000;
    let after = before;
    while ((after === before || after === '') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 300));
      after = (await debug(nodes[0]!)).leader_server;
    }
    expect(after).not.toBe(before);
    // every node sees the new leader within its next look at the stream
    let states = await Promise.all(nodes.map(debug));
    while (new Set(states.map((x) => x.leader_server)).size > 1 && Date.now() < deadline + 5000) {
      await new Promise((r) => setTimeout(r, 300));
      states = await Promise.all(nodes.map(debug));
    }
    expect(states.filter((x) => x.role === 'leader').map((x) => x.server)).toEqual([after]);
    // writes go on under the new leader
    expect((await call(nodes[0]!, 'POST', '/collections/items/documents', { id: 'after-vote', title: 'x', n: 0 })).status).toBe(201);
  });

  it('starts a fourth node from a snapshot, which then follows the stream', async () => {
    const target = path.join(tmpDir(), 'snap');
    expect((await call(nodes[0]!, 'POST', `/operations/snapshot?snapshot_path=${encodeURIComponent(target)}`)).json()).toEqual({ success: true });
    const fourth = await fathomNode('node4', nats.urls, KEY, [], target);
    await fourth.start();
    nodes.push(fourth);
    expect((await call(nodes[1]!, 'POST', '/collections/items/documents', { id: 'after-snapshot', title: 'new', n: 1 })).status).toBe(201);
    await settled(nodes);
    expect((await call(fourth, 'GET', '/collections/items/documents/after-snapshot')).status).toBe(200);
    expect(await exportOf(fourth, 'items')).toBe(await exportOf(nodes[0]!, 'items'));
  }, 60_000);

  it('starts an empty node from the snapshot in JetStream once the stream was trimmed', async () => {
    const before = await latestSnapshot(nodes);
    // past --cluster-snapshot-every (400): the leader stores a snapshot and trims the stream
    // (one command each: an import is replicated in commands of up to 1,000 lines)
    await writeEach(nodes[0]!, Array.from({ length: 450 }, (_, i) => ({ id: `t${i}`, title: `trim ${i}`, n: i })));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (await latestSnapshot(nodes)) <= before) await new Promise((r) => setTimeout(r, 300));
    const fifth = await fathomNode('node5', nats.urls, KEY);
    await fifth.start();
    nodes.push(fifth);
    expect(fifth.output).toMatch(/restored from the latest snapshot/);
    await settled(nodes, 60_000);
    expect(await exportOf(fifth, 'items')).toBe(await exportOf(nodes[0]!, 'items'));
    expect(fs.existsSync(path.join(fifth.dataDir, 'data.mdb'))).toBe(true);
  }, 90_000);

  it('restores a serving node from the snapshot when the stream was trimmed past it, and it follows on', async () => {
    const stopped = nodes[4]!;
    const running = nodes.filter((n) => n !== stopped);
    const from = (await debug(stopped)).applied as number;
    stopped.process!.kill('SIGSTOP');
    try {
      // writes until the leader's latest snapshot has trimmed the stream past the stopped node
      // (it keeps --cluster-snapshot-keep, 50, commands before a snapshot) and past what the
      // stopped node's reader may already hold (it asks for 256 commands at a time)
      const past = from + 50 + 256;
      const deadline = Date.now() + 60_000;
      for (let i = 0; (await latestSnapshot(running)) <= past && Date.now() < deadline; i++) {
        await writeEach(nodes[0]!, Array.from({ length: 100 }, (_, j) => ({ id: `s${i}-${j}`, title: `stopped ${j}`, n: j })));
      }
      expect(await latestSnapshot(running)).toBeGreaterThan(past);
    } finally {
      stopped.process!.kill('SIGCONT');
    }
    const seen = stopped.output.length;
    await settled(nodes, 60_000);
    expect(stopped.output.slice(seen)).toMatch(/the stream no longer holds the next command[\s\S]*restored from the latest snapshot/);
    expect(await exportOf(stopped, 'items')).toBe(await exportOf(nodes[0]!, 'items'));
  }, 120_000);
});
