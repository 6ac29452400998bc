import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { build } from 'esbuild';
import { ROOT, openEngine } from './helpers.js';
import { importLines, type ImportOptions } from '../src/io/import.js';
import { Preparer, prepareBatch } from '../src/io/prepare.js';
import { packLines } from '../src/io/lines.js';
import { WorkerClient } from '../src/worker-client.js';
import os from 'node:os';
import { applyPrepared } from '../src/collection/writer.js';
import { getRecord } from '../src/collection/catalog.js';
import type { Engine } from '../src/engine.js';
import type { Store } from '../src/storage/store.js';
import type { WriteAction } from '../src/collection/writer.js';
import type { DirtyValues } from '../src/document/document.js';

const SCHEMA = {
  name: 'items',
  fields: [
    { name: 'title', type: 'string' },
    { name: 'author', type: 'string', facet: true },
    { name: 'year', type: 'int32' },
    { name: 'tags', type: 'string[]', optional: true },
    { name: 'size', type: 'int64', optional: true },
  ],
};

const pack = (lines: string[]) => packLines(lines.map((l, i) => ({ no: i + 1, bytes: Buffer.from(l) })));

/** Everything an import writes, as comparable text. */
function dump(store: Store): Record<string, string[]> {
  const rows = (db: { getRange(o: object): Iterable<{ key: unknown; value: unknown }> }, raw: boolean) =>
    [...db.getRange({})].map(({ key, value }) => `${JSON.stringify(key)} ${raw ? Buffer.from(value as Uint8Array).toString('hex') : JSON.stringify(value)}`);
  return {
    docs: rows(store.docsRaw, true),
    ids: rows(store.ids, false),
    segments: rows(store.segments, true),
    state: rows(store.colstate, false),
  };
}

async function run(e: Engine, lines: Array<string | Buffer>, opts: ImportOptions): Promise<string[]> {
  const out: string[] = [];
  const bytes = Buffer.concat(lines.flatMap((l, i) => [...(i > 0 ? [Buffer.from('\n')] : []), Buffer.isBuffer(l) ? l : Buffer.from(l)]));
  await importLines(e.store, 'items', [bytes], opts, (l) => void out.push(l));
  return out;
}

const word = fc.constantFrom('dune', 'herbert', 'arrakis', 'spice', 'Ünïcode', 'sand worm', 'x', '東京');
const validDoc = fc.record(
  {
    // (no id a generated one could equal: that one gets a random suffix; see the next tests)
    id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    title: fc.array(word, { minLength: 1, maxLength: 4 }).map((w) => w.join(' ')),
    author: word,
    year: fc.oneof(fc.integer({ min: -5, max: 3000 }), fc.constantFrom('1999', 'soon', 2 ** 40)),
    tags: fc.array(word, { maxLength: 3 }),
    size: fc.oneof(fc.integer(), fc.constant('9007199254740993123')),
  },
  { requiredKeys: ['title', 'author', 'year'] },
);
const line = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .tuple(validDoc, fc.constantFrom('', ' ', ' \t ', '\r', ' \r'))
      .map(([d, end]) => (typeof d.size === 'string' ? JSON.stringify(d).replace(`"${d.size}"`, d.size) : JSON.stringify(d, null, end === ' ' ? 1 : undefined)) + end),
  },
  { weight: 1, arbitrary: fc.constant(Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d])) },
  { weight: 1, arbitrary: fc.constantFrom('{"title": ', '[1, 2]', 'null', '{"title": "no author", "year": 1}', '{"id": null, "title": "t", "author": "a", "year": 1}', '{"id": "has space", "title": "t", "author": "a", "year": 1}') },
);
const imports = fc.array(
  fc.record({
    lines: fc.array<string | Buffer>(line, { minLength: 1, maxLength: 14 }),
    batchSize: fc.integer({ min: 1, max: 6 }),
    action: fc.constantFrom<WriteAction>('create', 'upsert', 'emplace'),
    dirty: fc.constantFrom<DirtyValues | undefined>(undefined, 'coerce_or_reject', 'coerce_or_drop', 'drop', 'reject'),
  }),
  { minLength: 1, maxLength: 3 },
);

