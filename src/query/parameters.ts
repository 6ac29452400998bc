/**
 * The search parameters, declared once: name, kind, default, range and one line of doc.
 * This table drives the parsing (params.ts reads defaults and ranges from it), the flags
 * of `fathom search` (and `--help`), the parameter list in README.md (between the
 * `search-parameters` markers) and the parameter table of docs/compatibility.md (with the
 * reference's parameters read elsewhere or not at all, REFERENCE_ONLY_PARAMETERS; `npm run
 * docs` rewrites both and tests check them), so they cannot drift apart. Defaults
 * themselves live in src/defaults.ts.
 */
import { SEARCH_DEFAULTS, SEARCH_LIMITS, VECTOR_DEFAULTS } from '../defaults.js';

export type ParameterKind =
  /** free text */
  | 'text'
  /** a comma-separated list of field names */
  | 'fields'
  /** a whole number within [min, max] */
  | 'int'
  /** a number within [min, max] */
  | 'number'
  /** true / false (also 1 / 0) */
  | 'bool'
  /** one value, or one per query_by field */
  | 'per-field'
  /** one of `choices` */
  | 'choice';

/** A reference route's or parameter's state in Fathom (docs/compatibility.md). */
export type CompatState = 'same' | 'lenient' | 'refused' | 'absent';

export interface SearchParameter {
  name: string;
  kind: ParameterKind;
  /** The default, when there is one (from src/defaults.ts). */
  default?: string | number | boolean;
  min?: number;
  max?: number;
  /** The values a 'choice' takes. */
  choices?: readonly string[];
  /** One line: what it does. */
  doc: string;
  /** A `--kebab-case` flag of `fathom search` (q is `-q`; the rest go through --param). */
  flag?: boolean;
  /** Where Fathom differs from the reference (docs/compatibility.md); absent: the same, as `doc` says. */
  compat?: { state: CompatState; note: string };
}

const D = SEARCH_DEFAULTS;

