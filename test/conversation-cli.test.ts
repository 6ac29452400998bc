/**
 * The conversation commands of the real `fathom` binary on a data directory:
 * `conversations models create|list|get|delete`, `ask` (for people and `--json`, with a
 * follow-up), `conversations list|get|delete`, against a local OpenAI-protocol server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, jsonLines } from './helpers.js';
import { FakeLlm } from './llm-fake.js';
import { booksEngine, dirWithTinyModel } from './conversation-fixtures.js';

const KEY = 'sk-test-key-0123456789abcdef';
let dir: string;
let llm: FakeLlm;

beforeAll(async () => {
  llm = await new FakeLlm().start();
  dir = dirWithTinyModel();
  const e = await booksEngine(dir);
  await e.close();
});

afterAll(async () => {
  await llm?.stop();
});

describe('fathom conversations models', () => {
  it('creates a model after a real provider check, printing it with the key masked', async () => {
    const r = await cli(['conversations', 'models', 'create', '--id', 'm1', '--model-name', 'openai/gpt-test', '--api-key-env', 'LLM_KEY', '--openai-url', llm.url, '--max-bytes', '16384', '--system-prompt', 'Answer briefly.', '-d', dir], {
      env: { LLM_KEY: KEY },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const m = JSON.parse(r.stdout);
    expect(m).toMatchObject({ id: 'm1', model_name: 'openai/gpt-test', max_bytes: 16384, system_prompt: 'Answer briefly.' });
    expect(r.stdout).not.toContain(KEY);
    expect(llm.calls[llm.calls.length - 1]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('reads a model from a JSON file on stdin', async () => {
    const body = JSON.stringify({ id: 'm2', model_name: 'openai/gpt-test', api_key: KEY, openai_url: llm.url, max_bytes: 2000 });
    const r = await cli(['conversations', 'models', 'create', '-', '-d', dir], { input: body });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).id).toBe('m2');
  });

  it('fails with one line and status 1 when the provider refuses the key', async () => {
    const r = await cli(['conversations', 'models', 'create', '--model-name', 'openai/gpt-test', '--api-key', 'sk-wrong-key-000000000', '--openai-url', llm.url, '--max-bytes', '100', '-d', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: OpenAI API error: Incorrect API key provided/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('rejects a bad flag value as a usage error', async () => {
    const r = await cli(['conversations', 'models', 'create', '--model-name', 'openai/x', '--max-bytes', 'lots', '-d', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--max-bytes must be a whole number/);
  });

  it('lists, shows and deletes models, never showing a key whole', async () => {
    const list = await cli(['conversations', 'models', 'list', '-d', dir]);
    expect(list.stdout).toMatch(/^m1 {2}openai\/gpt-test {2}max_bytes=16384 {2}ttl=86400 {2}api_key=sk-t\*+$/m);
    expect(list.stdout).not.toContain(KEY);
    const json = JSON.parse((await cli(['conversations', 'models', 'list', '--json', '-d', dir])).stdout);
    expect(json.map((m: { id: string }) => m.id).sort()).toEqual(['m1', 'm2']);
    const jsonl = await cli(['conversations', 'models', 'list', '--jsonl', '-d', dir]);
    expect(jsonLines(jsonl.stdout)).toEqual(json);
    expect(jsonl.stdout).not.toContain(KEY);
    expect(JSON.parse((await cli(['conversations', 'models', 'get', 'm1', '-d', dir])).stdout).id).toBe('m1');
    expect((await cli(['conversations', 'models', 'delete', 'm2', '-d', dir])).code).toBe(0);
    const gone = await cli(['conversations', 'models', 'get', 'm2', '-d', dir]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe('error: conversation model `m2` not found\n');
  });
});

describe('fathom ask', () => {
  let conversationId = '';

  it('prints the answer as it streams, the documents it was given and the conversation id', async () => {
    const r = await cli(['ask', 'books', 'a book about a desert planet', '--model', 'm1', '-d', dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [answer, blank, sources, conversation] = r.stdout.split('\n');
    expect(answer).toMatch(/^Based on 6 results: (b\d, ){5}b\d$/);
    expect(blank).toBe('');
    expect(sources).toBe(`sources: books: ${answer!.slice('Based on 6 results: '.length)}`);
    expect(conversation).toMatch(/^conversation: [0-9a-f-]{36} \(ask a follow-up with --conversation [0-9a-f-]{36}\)$/);
    conversationId = /^conversation: (\S+)/.exec(conversation!)![1]!;
    expect(llm.calls[llm.calls.length - 1]!.body.stream).toBe(true);
  });

  it('continues a conversation and prints the API response with --json', async () => {
    const r = await cli(['ask', 'books', 'authors', 'and another one', '--model', 'm1', '--conversation', conversationId, '--json', '-d', dir]);
    expect(r.code).toBe(0);
    const res = JSON.parse(r.stdout);
    expect(res.conversation.conversation_id).toBe(conversationId);
    expect(res.conversation.conversation_history.conversation).toHaveLength(4);
    expect(res.results).toHaveLength(2);
    expect(res.results[0].request_params.q).toBe('standalone: and another one');
  });

  it('lists, shows and deletes conversations', async () => {
    const list = await cli(['conversations', 'list', '-d', dir]);
    expect(list.stdout).toContain(`${conversationId}  2 questions`);
    const one = JSON.parse((await cli(['conversations', 'get', conversationId, '-d', dir])).stdout);
    expect(one.conversation[0]).toEqual({ user: 'a book about a desert planet' });
    expect(JSON.parse((await cli(['conversations', 'delete', conversationId, '-d', dir])).stdout)).toEqual({ id: conversationId });
    const gone = await cli(['ask', 'books', 'more?', '--model', 'm1', '--conversation', conversationId, '-d', dir]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: conversation `.*` not found/);
  });

  it('runs a natural-language search from fathom search --param nl_query=true', async () => {
    const { openEngine } = await import('./helpers.js');
    const { nlSearchModels } = await import('../src/nlsearch/nlsearch.js');
    const e = openEngine(dir);
    await nlSearchModels(e.store).create({ id: 'nl', model_name: 'openai/gpt-test', api_key: KEY, api_url: llm.url });
    await e.close();
    const saved = llm.answer;
    llm.answer = (call) => (call.prompt === 'hello' ? 'hi' : '{"q": "*", "filter_by": "author:=le guin", "sort_by": "year:desc"}');
    try {
      const r = await cli(['search', 'books', '-q', 'le guin, newest first', '--query-by', 'title', '--param', 'nl_query=true', '--param', 'nl_model_id=nl', '--json', '-d', dir]);
      expect(r.stderr).toBe('');
      const res = JSON.parse(r.stdout);
      expect(res.hits.map((h: { document: { id: string } }) => h.document.id)).toEqual(['b4', 'b3']);
      expect(res.parsed_nl_query.generated_params.filter_by).toBe('author:=le guin');
    } finally {
      llm.answer = saved;
    }
  });

  it('explains what is missing', async () => {
    const a = await cli(['ask', 'just a question', '--model', 'm1', '-d', dir]);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/at least one collection and then the question/);
    const b = await cli(['ask', 'plain', 'a question', '--model', 'm1', '-d', dir]);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/collection `plain` has no auto-embedding field to search; give --query-by/);
    const c = await cli(['ask', 'books', 'a question', '-d', dir]);
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/--model/);
  });
});
