/**
 * Conversational and natural-language search through `fathom serve` on loopback, driven by
 * the official `typesense` client's conversation calls (and plain HTTP where the wire format
 * itself is the point: server-sent events), with a local server speaking the OpenAI protocol
 * as the LLM. Also: the model's api_key never reaches a log line or a listing, and a scoped
 * key's filter bounds what the LLM is shown.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'typesense';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { FakeLlm, contextIds } from './llm-fake.js';
import { BOOKS, dirWithTinyModel } from './conversation-fixtures.js';

const ADMIN = 'test-bootstrap-key';
const KEY = 'sk-test-key-0123456789abcdef';
let server: RunningServer;
let client: Client;
let llm: FakeLlm;
const logs: string[] = [];

function clientWith(apiKey: string): Client {
  return new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey, connectionTimeoutSeconds: 10, logLevel: 'silent', numRetries: 0 });
}

async function post(path: string, body: unknown, key = ADMIN): Promise<Response> {
  return fetch(`${server.url}${path}`, { method: 'POST', headers: { 'x-typesense-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

const SEARCHES = { searches: [{ collection: 'books', query_by: 'emb', exclude_fields: 'emb' }] };

beforeAll(async () => {
  llm = await new FakeLlm().start();
  const logStream = new PassThrough();
  logStream.on('data', (d) => logs.push(String(d)));
  server = await startServer({ dataDir: dirWithTinyModel(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'debug', logStream }, { engine: { merges: 'inline' } });
  client = clientWith(ADMIN);
  await client.collections().create({
    name: 'books',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'author', type: 'string', facet: true },
      { name: 'year', type: 'int32', facet: true },
      { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'tiny' } } },
    ],
  } as never);
  await client.collections('books').documents().import(BOOKS, { action: 'create' });
});

afterAll(async () => {
  await server?.stop();
  await llm?.stop();
});

describe('conversation models through the typesense client', () => {
  it('creates, lists, retrieves, updates and deletes a model, never showing its key', async () => {
    const created = await client.conversations().models().create({
      id: 'conv-model-1',
      model_name: 'openai/gpt-test',
      history_collection: 'conversation_store',
      api_key: KEY,
      openai_url: llm.url,
      system_prompt: 'Answer from the books only.',
      max_bytes: 16384,
    });
    expect(created).toMatchObject({ id: 'conv-model-1', model_name: 'openai/gpt-test', history_collection: 'conversation_store', max_bytes: 16384 });
    expect(created.api_key).toMatch(/^sk-t\*+$/);
    const all = await client.conversations().models().retrieve();
    expect(all.map((m) => m.id)).toEqual(['conv-model-1']);
    expect((await client.conversations().models('conv-model-1').retrieve()).system_prompt).toBe('Answer from the books only.');
    const updated = await client.conversations().models('conv-model-1').update({ ...created, system_prompt: 'Be brief.' } as never);
    expect(updated.system_prompt).toBe('Be brief.');
    await client.conversations().models().create({ id: 'to-delete', model_name: 'openai/gpt-test', api_key: KEY, openai_url: llm.url, max_bytes: 1000 });
    expect(await client.conversations().models('to-delete').delete()).toMatchObject({ id: 'to-delete' });
    await expect(client.conversations().models('to-delete').retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('refuses a model the provider refuses with 400 and the provider\'s message', async () => {
    const err = await client
      .conversations()
      .models()
      .create({ model_name: 'openai/gpt-test', api_key: 'sk-wrong-key-0000000000', openai_url: llm.url, max_bytes: 100 })
      .catch((e) => e);
    expect(err.httpStatus).toBe(400);
    expect(err.message).toMatch(/OpenAI API error: Incorrect API key provided/);
  });

  it('needs the conversation model actions', async () => {
    const search = await client.keys().create({ description: 'search', actions: ['documents:search'], collections: ['*'] });
    await expect(clientWith(search.value!).conversations().models().retrieve()).rejects.toMatchObject({ httpStatus: 401 });
  });
});

describe('conversational multi_search through the typesense client', () => {
  let conversationId = '';

  it('answers a question from the top hits, with the history', async () => {
    const res = (await client.multiSearch.perform(SEARCHES as never, { q: 'a desert planet', conversation: true, conversation_model_id: 'conv-model-1' } as never)) as any;
    const hits = res.results[0].hits.map((h: any) => h.document.id);
    expect(hits.length).toBeGreaterThan(0);
    expect(res.conversation.answer).toBe(`Based on ${hits.length} results: ${hits.join(', ')}`);
    expect(res.conversation.query).toBe('a desert planet');
    expect(res.conversation.conversation_history.conversation).toEqual([{ user: 'a desert planet' }, { assistant: res.conversation.answer }]);
    expect(llm.calls[llm.calls.length - 1]!.system).toBe('Be brief.');
    conversationId = res.conversation.conversation_id;
  });

  it('continues the conversation with a standalone question', async () => {
    const before = llm.calls.length;
    const res = (await client.multiSearch.perform(SEARCHES as never, {
      q: 'how about another one',
      conversation: true,
      conversation_model_id: 'conv-model-1',
      conversation_id: conversationId,
    } as never)) as any;
    expect(llm.calls.length - before).toBe(2);
    expect(llm.calls[before]!.prompt).toContain('{"user":"a desert planet"}');
    expect(res.results[0].request_params.q).toBe('standalone: how about another one');
    expect(res.conversation.conversation_history.conversation).toHaveLength(4);
    expect(res.conversation.conversation_id).toBe(conversationId);
  });

  it('drops the history with exclude_fields=conversation_history', async () => {
    const res = (await client.multiSearch.perform(SEARCHES as never, {
      q: 'magic',
      conversation: true,
      conversation_model_id: 'conv-model-1',
      exclude_fields: 'conversation_history',
    } as never)) as any;
    expect(res.conversation.conversation_history).toBeUndefined();
    expect(res.conversation.answer).toMatch(/^Based on/);
  });

  it('lists, retrieves, re-times and deletes conversations', async () => {
    const all = (await client.conversations().retrieve()) as any;
    expect(all.conversations.map((c: any) => c.id)).toContain(conversationId);
    const one = (await client.conversations(conversationId).retrieve()) as any;
    expect(one).toMatchObject({ id: conversationId, ttl: 86400 });
    expect(one.conversation).toHaveLength(4);
    expect(await client.conversations(conversationId).update({ ttl: 3600 })).toMatchObject({ id: conversationId, ttl: 3600 });
    expect(await client.conversations(conversationId).delete()).toEqual({ id: conversationId });
    await expect(client.conversations(conversationId).retrieve()).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('streams the answer through the client\'s streamConfig', async () => {
    const chunks: any[] = [];
    let completed: any;
    const res = (await client.multiSearch.perform(SEARCHES as never, {
      q: 'hackers in cyberspace',
      conversation: true,
      conversation_model_id: 'conv-model-1',
      conversation_stream: true,
      streamConfig: { onChunk: (c: any) => chunks.push(c), onComplete: (r: any) => (completed = r) },
    } as never)) as any;
    const messages = chunks.filter((c) => typeof c.message === 'string' && !c.results);
    expect(messages.length).toBeGreaterThan(2);
    expect(messages.map((c) => c.message).join('')).toBe(res.conversation.answer);
    expect(new Set(messages.map((c) => c.conversation_id))).toEqual(new Set([res.conversation.conversation_id]));
    expect(res.results[0].hits.length).toBeGreaterThan(0);
    expect(completed).toEqual(res);
  });
});

describe('conversational multi_search over plain HTTP', () => {
  it('streams server-sent events: pieces, then the whole response, then [DONE]', async () => {
    const r = await post('/multi_search?q=a+ring&conversation=true&conversation_model_id=conv-model-1&conversation_stream=true', SEARCHES);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await r.text()).split('\n\n').filter(Boolean);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const full = JSON.parse(events[events.length - 2]!.slice(6));
    const pieces = events.slice(0, -2).map((e) => JSON.parse(e.slice(6)));
    expect(pieces.every((p) => Object.keys(p).sort().join() === 'conversation_id,message')).toBe(true);
    expect(pieces.map((p) => p.message).join('')).toBe(full.conversation.answer);
    expect(full.results[0].hits.length).toBeGreaterThan(0);
  });

  it('answers a provider failure before streaming as a JSON 400, and one during it as an error event', async () => {
    llm.next({ kind: 'error', status: 500, body: { error: { message: 'The server had an error' } } });
    const a = await post('/multi_search?q=a+ring&conversation=true&conversation_model_id=conv-model-1&conversation_stream=true', SEARCHES);
    expect(a.status).toBe(400);
    expect(await a.json()).toEqual({ message: 'OpenAI API error: The server had an error' });
    llm.next({ kind: 'break', afterPieces: 2 });
    const b = await post('/multi_search?q=a+ring&conversation=true&conversation_model_id=conv-model-1&conversation_stream=true', SEARCHES);
    expect(b.status).toBe(200);
    const text = await b.text();
    expect(text).toMatch(/event: error\ndata: \{"message":"OpenAI API error: the answer stream broke off[^\n]*\}\n\n$/);
    expect(text).not.toContain('[DONE]');
  });

  it('cancels the provider call and stores nothing when the asker goes away mid-stream', async () => {
    const count = ((await client.conversations().retrieve()) as any).conversations.length;
    llm.next({ kind: 'stall', afterPieces: 2 });
    const ac = new AbortController();
    const r = await fetch(`${server.url}/multi_search?q=a+ring&conversation=true&conversation_model_id=conv-model-1&conversation_stream=true`, {
      method: 'POST',
      headers: { 'x-typesense-api-key': ADMIN, 'content-type': 'application/json' },
      body: JSON.stringify(SEARCHES),
      signal: ac.signal,
    });
    const reader = r.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^data: \{"conversation_id":/);
    ac.abort();
    // the fake provider sees its streaming connection closed
    const deadline = Date.now() + 5000;
    while (llm.openStreams > 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    expect(llm.openStreams).toBe(0);
    expect(((await client.conversations().retrieve()) as any).conversations.length).toBe(count);
  });

  it('gives clear errors: 404 for an unknown conversation, 400 naming a search without an embedding field, q in the query string', async () => {
    const a = await post('/multi_search?q=x&conversation=true&conversation_model_id=conv-model-1&conversation_id=nope', SEARCHES);
    expect(a.status).toBe(404);
    expect(((await a.json()) as any).message).toMatch(/conversation `nope` not found/);
    const b = await post('/multi_search?q=x&conversation=true&conversation_model_id=conv-model-1', { searches: [{ collection: 'books', query_by: 'title' }] });
    expect(b.status).toBe(400);
    expect(((await b.json()) as any).message).toMatch(/^search 1 \(collection `books`\): conversational search needs `query_by` to include an auto-embedding field/);
    const c = await post('/multi_search?conversation=true&conversation_model_id=conv-model-1', { searches: [{ collection: 'books', query_by: 'emb', q: 'x' }] });
    expect(c.status).toBe(400);
    expect(((await c.json()) as any).message).toMatch(/send `q` in the query string/);
    const d = await post('/multi_search?q=x&conversation=true&conversation_model_id=nope', SEARCHES);
    expect(d.status).toBe(404);
    const e = await fetch(`${server.url}/collections/books/documents/search?q=x&query_by=emb&conversation=true`, { headers: { 'x-typesense-api-key': ADMIN } });
    expect(e.status).toBe(400);
    expect(((await e.json()) as any).message).toMatch(/POST \/multi_search/);
  });

  it('bounds the context by a scoped key\'s filter', async () => {
    const parent = await client.keys().create({ description: 'search', actions: ['documents:search'], collections: ['books'] });
    const scoped = client.keys().generateScopedSearchKey(parent.value!, { filter_by: 'author:=tolkien' });
    const before = llm.calls.length;
    const r = await post('/multi_search?q=a+journey&conversation=true&conversation_model_id=conv-model-1', SEARCHES, scoped);
    expect(r.status).toBe(200);
    const ids = contextIds(llm.calls[before]!.prompt);
    expect(ids.sort()).toEqual(['b1', 'b6']);
  });
});

describe('natural-language search through the typesense client', () => {
  it('creates a model and turns a query into filters', async () => {
    llm.answer = (call) => (call.prompt === 'hello' ? 'hi' : '{"q": "*", "filter_by": "author:=le guin", "sort_by": "year:asc"}');
    try {
      const m = await client.nlSearchModels().create({ id: 'nl', model_name: 'openai/gpt-test', api_key: KEY, api_url: llm.url, max_bytes: 16000 });
      expect(m.api_key).toMatch(/^sk-t\*+$/);
      expect((await client.nlSearchModels().retrieve()).map((x) => x.id)).toEqual(['nl']);
      const res = (await client.collections('books').documents().search({ q: 'le guin books, oldest first', query_by: 'title', nl_query: true, nl_model_id: 'nl' } as never)) as any;
      expect(res.hits.map((h: any) => h.document.id)).toEqual(['b3', 'b4']);
      expect(res.parsed_nl_query.generated_params).toEqual({ q: '*', filter_by: 'author:=le guin', sort_by: 'year:asc' });
      expect((await client.nlSearchModels('nl').update({ model_name: 'openai/gpt-test', temperature: 0.5 } as never)).temperature).toBe(0.5);
      expect(await client.nlSearchModels('nl').delete()).toMatchObject({ id: 'nl' });
    } finally {
      llm.answer = (await import('./llm-fake.js')).defaultAnswer;
    }
  });
});

describe('secrets', () => {
  it('never writes a model\'s api_key to a log line, and logs conversation requests', () => {
    const text = logs.join('');
    expect(text).toContain('/multi_search');
    expect(text).toContain('/conversations/models');
    expect(text).toContain('conversation_stream=true'); // streamed answers are logged too
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('sk-wrong-key-0000000000');
  });
});
