/**
 * Natural-language search (`nl_query=true`) on the engine, against a local server speaking
 * the OpenAI protocol: the prompt (schema, facet values within the request's filter), the
 * generated parameters and how they join the request's, and the fallback to the plain query
 * whenever the LLM's answer cannot be used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDirPath, openEngine } from './helpers.js';
import { FakeLlm } from './llm-fake.js';
import type { Engine } from '../src/engine.js';
import { andFilters, nlSearchModels, parseGenerated } from '../src/nlsearch/nlsearch.js';

const KEY = 'sk-test-key-0123456789abcdef';
const BOOKS = [
  { id: '1', title: 'The Hobbit', author: 'Tolkien', year: 1937, genre: 'fantasy' },
  { id: '2', title: 'Dune', author: 'Herbert', year: 1965, genre: 'science fiction' },
  { id: '3', title: 'A Wizard of Earthsea', author: 'Le Guin', year: 1968, genre: 'fantasy' },
  { id: '4', title: 'The Left Hand of Darkness', author: 'Le Guin', year: 1969, genre: 'science fiction' },
  { id: '5', title: 'The Lord of the Rings', author: 'Tolkien', year: 1954, genre: 'fantasy' },
];

let engine: Engine;
let llm: FakeLlm;
/** What the fake LLM answers next (its whole message text). */
let reply = '';

beforeAll(async () => {
  llm = await new FakeLlm().start();
  llm.answer = (call) => (call.prompt === 'hello' ? 'hi' : reply);
  engine = openEngine(dataDirPath());
  await engine.createCollection({
    name: 'books',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'author', type: 'string', facet: true },
      { name: 'genre', type: 'string', facet: true },
      { name: 'year', type: 'int32', facet: true },
    ],
  });
  await engine.import('books', [Buffer.from(BOOKS.map((d) => JSON.stringify(d)).join('\n'))], {}, () => {});
  await nlSearchModels(engine.store).create({ id: 'nl', model_name: 'openai/gpt-test', api_key: KEY, api_url: llm.url, temperature: 0, system_prompt: 'Genres are lower case.' });
});

afterAll(async () => {
  await engine?.close();
  await llm?.stop();
});

const ids = (r: { hits?: Array<{ document: Record<string, unknown> }> }) => r.hits!.map((h) => h.document.id);

describe('natural-language search models', () => {
  it('are checked with the provider, stored with a default max_bytes and shown masked', () => {
    const m = nlSearchModels(engine.store).get('nl');
    expect(m).toMatchObject({ id: 'nl', model_name: 'openai/gpt-test', max_bytes: 16000, temperature: 0 });
    expect(JSON.stringify(nlSearchModels(engine.store).list())).not.toContain(KEY);
  });

  it('refuse a key the provider refuses', async () => {
    await expect(nlSearchModels(engine.store).create({ model_name: 'openai/gpt-test', api_key: 'sk-bad-bad-bad-bad-bad', api_url: llm.url })).rejects.toThrow(/Incorrect API key/);
  });
});

