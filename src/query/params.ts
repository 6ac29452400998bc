/**
 * src/query: here is a request, what exactly is it asking?
 *
 * params.ts turns raw search parameters (strings from a query string or CLI flags, or
 * JSON values from a multi_search body) into a checked `SearchParams`. Defaults and ranges
 * come from the parameter table (parameters.ts). Unknown parameters are ignored, as the
 * reference does, so that clients sending newer parameters keep working.
 */
import { FathomError } from '../errors.js';
import { parseFieldList } from './fields.js';
import { parameter } from './parameters.js';
import { checkCompatParams } from './compat.js';

export interface SearchParams {
  q: string;
  query_by: string[];
  query_by_weights?: number[];
  prefix: boolean[];
  num_typos: number[];
  min_len_1typo: number;
  min_len_2typo: number;
  typo_tokens_threshold: number;
  drop_tokens_threshold: number;
  drop_tokens_mode: 'right_to_left' | 'left_to_right' | `both_sides:${number}`;
  prioritize_exact_match: boolean;
  max_candidates: number;
  split_join_tokens: 'fallback' | 'always' | 'off';
  filter_by?: string;
  sort_by?: string;
  facet_by: string[];
  max_facet_values: number;
  facet_query?: string;
  /** facet_by fields whose counts carry the object holding the value (`parent`). */
  facet_return_parent: string[];
  page: number;
  per_page: number;
  offset?: number;
  limit?: number;
  /** The hits that can be fetched at most (positions 1..limit_hits of the ranking); none: no bound. */
  limit_hits?: number;
  include_fields?: string[];
  exclude_fields?: string[];
  highlight_fields?: string[];
  highlight_full_fields?: string[];
  highlight_affix_num_tokens: number;
  highlight_start_tag: string;
  highlight_end_tag: string;
  snippet_threshold: number;
  enable_highlight_v1: boolean;
  group_by?: string[];
  group_limit: number;
  search_cutoff_ms: number;
  stopwords?: string;
  vector_query?: string;
  /** The vector rank's weight in hybrid search (a vector_query's own `alpha` wins). */
  alpha: number;
  exhaustive_search: boolean;
  /** Checked in compat.ts: the one value of each that Fathom implements, or a strategy whose answer exact counting gives. */
  text_match_type: 'max_score' | 'max_weight';
  prioritize_token_position: boolean;
  /** Per query_by field (one value: every field): off, always or fallback. */
  infix: InfixMode[];
  facet_strategy: 'exhaustive' | 'top_values' | 'automatic';
  enable_synonyms: boolean;
  synonym_prefix: boolean;
  synonym_num_typos: number;
  /** Synonym sets named by the request (besides those the collection links). */
  synonym_sets?: string[];
  /** Curation (src/curation/curate.ts reads these from the raw parameters, before parsing). */
  enable_overrides: boolean;
  filter_curated_hits: boolean;
  /** Raw parameters as received (for request_params and extensions). */
  raw: Record<string, unknown>;
}

export type RawParams = Record<string, unknown>;

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

function str(raw: RawParams, k: string): string | undefined {
  const v = raw[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(String).join(',');
  bad(`parameter \`${k}\` must be a string`);
}

function int(raw: RawParams, k: string, dflt: number, min: number, max: number): number {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return dflt;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n)) bad(`parameter \`${k}\` must be a whole number, got ${JSON.stringify(v)}`);
  if (n < min || n > max) bad(`parameter \`${k}\` must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A whole-number parameter, with the default and range of its declaration. */
function intParam(raw: RawParams, k: string): number {
  const p = parameter(k);
  return int(raw, k, p.default as number, p.min!, p.max!);
}

export type InfixMode = 'off' | 'always' | 'fallback';

/** infix: one mode, or one per query_by field (comma-separated or an array), as prefix and num_typos. */
function infixModes(raw: RawParams, n: number): InfixMode[] {
  const v = raw.infix;
  if (v === undefined || v === null || v === '') return ['off'];
  const list = (Array.isArray(v) ? v.map(String) : String(v).split(',')).map((s) => s.trim());
  for (const m of list) if (m !== 'off' && m !== 'always' && m !== 'fallback') bad(`parameter \`infix\` must be off, always or fallback (one value, or one per query_by field), got ${JSON.stringify(m)}`);
  if (list.length !== 1 && list.length !== n) bad(`parameter \`infix\` must have one value, or one per \`query_by\` field (${n}), got ${list.length}`);
  return list as InfixMode[];
}

