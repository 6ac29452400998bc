/**
 * Names that are `Object.prototype`'s own (`__proto__`, `constructor`, `prototype`,
 * `hasOwnProperty`, `toString`) are ordinary names. Against a real `fathom serve` on loopback,
 * each scenario runs once with an ordinary name and once with each of those, and the answers
 * must be the same with the name swapped: every named route (created, read back, used by a
 * search, deleted; 404 while absent), document ids, field names in schemas, documents and
 * search parameters, and the same words as values (facet values, query words, synonyms,
 * stopwords). No answer is a 5xx, and nothing ever reaches `Object.prototype`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { FakeLlm } from './llm-fake.js';
import { dirWithTinyModel } from './conversation-fixtures.js';
import { cli, openEngine, tmpDir } from './helpers.js';
import { b64, pngBytes, RED, solid } from './image-fixtures.js';
import { leaveOutUnstored } from '../src/cluster/unstored.js';
import { getSchema } from '../src/collection/catalog.js';
import type { BatchOp } from '../src/collection/writer.js';

const ADMIN = 'proto-admin-key';
const LLM_KEY = 'sk-test-key-0123456789abcdef';
/** The reference name: each prototype name must behave exactly as this one does. */
const ORDINARY = 'ordinary';
const NAMES = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString'];
let server: RunningServer;
let llm: FakeLlm;
const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();

interface Answer {
  status: number;
  text: string;
}

/** A request; `body` is sent as is when a string (so a document can hold a `__proto__` key). */
async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { 'x-typesense-api-key': ADMIN };
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, { method, headers, body: payload });
  const text = await res.text();
  // (an export's keys are sorted, as the reference writes them: where a field sorts depends
  // on its name, so its lines are compared with their keys in one fixed order)
  if (res.status === 200 && path.includes('/export')) return { status: res.status, text: text.split('\n').map(inFixedOrder).join('\n') };
  return { status: res.status, text };
}

/** A JSON line with its objects' keys in one order (`id`, the name under test, the rest by name), whatever the names sort as. */
function inFixedOrder(line: string): string {
  if (line === '') return line;
  const rank = (k: string) => (k === 'id' ? 0 : k === 'ordinary' || NAMES.includes(k) ? 1 : 2);
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    const keys = Object.keys(v).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const k of keys) Object.defineProperty(out, k, { value: walk((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
    return out;
  };
  return JSON.stringify(walk(JSON.parse(line)));
}

const e = encodeURIComponent;

/** What changes from run to run whatever the name: times, generated ids, timings. */
function stable(text: string): string {
  return text
    .replace(/"(created_at|updated_at|search_time_ms|processing_time_ms)":\d+/g, '"$1":0')
    .replace(/"(text_match|best_field_score|score)":"?\d+"?/g, '"$1":0')
    .replace(/"value":"[A-Za-z0-9]{32}"/g, '"value":""')
    .replace(/"value_prefix":"[A-Za-z0-9]{4}"/g, '"value_prefix":""')
    .replace(/"id":\d+/g, '"id":0');
}

type Step = [label: string, run: () => Promise<Answer>];

async function transcript(steps: Step[]): Promise<string[]> {
  const out: string[] = [];
  for (const [label, run] of steps) {
    const a = await run();
    out.push(`${label} -> ${a.status} ${stable(a.text)}`);
  }
  return out;
}

/** A transcript line with `n` (as given, URL-encoded, or as a token) read as the ordinary name. */
function swap(line: string, n: string): string {
  // (a word's token: `__proto__` is `proto` unless `_` is one of the collection's symbols,
  // and a facet_query marks that token inside the value)
  const token = n.toLowerCase().replace(/_/g, '');
  if (token !== n && n.includes(token)) line = line.split(n.replace(token, `<mark>${token}</mark>`)).join(`<mark>${ORDINARY}</mark>`);
  for (const form of [n, e(n), n.toLowerCase(), token]) line = line.split(form).join(ORDINARY);
  return line;
}

/** JSON text of an object with these own keys, in order (`{__proto__: v}` in a literal would set the prototype instead). */
function obj(...entries: Array<[string, unknown]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v instanceof Raw ? v.text : JSON.stringify(v)}`).join(',')}}`;
}

/** JSON text nested as is by `obj`. */
class Raw {
  constructor(readonly text: string) {}
}
const raw = (text: string) => new Raw(text);

/**
 * Runs the scenario `steps(name)` with the ordinary name, then with each prototype name, and
 * expects each prototype name's transcript to be the ordinary one with the name swapped.
 * Returns the ordinary transcript (for checks of its own).
 */
async function sameAsOrdinary(steps: (name: string) => Step[], names = NAMES): Promise<string[]> {
  const reference = await transcript(steps(ORDINARY));
  expect(reference.filter((l) => / -> 5\d\d /.test(l))).toEqual([]);
  const got: Array<{ name: string; transcript: string[] }> = [];
  for (const n of names) got.push({ name: n, transcript: (await transcript(steps(n))).map((l) => swap(l, n)) });
  expect(got).toEqual(names.map((n) => ({ name: n, transcript: reference })));
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeBefore);
  return reference;
}

function statusOf(transcriptLine: string): number {
  return Number(/ -> (\d+) /.exec(transcriptLine)![1]);
}

