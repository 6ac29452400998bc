/**
 * src/query: here is a request, what exactly is it asking?
 *
 * params.ts turns raw search parameters (strings from a query string or CLI flags, or
 * JSON values from a multi_search body) into a checked `SearchParams`. Every parameter
 * takes its default from SEARCH_DEFAULTS. Unknown parameters are ignored, as the
 * reference does, so that clients sending newer parameters keep working.
 */
import { SEARCH_DEFAULTS, VECTOR_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { parseFieldList } from './fields.js';

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
  prioritize_exact_match: boolean;
  max_candidates: number;
  filter_by?: string;
  sort_by?: string;
  facet_by: string[];
  max_facet_values: number;
  facet_query?: string;
  page: number;
  per_page: number;
  offset?: number;
  limit?: number;
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
  alpha?: number;
  exhaustive_search: boolean;
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

/** `use_cache` and `cache_ttl` (seconds), checked; the cache itself is src/search/cache.ts. */
export function parseCacheParams(raw: RawParams): { use: boolean; ttlMs: number } {
  return {
    use: bool(raw, 'use_cache', SEARCH_DEFAULTS.use_cache),
    ttlMs: int(raw, 'cache_ttl', SEARCH_DEFAULTS.cache_ttl, 0, 2 ** 31 - 1) * 1000,
  };
}

export function parseSearchParams(raw: RawParams): SearchParams {
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
  const numTypos = perField(raw, 'num_typos', Math.max(n, 1), SEARCH_DEFAULTS.num_typos, (s) => {
    const x = Number(s);
    if (!Number.isInteger(x) || x < 0 || x > 2) bad(`parameter \`num_typos\` must be 0, 1 or 2, got "${s}"`);
    return x;
  });
  const prefix = perField(raw, 'prefix', Math.max(n, 1), SEARCH_DEFAULTS.prefix, (s) => boolVal(s, 'prefix'));
  const perPage = int(raw, 'per_page', SEARCH_DEFAULTS.per_page, 0, SEARCH_DEFAULTS.max_per_page);
  const limit = raw.limit !== undefined && raw.limit !== '' ? int(raw, 'limit', perPage, 0, SEARCH_DEFAULTS.max_per_page) : undefined;
  const offset = raw.offset !== undefined && raw.offset !== '' ? int(raw, 'offset', 0, 0, 1e9) : undefined;
  const groupBy = parseFieldList(str(raw, 'group_by'));
  const alpha = num(raw, 'alpha');
  if (alpha !== undefined && (alpha < 0 || alpha > 1)) bad('parameter `alpha` must be between 0 and 1');
  const start = str(raw, 'highlight_start_tag');
  const end = str(raw, 'highlight_end_tag');
  return {
    q: qv,
    query_by: queryBy,
    ...(weights ? { query_by_weights: weights } : {}),
    prefix,
    num_typos: numTypos,
    min_len_1typo: int(raw, 'min_len_1typo', SEARCH_DEFAULTS.min_len_1typo, 0, 1000),
    min_len_2typo: int(raw, 'min_len_2typo', SEARCH_DEFAULTS.min_len_2typo, 0, 1000),
    typo_tokens_threshold: int(raw, 'typo_tokens_threshold', SEARCH_DEFAULTS.typo_tokens_threshold, 0, 1e9),
    drop_tokens_threshold: int(raw, 'drop_tokens_threshold', SEARCH_DEFAULTS.drop_tokens_threshold, 0, 1e9),
    prioritize_exact_match: bool(raw, 'prioritize_exact_match', SEARCH_DEFAULTS.prioritize_exact_match),
    max_candidates: int(raw, 'max_candidates', SEARCH_DEFAULTS.max_candidates, 1, 10000),
    exhaustive_search: bool(raw, 'exhaustive_search', false),
    filter_by: str(raw, 'filter_by') || undefined,
    sort_by: str(raw, 'sort_by') || undefined,
    facet_by: parseFieldList(str(raw, 'facet_by')) ?? [],
    max_facet_values: int(raw, 'max_facet_values', SEARCH_DEFAULTS.max_facet_values, 0, 1e6),
    facet_query: str(raw, 'facet_query') || undefined,
    page: int(raw, 'page', SEARCH_DEFAULTS.page, 1, 1e9),
    per_page: limit ?? perPage,
    ...(offset !== undefined ? { offset } : {}),
    ...(limit !== undefined ? { limit } : {}),
    include_fields: parseFieldList(str(raw, 'include_fields')),
    exclude_fields: parseFieldList(str(raw, 'exclude_fields')),
    highlight_fields: parseFieldList(str(raw, 'highlight_fields')),
    highlight_full_fields: parseFieldList(str(raw, 'highlight_full_fields')),
    highlight_affix_num_tokens: int(raw, 'highlight_affix_num_tokens', SEARCH_DEFAULTS.highlight_affix_num_tokens, 0, 1000),
    highlight_start_tag: start ?? SEARCH_DEFAULTS.highlight_start_tag,
    highlight_end_tag: end ?? SEARCH_DEFAULTS.highlight_end_tag,
    snippet_threshold: int(raw, 'snippet_threshold', SEARCH_DEFAULTS.snippet_threshold, 0, 1e6),
    enable_highlight_v1: bool(raw, 'enable_highlight_v1', true),
    ...(groupBy && groupBy.length ? { group_by: groupBy } : {}),
    group_limit: int(raw, 'group_limit', SEARCH_DEFAULTS.group_limit, 1, 99),
    search_cutoff_ms: int(raw, 'search_cutoff_ms', SEARCH_DEFAULTS.search_cutoff_ms, 0, 1e9),
    stopwords: str(raw, 'stopwords') || undefined,
    vector_query: vectorQuery || undefined,
    ...(alpha !== undefined ? { alpha } : {}),
    raw,
  };
}

export const DEFAULT_ALPHA = VECTOR_DEFAULTS.alpha;