/** drop_tokens_mode: right_to_left, left_to_right, or both_sides:N (N >= 1: both sides for queries of up to N words). */
function dropTokensMode(raw: RawParams): SearchParams['drop_tokens_mode'] {
  const v = str(raw, 'drop_tokens_mode');
  if (v === undefined || v.trim() === '') return parameter('drop_tokens_mode').default as SearchParams['drop_tokens_mode'];
  const c = v.trim();
  if (c === 'right_to_left' || c === 'left_to_right') return c;
  const m = /^both_sides:(\d{1,4})$/.exec(c);
  if (m && Number(m[1]) >= 1) return `both_sides:${Number(m[1])}`;
  bad(`parameter \`drop_tokens_mode\` must be one of \`right_to_left\`, \`left_to_right\`, \`both_sides:3\` (\`both_sides:N\`: from both sides for queries of up to N words, N from 1 to 9999), got ${JSON.stringify(v)}`);
}

/** One of a 'choice' parameter's values, or its default. */
function choiceParam<T extends string>(raw: RawParams, k: string): T {
  const p = parameter(k);
  const v = str(raw, k);
  if (v === undefined || v.trim() === '') return p.default as T;
  const c = v.trim();
  if (!p.choices!.includes(c)) bad(`parameter \`${k}\` must be one of ${p.choices!.map((x) => `\`${x}\``).join(', ')}, got ${JSON.stringify(v)}`);
  return c as T;
}

/** A true/false parameter, with the default of its declaration. */
function boolParam(raw: RawParams, k: string): boolean {
  return bool(raw, k, parameter(k).default as boolean);
}

function num(raw: RawParams, k: string): number | undefined {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) bad(`parameter \`${k}\` must be a number, got ${JSON.stringify(v)}`);
  return n;
}

function boolVal(v: unknown, k: string): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === '1' || v === 1) return true;
  if (v === 'false' || v === '0' || v === 0) return false;
  bad(`parameter \`${k}\` must be true or false, got ${JSON.stringify(v)}`);
}

function bool(raw: RawParams, k: string, dflt: boolean): boolean {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return dflt;
  return boolVal(v, k);
}

/** A per-field list ("true,false") or one value for every field. */
function perField<T>(raw: RawParams, k: string, n: number, dflt: T, parse: (s: string) => T): T[] {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return new Array(n).fill(dflt);
  const parts = (Array.isArray(v) ? v.map(String) : String(v).split(',')).map((s) => s.trim());
  if (parts.length === 1) return new Array(n).fill(parse(parts[0]!));
  if (parts.length !== n) bad(`parameter \`${k}\` must have one value, or one per \`query_by\` field (${n}), got ${parts.length}`);
  return parts.map(parse);
}

/** `limit_hits`, checked (a whole number from 1), or undefined when the request sets none. */
export function parseLimitHits(raw: RawParams): number | undefined {
  const v = raw.limit_hits;
  if (v === undefined || v === null || v === '') return undefined;
  const p = parameter('limit_hits');
  return int(raw, 'limit_hits', 0, p.min!, p.max!);
}

/** `use_cache` and `cache_ttl` (seconds), checked; the cache itself is src/search/cache.ts. */
export function parseCacheParams(raw: RawParams): { use: boolean; ttlMs: number } {
  return {
    use: boolParam(raw, 'use_cache'),
    ttlMs: intParam(raw, 'cache_ttl') * 1000,
  };
}