beforeAll(async () => {
  llm = await new FakeLlm().start();
  server = await startServer(
    { dataDir: dirWithTinyModel(), apiKey: ADMIN, address: '127.0.0.1', port: 0, logLevel: 'silent', analytics: { enabled: true } },
    { engine: { merges: 'inline' } },
  );
  expect((await call('POST', '/collections', { name: 'books', fields: [{ name: 'title', type: 'string' }, { name: 'year', type: 'int32', facet: true }] })).status).toBe(201);
  expect((await call('POST', '/collections', { name: 'queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] })).status).toBe(201);
  for (const d of [
    { id: 'b1', title: 'The red book', year: 1990 },
    { id: 'b2', title: 'A blue book', year: 2000 },
  ]) {
    expect((await call('POST', '/collections/books/documents', d)).status).toBe(201);
  }
});

afterAll(async () => {
  await server?.stop();
  await llm?.stop();
});

describe('resources named like Object.prototype members', () => {
  it('are analytics rules like any other: 404 while absent, then created, read, replaced and deleted', async () => {
    const rule = { type: 'popular_queries', params: { source: { collections: ['books'] }, destination: { collection: 'queries' } } };
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/analytics/rules/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/analytics/rules/${e(n)}`)],
      ['create', () => call('POST', '/analytics/rules', { name: n, ...rule })],
      ['create again', () => call('POST', '/analytics/rules', { name: n, ...rule })],
      ['get', () => call('GET', `/analytics/rules/${e(n)}`)],
      ['replace', () => call('PUT', `/analytics/rules/${e(n)}`, { ...rule, params: { ...rule.params, limit: 5 } })],
      ['get replaced', () => call('GET', `/analytics/rules/${e(n)}`)],
      ['delete', () => call('DELETE', `/analytics/rules/${e(n)}`)],
      ['get deleted', () => call('GET', `/analytics/rules/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 201, 409, 200, 200, 200, 200, 404]);
  });

  it('are collections like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/collections/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/collections/${e(n)}`)],
      ['search absent', () => call('GET', `/collections/${e(n)}/documents/search?q=*`)],
      ['create', () => call('POST', '/collections', { name: n, fields: [{ name: 'title', type: 'string' }] })],
      ['create again', () => call('POST', '/collections', { name: n, fields: [{ name: 'title', type: 'string' }] })],
      ['add a document', () => call('POST', `/collections/${e(n)}/documents`, { id: 'd1', title: 'a red door' })],
      ['search', () => call('GET', `/collections/${e(n)}/documents/search?q=red&query_by=title`)],
      ['get', () => call('GET', `/collections/${e(n)}`)],
      ['delete', () => call('DELETE', `/collections/${e(n)}`)],
      ['get deleted', () => call('GET', `/collections/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 404, 201, 409, 201, 200, 200, 200, 404]);
  });

  it('are collections an API key is scoped to like any other', async () => {
    const keyed = (key: string, path: string) => fetch(`${server.url}${path}`, { headers: { 'x-typesense-api-key': key } }).then(async (r) => ({ status: r.status, text: await r.text() }));
    let key = '';
    const lines = await sameAsOrdinary((n) => [
      ['create', () => call('POST', '/collections', { name: n, fields: [{ name: 'title', type: 'string' }] })],
      [
        'key',
        async () => {
          const r = await call('POST', '/keys', { description: 'scoped', actions: ['documents:search', 'documents:get'], collections: [n] });
          key = JSON.parse(r.text).value;
          return r;
        },
      ],
      ['search it', () => keyed(key, `/collections/${e(n)}/documents/search?q=*`)],
      ['search another', () => keyed(key, '/collections/books/documents/search?q=*')],
      ['get its document', () => keyed(key, `/collections/${e(n)}/documents/x`)],
      ['delete', () => call('DELETE', `/collections/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([201, 201, 200, 401, 404, 200]);
  });

  it('are aliases like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/aliases/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/aliases/${e(n)}`)],
      ['create', () => call('PUT', `/aliases/${e(n)}`, { collection_name: 'books' })],
      ['get', () => call('GET', `/aliases/${e(n)}`)],
      ['search through it', () => call('GET', `/collections/${e(n)}/documents/search?q=red&query_by=title`)],
      ['delete', () => call('DELETE', `/aliases/${e(n)}`)],
      ['get deleted', () => call('GET', `/aliases/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 200, 200, 200, 200, 404]);
  });

  it('are presets like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/presets/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/presets/${e(n)}`)],
      ['search with it absent', () => call('GET', `/collections/books/documents/search?q=red&preset=${e(n)}`)],
      ['create', () => call('PUT', `/presets/${e(n)}`, { value: { query_by: 'title', per_page: 1 } })],
      ['get', () => call('GET', `/presets/${e(n)}`)],
      ['search with it', () => call('GET', `/collections/books/documents/search?q=book&preset=${e(n)}`)],
      ['delete', () => call('DELETE', `/presets/${e(n)}`)],
      ['get deleted', () => call('GET', `/presets/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 400, 200, 200, 200, 200, 404]);
  });

  it('are stopword sets like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/stopwords/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/stopwords/${e(n)}`)],
      ['create', () => call('PUT', `/stopwords/${e(n)}`, { stopwords: ['red'] })],
      ['get', () => call('GET', `/stopwords/${e(n)}`)],
      ['search with it', () => call('GET', `/collections/books/documents/search?q=red+book&query_by=title&stopwords=${e(n)}`)],
      ['delete', () => call('DELETE', `/stopwords/${e(n)}`)],
      ['get deleted', () => call('GET', `/stopwords/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 200, 200, 200, 200, 404]);
  });

  it("are a collection's synonyms and overrides like any other", async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get synonym absent', () => call('GET', `/collections/books/synonyms/${e(n)}`)],
      ['delete synonym absent', () => call('DELETE', `/collections/books/synonyms/${e(n)}`)],
      ['create synonym', () => call('PUT', `/collections/books/synonyms/${e(n)}`, { synonyms: ['red', 'crimson'] })],
      ['get synonym', () => call('GET', `/collections/books/synonyms/${e(n)}`)],
      ['search with it', () => call('GET', '/collections/books/documents/search?q=crimson&query_by=title')],
      ['delete synonym', () => call('DELETE', `/collections/books/synonyms/${e(n)}`)],
      ['get override absent', () => call('GET', `/collections/books/overrides/${e(n)}`)],
      ['create override', () => call('PUT', `/collections/books/overrides/${e(n)}`, { rule: { query: 'book', match: 'exact' }, includes: [{ id: 'b2', position: 1 }] })],
      ['get override', () => call('GET', `/collections/books/overrides/${e(n)}`)],
      ['search with it', () => call('GET', '/collections/books/documents/search?q=book&query_by=title')],
      ['delete override', () => call('DELETE', `/collections/books/overrides/${e(n)}`)],
      ['get override deleted', () => call('GET', `/collections/books/overrides/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 200, 200, 200, 200, 404, 200, 200, 200, 200, 404]);
  });

  it('are synonym sets, curation sets and their items like any other', async () => {
    const steps = (n: string): Step[] => {
      const out: Step[] = [];
      for (const [kind, item] of [
        ['synonym_sets', { synonyms: ['red', 'crimson'] }],
        ['curation_sets', { rule: { query: 'book', match: 'exact' }, includes: [{ id: 'b2', position: 1 }] }],
      ] as const) {
        const set = `/${kind}/${e(n)}`;
        out.push(
          [`${kind} get absent`, () => call('GET', set)],
          [`${kind} delete absent`, () => call('DELETE', set)],
          [`${kind} items absent`, () => call('GET', `${set}/items`)],
          [`${kind} item absent`, () => call('GET', `${set}/items/${e(n)}`)],
          [`${kind} create`, () => call('PUT', set, { items: [{ id: n, ...item }] })],
          [`${kind} get`, () => call('GET', set)],
          [`${kind} item`, () => call('GET', `${set}/items/${e(n)}`)],
          [`${kind} link`, () => call('PATCH', '/collections/books', { [kind]: [n] })],
          [`${kind} search`, () => call('GET', '/collections/books/documents/search?q=crimson+book&query_by=title&drop_tokens_threshold=0')],
          [`${kind} unlink`, () => call('PATCH', '/collections/books', { [kind]: [] })],
          [`${kind} delete item`, () => call('DELETE', `${set}/items/${e(n)}`)],
          [`${kind} item deleted`, () => call('GET', `${set}/items/${e(n)}`)],
          [`${kind} put item`, () => call('PUT', `${set}/items/${e(n)}`, item)],
          [`${kind} delete`, () => call('DELETE', set)],
          [`${kind} get deleted`, () => call('GET', set)],
        );
      }
      return out;
    };
    const lines = await sameAsOrdinary(steps);
    expect(lines.map(statusOf)).toEqual([...[404, 404, 404, 404, 200, 200, 200, 200, 200, 200, 200, 404, 200, 200, 404], ...[404, 404, 404, 404, 200, 200, 200, 200, 200, 200, 200, 404, 200, 200, 404]]);
  });

  it('are conversation and natural-language search models like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['conversation model absent', () => call('GET', `/conversations/models/${e(n)}`)],
      ['update absent', () => call('PUT', `/conversations/models/${e(n)}`, { system_prompt: 'x' })],
      ['delete absent', () => call('DELETE', `/conversations/models/${e(n)}`)],
      ['create', () => call('POST', '/conversations/models', { id: n, model_name: 'openai/gpt-test', api_key: LLM_KEY, openai_url: llm.url, max_bytes: 16000 })],
      ['get', () => call('GET', `/conversations/models/${e(n)}`)],
      ['update', () => call('PUT', `/conversations/models/${e(n)}`, { system_prompt: 'Be brief.' })],
      ['delete', () => call('DELETE', `/conversations/models/${e(n)}`)],
      ['get deleted', () => call('GET', `/conversations/models/${e(n)}`)],
      ['conversation absent', () => call('GET', `/conversations/${e(n)}`)],
      ['delete conversation absent', () => call('DELETE', `/conversations/${e(n)}`)],
      ['nl model absent', () => call('GET', `/nl_search_models/${e(n)}`)],
      ['nl create', () => call('POST', '/nl_search_models', { id: n, model_name: 'openai/gpt-test', api_key: LLM_KEY, api_url: llm.url, max_bytes: 16000 })],
      ['nl get', () => call('GET', `/nl_search_models/${e(n)}`)],
      ['nl update', () => call('PUT', `/nl_search_models/${e(n)}`, { model_name: 'openai/gpt-test', temperature: 0.5 })],
      ['nl delete', () => call('DELETE', `/nl_search_models/${e(n)}`)],
      ['nl get deleted', () => call('GET', `/nl_search_models/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 404, 200, 200, 200, 200, 404, 404, 404, 404, 200, 200, 200, 200, 404]);
  });

  it('are stemming dictionaries and API key ids like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['dictionary absent', () => call('GET', `/stemming/dictionaries/${e(n)}`)],
      ['delete absent', () => call('DELETE', `/stemming/dictionaries/${e(n)}`)],
      ['import', () => call('POST', `/stemming/dictionaries/import?id=${e(n)}`, '{"word":"books","root":"book"}')],
      ['get', () => call('GET', `/stemming/dictionaries/${e(n)}`)],
      ['delete', () => call('DELETE', `/stemming/dictionaries/${e(n)}`)],
      ['get deleted', () => call('GET', `/stemming/dictionaries/${e(n)}`)],
      ['key absent', () => call('GET', `/keys/${e(n)}`)],
      ['delete key absent', () => call('DELETE', `/keys/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 200, 200, 200, 404, 404, 404]);
  });

  it('are document ids like any other', async () => {
    const lines = await sameAsOrdinary((n) => [
      ['get absent', () => call('GET', `/collections/books/documents/${e(n)}`)],
      ['update absent', () => call('PATCH', `/collections/books/documents/${e(n)}`, { title: 'x' })],
      ['delete absent', () => call('DELETE', `/collections/books/documents/${e(n)}`)],
      ['create', () => call('POST', '/collections/books/documents', { id: n, title: 'a green book', year: 2010 })],
      ['get', () => call('GET', `/collections/books/documents/${e(n)}`)],
      ['update', () => call('PATCH', `/collections/books/documents/${e(n)}`, { year: 2011 })],
      ['filter by it', () => call('GET', `/collections/books/documents/search?q=*&filter_by=${e(`id:${n}`)}`)],
      ['delete', () => call('DELETE', `/collections/books/documents/${e(n)}`)],
      ['import', () => call('POST', '/collections/books/documents/import?action=upsert', JSON.stringify({ id: n, title: 'a green book', year: 2012 }))],
      ['export', () => call('GET', `/collections/books/documents/export?filter_by=${e(`id:${n}`)}`)],
      ['delete by filter', () => call('DELETE', `/collections/books/documents?filter_by=${e(`id:${n}`)}`)],
      ['get deleted', () => call('GET', `/collections/books/documents/${e(n)}`)],
    ]);
    expect(lines.map(statusOf)).toEqual([404, 404, 404, 201, 200, 200, 200, 200, 200, 200, 200, 404]);
  });
});

describe('fields named like Object.prototype members', () => {
  it('are schema fields like any other: indexed, searched, sorted, faceted, grouped, projected, highlighted, updated, dropped and added back', async () => {
    const lines = await sameAsOrdinary((n) => {
      const c = `f_${n}`;
      const docs = (c: string) => `/collections/${e(c)}/documents`;
      const search = (q: string) => call('GET', `${docs(c)}/search?${q}`);
      return [
        ['create', () => call('POST', '/collections', { name: c, fields: [{ name: n, type: 'string', facet: true, sort: true, optional: true }, { name: 'title', type: 'string' }] })],
        ['create with it required', () => call('POST', '/collections', { name: `r_${n}`, fields: [{ name: n, type: 'string' }, { name: 'title', type: 'string', optional: true }] })],
        ['a document without the required field', () => call('POST', docs(`r_${n}`), { id: 'r1', title: 'one' })],
        ['a document with a null required field', () => call('POST', docs(`r_${n}`), obj(['id', 'r1'], [n, null]))],
        ['a document with it', () => call('POST', docs(`r_${n}`), obj(['id', 'r1'], [n, 'alpha']))],
        ['add', () => call('POST', docs(c), obj(['id', 'd1'], [n, 'alpha beta'], ['title', 'one']))],
        ['add without it', () => call('POST', docs(c), { id: 'd2', title: 'two' })],
        ['add with it null', () => call('POST', docs(c), obj(['id', 'd5'], ['title', 'five'], [n, null]))],
        ['add with a wrong type', () => call('POST', `${docs(c)}?dirty_values=coerce_or_drop`, obj(['id', 'd6'], ['title', 'six'], [n, { a: 1 }]))],
        ['import', () => call('POST', `${docs(c)}/import`, [obj(['id', 'd3'], [n, 'gamma'], ['title', 'three']), obj(['id', 'd4'], ['title', 'four'], [n, 'alpha'])].join('\n'))],
        ['query_by', () => search(`q=alpha&query_by=${e(n)}`)],
        ['query_by with weights and full highlights', () => search(`q=alpha&query_by=${e(n)},title&query_by_weights=2,1&highlight_full_fields=${e(n)}`)],
        ['sort_by', () => search(`q=*&sort_by=${e(n)}:desc`)],
        ['facet_by', () => search(`q=*&facet_by=${e(n)}`)],
        ['facet_query', () => search(`q=*&facet_by=${e(n)}&facet_query=${e(`${n}:gam`)}`)],
        ['group_by', () => search(`q=*&group_by=${e(n)}`)],
        ['include_fields', () => search(`q=*&include_fields=${e(n)}`)],
        ['exclude_fields', () => search(`q=*&exclude_fields=${e(n)}`)],
        ['filter_by', () => search(`q=*&filter_by=${e(`${n}:alpha`)}`)],
        ['highlight_fields', () => search(`q=one&query_by=title&highlight_fields=${e(n)},title`)],
        ['get', () => call('GET', `${docs(c)}/d1`)],
        ['update', () => call('PATCH', `${docs(c)}/d2`, obj([n, 'delta']))],
        ['get updated', () => call('GET', `${docs(c)}/d2`)],
        ['update by filter', () => call('PATCH', `${docs(c)}?filter_by=${e(`${n}:delta`)}`, obj([n, 'epsilon']))],
        ['export', () => call('GET', `${docs(c)}/export`)],
        ['export include_fields', () => call('GET', `${docs(c)}/export?include_fields=${e(n)}`)],
        ['export exclude_fields', () => call('GET', `${docs(c)}/export?exclude_fields=${e(n)}`)],
        ['drop it', () => call('PATCH', `/collections/${e(c)}`, { fields: [{ name: n, drop: true }] })],
        ['query_by the dropped field', () => search(`q=alpha&query_by=${e(n)}`)],
        ['add it back', () => call('PATCH', `/collections/${e(c)}`, { fields: [{ name: n, type: 'string', facet: true, optional: true }] })],
        ['facet_by it again', () => search(`q=*&facet_by=${e(n)}`)],
        ['schema', () => call('GET', `/collections/${e(c)}`)],
        ['another', () => call('POST', '/collections', { name: `u_${n}`, fields: [{ name: 'title', type: 'string' }] })],
        ['add to it', () => call('POST', docs(`u_${n}`), { id: 'u1', title: 'one' })],
        ['add a required unstored image the documents lack', () => call('PATCH', `/collections/u_${e(n)}`, { fields: [{ name: n, type: 'image', store: false }] })],
        ['delete that one', () => call('DELETE', `/collections/u_${e(n)}`)],
        ['delete', () => call('DELETE', `/collections/${e(c)}`)],
        ['delete the other', () => call('DELETE', `/collections/r_${e(n)}`)],
      ];
    });
    expect(lines.filter((l) => / -> [45]\d\d /.test(l)).map((l) => l.split(' -> ')[0])).toEqual([
      'a document without the required field',
      'a document with a null required field',
      'query_by the dropped field',
      'add a required unstored image the documents lack',
    ]);
  });

  it('are keys of nested objects like any other, and never reach Object.prototype', async () => {
    const lines = await sameAsOrdinary((n) => {
      const c = `n_${n}`;
      const docs = `/collections/${e(c)}/documents`;
      const search = (q: string) => call('GET', `${docs}/search?${q}`);
      const lines = [
        obj(['id', 'd1'], [n, raw(obj([n, 'x ray'], ['y', 1], ['polluted', 'yes']))], ['t', 'one']),
        obj(['id', 'd2'], ['o', raw(obj([n, raw(obj([n, 2]))]))], ['t', 'two']),
        obj(['id', 'd3'], ['arr', [JSON.parse(obj([n, 'zed']))]], ['t', 'three']),
        obj(['id', 'd4'], [n, 'not an object'], ['t', 'four']),
      ];
      return [
        ['create', () => call('POST', '/collections', { name: c, fields: [{ name: '.*', type: 'auto' }], enable_nested_fields: true })],
        ['import', () => call('POST', `${docs}/import`, lines.join('\n'))],
        ['schema', () => call('GET', `/collections/${e(c)}`)],
        ['filter on a child', () => search(`q=*&filter_by=${e(`${n}.y:1`)}`)],
        ['filter on a grandchild', () => search(`q=*&filter_by=${e(`o.${n}.${n}:2`)}`)],
        ['query_by a child', () => search(`q=ray&query_by=${e(`${n}.${n}`)}`)],
        ['query_by two children', () => search(`q=yes&query_by=${e(`${n}.polluted,${n}.${n}`)}`)],
        ['query_by a child of an array', () => search(`q=zed&query_by=${e(`arr.${n}`)}`)],
        ['include a child', () => search(`q=*&include_fields=${e(`${n}.${n}`)}`)],
        ['include the parent', () => search(`q=*&include_fields=${e(n)}`)],
        ['exclude a child', () => search(`q=*&exclude_fields=${e(`${n}.y`)}`)],
        ['exclude a grandchild', () => search(`q=*&exclude_fields=${e(`o.${n}.${n}`)}`)],
        ['sort by a child', () => search(`q=*&sort_by=${e(`${n}.y:desc`)}`)],
        ['update a child', () => call('PATCH', `${docs}/d1`, obj([n, raw(obj([n, 'gamma ray']))]))],
        ['get', () => call('GET', `${docs}/d1`)],
        ['export', () => call('GET', `${docs}/export`)],
        ['export a child', () => call('GET', `${docs}/export?include_fields=${e(`${n}.${n}`)}`)],
        ['delete', () => call('DELETE', `/collections/${e(c)}`)],
      ];
    });
    expect(lines.filter((l) => / -> 5\d\d /.test(l))).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('are geopoint, vector, embedding and reference fields like any other', async () => {
    await sameAsOrdinary((n) => {
      const search = (c: string, q: string) => call('GET', `/collections/${e(c)}/documents/search?${q}`);
      const add = (c: string, ...docs: string[]) => call('POST', `/collections/${e(c)}/documents/import`, docs.join('\n'));
      const create = (c: string, fields: unknown[]) => call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }, ...fields] });
      const [g, v, m, j, k] = ['g', 'v', 'm', 'j', 'k'].map((p) => `${p}_${n}`) as [string, string, string, string, string];
      const a = n; // a collection named n
      return [
        ['geopoint', () => create(g, [{ name: n, type: 'geopoint' }])],
        ['add', () => add(g, obj(['id', 'd1'], ['title', 'a red door'], [n, [48.85, 2.35]]), obj(['id', 'd2'], ['title', 'a blue door'], [n, [51.5, -0.12]]))],
        ['sort by distance', () => search(g, `q=*&sort_by=${e(`${n}(48.85,2.35):asc`)}`)],
        ['filter by distance', () => search(g, `q=*&filter_by=${e(`${n}:(48.85,2.35,10 km)`)}`)],
        ['vector', () => create(v, [{ name: n, type: 'float[]', num_dim: 2 }])],
        ['add', () => add(v, obj(['id', 'd1'], ['title', 'a red door'], [n, [1, 0]]), obj(['id', 'd2'], ['title', 'a blue door'], [n, [0, 1]]))],
        ['vector query', () => search(v, `q=*&vector_query=${e(`${n}:([1,0.1], k:2)`)}`)],
        ['get', () => call('GET', `/collections/${e(v)}/documents/d1`)],
        ['export', () => call('GET', `/collections/${e(v)}/documents/export`)],
        ['embedding', () => create(m, [{ name: n, type: 'float[]', embed: { from: ['title'], model_config: { model_name: 'tiny' } } }])],
        ['add', () => add(m, obj(['id', 'd1'], ['title', 'a red door']), obj(['id', 'd2'], ['title', 'a blue door']))],
        ['semantic query', () => search(m, `q=red&query_by=${e(n)}&exclude_fields=${e(n)}`)],
        ['embedding dimensions', () => call('GET', `/collections/${e(m)}/documents/d1`).then((r) => ({ status: r.status, text: String((JSON.parse(r.text) as Record<string, unknown[]>)[n]?.length) }))],
        // a reference field named n, and references to a collection named n
        ['authors', () => create(a, [{ name: n, type: 'string' }])],
        ['an author', () => add(a, obj(['id', 'a1'], ['title', 'Ann'], [n, 'x']))],
        ['references', () => create(j, [{ name: n, type: 'string', reference: `${a}.id` }])],
        ['add', () => add(j, obj(['id', 'd1'], ['title', 'a red door'], [n, 'a1']))],
        ['filter by the reference', () => search(j, `q=*&filter_by=${e(`$${a}(id:a1)`)}&include_fields=${e(`title,${n}`)}`)],
        ['references to it', () => create(k, [{ name: 'ref', type: 'string', reference: `${a}.id` }])],
        ['add', () => add(k, obj(['id', 'd1'], ['title', 'a blue door'], ['ref', 'a1']))],
        ['join', () => search(k, `q=*&include_fields=${e(`title,$${a}(title)`)}`)],
        ['join merged', () => search(k, `q=*&include_fields=${e(`title,$${a}(${n}, strategy: merge)`)}`)],
        ['get joined', () => call('GET', `/collections/${e(k)}/documents/d1?include_fields=${e(`$${a}(*)`)}`)],
        ...[g, v, m, j, k, a].map((c): Step => [`delete ${c}`, () => call('DELETE', `/collections/${e(c)}`)]),
      ];
    });
  });

  it('are document keys that conversational search shows the model like any other', async () => {
    await sameAsOrdinary((n) => {
      const c = `rag_${n}`;
      const model = `model_${n}`;
      return [
        ['create', () => call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }, { name: n, type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['title', n], model_config: { model_name: 'tiny' } } }] })],
        ['add', () => call('POST', `/collections/${e(c)}/documents`, obj(['id', 'd1'], ['title', 'a red door'], [n, 'opens inwards']))],
        ['model', () => call('POST', '/conversations/models', { id: model, model_name: 'openai/gpt-test', api_key: LLM_KEY, openai_url: llm.url, max_bytes: 16000 })],
        ['ask', () => call('POST', `/multi_search?q=door&conversation=true&conversation_model_id=${e(model)}`, { searches: [{ collection: c, query_by: 'emb', exclude_fields: 'emb' }] }).then((r) => ({ status: r.status, text: '' }))],
        ['context shown', async () => ({ status: 200, text: llm.calls[llm.calls.length - 1]!.prompt.split('\n').filter((l) => l.startsWith('{')).join('\n') })],
        ['delete model', () => call('DELETE', `/conversations/models/${e(model)}`)],
        ['delete', () => call('DELETE', `/collections/${e(c)}`)],
      ];
    });
  });

  it('are counter fields and event names of analytics rules like any other', async () => {
    await sameAsOrdinary((n) => {
      const c = `p_${n}`;
      const rule = { type: 'counter', params: { source: { collections: [c], events: [{ type: 'click', weight: 3, name: n }] }, destination: { collection: c, counter_field: n } } };
      return [
        ['create', () => call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }, { name: n, type: 'int32', optional: true }] })],
        ['add', () => call('POST', `/collections/${e(c)}/documents`, { id: 'd1', title: 'one' })],
        ['rule', () => call('PUT', `/analytics/rules/${e(`r_${n}`)}`, rule)],
        ['event', () => call('POST', '/analytics/events', { type: 'click', name: n, data: { doc_id: 'd1', user_id: 'u1' } })],
        ['flush', () => call('POST', '/analytics/flush')],
        ['counted', () => call('GET', `/collections/${e(c)}/documents/d1`)],
        ['delete rule', () => call('DELETE', `/analytics/rules/${e(`r_${n}`)}`)],
        ['delete', () => call('DELETE', `/collections/${e(c)}`)],
      ];
    });
  });
});

