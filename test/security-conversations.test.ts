/**
 * A conversation belongs to the key that started it (for a scoped key: its parent and its
 * embedded parameters). Any other key but an admin gets 404 for it on a follow-up (plain or
 * streamed), on GET, PUT and DELETE /conversations/:id, and never sees it listed; its
 * questions never reach the LLM for another key. The owner is never shown, and no key value
 * is stored with it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { generateScopedSearchKey } from '../src/keys/scoped.js';
import { ADMIN_ACTOR, getConversation, listConversations, updateConversation, deleteConversation } from '../src/conversation/history.js';
import { write } from '../src/storage/store.js';
import { FakeLlm } from './llm-fake.js';
import { BOOKS, booksEngine, dirWithTinyModel } from './conversation-fixtures.js';

const ADMIN = 'conv-owner-bootstrap-key';
const LLM_KEY = 'sk-test-key-0123456789abcdef';
let server: RunningServer;
let llm: FakeLlm;
let dataDir = '';
let parent = '';
let tolkien = '';
let leGuin = '';
let k1 = '';
let k2 = '';
let storedAdmin = '';
let wideButNotAdmin = '';

const SEARCHES = { searches: [{ collection: 'books', query_by: 'emb', exclude_fields: 'emb' }] };

async function ask(key: string, q: string, conversationId?: string, extra = '') {
  const query = `q=${encodeURIComponent(q)}&conversation=true&conversation_model_id=m${conversationId !== undefined ? `&conversation_id=${encodeURIComponent(conversationId)}` : ''}${extra}`;
  const res = await fetch(`${server.url}/multi_search?${query}`, { method: 'POST', headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(SEARCHES) });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

async function call(method: string, p: string, key: string, body?: unknown) {
  const res = await fetch(`${server.url}${p}`, { method, headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

/** Every LLM prompt made since call number `n`, as one text. */
const promptsSince = (n: number) => llm.calls.slice(n).map((c) => JSON.stringify(c.body)).join('\n');

beforeAll(async () => {
  llm = await new FakeLlm().start();
  dataDir = dirWithTinyModel();
  server = await startServer({ dataDir, apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
  const admin = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: ADMIN, connectionTimeoutSeconds: 10, logLevel: 'silent', numRetries: 0 });
  await admin.collections().create({
    name: 'books',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'author', type: 'string', facet: true },
      { name: 'year', type: 'int32', facet: true },
      { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'tiny' } } },
    ],
  } as never);
  await admin.collections('books').documents().import(BOOKS, { action: 'create' });
  await admin.conversations().models().create({ id: 'm', model_name: 'openai/gpt-test', api_key: LLM_KEY, openai_url: llm.url, max_bytes: 16384 });
  parent = (await admin.keys().create({ description: 'search books', actions: ['documents:search'], collections: ['books'] })).value!;
  tolkien = generateScopedSearchKey(parent, { filter_by: 'author:=tolkien' });
  leGuin = generateScopedSearchKey(parent, { filter_by: 'author:=le guin' });
  const conv = { actions: ['documents:search', 'conversations:*'], collections: ['books'] };
  k1 = (await admin.keys().create({ description: 'app one', ...conv })).value!;
  k2 = (await admin.keys().create({ description: 'app two', ...conv })).value!;
  storedAdmin = (await admin.keys().create({ description: 'admin', actions: ['*'], collections: ['*'] })).value!;
  wideButNotAdmin = (await admin.keys().create({ description: 'conversations everywhere', actions: ['documents:search', 'conversations:*'], collections: ['*'] })).value!;
});

afterAll(async () => {
  await server?.stop();
  await llm?.stop();
});

describe("another user's scoped key", () => {
  it("cannot continue a conversation: 404, and the LLM never sees the owner's question or answer", async () => {
    const first = await ask(tolkien, 'alpha question about middle earth');
    expect(first.status).toBe(200);
    const id = first.body.conversation.conversation_id;
    const before = llm.calls.length;
    const other = await ask(leGuin, 'and what else', id);
    expect(other.status).toBe(404);
    expect(other.body.message).toBe(`conversation \`${id}\` not found (it may have expired)`);
    expect(other.text).not.toContain('alpha question');
    expect(promptsSince(before)).not.toContain('alpha question');
    // streamed: refused before any event
    const streamed = await ask(leGuin, 'and what else', id, '&conversation_stream=true');
    expect(streamed.status).toBe(404);
    expect(streamed.text).not.toContain('alpha question');
    // the owner's key continues it, and it was not changed by the attempts
    const mine = await ask(tolkien, 'and what else', id);
    expect(mine.status).toBe(200);
    expect(mine.body.conversation.conversation_history.conversation).toHaveLength(4);
  });

  it('is another owner even with the same parent; the same parameters in another order, or a later expiry, are the same owner', async () => {
    const first = await ask(generateScopedSearchKey(parent, { filter_by: 'author:=tolkien', per_page: 5 }), 'beta question');
    const id = first.body.conversation.conversation_id;
    expect((await ask(generateScopedSearchKey(parent, { per_page: 5, filter_by: 'author:=tolkien' }), 'more', id)).status).toBe(200);
    expect((await ask(generateScopedSearchKey(parent, { filter_by: 'author:=tolkien', per_page: 5, expires_at: 4102444800 }), 'more', id)).status).toBe(200);
    expect((await ask(generateScopedSearchKey(parent, { filter_by: 'author:=tolkien', per_page: 6 }), 'more', id)).status).toBe(404);
    expect((await ask(tolkien, 'more', id)).status).toBe(404);
    expect((await ask(parent, 'more', id)).status).toBe(404);
  });

  it('gets 404 for made-up and prototype-named conversation ids', async () => {
    for (const id of ['nope', '__proto__', 'constructor', 'toString', '../x', 'x'.repeat(300)]) {
      const r = await ask(leGuin, 'q', id);
      expect(r.status, id).toBe(404);
    }
  });
});

