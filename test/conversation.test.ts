/**
 * Conversational search (RAG) on the engine, against local servers that speak each
 * provider's protocol (test/llm-fake.ts): conversation models and their provider check, the
 * answer grounded in the top hits, follow-ups through a standalone question, the byte and
 * history budgets, streaming, ttl expiry and every kind of provider failure.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BOOKS, booksEngine } from './conversation-fixtures.js';
import { FakeLlm, contextIds, promptQuestion, type LlmCall } from './llm-fake.js';
import type { Engine } from '../src/engine.js';
import { conversationModels } from '../src/conversation/models.js';
import { converse, conversationRequest, type ConversationRequest } from '../src/conversation/rag.js';
import { ADMIN_ACTOR, getConversation, listConversations, purgeExpiredConversations, updateConversation, deleteConversation } from '../src/conversation/history.js';
import { CONVERSATION_DEFAULTS } from '../src/defaults.js';
import { FathomError } from '../src/errors.js';

const KEY = 'sk-test-key-0123456789abcdef';

let engine: Engine;
let llm: FakeLlm;

beforeAll(async () => {
  llm = await new FakeLlm().start();
  engine = await booksEngine();
});

afterAll(async () => {
  await engine?.close();
  await llm?.stop();
});

function openaiModel(extra: Record<string, unknown> = {}) {
  return { model_name: 'openai/gpt-test', api_key: KEY, openai_url: llm.url, max_bytes: 16384, system_prompt: 'You answer from the given books only.', ...extra };
}

function ask(q: string, modelId: string, extra: Partial<ConversationRequest> = {}): ConversationRequest {
  return { q, modelId, searches: [{ collection: 'books', query_by: 'emb', exclude_fields: 'emb' }], actor: ADMIN_ACTOR, ...extra };
}

function callsSince(n: number): LlmCall[] {
  return llm.calls.slice(n);
}

describe('conversation models', () => {
  it('checks a new model with one real call to the provider and shows its api_key masked', async () => {
    const before = llm.calls.length;
    const m = await conversationModels(engine.store).create(openaiModel({ id: 'm-check' }));
    const calls = callsSince(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.path).toBe('/v1/chat/completions');
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(calls[0]!.body.model).toBe('gpt-test');
    expect(m).toMatchObject({ id: 'm-check', model_name: 'openai/gpt-test', max_bytes: 16384, ttl: CONVERSATION_DEFAULTS.ttl });
    expect(m.api_key).not.toBe(KEY);
    expect(m.api_key).toBe('sk-t' + '*'.repeat(KEY.length - 4));
    const reg = conversationModels(engine.store);
    expect(JSON.stringify(reg.get('m-check'))).not.toContain(KEY);
    expect(JSON.stringify(reg.list())).not.toContain(KEY);
    expect(reg.list().map((x) => x.id)).toContain('m-check');
  });

  it('generates an id when none is given', async () => {
    const m = await conversationModels(engine.store).create(openaiModel());
    expect(m.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses a key the provider refuses, with 400 and the provider\'s message, and stores nothing', async () => {
    const err = await conversationModels(engine.store)
      .create(openaiModel({ id: 'm-badkey', api_key: 'sk-wrong-key-9876543210' }))
      .catch((e) => e);
    expect(err).toBeInstanceOf(FathomError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^OpenAI API error: Incorrect API key provided/);
    expect(() => conversationModels(engine.store).get('m-badkey')).toThrow(/not found/);
  });

  it('refuses an unreachable provider with 400 naming it', async () => {
    const err = await conversationModels(engine.store)
      .create(openaiModel({ id: 'm-down', openai_url: 'http://127.0.0.1:9' }))
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/OpenAI API error: cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  it('rejects a bad model with a message naming the field', async () => {
    const reg = conversationModels(engine.store);
    await expect(reg.create({ model_name: 'openai/x', api_key: KEY })).rejects.toThrow(/`max_bytes` is required/);
    await expect(reg.create(openaiModel({ max_bytes: 0 }))).rejects.toThrow(/`max_bytes` must be a whole number from 1/);
    await expect(reg.create(openaiModel({ model_name: 'acme/llm' }))).rejects.toThrow(/names no supported provider/);
    await expect(reg.create({ model_name: 'openai/x', max_bytes: 10 })).rejects.toThrow(/`api_key` is required/);
    await expect(reg.create({ model_name: 'cloudflare/@cf/x', api_key: KEY, max_bytes: 10 })).rejects.toThrow(/`account_id` is required/);
    await expect(reg.create({ model_name: 'vllm/x', max_bytes: 10 })).rejects.toThrow(/`vllm_url` is required/);
    await expect(reg.create(openaiModel({ colour: 'red' }))).rejects.toThrow(/unknown field `colour`/);
    await expect(reg.create(openaiModel({ id: 'has space' }))).rejects.toThrow(/`id` must be/);
    await expect(reg.create(openaiModel({ id: 'm-check' }))).rejects.toMatchObject({ status: 409 });
  });

  it('updates a system prompt without calling the provider, and keeps the key sent back masked', async () => {
    const reg = conversationModels(engine.store);
    await reg.create(openaiModel({ id: 'm-upd' }));
    const before = llm.calls.length;
    const shown = reg.get('m-upd');
    const updated = await reg.update('m-upd', { ...shown, system_prompt: 'Be brief.' });
    expect(updated.system_prompt).toBe('Be brief.');
    expect(callsSince(before)).toHaveLength(0);
    expect(reg.load('m-upd').api_key).toBe(KEY);
    // a new key is checked with the provider, and refused
    await expect(reg.update('m-upd', { api_key: 'sk-another-wrong-key-000' })).rejects.toMatchObject({ status: 400 });
    expect(reg.load('m-upd').api_key).toBe(KEY);
    await expect(reg.update('m-upd', { id: 'other' })).rejects.toThrow(/cannot change/);
    await expect(reg.update('nope', { system_prompt: 'x' })).rejects.toMatchObject({ status: 404 });
  });

  it('deletes a model and answers 404 for it afterwards', async () => {
    const reg = conversationModels(engine.store);
    await reg.create(openaiModel({ id: 'm-del' }));
    const gone = await reg.delete('m-del');
    expect(gone.id).toBe('m-del');
    expect(JSON.stringify(gone)).not.toContain(KEY);
    await expect(reg.delete('m-del')).rejects.toMatchObject({ status: 404 });
  });

  it('reaches the hosted providers at their real URLs (checked with an injected fetch)', async () => {
    const seen: Array<{ url: string; headers: Record<string, string>; body: any }> = [];
    const fakeFetch = (async (url: string, init: RequestInit) => {
      seen.push({ url, headers: init.headers as Record<string, string>, body: JSON.parse(String(init.body)) });
      const cf = url.includes('cloudflare');
      return new Response(JSON.stringify(cf ? { result: { response: 'hi' }, success: true, errors: [] } : { choices: [{ message: { content: 'hi' } }] }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof fetch;
    const reg = conversationModels(engine.store);
    await reg.create({ id: 'hosted-openai', model_name: 'openai/gpt-4o-mini', api_key: KEY, max_bytes: 1000 }, { fetch: fakeFetch });
    await reg.create({ id: 'hosted-cf', model_name: 'cloudflare/@cf/meta/llama-3-8b-instruct', api_key: KEY, account_id: 'acct123', max_bytes: 1000 }, { fetch: fakeFetch });
    expect(seen[0]!.url).toBe('https://api.openai.com/v1/chat/completions');
    expect(seen[0]!.body).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
    expect(seen[1]!.url).toBe('https://api.cloudflare.com/client/v4/accounts/acct123/ai/run/@cf/meta/llama-3-8b-instruct');
    expect(seen[1]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen[1]!.body).toEqual({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 1 });
  });
});

describe('a conversation', () => {
  let modelId: string;
  beforeAll(async () => {
    modelId = (await conversationModels(engine.store).create(openaiModel({ id: 'books-model' }))).id as string;
  });

  it('answers a question from the top hits of a semantic search, with the system prompt', async () => {
    const before = llm.calls.length;
    const res = await converse(engine, ask('a book about a desert planet', modelId));
    const calls = callsSince(before);
    expect(calls).toHaveLength(1); // no history: no standalone question
    const call = calls[0]!;
    expect(call.system).toBe('You answer from the given books only.');
    expect(promptQuestion(call.prompt)).toBe('a book about a desert planet');
    const hitIds = res.results[0]!.hits!.map((h) => h.document.id);
    expect(hitIds.length).toBe(BOOKS.length);
    expect(contextIds(call.prompt)).toEqual(hitIds); // every hit, best first, within budget
    expect(call.prompt).not.toContain('"emb"'); // no embedding values in the context
    expect(res.conversation.answer).toBe(`Based on ${hitIds.length} results: ${hitIds.join(', ')}`);
    expect(res.conversation.query).toBe('a book about a desert planet');
    expect(res.conversation.conversation_history!.conversation).toEqual([{ user: 'a book about a desert planet' }, { assistant: res.conversation.answer }]);
    expect(res.conversation.conversation_history!.id).toBe(res.conversation.conversation_id);
    expect(res.conversation.conversation_history!.ttl).toBe(86400);
    expect(getConversation(engine.store, res.conversation.conversation_id, ADMIN_ACTOR).conversation).toHaveLength(2);
  });

  it('rewrites a follow-up into a standalone question from the history, searches with it and grows the history', async () => {
    const first = await converse(engine, ask('who wrote about middle earth', modelId));
    const id = first.conversation.conversation_id;
    const before = llm.calls.length;
    const res = await converse(engine, ask('and what else did he write', modelId, { conversationId: id }));
    const calls = callsSince(before);
    expect(calls).toHaveLength(2);
    const standalone = calls[0]!;
    expect(standalone.system).toBeUndefined();
    expect(standalone.prompt).toContain('{"user":"who wrote about middle earth"}');
    expect(standalone.prompt).toContain(`{"assistant":${JSON.stringify(first.conversation.answer)}}`);
    expect(standalone.prompt).toContain('<Follow-up question>\nand what else did he write');
    // the standalone question is what was searched and answered
    expect(res.results[0]!.request_params.q).toBe('standalone: and what else did he write');
    expect(promptQuestion(calls[1]!.prompt)).toBe('standalone: and what else did he write');
    expect(res.conversation.query).toBe('and what else did he write');
    expect(res.conversation.conversation_id).toBe(id);
    expect(res.conversation.conversation_history!.conversation.map((t) => Object.keys(t)[0])).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(res.conversation.conversation_history!.conversation[2]).toEqual({ user: 'and what else did he write' });
  });

  it('leaves the history out with exclude_fields=conversation_history', async () => {
    const creq = conversationRequest(
      { q: 'a planet', conversation: 'true', conversation_model_id: modelId, exclude_fields: 'conversation_history' },
      [{ collection: 'books', query_by: 'emb' }],
      [{ q: 'a planet', conversation: 'true', conversation_model_id: modelId, exclude_fields: 'conversation_history', collection: 'books', query_by: 'emb' }],
    );
    const res = await converse(engine, { ...creq, actor: ADMIN_ACTOR });
    expect(res.conversation.conversation_history).toBeUndefined();
    expect(res.conversation.answer).toMatch(/^Based on/);
    expect(res.results[0]!.hits!.length).toBeGreaterThan(0);
  });

  it('uses the top results of every search, taken in turn and labelled with their collection', async () => {
    const before = llm.calls.length;
    const res = await converse(engine, {
      actor: ADMIN_ACTOR,
      q: 'fantasy writers',
      modelId,
      searches: [
        { collection: 'books', query_by: 'emb', per_page: 3 },
        { collection: 'authors', query_by: 'emb' },
      ],
    });
    const prompt = callsSince(before)[0]!.prompt;
    const b = res.results[0]!.hits!.map((h) => h.document.id);
    const a = res.results[1]!.hits!.map((h) => h.document.id);
    expect(contextIds(prompt)).toEqual([b[0], a[0], b[1], a[1], b[2]]);
    expect(prompt).toContain(`[authors] {"id":"${a[0]}"`);
    // the searches return the embeddings (nothing excluded them); the LLM is not sent them
    expect(Array.isArray(res.results[0]!.hits![0]!.document.emb)).toBe(true);
    expect(prompt).not.toContain('"emb"');
  });

  it('keeps every call within the model\'s max_bytes, cutting the context', async () => {
    const small = await conversationModels(engine.store).create(openaiModel({ id: 'small', max_bytes: 700 }));
    const before = llm.calls.length;
    const res = await converse(engine, ask('a journey', small.id as string));
    const call = callsSince(before)[0]!;
    expect(call.bytes).toBeLessThanOrEqual(700);
    const hits = res.results[0]!.hits!.map((h) => h.document.id);
    const ids = contextIds(call.prompt);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(hits.length);
    expect(ids).toEqual(hits.slice(0, ids.length));
    // and the standalone-question call of a follow-up too
    const n = llm.calls.length;
    await converse(engine, ask('tell me more about it please', small.id as string, { conversationId: res.conversation.conversation_id }));
    for (const c of callsSince(n)) expect(c.bytes).toBeLessThanOrEqual(700);
  });

  it('sends at most ~3000 tokens of search results, the best ones, even when max_bytes allows far more', async () => {
    await engine.createCollection({
      name: 'essays',
      fields: [
        { name: 'text', type: 'string' },
        { name: 'emb', type: 'float[]', embed: { from: ['text'], model_config: { model_name: 'tiny' } } },
      ],
    });
    const essays = Array.from({ length: 40 }, (_, i) => ({ id: `e${i}`, text: `essay ${i} about planets and journeys ` + 'and the long road home '.repeat(25) }));
    await engine.import('essays', [Buffer.from(essays.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
    const roomy = await conversationModels(engine.store).create(openaiModel({ id: 'roomy', max_bytes: 1_000_000 }));
    const before = llm.calls.length;
    const res = await converse(engine, { actor: ADMIN_ACTOR, q: 'a long journey home', modelId: roomy.id as string, searches: [{ collection: 'essays', query_by: 'emb', per_page: 40 }] });
    const call = callsSince(before)[0]!;
    const context = /<Search results>\n([\s\S]*?)\n\n<Question>/.exec(call.prompt)![1]!;
    const budget = CONVERSATION_DEFAULTS.contextTokens * CONVERSATION_DEFAULTS.bytesPerToken;
    const contextBytes = Buffer.byteLength(JSON.stringify(context)) - 2;
    const hits = res.results[0]!.hits!.map((h) => h.document.id);
    const ids = contextIds(call.prompt);
    expect(hits).toHaveLength(40); // all 40 (about 26 kB) would fit max_bytes
    expect(contextBytes).toBeLessThanOrEqual(budget);
    expect(contextBytes).toBeGreaterThan(budget - 1000); // filled up to the budget, not far short of it
    expect(ids.length).toBeLessThan(hits.length);
    expect(ids).toEqual(hits.slice(0, ids.length));
  });

  it('refuses a question that cannot fit max_bytes with a clear 400', async () => {
    const tiny = await conversationModels(engine.store).create(openaiModel({ id: 'tiny-budget', max_bytes: 100 }));
    await expect(converse(engine, ask('a journey', tiny.id as string))).rejects.toThrow(/`max_bytes` \(100\) is too small/);
  });

  it('sends only the latest ~1200 characters of history for the standalone question, newest kept', async () => {
    const long = await converse(engine, ask('first question ' + 'x'.repeat(500), modelId));
    const id = long.conversation.conversation_id;
    for (let i = 0; i < 3; i++) await converse(engine, ask(`question ${i} ` + 'y'.repeat(300), modelId, { conversationId: id }));
    const before = llm.calls.length;
    await converse(engine, ask('the last follow-up', modelId, { conversationId: id }));
    const prompt = callsSince(before)[0]!.prompt;
    const history = /<Conversation>\n([\s\S]*?)\n\n<Follow-up question>/.exec(prompt)![1]!;
    expect(history.length).toBeLessThanOrEqual(CONVERSATION_DEFAULTS.historyChars);
    expect(history).not.toContain('first question');
    const all = getConversation(engine.store, id, ADMIN_ACTOR).conversation;
    expect(all).toHaveLength(10);
    // the history before the last follow-up ends with the previous answer
    expect(history.endsWith(JSON.stringify(all[all.length - 3]))).toBe(true);
  });

  it('streams the answer piece by piece and stores the whole of it', async () => {
    const pieces: string[] = [];
    let started = '';
    const before = llm.calls.length;
    const res = await converse(engine, ask('a desert planet', modelId), { stream: { onStart: (id) => (started = id), onPiece: (p) => pieces.push(p) } });
    expect(callsSince(before)[0]!.body.stream).toBe(true);
    expect(pieces.length).toBeGreaterThan(2);
    expect(pieces.join('')).toBe(res.conversation.answer);
    expect(started).toBe(res.conversation.conversation_id);
    expect(getConversation(engine.store, started, ADMIN_ACTOR).conversation[1]).toEqual({ assistant: res.conversation.answer });
  });

  it('refuses searches without an auto-embedding field, naming the search', async () => {
    await expect(converse(engine, { actor: ADMIN_ACTOR, q: 'x', modelId, searches: [{ collection: 'books', query_by: 'emb' }, { collection: 'books', query_by: 'title' }] })).rejects.toThrow(
      /^search 2 \(collection `books`\): conversational search needs `query_by` to include an auto-embedding field \(this collection has `emb`\)/,
    );
    await expect(converse(engine, { actor: ADMIN_ACTOR, q: 'x', modelId, searches: [{ collection: 'plain', query_by: 'title' }] })).rejects.toThrow(/this collection has none/);
    await expect(converse(engine, { actor: ADMIN_ACTOR, q: 'x', modelId, searches: [{ collection: 'nope', query_by: 'emb' }] })).rejects.toMatchObject({ status: 404, message: 'search 1: collection `nope` not found' });
  });

  it('answers 404 for an unknown model or conversation', async () => {
    await expect(converse(engine, ask('x', 'no-such-model'))).rejects.toMatchObject({ status: 404, message: 'conversation model `no-such-model` not found' });
    await expect(converse(engine, ask('x', modelId, { conversationId: 'no-such-conversation' }))).rejects.toMatchObject({ status: 404 });
  });

  it('checks the request: q in the query string, a model id', () => {
    expect(() => conversationRequest({ conversation: 'true', conversation_model_id: 'm' }, [{}], [{}])).toThrow(/needs the question in `q`/);
    expect(() => conversationRequest({ q: 'x', conversation: 'true' }, [{}], [{ q: 'x' }])).toThrow(/`conversation_model_id` is required/);
    expect(() => conversationRequest({ q: 'x', conversation: 'true', conversation_model_id: 'm' }, [{ q: 'y' }], [{ q: 'y' }])).toThrow(/send `q` in the query string/);
  });

  it('refuses a single search with conversation=true instead of ignoring it', async () => {
    await expect(engine.search('books', { q: 'x', query_by: 'emb', conversation: 'true' })).rejects.toThrow(/POST \/multi_search/);
  });
});

describe('provider failures', () => {
  let modelId: string;
  beforeAll(async () => {
    modelId = (await conversationModels(engine.store).create(openaiModel({ id: 'fail-model', timeout_ms: 300 }))).id as string;
  });

  async function failsWith(pattern: RegExp, stream = false) {
    const count = listConversations(engine.store, ADMIN_ACTOR).length;
    const err = await converse(engine, ask('a planet', modelId), stream ? { stream: { onStart() {}, onPiece() {} } } : {}).catch((e) => e);
    expect(err).toBeInstanceOf(FathomError);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(pattern);
    expect(listConversations(engine.store, ADMIN_ACTOR).length).toBe(count); // nothing stored
  }

  it('reports the provider\'s own error message', async () => {
    llm.next({ kind: 'error', status: 429, body: { error: { message: 'Rate limit reached for gpt-test', type: 'requests', code: 'rate_limit_exceeded' } } });
    await failsWith(/^OpenAI API error: Rate limit reached for gpt-test$/);
  });

  it('gives up after the timeout instead of hanging', async () => {
    llm.next({ kind: 'delay', ms: 2000 });
    const t0 = Date.now();
    await failsWith(/^OpenAI API error: no answer within 300 ms$/);
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('reports a malformed answer', async () => {
    llm.next({ kind: 'malformed' });
    await failsWith(/malformed answer/);
  });

  it('reports a stream that breaks off or stalls, and stores nothing', async () => {
    llm.next({ kind: 'break', afterPieces: 2 });
    await failsWith(/^OpenAI API error: the answer stream broke off/, true);
    llm.next({ kind: 'stall', afterPieces: 1 });
    await failsWith(/nothing for 300 ms/, true);
  });

  it('reports a refused streamed call as an ordinary error before anything is streamed', async () => {
    llm.next({ kind: 'error', status: 500, body: { error: { message: 'The server had an error', type: 'server_error' } } });
    let started = false;
    const err = await converse(engine, ask('a planet', modelId), { stream: { onStart: () => (started = true), onPiece() {} } }).catch((e) => e);
    expect(err.message).toBe('OpenAI API error: The server had an error');
    expect(started).toBe(false);
  });

  it('never quotes the api key in an error, even when the provider echoes it', async () => {
    llm.next({ kind: 'error', status: 400, body: { error: { message: `bad request for key ${KEY}` } } });
    const err = await converse(engine, ask('a planet', modelId)).catch((e) => e);
    expect(err.message).not.toContain(KEY);
    expect(err.message).toContain('sk-t****');
  });
});

describe('the other providers', () => {
  it('speaks Cloudflare Workers AI: account and model in the path, its answer and error shapes, streaming', async () => {
    const reg = conversationModels(engine.store);
    const before = llm.calls.length;
    const m = await reg.create({ id: 'cf', model_name: 'cloudflare/@cf/meta/llama-3-8b-instruct', api_key: KEY, account_id: 'acct-1', api_url: llm.url, max_bytes: 8000 });
    expect(m.api_key).not.toBe(KEY);
    const check = callsSince(before)[0]!;
    expect(check.path).toBe('/client/v4/accounts/acct-1/ai/run/@cf/meta/llama-3-8b-instruct');
    expect(check.body.model).toBeUndefined();
    const res = await converse(engine, ask('cyberspace', 'cf'));
    expect(res.conversation.answer).toMatch(/^Based on 6 results/);
    const pieces: string[] = [];
    const streamed = await converse(engine, ask('cyberspace', 'cf'), { stream: { onStart() {}, onPiece: (p) => pieces.push(p) } });
    expect(pieces.join('')).toBe(streamed.conversation.answer);
    const err = await reg.create({ model_name: 'cloudflare/@cf/x', api_key: 'wrong-key-wrong-key', account_id: 'a', api_url: llm.url, max_bytes: 10 }).catch((e) => e);
    expect(err.message).toBe('Cloudflare Workers AI error: Authentication error');
  });

  it('speaks vLLM\'s OpenAI-compatible server at vllm_url, without a key', async () => {
    const vllm = await new FakeLlm().start();
    vllm.key = undefined;
    vllm.flavour = 'vllm';
    try {
      await conversationModels(engine.store).create({ id: 'local', model_name: 'vllm/NousResearch/Meta-Llama-3-8B-Instruct', vllm_url: vllm.url, max_bytes: 16000 });
      const res = await converse(engine, ask('a winter planet', 'local'));
      expect(res.conversation.answer).toMatch(/^Based on/);
      for (const c of vllm.calls) {
        expect(c.path).toBe('/v1/chat/completions');
        expect(c.headers.authorization).toBeUndefined();
        expect(c.body.model).toBe('NousResearch/Meta-Llama-3-8B-Instruct');
      }
      vllm.next({ kind: 'error', status: 400, body: { object: 'error', message: "This model's maximum context length is 8192 tokens", type: 'BadRequestError', param: null, code: 400 } });
      await expect(converse(engine, ask('a winter planet', 'local'))).rejects.toThrow("vLLM API error: This model's maximum context length is 8192 tokens");
    } finally {
      await vllm.stop();
    }
  });
});

describe('conversations', () => {
  afterAll(() => vi.useRealTimers());

  it('are listed, read, given a new ttl, deleted, and expire after their ttl', async () => {
    const m = await conversationModels(engine.store).create(openaiModel({ id: 'short', ttl: 60 }));
    const res = await converse(engine, ask('a ring', m.id as string));
    const id = res.conversation.conversation_id;
    expect(res.conversation.conversation_history!.ttl).toBe(60);
    expect(listConversations(engine.store, ADMIN_ACTOR).map((c) => c.id)).toContain(id);
    const updated = await updateConversation(engine.store, id, { ttl: 3600 }, ADMIN_ACTOR);
    expect(updated.ttl).toBe(3600);
    await expect(updateConversation(engine.store, id, { ttl: -1 }, ADMIN_ACTOR)).rejects.toThrow(/`ttl` must be/);
    await expect(updateConversation(engine.store, id, { colour: 1 }, ADMIN_ACTOR)).rejects.toThrow(/only `ttl`/);

    const other = (await converse(engine, ask('a ring', m.id as string))).conversation.conversation_id;
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 61_000);
    // `other` (ttl 60) has expired, `id` (ttl 3600) has not
    expect(() => getConversation(engine.store, other, ADMIN_ACTOR)).toThrow(/not found/);
    expect(listConversations(engine.store, ADMIN_ACTOR).map((c) => c.id)).not.toContain(other);
    await expect(converse(engine, ask('more', m.id as string, { conversationId: other }))).rejects.toMatchObject({ status: 404 });
    expect(getConversation(engine.store, id, ADMIN_ACTOR).id).toBe(id);
    expect(await purgeExpiredConversations(engine.store)).toBeGreaterThanOrEqual(1);
    expect(engine.store.aux.get(['conv', other])).toBeUndefined();
    expect(engine.store.aux.get(['conv', id])).toBeDefined();
    vi.useRealTimers();

    expect(await deleteConversation(engine.store, id, ADMIN_ACTOR)).toEqual({ id });
    await expect(deleteConversation(engine.store, id, ADMIN_ACTOR)).rejects.toMatchObject({ status: 404 });
  });
});
