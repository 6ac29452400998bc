/**
 * Every write a server takes reaches its data directory as a replicated command
 * (src/cluster/command.ts), so that every node of a cluster applies it. The server's engine
 * writes through a stand-in for the stream that applies each command, in order, to a second
 * data directory as well (as the replicator does on every node). After a write of every kind
 * through the HTTP API, the second directory holds the same records as the first, database by
 * database (the index's segment layout aside: merges are each node's own upkeep): a write
 * that went around the commands would be in the first alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { applying } from '../src/clock.js';
import { applyCommand } from '../src/cluster/apply.js';
import { decode, encode, type Command } from '../src/cluster/command.js';
import type { Engine } from '../src/engine.js';
import { APPLIED_KEY, write, type Store } from '../src/storage/store.js';
import { FakeLlm } from './llm-fake.js';
import { openEngine } from './helpers.js';
import { dirWithTinyModel } from './conversation-fixtures.js';

const KEY = 'commands-admin-key';
let server: RunningServer;
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

async function call(method: string, p: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${server.url}${p}`, {
    method,
    headers: { 'x-typesense-api-key': KEY, 'content-type': contentType },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, `${method} ${p}: ${text}`).toBeLessThan(300);
  return text;
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
  server = await startServer({ dataDir: dirWithTinyModel(), apiKey: KEY, address: '127.0.0.1', port: 0, logLevel: 'silent', analytics: { enabled: true } }, { engine: { merges: 'off' } });
  follower = openEngine(dirWithTinyModel(), { merges: 'off' });
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
