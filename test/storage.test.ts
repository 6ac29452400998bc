import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { open } from 'lmdb';
import { openStore } from '../src/storage/store.js';
import { FORMAT_VERSION } from '../src/defaults.js';
import { cli, dataDirPath, tmpDir } from './helpers.js';

describe('data directory', () => {
  it('creates a new directory readable by its owner only, with a format version', async () => {
    const dir = dataDirPath();
    const store = openStore(dir);
    expect(store.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await store.close();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'data.mdb')).mode & 0o077).toBe(0);
    expect(fs.existsSync(path.join(dir, 'models'))).toBe(true);
  });

  it('uses an existing empty directory whose name has a dot in it', async () => {
    const dir = path.join(tmpDir(), 'data.v2');
    fs.mkdirSync(dir);
    const store = openStore(dir);
    expect(store.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await store.close();
    expect(fs.existsSync(path.join(dir, 'data.mdb'))).toBe(true);
  });

  it('reopens an existing directory', async () => {
    const dir = dataDirPath();
    await openStore(dir).close();
    const again = openStore(dir);
    expect(again.meta.get('format')).toMatchObject({ version: FORMAT_VERSION });
    await again.close();
  });

  it('refuses a directory written by a newer format version', async () => {
    const dir = dataDirPath();
    await openStore(dir).close();
    const env = open({ path: dir });
    await env.openDB({ name: 'meta' }).put('format', { version: FORMAT_VERSION + 1 });
    await env.close();
    expect(() => openStore(dir)).toThrow(/format version 2, newer than this Fathom supports/);
  });

  it('refuses a plain file', () => {
    const f = path.join(tmpDir(), 'file.txt');
    fs.writeFileSync(f, 'hello');
    expect(() => openStore(f)).toThrow(/is a file, not a Fathom data directory/);
  });

  it('refuses a directory holding other files', () => {
    const d = tmpDir();
    fs.writeFileSync(path.join(d, 'notes.txt'), 'x');
    expect(() => openStore(d)).toThrow(/not a Fathom data directory/);
  });

  it('reports a bad data directory from the CLI in one line with exit status 1', async () => {
    const f = path.join(tmpDir(), 'file.txt');
    fs.writeFileSync(f, 'hello');
    const r = await cli(['collections', 'list', '--data-dir', f]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: .*is a file/);
  });

  it('takes the data directory from FATHOM_DATA_DIR', async () => {
    const dir = dataDirPath();
    const r = await cli(['collections', 'list'], { env: { FATHOM_DATA_DIR: dir } });
    expect(r.code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'data.mdb'))).toBe(true);
  });
});

describe('shared records (collection records and states read once per search)', () => {
  it('hands back one decoded object while the bytes are unchanged and a new one after any writer changes them', async () => {
    const dir = dataDirPath();
    const a = openStore(dir);
    const b = openStore(dir); // a second handle stands in for another process
    // a reader keeps its snapshot until lmdb-js renews it on a later tick: renew it now
    const later = () => (b.env as unknown as { resetReadTxn(): void }).resetReadTxn();
    await a.colstate.put(7, { nextSeq: 1, count: 1, segments: [] });
    later();
    const first = b.readShared<{ count: number }>(b.colstate, 7)!;
    expect(first.count).toBe(1);
    expect(b.readShared(b.colstate, 7)).toBe(first);
    await a.colstate.put(7, { nextSeq: 2, count: 2, segments: [] });
    later();
    const second = b.readShared<{ count: number }>(b.colstate, 7)!;
    expect(second).not.toBe(first);
    expect(second.count).toBe(2);
    await a.colstate.remove(7);
    later();
    expect(b.readShared(b.colstate, 7)).toBeUndefined();
    await a.close();
    await b.close();
  });
});