export const SEARCH_PARAMETERS: readonly SearchParameter[] = [
  { name: 'q', kind: 'text', doc: 'the query: words, "quoted phrases" (adjacent, no typos), -excluded words; `*` matches every document' },
  { name: 'query_by', kind: 'fields', doc: 'the fields searched, in order of weight', flag: true },
  { name: 'query_by_weights', kind: 'text', doc: 'one weight (0-255) per query_by field; default 100, 99, ... by position', flag: true },
  { name: 'prefix', kind: 'per-field', default: D.prefix, doc: 'match the last word as a prefix (one value, or one per field)', flag: true },
  { name: 'num_typos', kind: 'per-field', default: D.num_typos, min: 0, max: 2, doc: 'typos allowed per word (one value, or one per field)', flag: true },
  { name: 'min_len_1typo', kind: 'int', default: D.min_len_1typo, min: 0, max: 1000, doc: 'shortest word allowed one typo', flag: true },
  { name: 'min_len_2typo', kind: 'int', default: D.min_len_2typo, min: 0, max: 1000, doc: 'shortest word allowed two typos', flag: true },
  { name: 'typo_tokens_threshold', kind: 'int', default: D.typo_tokens_threshold, min: 0, max: 1e9, doc: 'look for typo matches while fewer documents match', flag: true },
  { name: 'drop_tokens_threshold', kind: 'int', default: D.drop_tokens_threshold, min: 0, max: 1e9, doc: 'drop words (as drop_tokens_mode says) while fewer documents match', flag: true },
  {
    name: 'drop_tokens_mode',
    kind: 'choice',
    default: D.drop_tokens_mode,
    choices: ['right_to_left', 'left_to_right', 'both_sides:N'],
    doc: 'which words are dropped first: the last, the first, or for queries of up to N words (`both_sides:3`) both (the last, then the first)',
    flag: true,
  },
  { name: 'prioritize_exact_match', kind: 'bool', default: D.prioritize_exact_match, doc: 'rank a field that is exactly the query first among equals', flag: true },
  { name: 'max_candidates', kind: 'int', default: D.max_candidates, min: 1, max: SEARCH_LIMITS.maxCandidates, doc: 'terms considered per word for prefix and typo expansion', flag: true },
  {
    name: 'split_join_tokens',
    kind: 'choice',
    default: D.split_join_tokens,
    choices: ['fallback', 'always', 'off'],
    doc: 'words glued by punctuation (`unit-aware`) are found by their parts; when the query finds nothing (`always`: always), its words joined or split in two are searched too; `off`: neither',
    flag: true,
  },
  { name: 'exhaustive_search', kind: 'bool', default: false, doc: 'try every typo level whatever was found, with up to 10000 candidate terms per word (typo_tokens_threshold and max_candidates at their maximum)' },
  {
    name: 'text_match_type',
    kind: 'text',
    default: 'max_score',
    doc: 'which field scores a document: max_score its best, max_weight its heaviest holding a query word (sum_score is refused with 400)',
    compat: { state: 'lenient', note: 'max_score and max_weight; sum_score is refused (400): a document scores by one field' },
  },
  { name: 'prioritize_token_position', kind: 'bool', default: false, doc: 'rank, among equal text matches, documents whose heaviest matching field has a query word earlier first' },
  { name: 'infix', kind: 'text', default: 'off', doc: 'substring matches in fields created with `infix: true`: off, always (with the usual matches) or fallback (only when those find nothing); one value, or one per query_by field' },
  {
    name: 'facet_strategy',
    kind: 'text',
    default: 'exhaustive',
    doc: 'exhaustive, top_values or automatic: facets are always counted exactly over every match',
    compat: { state: 'lenient', note: 'accepted; facets are always counted exactly over every match (what each strategy approximates)' },
  },
  { name: 'facet_return_parent', kind: 'fields', doc: 'facet_by fields of nested objects whose counts carry `parent`: the object holding the value' },
  { name: 'stopwords', kind: 'text', doc: 'the name of a stopword set whose words are removed from q', flag: true },
  { name: 'filter_by', kind: 'text', doc: 'a filter, e.g. `section:=games && installed_size:>1000`, joins `$other(...)`', flag: true },
  { name: 'sort_by', kind: 'text', doc: 'up to three clauses, e.g. `installed_size:desc`, `_text_match`, `_vector_distance`', flag: true },
  { name: 'facet_by', kind: 'fields', doc: 'facet fields to count values of', flag: true },
  { name: 'max_facet_values', kind: 'int', default: D.max_facet_values, min: 0, max: 1e6, doc: 'facet values returned per field', flag: true },
  { name: 'facet_query', kind: 'text', doc: '`field:prefix`: only the facet values with words starting so', flag: true },
  { name: 'group_by', kind: 'fields', doc: 'facet fields to group hits by', flag: true },
  { name: 'group_limit', kind: 'int', default: D.group_limit, min: 1, max: 99, doc: 'hits per group', flag: true },
  { name: 'page', kind: 'int', default: D.page, min: 1, max: 1e9, doc: 'page number, from 1', flag: true },
  { name: 'per_page', kind: 'int', default: D.per_page, min: 0, max: D.max_per_page, doc: 'hits per page', flag: true },
  { name: 'offset', kind: 'int', min: 0, max: 1e9, doc: 'hits to skip (instead of page)', flag: true },
  { name: 'limit', kind: 'int', min: 0, max: D.max_per_page, doc: 'hits to return (instead of per_page)', flag: true },
  {
    name: 'limit_hits',
    kind: 'int',
    min: 1,
    max: 1e9,
    doc: 'hits that can be fetched at most: none ranked beyond it is returned, a page starting beyond it is refused (422), `found` still counts every match; under group_by it counts groups',
    flag: true,
  },
  { name: 'include_fields', kind: 'fields', doc: 'the only fields a hit shows (`$other(...)` adds joined fields)', flag: true },
  { name: 'exclude_fields', kind: 'fields', doc: 'fields a hit leaves out', flag: true },
  { name: 'highlight_fields', kind: 'fields', doc: 'fields to highlight (default: query_by)', flag: true },
  { name: 'highlight_full_fields', kind: 'fields', doc: 'fields highlighted whole rather than as snippets', flag: true },
  { name: 'highlight_affix_num_tokens', kind: 'int', default: D.highlight_affix_num_tokens, min: 0, max: 1000, doc: 'words either side of a match in a snippet', flag: true },
  { name: 'highlight_start_tag', kind: 'text', default: D.highlight_start_tag, doc: 'put before a highlighted word', flag: true },
  { name: 'highlight_end_tag', kind: 'text', default: D.highlight_end_tag, doc: 'put after a highlighted word', flag: true },
  { name: 'snippet_threshold', kind: 'int', default: D.snippet_threshold, min: 0, max: 1e6, doc: 'fields with fewer words are highlighted whole', flag: true },
  { name: 'enable_highlight_v1', kind: 'bool', default: true, doc: 'false leaves out `highlights` (the v1 list); `highlight` (v2, shaped like the document) is always there' },
  {
    name: 'search_cutoff_ms',
    kind: 'int',
    default: D.search_cutoff_ms,
    min: 0,
    max: 1e9,
    doc: 'stop the search after this long and answer with what was found (0: none; fathom serve bounds it by its --search-cutoff-ms)',
    flag: true,
    compat: { state: 'lenient', note: 'as the reference, within the ceiling of `fathom serve --search-cutoff-ms` (5000 by default)' },
  },
  { name: 'vector_query', kind: 'text', doc: 'nearest neighbours, e.g. `embedding:([0.1, 0.2], k: 10)`, `embedding:([], id: 42)`', flag: true },
  { name: 'alpha', kind: 'number', default: VECTOR_DEFAULTS.alpha, min: 0, max: 1, doc: 'the weight of the vector rank in hybrid search', flag: true },
  { name: 'enable_synonyms', kind: 'bool', default: D.enable_synonyms, doc: "search `q` with the collection's synonyms too (its own, its `synonym_sets`, the request's)" },
  { name: 'synonym_sets', kind: 'fields', doc: 'more synonym sets to apply, besides those the collection links', flag: true },
  { name: 'synonym_prefix', kind: 'bool', default: D.synonym_prefix, doc: "let the query's last word match a synonym's word as a prefix" },
  { name: 'synonym_num_typos', kind: 'int', default: D.synonym_num_typos, min: 0, max: 2, doc: 'typos allowed when a query word is compared with a synonym' },
  { name: 'enable_overrides', kind: 'bool', default: D.enable_overrides, doc: 'apply curation rules (overrides, curation sets)' },
  { name: 'override_tags', kind: 'fields', doc: 'apply only the curation rules with these tags (also `curation_tags`)' },
  { name: 'pinned_hits', kind: 'text', doc: '`id:position,...`: documents shown at those positions (1-based)', flag: true },
  { name: 'hidden_hits', kind: 'fields', doc: '`id,...`: documents never shown', flag: true },
  { name: 'filter_curated_hits', kind: 'bool', default: D.filter_curated_hits, doc: "pinned and curated documents must pass the request's filter_by too" },
  { name: 'preset', kind: 'text', doc: 'a stored preset whose parameters this search starts from (its own parameters win)', flag: true },
  { name: 'use_cache', kind: 'bool', default: D.use_cache, doc: 'answer from the search cache while an answer is younger than cache_ttl' },
  { name: 'cache_ttl', kind: 'int', default: D.cache_ttl, min: 0, max: 2 ** 31 - 1, doc: 'seconds a cached answer is kept' },
];

