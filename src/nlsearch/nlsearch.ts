/**
 * src/nlsearch/nlsearch.ts: natural-language search. With `nl_query=true` and `nl_model_id`,
 * an LLM turns a free-form query ("red shirts under 50, cheapest first") into `q`,
 * `filter_by` and `sort_by` for the collection, and the search runs with them.
 *
 *   the collection's fields (name, type, facet, sort) and facet values (top values of each
 *   facet field among the documents the request's own filter_by lets through, so a scoped
 *   key's filter also bounds what the LLM is shown), the syntax, the model's system_prompt
 *     -> LLM (one call) -> {"q": ..., "filter_by": ..., "sort_by": ...}
 *     -> augmented: generated q; request filter_by AND generated filter_by; the request's
 *        sort_by, else the generated one
 *     -> search; `parsed_nl_query: {parse_time_ms, generated_params, augmented_params}` in
 *        the response (`exclude_fields=parsed_nl_query` drops it)
 *
 * Any failure of the LLM step (provider error, timeout, an answer that is not the JSON asked
 * for, a filter or sort that is not valid for the collection) falls back to the plain
 * search with the request's own parameters, and `parsed_nl_query.error` says why. The
 * generated filter is combined with the request's only when the two parse, alone and
 * together, into exactly `request AND generated`: a generated filter can narrow a search,
 * never widen it past the request's (or a scoped key's) filter.
 *
 * Models (`/nl_search_models`): model_name (src/llm/config.ts), api_key (masked), api_url,
 * account_id, max_bytes (default NL_SEARCH_DEFAULTS.maxBytes), temperature, system_prompt
 * (appended to the generated instructions), timeout_ms.
 */