describe('words that are Object.prototype member names', () => {
  it('are query words, facet values, filter values, group keys, synonyms, stopwords, curation queries and stemming entries like any other', async () => {
    await sameAsOrdinary((n) => {
      const steps: Step[] = [];
      // `symbols`: `_` is a symbol of the collection, so `__proto__` stays one token (stopwords,
      // stemming dictionaries and facet_query read words without the collection's symbols)
      for (const symbols of [false, true]) {
        const c = `${symbols ? 'ws' : 'w'}_${n}`;
        const docs = `/collections/${e(c)}/documents`;
        const search = (q: string) => call('GET', `${docs}/search?${q}`);
        const fields = [{ name: 'title', type: 'string' }, { name: 'tag', type: 'string', facet: true }, { name: 'tags', type: 'string[]', facet: true }];
        const lines = [
          { id: 'd1', title: `the ${n} volume`, tag: n, tags: [n], stemmed: n },
          { id: 'd2', title: 'zzword volume', tag: 'zzplain', tags: ['zzother'] },
          { id: 'd3', title: n, tag: n, tags: [n, 'zzother', n] },
        ].map((d) => JSON.stringify(d));
        steps.push(
          [`${c} create`, () => call('POST', '/collections', { name: c, fields: [...fields, { name: 'stemmed', type: 'string', optional: true, ...(symbols ? {} : { stem_dictionary: `st_${n}` }) }], ...(symbols ? { symbols_to_index: ['_'] } : {}) })],
          [`${c} import`, () => call('POST', `${docs}/import`, lines.join('\n'))],
          [`${c} query word`, () => search(`q=${e(n)}&query_by=title`)],
          [`${c} query word with a typo`, () => search(`q=${e(n)}x&query_by=title&num_typos=1`)],
          [`${c} facets`, () => search('q=*&facet_by=tag,tags')],
          [`${c} exact filter`, () => search(`q=*&filter_by=${e(`tag:=${n}`)}`)],
          [`${c} array filter`, () => search(`q=*&filter_by=${e(`tags:=[${n},zzother]`)}`)],
          [`${c} group`, () => search('q=*&group_by=tag')],
          [`${c} synonym`, () => call('PUT', `/collections/${e(c)}/synonyms/s1`, { synonyms: [n, 'zzbook'] })],
          [`${c} search a synonym`, () => search('q=zzbook&query_by=title')],
          [`${c} one-way synonym`, () => call('PUT', `/collections/${e(c)}/synonyms/s2`, { root: 'zzalias', synonyms: [n] })],
          [`${c} search a one-way synonym`, () => search('q=zzalias&query_by=title')],
          [`${c} override`, () => call('PUT', `/collections/${e(c)}/overrides/o1`, { rule: { query: n, match: 'exact' }, includes: [{ id: 'd2', position: 1 }] })],
          [`${c} search the override`, () => search(`q=${e(n)}&query_by=title`)],
        );
        if (!symbols) {
          steps.unshift(['dictionary', () => call('POST', `/stemming/dictionaries/import?id=${e(`st_${n}`)}`, [{ word: n, root: 'zzroot' }, { word: 'zzroot', root: 'zzroot' }].map((x) => JSON.stringify(x)).join('\n'))]);
          steps.push(
            [`${c} facet query`, () => search(`q=*&facet_by=tag&facet_query=${e(`tag:${n}`)}`)],
            [`${c} stemming dictionary`, () => search('q=zzroot&query_by=stemmed')],
            [`${c} stopwords`, () => call('PUT', `/stopwords/${e(`sw_${n}`)}`, { stopwords: [n] })],
            [`${c} search with stopwords`, () => search(`q=${e(`${n} volume`)}&query_by=title&stopwords=${e(`sw_${n}`)}`)],
            ['delete stopwords', () => call('DELETE', `/stopwords/${e(`sw_${n}`)}`)],
          );
        }
        steps.push([`${c} delete`, () => call('DELETE', `/collections/${e(c)}`)]);
      }
      steps.push(['delete dictionary', () => call('DELETE', `/stemming/dictionaries/${e(`st_${n}`)}`)]);
      return steps;
    });
  });
});