/**
 * The reference's search parameters that are not in the table above: read elsewhere (the
 * multi_search route, the engine, analytics), or accepted and ignored, as the reference
 * ignores a parameter it does not have. docs/compatibility.md lists them with the table.
 */
export const REFERENCE_ONLY_PARAMETERS: ReadonlyArray<{ name: string; state: CompatState; note: string }> = [
  ...['conversation', 'conversation_model_id', 'conversation_id', 'conversation_stream'].map((name) => ({ name, state: 'same' as const, note: 'conversational search (POST /multi_search)' })),
  ...['nl_query', 'nl_model_id', 'nl_query_debug', 'nl_query_prompt_cache_ttl'].map((name) => ({ name, state: 'same' as const, note: 'natural-language search' })),
  { name: 'voice_query', state: 'same', note: 'a spoken query, transcribed by the collection\'s `voice_query_model`' },
  { name: 'curation_tags', state: 'same', note: 'the v30 name of `override_tags`' },
  { name: 'enable_analytics', state: 'same', note: 'false: analytics rules do not record the search' },
  { name: 'analytics_tag', state: 'lenient', note: 'accepted, not recorded (analytics `meta_fields` is not implemented)' },
  { name: 'x-typesense-user-id', state: 'same', note: 'the user a search is aggregated for by analytics rules (also a header)' },
  { name: 'x-typesense-api-key', state: 'same', note: 'the key, when not sent as a header' },
  ...['remote_embedding_timeout_ms', 'remote_embedding_num_tries'].map((name) => ({ name, state: 'same' as const, note: 'embedding the query with a remote model' })),
  { name: 'pre_segmented_query', state: 'lenient', note: 'accepted, ignored: `q` is always segmented' },
  ...['enable_typos_for_numerical_tokens', 'enable_typos_for_alpha_numerical_tokens'].map((name) => ({ name, state: 'lenient' as const, note: 'accepted, ignored: every word may have typos within num_typos and min_len_*typo' })),
  { name: 'prioritize_num_matching_fields', state: 'lenient', note: 'accepted, ignored: the number of fields matched always counts, after the proximity, weight and exactness of the best field' },
  { name: 'group_missing_values', state: 'lenient', note: 'accepted, ignored' },
  ...['facet_sample_percent', 'facet_sample_threshold'].map((name) => ({ name, state: 'lenient' as const, note: 'accepted, ignored: facets are always counted exactly' })),
  { name: 'facet_query_num_typos', state: 'lenient', note: 'accepted, ignored: facet_query matches values by prefix without typos' },
  { name: 'validate_field_names', state: 'lenient', note: 'accepted, ignored: unknown fields are always refused' },
  { name: 'rerank_hybrid_matches', state: 'lenient', note: 'accepted, ignored' },
  ...['max_extra_prefix', 'max_extra_suffix'].map((name) => ({ name, state: 'lenient' as const, note: 'accepted, ignored' })),
  ...['enable_lazy_filter', 'max_filter_by_candidates'].map((name) => ({ name, state: 'lenient' as const, note: 'accepted, ignored: filters are evaluated whole, within the search budget' })),
  ...['personalization_user_id', 'personalization_model_id', 'personalization_type', 'personalization_user_field', 'personalization_item_field', 'personalization_event_name', 'personalization_n_events'].map((name) => ({
    name,
    state: 'lenient' as const,
    note: 'accepted, ignored: personalization models are not implemented',
  })),
];