describe('another key on /conversations', () => {
  let id = '';
  beforeAll(async () => {
    id = (await ask(k1, 'gamma question about a desert')).body.conversation.conversation_id;
  });

  it('gets 404 on GET, PUT and DELETE, and does not see it listed', async () => {
    expect((await call('GET', `/conversations/${id}`, k2)).status).toBe(404);
    expect((await call('PUT', `/conversations/${id}`, k2, { ttl: 5 })).status).toBe(404);
    expect((await call('DELETE', `/conversations/${id}`, k2)).status).toBe(404);
    const listed = await call('GET', '/conversations', k2);
    expect(listed.status).toBe(200);
    expect(listed.body.conversations.map((c: any) => c.id)).not.toContain(id);
    expect(listed.text).not.toContain('gamma question');
    // a key with the conversation actions on every collection is not an admin
    expect((await call('GET', `/conversations/${id}`, wideButNotAdmin)).status).toBe(404);
    expect((await ask(k2, 'more', id)).status).toBe(404);
    // untouched: the owner still has it, with its ttl
    const own = await call('GET', `/conversations/${id}`, k1);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id, ttl: 86400 });
    expect(own.body.conversation).toHaveLength(2);
  });

  it('the owner reads, lists, re-times and deletes it; admins see every conversation', async () => {
    expect((await call('GET', '/conversations', k1)).body.conversations.map((c: any) => c.id)).toEqual([id]);
    expect((await call('PUT', `/conversations/${id}`, k1, { ttl: 3600 })).body).toMatchObject({ id, ttl: 3600 });
    for (const key of [ADMIN, storedAdmin]) {
      expect((await call('GET', `/conversations/${id}`, key)).status).toBe(200);
      const all = (await call('GET', '/conversations', key)).body.conversations.map((c: any) => c.id);
      expect(all).toContain(id);
      expect(all.length).toBeGreaterThan(1);
    }
    // an admin's follow-up leaves it its owner's
    expect((await ask(ADMIN, 'admin follow-up', id)).status).toBe(200);
    const own = await call('GET', `/conversations/${id}`, k1);
    expect(own.body.conversation).toHaveLength(4);
    expect((await call('DELETE', `/conversations/${id}`, k1)).body).toEqual({ id });
    expect((await call('GET', `/conversations/${id}`, ADMIN)).status).toBe(404);
  });

  it('never shows the owner, and stores no key value with a conversation', async () => {
    const r = await ask(tolkien, 'delta question');
    const id = r.body.conversation.conversation_id;
    const texts = [r.text, (await call('GET', `/conversations/${id}`, ADMIN)).text, (await call('GET', '/conversations', ADMIN)).text, (await call('GET', '/conversations', k1)).text];
    for (const t of texts) {
      expect(t).not.toMatch(/"owner"|scoped:|key:\d/);
    }
    expect(Object.keys(r.body.conversation.conversation_history).sort()).toEqual(['conversation', 'id', 'last_updated', 'ttl']);
    const data = fs.readFileSync(path.join(dataDir, 'data.mdb'));
    for (const key of [tolkien, leGuin, k1, k2]) expect(data.includes(Buffer.from(key))).toBe(false);
  });
});

describe('a conversation stored before owners were recorded', () => {
  it('is seen only by admins', async () => {
    const engine = await booksEngine();
    const legacy = { id: 'legacy-1', conversation: [{ user: 'old question' }, { assistant: 'old answer' }], last_updated: Math.floor(Date.now() / 1000), ttl: 3600 };
    await write(engine.store, () => {
      engine.store.aux.put(['conv', legacy.id], legacy);
      engine.store.aux.put(['conv_exp', legacy.last_updated + legacy.ttl, legacy.id], 1);
    });
    const key = { owner: 'key:1', admin: false };
    expect(() => getConversation(engine.store, legacy.id, key)).toThrow(/not found/);
    expect(listConversations(engine.store, key)).toEqual([]);
    await expect(updateConversation(engine.store, legacy.id, { ttl: 60 }, key)).rejects.toMatchObject({ status: 404 });
    await expect(deleteConversation(engine.store, legacy.id, key)).rejects.toMatchObject({ status: 404 });
    expect(getConversation(engine.store, legacy.id, ADMIN_ACTOR)).toEqual(legacy);
    expect(listConversations(engine.store, ADMIN_ACTOR).map((c) => c.id)).toEqual([legacy.id]);
    await engine.close();
  });
});