describe('attribute and parameter names that are Object.prototype member names', () => {
  it('are unknown attributes of request bodies like any other name, or kept as given where a body holds free keys', async () => {
    await sameAsOrdinary((n) => {
      const c = `k_${n}`;
      const rule = { type: 'popular_queries', params: { source: { collections: ['books'] }, destination: { collection: 'queries' } } };
      const override = { rule: { query: 'book', match: 'exact' }, includes: [{ id: 'b2', position: 1 }] };
      return [
        ['collection attribute', () => call('POST', '/collections', obj(['name', c], ['fields', [{ name: 'title', type: 'string' }]], [n, true]))],
        ['field attribute', () => call('POST', '/collections', { name: c, fields: [JSON.parse(obj(['name', 'title'], ['type', 'string'], [n, true]))] })],
        ['model_config attribute', () => call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }, { name: 'emb', type: 'float[]', embed: { from: ['title'], model_config: JSON.parse(obj(['model_name', 'tiny'], [n, 'x'])) } }] })],
        ['create', () => call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }] })],
        ['schema change attribute', () => call('PATCH', `/collections/${e(c)}`, obj([n, 1]))],
        ['changed field attribute', () => call('PATCH', `/collections/${e(c)}`, { fields: [JSON.parse(obj(['name', 'zz'], ['type', 'string'], ['optional', true], [n, true]))] })],
        ['document write parameter', () => call('POST', `/collections/${e(c)}/documents?${e(n)}=1`, { id: 'd1', title: 'one' })],
        ['search parameter', () => call('GET', `/collections/${e(c)}/documents/search?q=*&${e(n)}=1`)],
        ['multi_search parameter', () => call('POST', '/multi_search', { searches: [JSON.parse(obj(['collection', c], ['q', '*'], [n, 1]))] })],
        ['multi_search attribute', () => call('POST', '/multi_search', obj(['searches', [{ collection: c, q: '*' }]], [n, 1]))],
        ['preset attribute', () => call('PUT', `/presets/${e(`p_${n}`)}`, obj(['value', { q: '*' }], [n, 1]))],
        ['stopwords attribute', () => call('PUT', `/stopwords/${e(`s_${n}`)}`, obj(['stopwords', ['a']], [n, 1]))],
        ['synonym attribute', () => call('PUT', `/collections/${e(c)}/synonyms/s1`, obj(['synonyms', ['a', 'b']], [n, 1]))],
        ['override attribute', () => call('PUT', `/collections/${e(c)}/overrides/o1`, obj(['rule', override.rule], ['includes', override.includes], [n, 1]))],
        ['override rule attribute', () => call('PUT', `/collections/${e(c)}/overrides/o1`, obj(['rule', raw(obj(['query', 'book'], ['match', 'exact'], [n, 1]))], ['includes', override.includes]))],
        ['analytics rule attribute', () => call('PUT', `/analytics/rules/${e(`r_${n}`)}`, obj(['type', rule.type], ['params', rule.params], [n, 1]))],
        ['analytics params attribute', () => call('PUT', `/analytics/rules/${e(`r_${n}`)}`, obj(['type', rule.type], ['params', raw(obj(['source', rule.params.source], ['destination', rule.params.destination], [n, 1]))]))],
        ['key attribute', () => call('POST', '/keys', obj(['description', 'd'], ['actions', ['documents:search']], ['collections', ['*']], [n, 1]))],
        ['conversation model attribute', () => call('POST', '/conversations/models', obj(['id', `m_${n}`], ['model_name', 'openai/gpt-test'], ['api_key', LLM_KEY], ['openai_url', llm.url], ['max_bytes', 1000], [n, 1]))],
        ['nl model attribute', () => call('POST', '/nl_search_models', obj(['id', `m_${n}`], ['model_name', 'openai/gpt-test'], ['api_key', LLM_KEY], ['api_url', llm.url], [n, 1]))],
        ['event attribute', () => call('POST', '/analytics/events', obj(['type', 'click'], ['name', 'nope'], ['data', { doc_id: 'd1', user_id: 'u' }], [n, 1]))],
        ['delete', () => call('DELETE', `/collections/${e(c)}`)],
      ];
    });
  });

  it('are keys of metadata and preset parameters like any other, except `__proto__`, which the data directory cannot hold: refused with a 400 naming it', async () => {
    const c = 'free_keys';
    expect((await call('POST', '/collections', { name: c, fields: [{ name: 'title', type: 'string' }] })).status).toBe(201);
    expect((await call('POST', `/collections/${c}/documents`, { id: 'd1', title: 'one' })).status).toBe(201);
    const steps = (n: string): Step[] => [
      ['collection metadata', () => call('POST', '/collections', obj(['name', `m_${n}`], ['fields', [{ name: 'title', type: 'string' }]], ['metadata', raw(obj(['a', raw(obj([n, 1]))], ['y', 2]))]))],
      ['read the metadata', () => call('GET', `/collections/${e(`m_${n}`)}`)],
      ['change the metadata', () => call('PATCH', `/collections/${c}`, { metadata: JSON.parse(obj([n, 3])) })],
      ['read the changed metadata', () => call('GET', `/collections/${c}`)],
      ['preset parameter', () => call('PUT', `/presets/${e(`p_${n}`)}`, { value: JSON.parse(obj(['q', '*'], [n, 'x'])) })],
      ['read the preset', () => call('GET', `/presets/${e(`p_${n}`)}`)],
      ['search with the preset', () => call('GET', `/collections/${c}/documents/search?preset=${e(`p_${n}`)}`)],
      ['multi_search preset', () => call('PUT', `/presets/${e(`ms_${n}`)}`, { value: { searches: [JSON.parse(obj(['collection', c], ['q', '*'], [n, 'x']))] } })],
      ['override metadata', () => call('PUT', `/collections/${c}/overrides/${e(`o_${n}`)}`, { rule: { query: 'one', match: 'exact' }, includes: [{ id: 'd1', position: 1 }], metadata: JSON.parse(obj([n, 1])) })],
      ['read the override', () => call('GET', `/collections/${c}/overrides/${e(`o_${n}`)}`)],
      ['curation set metadata', () => call('PUT', `/curation_sets/${e(`cs_${n}`)}`, { items: [{ id: 'i1', rule: { query: 'one', match: 'exact' }, metadata: JSON.parse(obj([n, 1])) }] })],
      ['read the curation set', () => call('GET', `/curation_sets/${e(`cs_${n}`)}`)],
      ['delete', () => call('DELETE', `/collections/${e(`m_${n}`)}`)],
    ];
    await sameAsOrdinary(steps, NAMES.filter((n) => n !== '__proto__'));
    const refused = (await transcript(steps('__proto__'))).filter((l) => / -> 400 /.test(l));
    expect(refused).toEqual([
      'collection metadata -> 400 {"message":"`metadata.a.__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
      'change the metadata -> 400 {"message":"`metadata.__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
      'preset parameter -> 400 {"message":"`value.__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
      'search with the preset -> 400 {"message":"preset `p___proto__` not found"}',
      'multi_search preset -> 400 {"message":"`value.searches[0].__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
      'override metadata -> 400 {"message":"`metadata.__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
      'curation set metadata -> 400 {"message":"items[0] (`i1`): `metadata.__proto__`: an object key named `__proto__` cannot be stored; use another name"}',
    ]);
  });

  it('are parameters a scoped key embeds like any other name (an unknown one, whose object is no set of parameters)', async () => {
    const { generateScopedSearchKey } = await import('../src/keys/scoped.js');
    const parent = JSON.parse((await call('POST', '/keys', { description: 'search', actions: ['documents:search'], collections: ['*'] })).text).value as string;
    const search = (embedded: string) =>
      fetch(`${server.url}/collections/books/documents/search?q=*`, { headers: { 'x-typesense-api-key': generateScopedSearchKey(parent, JSON.parse(embedded)) } }).then(async (r) => ({ status: r.status, text: await r.text() }));
    const lines = await sameAsOrdinary((n) => [
      ['embedded parameter', () => search(obj([n, 'x'], ['filter_by', 'year:>1995']))],
      ['embedded object', () => search(obj([n, raw(obj(['filter_by', 'year:>1995'], ['per_page', 1]))]))],
    ]);
    expect(lines.map((l) => JSON.parse(l.split(' -> 200 ')[1]!).found)).toEqual([1, 2]);
  });
});