import { hiddenBy, type SearchScope } from '../query/scope.js';
import { NL_SEARCH_DEFAULTS } from '../defaults.js';
import type { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import { getSchema } from '../collection/catalog.js';
import { parseFieldList } from '../query/fields.js';
import { LlmError, type ChatClient, type ChatRequest } from '../llm/client.js';
import { checkTimeout, providerConfig } from '../llm/config.js';
import { clientFor, ModelRegistry, type ModelKind, type ModelRecord } from '../llm/registry.js';
import { parseFilter, type FilterNode } from '../query/filter.js';
import type { RawParams } from '../query/params.js';
import type { SearchResponse } from '../search/search.js';
import type { Store } from '../storage/store.js';
import type { Field } from '../schema/schema.js';
import { optionalString, positiveInt } from '../conversation/models.js';

export interface NlSearchModel extends ModelRecord {
  max_bytes: number;
  api_url?: string;
  account_id?: string;
  system_prompt?: string;
  temperature?: number;
  timeout_ms?: number;
}

export const NL_MODEL_KIND: ModelKind<NlSearchModel> = {
  area: 'nl_model',
  noun: 'natural-language search model',
  fields: ['model_name', 'api_key', 'api_url', 'account_id', 'max_bytes', 'temperature', 'system_prompt', 'timeout_ms'],
  validate(rec) {
    providerConfig(rec);
    const out: NlSearchModel = { id: rec.id as string, model_name: rec.model_name as string, max_bytes: positiveInt(rec, 'max_bytes', NL_SEARCH_DEFAULTS.maxBytes) };
    for (const k of ['api_key', 'api_url', 'account_id', 'system_prompt'] as const) {
      const v = optionalString(rec, k);
      if (v !== undefined) out[k] = v;
    }
    if (typeof rec.temperature === 'number') out.temperature = rec.temperature;
    const t = checkTimeout(rec.timeout_ms);
    if (t !== undefined) out.timeout_ms = t;
    return out;
  },
};

export function nlSearchModels(store: Store): ModelRegistry<NlSearchModel> {
  return new ModelRegistry(NL_MODEL_KIND, store);
}

/** Parameters of natural-language search, removed before the search runs. */
const NL_PARAMS = ['nl_query', 'nl_model_id', 'nl_query_debug', 'nl_query_prompt_cache_ttl'];

function truthy(v: unknown): boolean {
  return v === true || v === 'true' || v === '1' || v === 1;
}

export function wantsNlQuery(raw: RawParams): boolean {
  return truthy(raw.nl_query);
}

export interface GeneratedParams {
  q?: string;
  filter_by?: string;
  sort_by?: string;
}

// ---------------------------------------------------------------------------
// The prompt
// ---------------------------------------------------------------------------

const SYNTAX = [
  'Turn the user\'s search request into search parameters for the collection described below.',
  'Reply with one JSON object and nothing else: {"q": "...", "filter_by": "...", "sort_by": "..."}; leave out what is not needed.',
  '- q: the words to search for in the text fields; "*" when the request is only about filters or order.',
  '- filter_by: conditions joined with && (and) and || (or), with parentheses: `field:=value` (exact), `field:value` (contains the words),',
  '  `field:[a, b]` (any of), `field:!=value`, `field:>10`, `field:>=10`, `field:<10`, `field:<=10`, `field:[10..20]` (range);',
  '  put values with spaces or commas in backquotes: `field:=`two words``. Use only the fields below, and the listed values where there are some.',
  '- sort_by: up to three `field:asc` or `field:desc` clauses, comma-separated, over sortable fields.',
].join('\n');

interface FieldInfo {
  field: Field;
  values?: string[];
  stats?: Record<string, number>;
}

function describeField(f: FieldInfo, maxValues: number): string {
  const flags = [f.field.facet ? 'facet' : '', f.field.sort || f.field.kind === 'number' ? 'sortable' : ''].filter(Boolean).join(', ');
  let line = `- ${f.field.name} (${f.field.type}${flags ? `; ${flags}` : ''})`;
  if (f.values && f.values.length > 0 && maxValues > 0) line += `: values ${f.values.slice(0, maxValues).map((v) => JSON.stringify(v)).join(', ')}`;
  if (f.stats && typeof f.stats.min === 'number' && typeof f.stats.max === 'number') line += `: from ${f.stats.min} to ${f.stats.max}`;
  return line;
}

function buildRequest(systemPrompt: string | undefined, collection: string, fields: FieldInfo[], maxValues: number, query: string): ChatRequest {
  const schemaText = `Collection \`${collection}\`, fields:\n${fields.map((f) => describeField(f, maxValues)).join('\n')}`;
  const system = [SYNTAX, schemaText, systemPrompt ?? ''].filter(Boolean).join('\n\n');
  return { messages: [{ role: 'system', content: system }, { role: 'user', content: query }] };
}

/** The prompt within `max_bytes`: fewer facet values, then fewer fields, until it fits. */
function fittedRequest(client: ChatClient, model: NlSearchModel, collection: string, fields: FieldInfo[], query: string): ChatRequest {
  let maxValues = NL_SEARCH_DEFAULTS.facetValuesPerField;
  let shown = fields;
  for (;;) {
    const req = buildRequest(model.system_prompt, collection, shown, maxValues, query);
    if (client.requestBytes(req, false) <= model.max_bytes) return req;
    if (maxValues > 0) maxValues = maxValues >> 1;
    else if (shown.length > 0) shown = shown.slice(0, Math.floor(shown.length / 2));
    else throw new LlmError(`the model's \`max_bytes\` (${model.max_bytes}) is too small for the query and its instructions`);
  }
}

/** The fields shown to the LLM, with facet values (among documents `filterBy` lets through). */
async function fieldInfo(engine: Engine, collection: string, filterBy: string | undefined, scope: SearchScope | undefined): Promise<FieldInfo[]> {
  const schema = getSchema(engine.store, collection);
  const hidden = hiddenBy(scope);
  const fields = schema.fields
    .filter((f) => f.id > 0 && !f.pattern && f.index !== false && ['text', 'number', 'bool'].includes(f.kind) && !hidden?.(f.name))
    .sort((a, b) => Number(b.facet || b.sort) - Number(a.facet || a.sort))
    .slice(0, NL_SEARCH_DEFAULTS.maxFields);
  const out: FieldInfo[] = fields.map((field) => ({ field }));
  const facets = fields.filter((f) => f.facet).map((f) => f.name);
  if (facets.length === 0) return out;
  try {
    const res = await engine.search(collection, {
      q: '*',
      facet_by: facets.join(','),
      max_facet_values: NL_SEARCH_DEFAULTS.facetValuesPerField,
      per_page: 0,
      ...(filterBy ? { filter_by: filterBy } : {}),
    }, scope);
    for (const fc of res.facet_counts) {
      const info = out.find((o) => o.field.name === fc.field_name);
      if (!info) continue;
      if (info.field.kind === 'number') info.stats = fc.stats;
      else info.values = fc.counts.map((c) => c.value);
    }
  } catch (e) {
    if (!(e instanceof FathomError)) throw e;
    // The plain search will report a bad request filter; the prompt goes without values.
  }
  return out;
}

// ---------------------------------------------------------------------------
// The answer
// ---------------------------------------------------------------------------

/** The JSON object in an LLM answer (bare, or in a ``` block, or amid prose). */
export function parseGenerated(content: string): GeneratedParams {
  const start = content.indexOf('{');
  const end = content.lastIndexOf('}');
  if (start < 0 || end < start) throw new LlmError('the answer holds no JSON object');
  let obj: unknown;
  try {
    obj = JSON.parse(content.slice(start, end + 1));
  } catch {
    throw new LlmError('the answer\'s JSON object does not parse');
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new LlmError('the answer is not a JSON object');
  const out: GeneratedParams = {};
  for (const k of ['q', 'filter_by', 'sort_by'] as const) {
    const v = (obj as Record<string, unknown>)[k];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw new LlmError(`\`${k}\` in the answer is not a string`);
    if (v.trim() !== '') out[k] = v.trim();
  }
  return out;
}

function withoutPos(n: FilterNode): unknown {
  return JSON.parse(JSON.stringify(n, (k, v) => (k === 'pos' ? undefined : v)));
}

/**
 * `request AND generated`, as filter text. Throws BAD_FILTER when the generated filter does
 * not parse alone, or when the joined text does not parse into exactly that conjunction.
 */
export function andFilters(request: string | undefined, generated: string): string {
  const gen = parseFilter(generated);
  if (request === undefined || request.trim() === '') return generated;
  const combined = `(${request}) && (${generated})`;
  const expected = { kind: 'and', children: [withoutPos(parseFilter(request)), withoutPos(gen)] };
  if (JSON.stringify(withoutPos(parseFilter(combined))) !== JSON.stringify(expected)) {
    throw new FathomError('BAD_FILTER', 'the generated filter does not combine cleanly with the request\'s filter_by');
  }
  return combined;
}

function plainParams(raw: RawParams): RawParams {
  const p: RawParams = { ...raw };
  for (const k of NL_PARAMS) delete p[k];
  if (typeof p.exclude_fields === 'string') {
    const rest = (parseFieldList(p.exclude_fields) ?? []).filter((f) => f !== 'parsed_nl_query');
    if (rest.length > 0) p.exclude_fields = rest.join(',');
    else delete p.exclude_fields;
  }
  return p;
}

export interface NlOptions {
  fetch?: typeof fetch;
  /** A scoped key's bounds: its hidden fields are never shown to the LLM, and every search runs under them. */
  scope?: SearchScope;
}

/** A search with `nl_query=true`. */
export async function naturalLanguageSearch(engine: Engine, collection: string, raw: RawParams, opts: NlOptions = {}): Promise<SearchResponse> {
  const modelId = raw.nl_model_id;
  if (typeof modelId !== 'string' || modelId === '') throw new FathomError('BAD_PARAMETER', '`nl_model_id` is required with `nl_query=true`: the id of a natural-language search model (POST /nl_search_models)');
  const model = nlSearchModels(engine.store).load(modelId);
  const query = typeof raw.q === 'string' ? raw.q : '';
  if (query.trim() === '' || query.trim() === '*') throw new FathomError('BAD_PARAMETER', '`q` must hold the natural-language query with `nl_query=true`');
  const plain = plainParams(raw);
  const keep = !(parseFieldList(typeof raw.exclude_fields === 'string' ? raw.exclude_fields : undefined) ?? []).includes('parsed_nl_query');
  const debug = truthy(raw.nl_query_debug);
  const client = clientFor(model, { fetch: opts.fetch });
  const started = performance.now();
  let content: string | undefined;
  let generated: GeneratedParams | undefined;
  let augmented: RawParams | undefined;
  let failure: string | undefined;
  try {
    const fields = await fieldInfo(engine, collection, typeof plain.filter_by === 'string' ? plain.filter_by : undefined, opts.scope);
    content = await client.complete(fittedRequest(client, model, collection, fields, query));
    generated = parseGenerated(content);
    augmented = { ...plain, q: generated.q ?? '*' };
    if (generated.filter_by) augmented.filter_by = andFilters(typeof plain.filter_by === 'string' ? plain.filter_by : undefined, generated.filter_by);
    if (generated.sort_by && (plain.sort_by === undefined || plain.sort_by === '')) augmented.sort_by = generated.sort_by;
  } catch (e) {
    if (!(e instanceof FathomError)) throw e;
    failure = e instanceof LlmError && !e.message.startsWith(client.label) ? `${client.label} error: ${e.message}` : e.message;
  }
  const parseMs = Math.round(performance.now() - started);
  let res: SearchResponse | undefined;
  if (augmented) {
    try {
      res = await engine.search(collection, augmented, opts.scope);
    } catch (e) {
      if (!(e instanceof FathomError)) throw e;
      failure = `the generated parameters do not work for \`${collection}\`: ${e.message}`;
      augmented = undefined;
    }
  }
  res ??= await engine.search(collection, plain, opts.scope);
  if (!keep) return res;
  const parsed: Record<string, unknown> = {
    parse_time_ms: parseMs,
    generated_params: generated ?? {},
    augmented_params: augmented ? pick(augmented) : pick(plain),
  };
  if (failure) parsed.error = failure;
  if (debug && content !== undefined) parsed.llm_response = { content, model: model.model_name };
  return { ...res, parsed_nl_query: parsed };
}

function pick(p: RawParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ['q', 'filter_by', 'sort_by', 'query_by']) if (p[k] !== undefined) out[k] = p[k];
  return out;
}