export function parseSearchParams(raw: RawParams): SearchParams {
  checkCompatParams(raw);
  const q = str(raw, 'q');
  const queryBy = parseFieldList(str(raw, 'query_by')) ?? [];
  const vectorQuery = str(raw, 'vector_query');
  if (q === undefined && vectorQuery === undefined) bad('parameter `q` is required (use `*` to match every document)');
  const qv = q ?? '*';
  if (queryBy.length === 0 && qv.trim() !== '*' && qv.trim() !== '' && vectorQuery === undefined) {
    bad('parameter `query_by` is required when `q` is not `*`');
  }
  const n = queryBy.length;
  let weights: number[] | undefined;
  const w = str(raw, 'query_by_weights');
  if (w !== undefined && w.trim() !== '') {
    weights = w.split(',').map((s) => {
      const x = Number(s.trim());
      if (!Number.isFinite(x) || x < 0) bad(`\`query_by_weights\` must be non-negative numbers, got "${s.trim()}"`);
      return x;
    });
    if (weights.length !== n) bad(`\`query_by_weights\` must have one weight per \`query_by\` field (${n}), got ${weights.length}`);
  }
  const typos = parameter('num_typos');
  const numTypos = perField(raw, 'num_typos', Math.max(n, 1), typos.default as number, (s) => {
    const x = Number(s);
    if (!Number.isInteger(x) || x < typos.min! || x > typos.max!) bad(`parameter \`num_typos\` must be 0, 1 or 2, got "${s}"`);
    return x;
  });
  const prefix = perField(raw, 'prefix', Math.max(n, 1), parameter('prefix').default as boolean, (s) => boolVal(s, 'prefix'));
  const perPage = intParam(raw, 'per_page');
  const limit = raw.limit !== undefined && raw.limit !== '' ? int(raw, 'limit', perPage, parameter('limit').min!, parameter('limit').max!) : undefined;
  const offset = raw.offset !== undefined && raw.offset !== '' ? int(raw, 'offset', 0, parameter('offset').min!, parameter('offset').max!) : undefined;
  const limitHits = parseLimitHits(raw);
  const groupBy = parseFieldList(str(raw, 'group_by'));
  const alpha = num(raw, 'alpha');
  const alphaRange = parameter('alpha');
  if (alpha !== undefined && (alpha < alphaRange.min! || alpha > alphaRange.max!)) bad('parameter `alpha` must be between 0 and 1');
  // exhaustive_search: every typo level is tried whatever was found, with every candidate term
  const exhaustive = boolParam(raw, 'exhaustive_search');
  const synonymSets = parseFieldList(str(raw, 'synonym_sets'));
  const start = str(raw, 'highlight_start_tag');
  const end = str(raw, 'highlight_end_tag');
  return {
    q: qv,
    query_by: queryBy,
    ...(weights ? { query_by_weights: weights } : {}),
    prefix,
    num_typos: numTypos,
    min_len_1typo: intParam(raw, 'min_len_1typo'),
    min_len_2typo: intParam(raw, 'min_len_2typo'),
    typo_tokens_threshold: exhaustive ? parameter('typo_tokens_threshold').max! : intParam(raw, 'typo_tokens_threshold'),
    drop_tokens_threshold: intParam(raw, 'drop_tokens_threshold'),
    drop_tokens_mode: dropTokensMode(raw),
    prioritize_exact_match: boolParam(raw, 'prioritize_exact_match'),
    max_candidates: exhaustive ? parameter('max_candidates').max! : intParam(raw, 'max_candidates'),
    split_join_tokens: choiceParam(raw, 'split_join_tokens'),
    exhaustive_search: exhaustive,
    text_match_type: str(raw, 'text_match_type')?.trim() === 'max_weight' ? 'max_weight' : 'max_score',
    prioritize_token_position: boolParam(raw, 'prioritize_token_position'),
    infix: infixModes(raw, Math.max(n, 1)),
    facet_strategy: (str(raw, 'facet_strategy')?.trim() || parameter('facet_strategy').default) as SearchParams['facet_strategy'],
    filter_by: str(raw, 'filter_by') || undefined,
    sort_by: str(raw, 'sort_by') || undefined,
    facet_by: parseFieldList(str(raw, 'facet_by')) ?? [],
    max_facet_values: intParam(raw, 'max_facet_values'),
    facet_query: str(raw, 'facet_query') || undefined,
    facet_return_parent: parseFieldList(str(raw, 'facet_return_parent')) ?? [],
    page: intParam(raw, 'page'),
    per_page: limit ?? perPage,
    ...(offset !== undefined ? { offset } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(limitHits !== undefined ? { limit_hits: limitHits } : {}),
    include_fields: parseFieldList(str(raw, 'include_fields')),
    exclude_fields: parseFieldList(str(raw, 'exclude_fields')),
    highlight_fields: parseFieldList(str(raw, 'highlight_fields')),
    highlight_full_fields: parseFieldList(str(raw, 'highlight_full_fields')),
    highlight_affix_num_tokens: intParam(raw, 'highlight_affix_num_tokens'),
    highlight_start_tag: start ?? (parameter('highlight_start_tag').default as string),
    highlight_end_tag: end ?? (parameter('highlight_end_tag').default as string),
    snippet_threshold: intParam(raw, 'snippet_threshold'),
    enable_highlight_v1: boolParam(raw, 'enable_highlight_v1'),
    ...(groupBy && groupBy.length ? { group_by: groupBy } : {}),
    group_limit: intParam(raw, 'group_limit'),
    search_cutoff_ms: intParam(raw, 'search_cutoff_ms'),
    stopwords: str(raw, 'stopwords') || undefined,
    vector_query: vectorQuery || undefined,
    alpha: alpha ?? (alphaRange.default as number),
    enable_synonyms: boolParam(raw, 'enable_synonyms'),
    synonym_prefix: boolParam(raw, 'synonym_prefix'),
    synonym_num_typos: intParam(raw, 'synonym_num_typos'),
    ...(synonymSets && synonymSets.length ? { synonym_sets: synonymSets } : {}),
    enable_overrides: boolParam(raw, 'enable_overrides'),
    filter_curated_hits: boolParam(raw, 'filter_curated_hits'),
    raw,
  };
}
