/**
 * Every default Fathom uses, in one place.
 *
 * Each entry says its range and what it does. Code elsewhere imports these
 * names instead of repeating numbers, so that changing a default here changes
 * it for the CLI, the HTTP API and the engine alike.
 */

/** On-disk format of the data directory. Bumped on any incompatible change to key layout or encodings. */
export const FORMAT_VERSION = 1;

/** Data directory used when neither `--data-dir` nor `FATHOM_DATA_DIR` is given. */
export const DEFAULT_DATA_DIR = './fathom-data';

/** LMDB map size reserved up front (virtual address space, not disk). lmdb-js grows it when full. */
export const LMDB_MAP_SIZE = 2 ** 35;

// ---------------------------------------------------------------------------
// Documents and import
// ---------------------------------------------------------------------------

/** Documents per import batch, one LMDB transaction each. Range 1..10000. Larger batches are faster and hold the write lock longer. */
export const IMPORT_BATCH_SIZE = 40;
/** Largest accepted `batch_size`. */
export const MAX_IMPORT_BATCH_SIZE = 10_000;
/** Delete-by-filter batch size (documents per transaction). */
export const DELETE_BATCH_SIZE = 1000;
/** Import batches allowed in flight (committed by LMDB's writer thread while the next one is prepared). */
export const IMPORT_PIPELINE_DEPTH = 16;
/** Longest document id, in characters. */
export const MAX_ID_LENGTH = 512;

// ---------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------

/** Field attribute defaults. `sort` defaults to true for numeric and bool fields, false for strings. */
export const FIELD_DEFAULTS = {
  optional: false,
  facet: false,
  index: true,
  store: true,
  infix: false,
  stem: false,
  locale: '',
} as const;

/** HNSW graph parameters for vector fields: `M` (links per node, 2..100) and `ef_construction` (build beam, 10..2000). */
export const HNSW_DEFAULTS = { M: 16, ef_construction: 200 } as const;

// ---------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------

export const SEARCH_DEFAULTS = {
  /** Results per page. Range 0..250. */
  per_page: 10,
  /** Largest `per_page`. */
  max_per_page: 250,
  /** Page number, 1-based. */
  page: 1,
  /** Typos allowed per token, 0..2. */
  num_typos: 2,
  /** Shortest token (in characters) allowed one typo. */
  min_len_1typo: 4,
  /** Shortest token allowed two typos. */
  min_len_2typo: 7,
  /** Stop adding typo expansions once this many documents match. */
  typo_tokens_threshold: 1,
  /** Drop query tokens (right to left) while fewer than this many documents match. */
  drop_tokens_threshold: 1,
  /** Candidate terms considered per query token for prefix and typo expansion. */
  max_candidates: 4,
  /** Last query token is matched as a prefix. */
  prefix: true,
  /** Rank exact field matches above others with the same score. */
  prioritize_exact_match: true,
  /** Facet values returned per field. */
  max_facet_values: 10,
  /** Tokens shown either side of a match in a snippet. */
  highlight_affix_num_tokens: 4,
  /** Fields with fewer tokens than this are highlighted whole. */
  snippet_threshold: 30,
  highlight_start_tag: '<mark>',
  highlight_end_tag: '</mark>',
  /** Hits per group with `group_by`. Range 1..99. */
  group_limit: 3,
  /** Abort matching after this long (0 = never). */
  search_cutoff_ms: 0,
  /** Sort clauses allowed in `sort_by`. */
  max_sort_clauses: 3,
  /** Query tokens considered; the rest are ignored. */
  max_query_tokens: 32,
} as const;

/** Vector search defaults (spec: Limits). */
export const VECTOR_DEFAULTS = { ef: 10, alpha: 0.3, k: 0 } as const;

// ---------------------------------------------------------------------------
// Index maintenance
// ---------------------------------------------------------------------------

export const MERGE_POLICY = {
  /** Segments of one size tier merged together when this many exist. */
  factor: 8,
  /** Documents in the smallest tier. */
  base: 64,
  /** A segment with more than this fraction of deleted documents is rewritten. */
  maxDeletedRatio: 0.3,
} as const;

// ---------------------------------------------------------------------------
// HTTP server
// ---------------------------------------------------------------------------

export const SERVER_DEFAULTS = {
  address: '0.0.0.0',
  port: 8108,
  /** Largest non-import request body. Imports stream and are not limited by this. */
  maxBodyBytes: 64 * 1024 * 1024,
  /** Longest GET query string; longer ones get 400 (use POST /multi_search). */
  maxQueryStringLength: 4000,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 0,
  keepAliveTimeoutMs: 5_000,
} as const;