describe('import batches prepared ahead', () => {
  it('write byte for byte what applying the lines one by one writes, and answer every line the same', async () => {
    await fc.assert(
      fc.asyncProperty(imports, async (steps) => {
        const ahead = openEngine(undefined, { merges: 'off' });
        const plain = openEngine(undefined, { merges: 'off' });
        await ahead.createCollection(SCHEMA);
        await plain.createCollection(SCHEMA);
        const preparer = new Preparer({ worker: false });
        try {
          for (const s of steps) {
            const opts: ImportOptions = { batchSize: s.batchSize, action: s.action, dirtyValues: s.dirty, returnId: true };
            expect(await run(ahead, s.lines, { ...opts, preparer })).toEqual(await run(plain, s.lines, opts));
          }
          expect(dump(ahead.store)).toEqual(dump(plain.store));
        } finally {
          await ahead.close();
          await plain.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('are applied as prepared when every id is new (a bulk import), not line by line', async () => {
    const e = openEngine(undefined, { merges: 'off' });
    await e.createCollection(SCHEMA);
    const lines = Array.from({ length: 9 }, (_, i) => JSON.stringify({ title: `t ${i}`, author: 'a', year: i, ...(i % 2 ? { id: `k${i}` } : {}) }));
    const batch = prepareBatch({ record: getRecord(e.store, 'items'), lines: pack(lines), action: 'create' });
    expect(batch.fallback).toBeNull();
    const results = await e.store.env.transaction(() => applyPrepared(e.store, 'items', batch, pack(lines)));
    expect(results?.map((r) => r.ok && r.id)).toEqual(['0', 'k1', '2', 'k3', '4', 'k5', '6', 'k7', '8']);
    expect((await e.search('items', { q: 't', query_by: 'title', per_page: 20 })).found).toBe(9);
    await e.close();
  });

  it('are declined when an id exists, or the schema changed after they were prepared', async () => {
    const e = openEngine(undefined, { merges: 'off' });
    await e.createCollection(SCHEMA);
    await e.writeDocument('items', { id: 'old', title: 't', author: 'a', year: 1 });
    const lines = [JSON.stringify({ id: 'new', title: 't', author: 'a', year: 2 })];
    const upsert = pack([JSON.stringify({ id: 'old', title: 'u', author: 'a', year: 2 })]);
    const taken = prepareBatch({ record: getRecord(e.store, 'items'), lines: upsert, action: 'upsert' });
    expect(await e.store.env.transaction(() => applyPrepared(e.store, 'items', taken, upsert))).toBeNull();
    // the id generated for the next document (its seq, 2) is taken
    await e.writeDocument('items', { id: '2', title: 't', author: 'a', year: 1 });
    const noId = [JSON.stringify({ title: 't', author: 'a', year: 2 })];
    const generated = prepareBatch({ record: getRecord(e.store, 'items'), lines: pack(noId), action: 'create' });
    expect(await e.store.env.transaction(() => applyPrepared(e.store, 'items', generated, pack(noId)))).toBeNull();
    const stale = prepareBatch({ record: getRecord(e.store, 'items'), lines: pack(lines), action: 'create' });
    await e.updateCollection('items', { fields: [{ name: 'extra', type: 'string', optional: true }] });
    expect(await e.store.env.transaction(() => applyPrepared(e.store, 'items', stale, pack(lines)))).toBeNull();
    expect(e.liveCount('items')).toBe(2);
    await e.close();
  });

  it('append documents to the newest collection and insert them into an older one', async () => {
    const e = openEngine(undefined, { merges: 'off' });
    const preparer = new Preparer({ worker: false });
    try {
      await e.createCollection(SCHEMA);
      await e.createCollection({ ...SCHEMA, name: 'newer' });
      const doc = (i: number) => JSON.stringify({ title: `t ${i}`, author: 'a', year: i });
      const into = async (name: string, from: number) => {
        const out: string[] = [];
        const lines = Array.from({ length: 5 }, (_, i) => doc(from + i));
        await importLines(e.store, name, [Buffer.from(lines.join('\n'))], { batchSize: 2, preparer }, (l) => void out.push(l));
        expect(out).toEqual(lines.map(() => '{"success":true}'));
      };
      await into('items', 0); // the newest collection with documents: appended
      await into('newer', 100); // now the newest: appended after the older one's
      await into('items', 200); // sorts before `newer`'s documents: inserted
      const years = (name: string) => [...e.exportLines(name, {})].map((l) => JSON.parse(l).year as number);
      expect(years('items')).toEqual([0, 1, 2, 3, 4, 200, 201, 202, 203, 204]);
      expect(years('newer')).toEqual([100, 101, 102, 103, 104]);
    } finally {
      await e.close();
    }
  });

  it('are prepared in the worker thread, whose segments arrive intact', async () => {
    // the compiled worker, as `npm install` builds it (inside the project, so that it finds node_modules)
    const dir = fs.mkdtempSync(path.join(ROOT, 'node_modules', '.fathom-test-'));
    await build({ entryPoints: [path.join(ROOT, 'src/io/prepare-worker.ts')], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: path.join(dir, 'prepare-worker.mjs'), logLevel: 'silent' });
    const lines = Array.from({ length: 50 }, (_, i) => (i % 9 === 4 ? '{"title": ' : JSON.stringify({ title: `word${i % 7} spice`, author: `a${i % 3}`, year: i, tags: ['x', `t${i}`] })));
    const viaWorker = openEngine(undefined, { merges: 'off' });
    const inline = openEngine(undefined, { merges: 'off' });
    const preparer = new Preparer({ workerPath: path.join(dir, 'prepare-worker.mjs') });
    try {
      for (const e of [viaWorker, inline]) await e.createCollection(SCHEMA);
      const a = await run(viaWorker, lines, { batchSize: 8, preparer });
      const b = await run(inline, lines, { batchSize: 8, preparer: new Preparer({ worker: false }) });
      expect(a).toEqual(b);
      // the first batch is prepared inline (small imports start no thread), the rest in the worker
      expect(preparer.counts).toEqual({ inline: 1, worker: 6 });
      expect(dump(viaWorker.store)).toEqual(dump(inline.store));
      expect((await viaWorker.search('items', { q: 'spice', query_by: 'title', facet_by: 'author' })).found).toBe(44);
    } finally {
      await preparer.close();
      await viaWorker.close();
      await inline.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('worker threads', () => {
  it('reject the calls still pending when the thread is closed, instead of leaving them waiting', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-worker-'));
    try {
      // a worker that answers even ids and never odd ones
      const script = path.join(dir, 'echo.mjs');
      fs.writeFileSync(script, "import { parentPort } from 'node:worker_threads';\nparentPort.on('message', (m) => { if (m.n % 2 === 0) parentPort.postMessage({ id: m.id, n: m.n }); });\n");
      const client = new WorkerClient<{ n: number }>(script);
      expect(client.available()).toBe(true);
      expect((await client.call({ n: 2 })).n).toBe(2);
      const pending = client.call({ n: 3 });
      await client.close();
      await expect(pending).rejects.toThrow(/was closed/);
      expect(client.available()).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("deliver a call's events before its reply, take further messages for it, and start anew after a crash when asked", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fathom-worker-'));
    try {
      // asks for n chunks one at a time (events), sums what it is posted, replies with the sum; n < 0 crashes the thread
      const script = path.join(dir, 'sum.mjs');
      fs.writeFileSync(
        script,
        [
          "import { parentPort } from 'node:worker_threads';",
          'const calls = new Map();',
          'parentPort.on(\'message\', (m) => {',
          '  if (m.type === \'start\') { if (m.n < 0) process.exit(3); calls.set(m.id, { left: m.n, sum: 0 }); parentPort.postMessage({ id: m.id, event: \'pull\' }); return; }',
          '  const c = calls.get(m.id); c.sum += m.value; c.left--;',
          '  if (c.left > 0) parentPort.postMessage({ id: m.id, event: \'pull\' }); else parentPort.postMessage({ id: m.id, sum: c.sum });',
          '});',
        ].join('\n'),
      );
      const client = new WorkerClient<{ sum: number }>(script, { label: 'sum thread', restart: true });
      const id = client.upcomingId;
      const events: string[] = [];
      let next = 1;
      const reply = await client.call({ type: 'start', n: 3 }, { onEvent: (m) => (events.push(String(m.event)), client.post({ id, value: next++ })) });
      expect(reply.sum).toBe(6);
      expect(events).toEqual(['pull', 'pull', 'pull']);
      await expect(client.call({ type: 'start', n: -1 })).rejects.toThrow('the sum thread stopped (exit code 3)');
      // a new thread for the next call
      const id2 = client.upcomingId;
      expect((await client.call({ type: 'start', n: 1 }, { onEvent: () => client.post({ id: id2, value: 5 }) })).sum).toBe(5);
      await client.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