describe('a natural-language query', () => {
  it('becomes q, filter_by and sort_by from the LLM, returned in parsed_nl_query', async () => {
    reply = '```json\n{"q": "*", "filter_by": "genre:=fantasy", "sort_by": "year:desc"}\n```';
    const before = llm.calls.length;
    const res = await engine.search('books', { q: 'newest fantasy books first', query_by: 'title', nl_query: 'true', nl_model_id: 'nl' });
    const call = llm.calls[before]!;
    expect(call.prompt).toBe('newest fantasy books first');
    expect(call.system).toMatch(/^- author \(string; facet\): values (?=.*"Tolkien")(?=.*"Le Guin")(?=.*"Herbert").*$/m);
    expect(call.system).toContain('- genre (string; facet): values "fantasy", "science fiction"');
    expect(call.system).toContain('- year (int32; facet, sortable): from 1937 to 1969');
    expect(call.system).toMatch(/Genres are lower case\.$/);
    expect(call.body.temperature).toBe(0);
    expect(ids(res)).toEqual(['3', '5', '1']); // 1968, 1954, 1937
    expect(res.parsed_nl_query).toMatchObject({
      generated_params: { q: '*', filter_by: 'genre:=fantasy', sort_by: 'year:desc' },
      augmented_params: { q: '*', filter_by: 'genre:=fantasy', sort_by: 'year:desc', query_by: 'title' },
    });
    expect((res.parsed_nl_query as { error?: string }).error).toBeUndefined();
    expect(typeof (res.parsed_nl_query as { parse_time_ms: number }).parse_time_ms).toBe('number');
  });

  it('ANDs the generated filter with the request\'s, keeps the request\'s sort, and shows only values the filter lets through', async () => {
    reply = '{"q": "*", "filter_by": "genre:=fantasy", "sort_by": "year:asc"}';
    const before = llm.calls.length;
    const res = await engine.search('books', { q: 'fantasy', query_by: 'title', filter_by: 'author:=Tolkien', sort_by: 'year:desc', nl_query: true, nl_model_id: 'nl' });
    expect(ids(res)).toEqual(['5', '1']);
    expect((res.parsed_nl_query as any).augmented_params).toMatchObject({ filter_by: '(author:=Tolkien) && (genre:=fantasy)', sort_by: 'year:desc' });
    const system = llm.calls[before]!.system!;
    expect(system).toContain('values "Tolkien"');
    expect(system).not.toContain('Le Guin');
  });

  it('falls back to the plain query when the generated filter is not valid, saying why', async () => {
    reply = '{"q": "*", "filter_by": "year:>>1950"}';
    const res = await engine.search('books', { q: 'dune', query_by: 'title', nl_query: 'true', nl_model_id: 'nl' });
    expect(ids(res)).toEqual(['2']);
    expect((res.parsed_nl_query as any).error).toMatch(/generated parameters do not work/);
    expect((res.parsed_nl_query as any).augmented_params).toEqual({ q: 'dune', query_by: 'title' });
  });

  it('never lets a generated filter widen the request\'s filter', async () => {
    reply = '{"q": "*", "filter_by": "genre:=fantasy) || (id:*"}';
    const res = await engine.search('books', { q: 'the books', query_by: 'title', filter_by: 'author:=Herbert', nl_query: 'true', nl_model_id: 'nl', drop_tokens_threshold: 10 });
    expect(res.hits!.every((h) => h.document.author === 'Herbert')).toBe(true);
    expect((res.parsed_nl_query as any).error).toMatch(/filter_by/);
    expect((res.parsed_nl_query as any).augmented_params.filter_by).toBe('author:=Herbert');
  });

  it('falls back on an answer that is not the JSON asked for, and on a provider error', async () => {
    reply = 'I think you want fantasy books.';
    const a = await engine.search('books', { q: 'hobbit', query_by: 'title', nl_query: 'true', nl_model_id: 'nl' });
    expect(ids(a)).toEqual(['1']);
    expect((a.parsed_nl_query as any).error).toBe('OpenAI API error: the answer holds no JSON object');
    llm.next({ kind: 'error', status: 503, body: { error: { message: 'overloaded' } } });
    const b = await engine.search('books', { q: 'hobbit', query_by: 'title', nl_query: 'true', nl_model_id: 'nl' });
    expect(ids(b)).toEqual(['1']);
    expect((b.parsed_nl_query as any).error).toBe('OpenAI API error: overloaded');
  });

  it('drops parsed_nl_query with exclude_fields, and shows the raw answer with nl_query_debug', async () => {
    reply = '{"filter_by": "author:=Herbert"}';
    const a = await engine.search('books', { q: 'books by herbert', query_by: 'title', nl_query: 'true', nl_model_id: 'nl', exclude_fields: 'parsed_nl_query' });
    expect(ids(a)).toEqual(['2']);
    expect(a.parsed_nl_query).toBeUndefined();
    const b = await engine.search('books', { q: 'books by herbert', query_by: 'title', nl_query: 'true', nl_model_id: 'nl', nl_query_debug: 'true' });
    expect((b.parsed_nl_query as any).llm_response).toEqual({ content: reply, model: 'openai/gpt-test' });
  });

  it('fits the prompt into max_bytes by showing fewer facet values', async () => {
    await nlSearchModels(engine.store).create({ id: 'nl-small', model_name: 'openai/gpt-test', api_key: KEY, api_url: llm.url, max_bytes: 1700 });
    reply = '{"filter_by": "author:=Herbert"}';
    const before = llm.calls.length;
    const res = await engine.search('books', { q: 'books by herbert', query_by: 'title', nl_query: 'true', nl_model_id: 'nl-small' });
    expect(ids(res)).toEqual(['2']);
    expect(llm.calls[before]!.bytes).toBeLessThanOrEqual(1700);
  });

  it('needs a model id and a query, and answers 404 for an unknown model', async () => {
    await expect(engine.search('books', { q: 'x', query_by: 'title', nl_query: 'true' })).rejects.toThrow(/`nl_model_id` is required/);
    await expect(engine.search('books', { q: 'x', query_by: 'title', nl_query: 'true', nl_model_id: 'nope' })).rejects.toMatchObject({ status: 404 });
    await expect(engine.search('books', { q: '*', query_by: 'title', nl_query: 'true', nl_model_id: 'nl' })).rejects.toThrow(/natural-language query/);
  });
});

describe('joining filters', () => {
  it('joins a request filter and a generated one into exactly their conjunction', () => {
    expect(andFilters(undefined, 'a:=1')).toBe('a:=1');
    expect(andFilters('a:=1 || b:=2', 'c:>3 && d:[x, y]')).toBe('(a:=1 || b:=2) && (c:>3 && d:[x, y])');
  });

  it('refuses generated filters that would escape their parentheses', () => {
    expect(() => andFilters('user:=42', 'a:=1) || (id:*')).toThrow();
    expect(() => andFilters('user:=42', 'a:=`x) || (id:*')).toThrow();
    expect(() => andFilters('user:=42', 'a:=1 ||')).toThrow();
  });

  it('reads the parameters out of an answer with prose or code fences around them', () => {
    expect(parseGenerated('Sure!\n```json\n{"q":"shirts","filter_by":"color:=red","sort_by":""}\n```')).toEqual({ q: 'shirts', filter_by: 'color:=red' });
    expect(() => parseGenerated('{"q": 3}')).toThrow(/not a string/);
  });
});