describe('the command line with names like Object.prototype members', () => {
  it('answers a missing resource with the one-line not-found error, and keeps a rule of that name like any other', async () => {
    const dir = `${tmpDir('proto-cli-')}/data`;
    const created = await cli(['collections', 'create', '-d', dir], { input: JSON.stringify({ name: 'books', fields: [{ name: 'title', type: 'string' }] }) });
    expect(created.code).toBe(0);
    await cli(['collections', 'create', '-d', dir], { input: JSON.stringify({ name: 'queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] }) });
    const absent = (n: string): string[][] => [
      ['collections', 'get', n],
      ['documents', 'get', 'books', n],
      ['stopwords', 'get', n],
      ['presets', 'get', n],
      ['analytics', 'rules', 'get', n],
      ['synonyms', 'get', '--set', n],
    ];
    const rule = JSON.stringify({ type: 'popular_queries', params: { source: { collections: ['books'] }, destination: { collection: 'queries' } } });
    const cycle = (n: string): string[][] => [['analytics', 'rules', 'put', n], ['analytics', 'rules', 'get', n], ['analytics', 'rules', 'delete', n], ['analytics', 'rules', 'get', n]];
    const line = (args: string[], r: { code: number; stdout: string; stderr: string }) => `${args.join(' ')} -> ${r.code} ${r.stderr}${r.stdout}`;
    // (each spawn is a cold start: three of the names, the reads of every name four at a time,
    // and each name's rule created, read and deleted beside the others')
    const cliNames = ['__proto__', 'constructor', 'toString'];
    const names = [ORDINARY, ...cliNames];
    const reads = names.flatMap((n) => absent(n).map((args) => ({ n, args })));
    const got = new Map<string, string[]>(names.map((n) => [n, []]));
    for (let i = 0; i < reads.length; i += 4) {
      const batch = reads.slice(i, i + 4);
      const rs = await Promise.all(batch.map(({ args }) => cli([...args, '-d', dir])));
      rs.forEach((r, k) => got.get(batch[k]!.n)!.push(swap(line(batch[k]!.args, r), batch[k]!.n)));
    }
    await Promise.all(
      names.map(async (n) => {
        for (const args of cycle(n)) got.get(n)!.push(swap(line(args, await cli([...args, '-d', dir], { input: rule })), n));
      }),
    );
    const reference = got.get(ORDINARY)!;
    // a preset parameter given as a flag: kept, or for `__proto__` refused (see the HTTP test above)
    const preset = await cli(['presets', 'put', 'p', '--param', '__proto__=x', '-d', dir]);
    expect([preset.code, preset.stderr]).toEqual([1, 'error: `value.__proto__`: an object key named `__proto__` cannot be stored; use another name\n']);
    // every absent name: exit 1 and one line on stderr, naming what was not found
    for (const l of reference.slice(0, absent(ORDINARY).length)) expect(l).toMatch(/ -> 1 error: [^\n]*\bnot found\b[^\n]*\n$/);
    expect(reference.slice(absent(ORDINARY).length).map((l) => l.split(' -> ')[1]!.slice(0, 1))).toEqual(['0', '0', '0', '1']);
    expect(cliNames.map((n) => ({ name: n, transcript: got.get(n) }))).toEqual(cliNames.map((n) => ({ name: n, transcript: reference })));
  }, 240_000);
});

describe('cluster commands with fields named like Object.prototype members', () => {
  it('leave out the `store: false` values a document has, and only those, whatever the field is named', async () => {
    const engine = openEngine();
    const image = b64(pngBytes(4, 4, solid(RED)));
    const outcome = async (n: string) => {
      const c = `u_${n}`;
      await engine.createCollection({ name: c, fields: [{ name: 'title', type: 'string' }, { name: n, type: 'image', store: false, optional: true }] });
      const ops: BatchOp[] = [
        { kind: 'write', action: 'create', doc: { id: 'without', title: 'x' } },
        { kind: 'write', action: 'create', doc: JSON.parse(obj(['id', 'with'], ['title', 'y'], [n, image])) },
      ];
      return swap(JSON.stringify(leaveOutUnstored(getSchema(engine.store, c), ops)), n);
    };
    const reference = await outcome(ORDINARY);
    expect(JSON.parse(reference)).toEqual([
      { kind: 'write', action: 'create', doc: { id: 'without', title: 'x' } },
      { kind: 'write', action: 'create', doc: { id: 'with', title: 'y', [ORDINARY]: true }, unstored: { [ORDINARY]: null } },
    ]);
    for (const n of NAMES) expect({ name: n, ops: await outcome(n) }).toEqual({ name: n, ops: reference });
    await engine.close();
  });
});
