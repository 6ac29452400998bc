/**
 * Every write a server takes reaches its data directory as a replicated command
 * (src/cluster/command.ts), so that every node of a cluster applies it. The server's engine
 * writes through a stand-in for the stream that applies each command, in order, to a second
 * data directory as well (as the replicator does on every node). After a write of every kind
 * through the HTTP API, the second directory holds the same records as the first, database by
 * database (the index's segment layout aside: merges are each node's own upkeep): a write
 * that went around the commands would be in the first alone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { applying } from '../src/clock.js';
import { applyCommand } from '../src/cluster/apply.js';
import { decode, encode, type Command } from '../src/cluster/command.js';
import type { Engine } from '../src/engine.js';
import { APPLIED_KEY, write, type Store } from '../src/storage/store.js';
import { FakeLlm } from './llm-fake.js';
import { ROOT, jsonLines, openEngine } from './helpers.js';
import { dirWithTinyModel } from './conversation-fixtures.js';
import { BLUE, GREEN, RED, b64, pngBytes, solid, type Rgb } from './image-fixtures.js';

const KEY = 'commands-admin-key';
let server: RunningServer;
/** A single node (no commands), to hold the cluster's answers to. */
let single: RunningServer;
let follower: Engine;
let llm: FakeLlm;
const sent: Command[] = [];

/** Applies a command as the replicator does: its failure is the same everywhere, and the sequence is recorded either way. */
async function applyAt(engine: Engine, seq: number, at: number, cmd: Command): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
  let r: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    r = { ok: true, value: await applying({ seq, nowMs: at }, () => applyCommand(engine, cmd)) };
  } catch (error) {
    r = { ok: false, error };
  }
  const store = engine.store;
  if (((store.meta.get(APPLIED_KEY) as number | undefined) ?? 0) < seq) await applying({ seq, nowMs: at }, () => write(store, () => undefined));
  return r;
}