const BY_NAME = new Map(SEARCH_PARAMETERS.map((p) => [p.name, p]));

/** A parameter's declaration (a name that is not in the table is a programming error). */
export function parameter(name: string): SearchParameter {
  const p = BY_NAME.get(name);
  if (!p) throw new Error(`no search parameter ${name} in SEARCH_PARAMETERS`);
  return p;
}

/** The `fathom search` flags: [flag, description] (description with the default and range). */
export function searchFlags(): Array<[string, string]> {
  return SEARCH_PARAMETERS.filter((p) => p.flag).map((p) => [p.name.replace(/_/g, '-'), describe(p)]);
}

function describe(p: SearchParameter): string {
  const extra: string[] = [];
  if (p.min !== undefined && p.max !== undefined && p.max < 1e6) extra.push(`${p.min}-${p.max}`);
  if (p.choices) extra.push(p.choices.join(' | '));
  if (p.default !== undefined && p.default !== '') extra.push(`default ${p.default}`);
  return extra.length > 0 ? `${p.doc} (${extra.join(', ')})` : p.doc;
}

/** The README's parameter list (markdown), generated from the table. */
export function parameterMarkdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const rows = SEARCH_PARAMETERS.map((p) => {
    const range = p.choices ? p.choices.map((c) => `\`${c}\``).join(', ') : p.min !== undefined && p.max !== undefined ? `${p.min}..${p.max >= 1e6 ? '' : p.max}` : '';
    const dflt = p.default === undefined ? '' : `\`${String(p.default)}\``;
    return `| \`${p.name}\` | ${cell(dflt)} | ${range} | ${cell(p.doc)} |`;
  });
  return ['| parameter | default | range | what it does |', '|---|---|---|---|', ...rows].join('\n');
}