describe('a pinned snapshot (read-only one-shot processes)', () => {
  const BIG = 17 * 1024 * 1024; // above lmdb-js's 16 MB threshold: read as a view of the map

  it('reads segments straight from the map, unchanged while later writes reuse freed pages', async () => {
    const dir = dataDirPath();
    const w = openStore(dir);
    const big = Buffer.alloc(BIG);
    for (let i = 0; i < BIG; i += 4) big.writeUInt32LE(i, i);
    await w.segments.put([1, 1, 1], big);
    await w.segments.put([1, 1, 2], Buffer.from('small'));
    await w.close();

    const s = openStore(dir, { pinSnapshot: true });
    const seen = s.readBlob(s.segments, [1, 1, 1])!;
    const small = s.readBlob(s.segments, [1, 1, 2])!;
    expect(seen.byteLength).toBe(BIG);
    // The segment is deleted and big values are written and deleted until LMDB reuses its
    // pages (without the pin it does: the view then reads 0xab); then a segment the pinned
    // snapshot cannot see is written. The ordinary read transaction moves on first, so only
    // the pin holds the old pages.
    s.env.resetReadTxn();
    await s.segments.remove([1, 1, 1]);
    for (let k = 0; k < 8; k++) {
      await s.segments.put([9, k, 1], Buffer.alloc(BIG, 0xab));
      if (k > 1) await s.segments.remove([9, k - 2, 1]);
    }
    await s.segments.put([1, 2, 1], Buffer.from('after the pin'));

    expect(Buffer.from(seen.buffer, seen.byteOffset, seen.byteLength).equals(big)).toBe(true);
    expect(Buffer.from(small).toString()).toBe('small');
    // a segment written after the pin is still found (read outside the snapshot)
    expect(Buffer.from(s.readBlob(s.segments, [1, 2, 1])!).toString()).toBe('after the pin');
    await s.close();
  });

  it('gives fathom search the same answer as an unpinned read', async () => {
    const dir = dataDirPath();
    await cli(['collections', 'create', '-', '-d', dir], { input: JSON.stringify({ name: 'b', fields: [{ name: 't', type: 'string' }, { name: 'n', type: 'int32', facet: true }] }) });
    const docs = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: `d${i}`, t: `word${i % 17} common text number ${i}`, n: i % 5 })).join('\n');
    await cli(['import', 'b', '-d', dir], { input: docs });
    const viaCli = await cli(['search', 'b', '-q', 'comon word3', '--query-by', 't', '--facet-by', 'n', '--json', '-d', dir]);
    expect(viaCli.code).toBe(0);
    const { Engine } = await import('../src/engine.js');
    const e = Engine.open(dir, { readOnly: true });
    const direct = await e.search('b', { q: 'comon word3', query_by: 't', facet_by: 'n' });
    await e.close();
    const strip = (r: Record<string, unknown>) => ({ ...r, search_time_ms: 0 });
    expect(strip(JSON.parse(viaCli.stdout))).toEqual(strip(JSON.parse(JSON.stringify(direct))));
  });

  it("merges a bulk import's segments by copying their postings: byte for byte what re-encoding every posting gives", async () => {
    const dir = dataDirPath();
    const { Engine } = await import('../src/engine.js');
    const { snapshot } = await import('../src/index/manifest.js');
    const { mergeSegments } = await import('../src/index/merge.js');
    const e = Engine.open(dir, { merges: 'off' });
    await e.createCollection({
      name: 'b',
      fields: [{ name: 't', type: 'string' }, { name: 'tags', type: 'string[]', facet: true }, { name: 'n', type: 'int32', facet: true }],
    });
    // terms in every segment, in some, in one; documents long enough for multi-byte positions
    const docs = Array.from({ length: 300 }, (_, i) =>
      JSON.stringify({ id: `d${i}`, t: `word${i % 13} shared ${'filler '.repeat(i % 40)}text${i} word${i % 7}`, tags: [`t${i % 3}`, `u${i % 11}`], n: i % 4 }),
    ).join('\n');
    await e.import('b', [Buffer.from(docs)], { batchSize: 40 }, () => {});
    await e.close();
    const store = openStore(dir, { readOnly: true });
    const snap = snapshot(store, store.readShared<{ id: number }>(store.collections, 'b')!.id);
    expect(snap.segments.length).toBeGreaterThan(5);
    const sources = snap.segments.map((s) => ({ reader: s.reader, deleted: s.deleted }));
    for (const order of [sources, [...sources].reverse()]) {
      const copied = mergeSegments(order, () => true);
      const reencoded = mergeSegments(order, () => true, { concatenate: false });
      expect(Buffer.from(copied.built.blob).equals(Buffer.from(reencoded.built.blob))).toBe(true);
      expect(copied.remap).toEqual(reencoded.remap);
    }
    await store.close();
  });

  it('merges segments whose seqs interleave (upserts keep their seq) into seq order, answering searches as before', async () => {
    const dir = dataDirPath();
    const { Engine } = await import('../src/engine.js');
    const { snapshot, isDeleted } = await import('../src/index/manifest.js');
    const { mergeSegments } = await import('../src/index/merge.js');
    const e = Engine.open(dir, { merges: 'off' });
    await e.createCollection({ name: 'b', fields: [{ name: 't', type: 'string' }, { name: 'n', type: 'int32', facet: true }] });
    const doc = (i: number, v: string) => JSON.stringify({ id: `d${i}`, t: `word${i % 5} ${v} text${i}`, n: i % 3 });
    await e.import('b', [Buffer.from(Array.from({ length: 60 }, (_, i) => doc(i, 'first')).join('\n'))], { batchSize: 20 }, () => {});
    // one batch: new documents and upserts of old ones (which keep their seqs 3, 17, 45)
    const mixed = [doc(100, 'new'), doc(3, 'changed'), doc(101, 'new'), doc(45, 'changed'), doc(17, 'changed'), doc(102, 'new')];
    await e.import('b', [Buffer.from(mixed.join('\n'))], { action: 'upsert', batchSize: 20 }, () => {});
    const query = { q: 'changed', query_by: 't', facet_by: 'n', per_page: 50 };
    const before = await e.search('b', query);

    const collId = e.store.readShared<{ id: number }>(e.store.collections, 'b')!.id;
    const snap = snapshot(e.store, collId);
    // the upsert batch's segment spans seqs 3..62: it overlaps the segments before it
    const last = snap.segments[snap.segments.length - 1]!.reader.seqs;
    expect(last[0]).toBeLessThan(snap.segments[0]!.reader.seqs.at(-1)!);
    const sources = snap.segments.map((s) => ({ reader: s.reader, deleted: s.deleted }));
    const { built, remap } = mergeSegments(sources, () => true);
    // the reference: every live (seq, source, ordinal), sorted by seq
    const live: Array<[number, number, number]> = [];
    sources.forEach((s, si) => s.reader.seqs.forEach((seq, o) => (isDeleted(s.deleted, o) ? undefined : live.push([seq, si, o]))));
    live.sort((a, b) => a[0] - b[0]);
    expect([...built.seqs]).toEqual(live.map((l) => l[0]));
    live.forEach(([, si, o], i) => expect(remap[si]![o]).toBe(i));

    await e.optimize('b');
    expect(snapshot(e.store, collId).segments.length).toBe(1);
    const after = await e.search('b', query);
    const strip = (r: Record<string, unknown>) => ({ ...r, search_time_ms: 0 });
    expect(after.found).toBe(3);
    expect(strip(after as never)).toEqual(strip(before as never));
    await e.close();
  });

  it('reads index segments stored in format 1, one value per field, and merges them into format 2', async () => {
    const dir = dataDirPath();
    const { Engine } = await import('../src/engine.js');
    const { Blob, encodeBlob, jsonSection } = await import('../src/index/codec.js');
    const { TAG } = await import('../src/index/segment.js');
    let e = Engine.open(dir, { merges: 'inline' });
    await e.createCollection({ name: 'b', fields: [{ name: 't', type: 'string' }, { name: 'n', type: 'int32', facet: true }] });
    const docs = Array.from({ length: 120 }, (_, i) => JSON.stringify({ id: `d${i}`, t: `word${i % 13} shared text ${i}`, n: i % 4 })).join('\n');
    await e.import('b', [Buffer.from(docs)], { batchSize: 50 }, () => {});
    const query = { q: 'shraed word5', query_by: 't', facet_by: 'n', sort_by: 'n:desc' };
    const before = await e.search('b', query);
    await e.close();

    // Rewrite every segment as format 1 wrote it: a header value plus one value per field.
    const env = open({ path: dir });
    const segs = env.openDB({ name: 'segments', encoding: 'binary' });
    let rewritten = 0;
    for (const { key, value } of [...segs.getRange({})]) {
      const blob = new Blob(new Uint8Array(value));
      const meta = blob.json<{ v: number; fields: Array<{ id: number }> }>(TAG.META);
      const [c, sid] = key as number[];
      await segs.put([c!, sid!, 0], Buffer.from(encodeBlob(new Map<number, Uint8Array | Uint32Array>([[TAG.META, jsonSection({ ...meta, v: 1 })], [TAG.SEQS, blob.u32(TAG.SEQS)]]))));
      for (const f of meta.fields) await segs.put([c!, sid!, f.id], Buffer.from(blob.u8(TAG.FIELD + f.id)));
      rewritten++;
    }
    await env.close();
    expect(rewritten).toBeGreaterThan(1);

    e = Engine.open(dir, { merges: 'inline' });
    const strip = (r: Record<string, unknown>) => JSON.parse(JSON.stringify({ ...r, search_time_ms: 0 }));
    expect(strip(await e.search('b', query))).toEqual(strip(before));
    // a write merges the old segments into new ones; the answer stays the same
    await e.import('b', [Buffer.from(JSON.stringify({ id: 'late', t: 'word5 shared', n: 9 }))], {}, () => {});
    await e.deleteDocument('b', 'late');
    await e.optimize('b');
    expect(strip(await e.search('b', query))).toEqual(strip(before));
    await e.close();
    const after = open({ path: dir });
    const keys = [...after.openDB({ name: 'segments', encoding: 'binary' }).getKeys({})] as number[][];
    await after.close();
    expect(keys).toHaveLength(1);
    expect(keys[0]![2]).toBe(0);
  });
});