async function send(url: string, method: string, p: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${url}${p}`, {
    method,
    headers: { 'x-typesense-api-key': KEY, 'content-type': contentType },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

async function call(method: string, p: string, body?: unknown, contentType = 'application/json') {
  const { status, text } = await send(server.url, method, p, body, contentType);
  expect(status, `${method} ${p}: ${text}`).toBeLessThan(300);
  return text;
}

/** A data directory with the tiny text model as `tiny` and the tiny CLIP pair as `clip`. */
function dirWithModels(): string {
  const dir = dirWithTinyModel();
  fs.cpSync(path.join(ROOT, 'fixtures', 'models', 'tiny-clip'), path.join(dir, 'models', 'clip'), { recursive: true });
  return dir;
}

/**
 * Every record of every database of a store, but for what each node keeps for itself: the
 * directory's creation time, the sequence applied, and the layout of the index (segment
 * merges are each node's own upkeep; the documents, ids and counts they index are compared).
 */
function contents(engine: Engine): Record<string, unknown[]> {
  const store = engine.store;
  const dbs = { meta: store.meta, collections: store.collections, aliases: store.aliases, colstate: store.colstate, docs: store.docs, ids: store.ids, keys: store.keys, stopwords: store.stopwords, vectors: store.vectors, aux: store.aux };
  const own = new Set(['format', 'next_segment_id', APPLIED_KEY]);
  const out: Record<string, unknown[]> = {};
  for (const [name, db] of Object.entries(dbs)) {
    out[name] = [...(db as Store['aux']).getRange({})]
      .filter(({ key }) => !(name === 'meta' && own.has(key as string)))
      .map(({ key, value }) => [key, name === 'colstate' ? { ...value, segments: undefined } : value]);
  }
  return out;
}

beforeAll(async () => {
  llm = await new FakeLlm().start();
  // (every node of a cluster has the embedding models a collection uses)
  server = await startServer({ dataDir: dirWithModels(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', analytics: { enabled: true } }, { engine: { merges: 'off' } });
  follower = openEngine(dirWithModels(), { merges: 'off' });
  single = await startServer({ dataDir: dirWithModels(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'off' } });
  let seq = 0;
  let stream: Promise<unknown> = Promise.resolve();
  server.engine.replicateThrough((cmd) => {
    // one command at a time, in order, as the stream hands them out; each node applies it
    const applied = stream.then(async () => {
      const wire = decode(encode({ id: String(seq + 1), at: Date.now(), cmd }));
      const n = ++seq;
      sent.push(wire.cmd);
      await applyAt(follower, n, wire.at, wire.cmd);
      const own = await applyAt(server.engine, n, wire.at, wire.cmd);
      if (!own.ok) throw own.error;
      return own.value;
    });
    stream = applied.catch(() => undefined);
    return applied;
  });
});

afterAll(async () => {
  await server?.stop();
  await single?.stop();
  await follower?.close();
  await llm?.stop();
});

describe('a server whose writes go through the cluster\'s commands', () => {
  it('leaves a second data directory that applied only the commands holding the same records, for a write of every kind', async () => {
    // collections and documents
    await call('POST', '/collections', { name: 'books', fields: [{ name: 'title', type: 'string' }, { name: 'year', type: 'int32', facet: true }, { name: 'likes', type: 'int32', optional: true }] });
    await call('POST', '/collections?src_name=books', { name: 'copy' });
    await call('PATCH', '/collections/copy', { fields: [{ name: 'extra', type: 'string', optional: true }] });
    await call('DELETE', '/collections/copy');
    await call('POST', '/collections/books/documents', { id: '1', title: 'Dune', year: 1965 });
    await call('POST', '/collections/books/documents?action=upsert', { id: '2', title: 'Emma', year: 1815 });
    await call('PATCH', '/collections/books/documents/2', { year: 1816 });
    const before = sent.length;
    await call('POST', '/collections/books/documents/import?action=upsert', ['{"id":"3","title":"Ulysses","year":1922}', '{"id":"4","title":"Beloved","year":1987}', '{"id":"5","title":"Walden","year":1854}'].join('\n'), 'text/plain');
    // an import is one command per batch, not one per document
    expect(sent.slice(before).map((c) => (c.op === 'docs.write' ? c.ops.length : c.op))).toEqual([3]);
    await call('DELETE', '/collections/books/documents/3');
    await call('PATCH', '/collections/books/documents?filter_by=year:<1900', { likes: 1 });
    await call('DELETE', '/collections/books/documents?filter_by=year:>1980');
    // keys, aliases, stopwords
    const key = JSON.parse(await call('POST', '/keys', { description: 'search', actions: ['documents:search'], collections: ['books'] }));
    const gone = JSON.parse(await call('POST', '/keys', { description: 'gone', actions: ['*'], collections: ['*'] }));
    await call('DELETE', `/keys/${gone.id}`);
    await call('PUT', '/aliases/novels', { collection_name: 'books' });
    await call('PUT', '/aliases/gone', { collection_name: 'books' });
    await call('DELETE', '/aliases/gone');
    await call('PUT', '/stopwords/common', { stopwords: ['the', 'a'] });
    await call('PUT', '/stopwords/gone', { stopwords: ['an'] });
    await call('DELETE', '/stopwords/gone');
    // synonyms, curation, presets, stemming dictionaries
    await call('PUT', '/collections/books/synonyms/novel', { synonyms: ['novel', 'book'] });
    await call('PUT', '/collections/books/synonyms/gone', { synonyms: ['x', 'y'] });
    await call('DELETE', '/collections/books/synonyms/gone');
    await call('PUT', '/collections/books/overrides/pin', { rule: { query: 'dune', match: 'exact' }, includes: [{ id: '1', position: 1 }] });
    await call('PUT', '/collections/books/overrides/gone', { rule: { query: 'x', match: 'exact' }, excludes: [{ id: '1' }] });
    await call('DELETE', '/collections/books/overrides/gone');
    for (const [sets, item] of [
      ['synonym_sets', { synonyms: ['tome', 'volume'] }],
      ['curation_sets', { rule: { query: 'emma', match: 'exact' }, includes: [{ id: '2', position: 1 }] }],
    ] as const) {
      await call('PUT', `/${sets}/kept`, { items: [{ id: 'a', ...item }] });
      await call('PUT', `/${sets}/kept/items/b`, item);
      await call('DELETE', `/${sets}/kept/items/a`);
      await call('PUT', `/${sets}/gone`, { items: [] });
      await call('DELETE', `/${sets}/gone`);
    }
    await call('PUT', '/presets/short', { value: { query_by: 'title', per_page: 2 } });
    await call('PUT', '/presets/gone', { value: { per_page: 1 } });
    await call('DELETE', '/presets/gone');
    await call('POST', '/stemming/dictionaries/import?id=plurals', '{"word": "novels", "root": "novel"}', 'text/plain');
    await call('POST', '/stemming/dictionaries/import?id=gone', '{"word": "a", "root": "b"}', 'text/plain');
    await call('DELETE', '/stemming/dictionaries/gone');
    // search analytics: rules, and an event counted into a collection at the flush
    const counter = (event: string) => ({ type: 'counter', params: { source: { collections: ['books'], events: [{ type: 'click', weight: 1, name: event }] }, destination: { collection: 'books', counter_field: 'likes' } } });
    await call('POST', '/analytics/rules', { name: 'clicks', ...counter('book_click') });
    await call('PUT', '/analytics/rules/gone', counter('other_click'));
    await call('DELETE', '/analytics/rules/gone');
    await call('POST', '/analytics/events', { type: 'click', name: 'book_click', data: { doc_id: '1', user_id: 'u1' } });
    await call('POST', '/analytics/flush');
    // LLM models, and a conversation (its exchange stored through a command)
    const model = { model_name: 'openai/gpt-test', api_key: 'sk-test-key-0123456789abcdef', openai_url: llm.url, max_bytes: 16384 };
    await call('POST', '/conversations/models', { id: 'chat', history_collection: 'conversation_store', ...model });
    await call('PUT', '/conversations/models/chat', { history_collection: 'conversation_store', system_prompt: 'Be brief.', ...model });
    await call('POST', '/conversations/models', { id: 'gone', ...model });
    await call('DELETE', '/conversations/models/gone');
    const nl = { model_name: 'openai/gpt-test', api_key: model.api_key, api_url: llm.url };
    await call('POST', '/nl_search_models', { id: 'nl', ...nl });
    await call('PUT', '/nl_search_models/nl', { ...nl, max_bytes: 8192 });
    await call('POST', '/nl_search_models', { id: 'gone', ...nl });
    await call('DELETE', '/nl_search_models/gone');
    // (a document's embedding is computed once, by the node that took it, and travels in the command)
    await call('POST', '/collections', { name: 'notes', fields: [{ name: 'text', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['text'], model_config: { model_name: 'tiny' } } }] });
    await call('POST', '/collections/notes/documents', { id: 'n1', text: 'a desert planet and its spice' });
    const searches = { searches: [{ collection: 'notes', query_by: 'emb', exclude_fields: 'emb' }] };
    const asked = JSON.parse(await call('POST', '/multi_search?q=dune&conversation=true&conversation_model_id=chat', searches));
    const conversation = asked.conversation.conversation_id as string;
    await call('PUT', `/conversations/${conversation}`, { ttl: 1 });
    const again = JSON.parse(await call('POST', '/multi_search?q=spice&conversation=true&conversation_model_id=chat', searches));
    await call('DELETE', `/conversations/${again.conversation.conversation_id}`);
    // the hourly purge of expired keys and conversations, once they have expired
    await call('POST', '/keys', { description: 'brief', actions: ['*'], collections: ['*'], expires_at: Math.floor(Date.now() / 1000) + 1, autodelete: true });
    await new Promise((r) => setTimeout(r, 2100));
    await server.engine.purgeExpired();

    const kinds = new Set(sent.map((c) => c.op));
    const every: Array<Command['op']> = [
      'collection.create', 'collection.update', 'collection.delete', 'docs.write', 'key.create', 'key.delete', 'keys.purge',
      'alias.upsert', 'alias.delete', 'stopwords.put', 'stopwords.delete', 'rule.put', 'rule.delete', 'ruleset.put', 'ruleset.delete',
      'ruleset.item.put', 'ruleset.item.delete', 'preset.put', 'preset.delete', 'stemdict.import', 'stemdict.delete',
      'analytics.rule.put', 'analytics.rule.delete', 'analytics.apply', 'model.put', 'model.delete',
      'conversation.append', 'conversation.update', 'conversation.delete', 'conversations.purge',
    ];
    expect([...kinds].sort()).toEqual([...every].sort());
    // the event was counted, and the search key works, on the follower's data too
    expect(follower.getDocument('books', '1')).toMatchObject({ likes: 1 });
    expect(follower.listKeys().map((k) => k.id)).toContain(key.id);
    expect(contents(follower)).toEqual(contents(server.engine));
  });
});

describe('a `store: false` image written through the cluster\'s commands', () => {
  const DIRTY = ['coerce_or_reject', 'coerce_or_drop', 'drop', 'reject'] as const;
  /** A picture whose Base64 text is its own: a pattern of `c` drawn with `seed`. */
  const picture = (c: Rgb, seed: number) => b64(pngBytes(12, 10, (x, y) => [(c[0] + x * 13 + seed * 7) % 256, (c[1] + y * 17 + seed * 3) % 256, (c[2] + x * y * seed) % 256]));
  /** A stretch from the middle of an image's Base64 text, found wherever the image was written. */
  const mark = (img: string) => img.slice(Math.floor(img.length / 2) - 30, Math.floor(img.length / 2) + 30);
  const images = Array.from({ length: 9 }, (_, i) => picture([RED, GREEN, BLUE][i % 3]!, i + 1));
  const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;').toString('base64');
  const huge = (() => {
    const b = pngBytes(1, 1, solid(RED));
    b.writeUInt32BE(100_000, 16);
    b.writeUInt32BE(1000, 20);
    return b.toString('base64');
  })();
  const vector = Array.from({ length: 8 }, (_, i) => (i === 2 ? 1 : 0));
  let first = 0;

  /** Sends the same request to the cluster's node and to the single node: both answer alike. */
  async function both(method: string, p: string, body?: unknown, contentType = 'application/json') {
    const c = await send(server.url, method, p, body, contentType);
    const s = await send(single.url, method, p, body, contentType);
    expect(c, `${method} ${p}`).toEqual(s);
    return c;
  }
  const lines = (docs: unknown[]) => docs.map((d) => JSON.stringify(d)).join('\n');
  const exportOf = (e: Engine, c: string) => [...e.exportLines(c)].join('\n');
  const commandsSince = (from: number) => sent.slice(from).map((c) => Buffer.from(encode({ id: 'x', at: 0, cmd: c })).toString('utf8')).join('\n');

  beforeAll(async () => {
    const pictures = {
      name: 'pictures',
      fields: [
        { name: 'name', type: 'string' },
        { name: 'kind', type: 'string', facet: true },
        { name: 'image', type: 'image', store: false },
        { name: 'embedding', type: 'float[]', embed: { from: ['image'], model_config: { model_name: 'clip' } } },
      ],
    };
    const scans = { name: 'scans', fields: [{ name: 'title', type: 'string' }, { name: 'scan', type: 'image', store: false, optional: true }] };
    first = sent.length;
    for (const url of [server.url, single.url]) {
      for (const schema of [pictures, scans]) expect((await send(url, 'POST', '/collections', schema)).status).toBe(201);
    }
  });

  it('is checked and embedded by the node that took the write and left out of its command, for every kind of write, and every node stores and finds what a single node does', async () => {
    const [i1, i2, i3, i4, i5, i6, i7, i8, i9] = images as [string, string, string, string, string, string, string, string, string];
    const docs = '/collections/pictures/documents';
    expect((await both('POST', docs, { id: 'p1', name: 'cherry', kind: 'fruit', image: i1 })).status).toBe(201);
    expect((await both('POST', `${docs}?action=upsert`, { id: 'p2', name: 'lime', kind: 'fruit', image: i2 })).status).toBe(201);
    expect((await both('POST', `${docs}?action=emplace`, { id: 'p3', name: 'blueberry', kind: 'berry', image: i3 })).status).toBe(201);
    // a new image replaces the embedding; a write without the image keeps it (followers do not ask for the image)
    expect((await both('PATCH', `${docs}/p1`, { image: i4 })).status).toBe(200);
    expect((await both('PATCH', `${docs}/p2`, { name: 'green lime' })).status).toBe(200);
    expect((await both('POST', `${docs}?action=emplace`, { id: 'p2', kind: 'citrus' })).status).toBe(201);
    expect(JSON.parse((await both('PATCH', `${docs}?filter_by=kind:=berry`, { image: i5 })).text)).toEqual({ num_updated: 1 });
    // import lines: embedded here; one with its vector given (its image only checked), one without its required image
    const imported = await both('POST', `${docs}/import`, lines([
      { id: 'p4', name: 'plum', kind: 'fruit', image: i6 },
      { id: 'p5', name: 'kiwi', kind: 'fruit', image: i7 },
      { id: 'p6', name: 'given', kind: 'fruit', image: i8, embedding: vector },
      { id: 'p7', name: 'bare', kind: 'fruit' },
    ]), 'text/plain');
    expect(jsonLines(imported.text).map((l) => l.success)).toEqual([true, true, true, false]);
    // a collection without embeddings: its lines are turned into documents only when they hold an image
    const scanned = await both('POST', '/collections/scans/documents/import', lines([{ id: 's1', title: 'receipt', scan: i9 }, { id: 's2', title: 'no scan' }]), 'text/plain');
    expect(jsonLines(scanned.text).map((l) => l.success)).toEqual([true, true]);

    // no command carries an image; each says which field it left out
    const wire = commandsSince(first);
    for (const img of images) expect(wire.includes(mark(img))).toBe(false);
    const writes = sent.slice(first).flatMap((c) => (c.op === 'docs.write' ? c.ops : []));
    expect(writes[0]).toMatchObject({ kind: 'write', doc: { id: 'p1', image: true }, unstored: { image: null } });
    expect(writes.at(-1)).toEqual({ kind: 'line', text: '{"id":"s2","title":"no scan"}', action: 'create' });

    // every node has what a single node has, images nowhere, and finds each picture by its embedding
    expect(contents(follower)).toEqual(contents(server.engine));
    for (const c of ['pictures', 'scans']) {
      expect(exportOf(follower, c)).toBe(exportOf(single.engine, c));
      expect(exportOf(server.engine, c)).toBe(exportOf(single.engine, c));
    }
    const stored = jsonLines(exportOf(follower, 'pictures'));
    expect(stored.map((d) => d.id)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
    expect(stored.find((d) => d.id === 'p2')).toMatchObject({ name: 'green lime', kind: 'citrus' });
    expect(stored.find((d) => d.id === 'p6')!.embedding).toEqual(vector);
    for (const e of [server.engine, follower]) {
      await e.idle();
      const raw = fs.readFileSync(path.join(e.dir, 'data.mdb'));
      expect(raw.includes(Buffer.from('green lime'))).toBe(true); // (the file holds what was written)
      for (const img of images) expect(raw.includes(Buffer.from(mark(img)))).toBe(false);
      for (const d of stored) {
        const r = await e.search('pictures', { q: '*', vector_query: `embedding:([${(d.embedding as number[]).join(',')}], k: 10)`, per_page: 10 });
        const hit = r.hits!.find((h) => h.document.id === d.id);
        expect(hit?.vector_distance, `${d.id} on ${e.dir}`).toBeLessThan(1e-5);
      }
    }
  });

  it('refuses a bad image with the message a single node gives, under every dirty_values mode, and writes nothing of it', async () => {
    const from = sent.length;
    const docs = '/collections/pictures/documents';
    const bad: Array<[string, unknown]> = [['gif', gif], ['junk', 'not base64 at all'], ['number', 12], ['huge', huge], ['cut', images[0]!.slice(0, 41)]];
    for (const dirty of DIRTY) {
      for (const [what, image] of bad) {
        const one = await both('POST', `${docs}?dirty_values=${dirty}`, { id: `${what}-${dirty}`, name: what, kind: 'x', image });
        expect(one.status, `${what} ${dirty}`).toBe(400);
        // its vector given, the image is only checked: as it would be where it stands in the document
        const given = await both('POST', `${docs}?dirty_values=${dirty}`, { id: `given-${what}-${dirty}`, image, name: 5, kind: 'x', embedding: vector });
        expect(given.status, `${what} ${dirty}`).toBe(400);
      }
      const out = await both('POST', `${docs}/import?dirty_values=${dirty}`, lines(bad.flatMap(([what, image]) => [
        { id: `line-${what}-${dirty}`, name: what, kind: 'x', image },
        { id: `line-given-${what}-${dirty}`, name: 5, kind: 'x', image, embedding: vector },
      ])), 'text/plain');
      expect(jsonLines(out.text).every((l) => !l.success)).toBe(true);
      const scans = await both('POST', `/collections/scans/documents/import?dirty_values=${dirty}`, lines(bad.map(([what, scan]) => ({ id: `${what}-${dirty}`, title: what, scan }))), 'text/plain');
      expect(jsonLines(scans.text).every((l) => !l.success)).toBe(true);
    }
    const one = JSON.parse((await send(server.url, 'POST', docs, { name: 'x', kind: 'x', image: gif })).text);
    expect(one).toEqual({ message: 'field `image` is a GIF image; only BMP, JPEG and PNG images are accepted' });
    const given = (doc: Record<string, unknown>) => send(server.url, 'POST', `${docs}?dirty_values=reject`, { ...doc, kind: 'x', embedding: vector }).then((r) => JSON.parse(r.text).message);
    expect(await given({ name: 5, image: gif })).toMatch(/^Field `name` must be a string\./);
    expect(await given({ image: gif, name: 5 })).toMatch(/^field `image` is a GIF image/);
    const drop = JSON.parse((await send(server.url, 'POST', `${docs}?dirty_values=drop`, { name: 'x', kind: 'x', image: huge, embedding: vector })).text);
    expect(drop.message).toMatch(/^field `image` is a PNG image of 100000 x 1000 pixels/);
    // the refused images are not in the commands either (an image checked here travels as its message)
    expect(commandsSince(from).includes(huge.slice(0, 40))).toBe(false);
    const checked = sent.slice(from).flatMap((c) => (c.op === 'docs.write' ? c.ops : [])).find((op) => op.kind === 'write' && op.unstored?.image);
    expect(checked).toMatchObject({ doc: { image: true }, unstored: { image: expect.stringMatching(/^field `image` /) } });
    expect(contents(follower)).toEqual(contents(server.engine));
    for (const c of ['pictures', 'scans']) expect(exportOf(follower, c)).toBe(exportOf(single.engine, c));
  });
});
