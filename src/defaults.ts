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

/** What a full disk does (src/storage/diskfull.ts). */
export const DISK_DEFAULTS = {
  /**
   * Free space kept on the data directory's filesystem: a write that would leave less is
   * refused (NO_SPACE) before LMDB tries it, and `/health` reports `OUT_OF_DISK` while less
   * is free. A completely full filesystem costs more than the write that did not fit: LMDB
   * prints its own errors, and may crash on its lock file's pages. `FATHOM_DISK_RESERVE_BYTES`
   * overrides it; 0 lets writes fill the disk to the last byte. Range 0.. (bytes).
   */
  reserveBytes: 8 * 1024 * 1024,
  /**
   * A write is expected to need up to this many times the bytes it is given on disk
   * (documents, their ids and index entries, copied B-tree pages). Range 1...
   */
  writeOverhead: 3,
  /**
   * LMDB reports a write the filesystem took only part of as EIO: counted as a full disk
   * when fewer bytes than this are free afterwards, else as an I/O error. Range 0.. (bytes).
   */
  eioFullBelowBytes: 1024 * 1024,
  /** How long `/health` reuses a free-space reading (ms): it is probed often. Range 0... */
  checkIntervalMs: 1000,
} as const;

// ---------------------------------------------------------------------------
// Documents and import
// ---------------------------------------------------------------------------

/** What a write does to an existing id (`action`): create fails on one, upsert replaces it, update and emplace merge into it (update fails without one). Default create. */
export const WRITE_ACTIONS = ['create', 'upsert', 'update', 'emplace'] as const;
export type WriteAction = (typeof WRITE_ACTIONS)[number];
/**
 * What a write does with a value of the wrong type (`dirty_values`). No default here: a
 * collection with pattern fields defaults to coerce_or_reject, any other to reject
 * (Schema.defaultDirtyValues), as the reference does.
 */
export const DIRTY_VALUES = ['coerce_or_reject', 'coerce_or_drop', 'drop', 'reject'] as const;
export type DirtyValues = (typeof DIRTY_VALUES)[number];

/** Documents per import batch over HTTP (`batch_size`), one LMDB transaction each; the reference's default. Range 1..10000. Larger batches are faster and hold the write lock longer. */
export const IMPORT_BATCH_SIZE = 40;
/**
 * `fathom import`'s default `--batch-size`. Range 1..10000. The CLI is a bulk loader with no
 * searches waiting in its process, so it takes bigger transactions: fewer commits, and fewer,
 * larger index segments to merge.
 */
export const CLI_IMPORT_BATCH_SIZE = 1000;
/** Largest accepted `batch_size`. */
export const MAX_IMPORT_BATCH_SIZE = 10_000;
/** Delete-by-filter batch size (documents per transaction). */
export const DELETE_BATCH_SIZE = 1000;
/** Import batches allowed in flight (committed by LMDB's writer thread while the next one is prepared). Range 2... */
export const IMPORT_PIPELINE_DEPTH = 64;
/** ...but no more documents than this in flight (bounds memory when batches are large). */
export const IMPORT_PIPELINE_DOCS = 4096;
/** Answers the search cache keeps (`fathom serve --cache-num-entries`). Range 0.. (0: none). */
export const SEARCH_CACHE_ENTRIES = 1000;
/** Longest document id, in characters. */
export const MAX_ID_LENGTH = 512;
/** Longest collection or alias name, in characters (a longer name names nothing: it is never looked up, LMDB keys stop at 1978 bytes). */
export const MAX_NAME_LENGTH = 256;

/**
 * Bounds on hostile or accidental input, so that no request can exhaust the stack or make
 * a term of megabytes. Each is checked where the input is read, with a 400 (or the
 * import line's own error) naming the limit.
 */
export const INPUT_LIMITS = {
  /** Deepest nesting of objects and arrays in a JSON body or an import line (documents, schemas, searches). Range 1..1000. */
  maxJsonDepth: 64,
  /** Deepest nesting of parentheses and `$collection(...)` join clauses in `filter_by`. Range 1..1000. */
  maxFilterDepth: 64,
  /**
   * Longest token, in UTF-16 code units: a longer word is indexed and searched as its first
   * this many (the reference cuts at 100 characters too), so a megabyte "word" costs no
   * more than a short one.
   */
  maxTokenLength: 100,
} as const;

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

/**
 * `truncate_len` of a field: the reference cuts each indexed token to this many characters;
 * shown on every field as the reference shows it. Fathom accepts and keeps a field's own
 * (1..TRUNCATE_LEN_MAX), and cuts every token at INPUT_LIMITS.maxTokenLength (the same 100)
 * whatever it says.
 */
export const TRUNCATE_LEN_DEFAULT = 100;
export const TRUNCATE_LEN_MAX = 2 ** 31 - 1;

/** HNSW graph parameters for vector fields: `M` (links per node, 2..100) and `ef_construction` (build beam, 10..2000). */
export const HNSW_DEFAULTS = { M: 16, ef_construction: 200 } as const;

// ---------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------

export const SEARCH_DEFAULTS = {
  /** Answer from the search cache (src/search/cache.ts) when it holds this search. */
  use_cache: false,
  /** Seconds a cached answer is kept (`use_cache`). Range 0.. (0: not cached). */
  cache_ttl: 60,
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
  /** Which words go first when too few documents match: right_to_left, left_to_right or both_sides:N (e.g. both_sides:3). */
  drop_tokens_mode: 'right_to_left' as 'right_to_left' | 'left_to_right' | `both_sides:${number}`,
  /** Candidate terms considered per query token for prefix and typo expansion. */
  max_candidates: 4,
  /**
   * Words glued by punctuation (`unit-aware`) are found by their parts, and, when the query
   * finds nothing, its words joined (`basket ball` -> `basketball`) or one split in two are
   * searched too (search/keyword.ts): `fallback`. `always` joins or splits every query;
   * `off` does neither and matches whole words only.
   */
  split_join_tokens: 'fallback' as 'fallback' | 'always' | 'off',
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
  /** Query tokens considered; the rest are ignored. At most 32: matching keeps a document's tokens as bits of one 32-bit word. */
  max_query_tokens: 32,
  /** Apply the collection's (and the request's `synonym_sets`') synonyms to `q`. */
  enable_synonyms: true,
  /** Let the query's last word match a synonym's word as a prefix (`synonym_prefix`). */
  synonym_prefix: false,
  /** Typos allowed when a query word is compared with a synonym's word (`synonym_num_typos`). Range 0..2. */
  synonym_num_typos: 0,
  /** Apply curation rules (overrides, curation sets) to searches (`enable_overrides`). */
  enable_overrides: true,
  /** Pinned and curated hits must pass the request's own `filter_by` too (`filter_curated_hits`). */
  filter_curated_hits: false,
} as const;

/**
 * What one search may do at most, whatever its request: with these, a search's work grows
 * at most linearly with the collection and the query's length (test/search-bounds.test.ts
 * bounds it), and `search_cutoff_ms` (and `fathom serve --search-cutoff-ms`) bounds its time.
 * Query tokens are capped by SEARCH_DEFAULTS.max_query_tokens.
 */
export const SEARCH_LIMITS = {
  /**
   * Copies of one word a query keeps outside quotes (`a a a a a` searches `a a a`): each copy
   * is another token matched in every document holding the word. Range 1..32.
   */
  maxWordRepeats: 3,
  /**
   * Query words looked up with typos: the first this many; later words match as typed (the
   * last still as a prefix). Each typo lookup walks every query_by field's dictionary, and
   * a long query's words are rarely all mistyped (the reference, too, limits the typos of
   * long queries). Range 1..32.
   */
  maxTypoWords: 10,
  /**
   * Candidate terms per query word for prefix and typo expansion: the largest
   * `max_candidates` (and what `exhaustive_search` uses). Range 1...
   */
  maxCandidates: 10_000,
  /**
   * Operations in a `filter_by`: each comparison and each `&&` / `||` (a `$c(...)` join is one,
   * its inner filter counted apart), as the reference's `--filter-by-max-ops` default. Each
   * operation is a pass over the collection. More: 400. Range 1...
   */
  maxFilterOperations: 100,
  /**
   * Steps one document's proximity may take (search/positions.ts): when the candidates of
   * several query words sit on the same positions, the smallest window with each word on a
   * word of its own is searched for within this many steps, and the best found is kept.
   * Range 1...
   */
  proximitySteps: 1 << 15,
} as const;

/**
 * Synonyms (src/synonyms), curation rules (src/curation) and presets (src/presets): the
 * limits on what a set or a rule may hold, checked when it is written (400 beyond them).
 */
export const RULE_LIMITS = {
  /** Longest name of a synonym set, curation set or preset, and longest item id. Range 1..1000. */
  maxNameLength: 256,
  /** Items in one synonym set or curation set. Range 1.. */
  maxSetItems: 100_000,
  /** Words or phrases in one synonym item. Range 2.. */
  maxSynonyms: 1000,
  /** Words in one synonym phrase (a query never has more than max_query_tokens). Range 1..32. */
  maxSynonymWords: 32,
  /** Documents one curation rule may pin (`includes`) or hide (`excludes`). Range 1.. */
  maxCuratedIds: 1000,
  /**
   * Query variants a search runs through synonyms, besides the query as typed: each is a
   * keyword search of its own, so this bounds what one query can cost. Range 0..
   */
  maxSynonymVariants: 32,
  /** Presets a preset may lead through (`preset` inside a preset's value) before it is refused as a loop. Range 1.. */
  maxPresetDepth: 8,
} as const;

/** Geo search (src/geo). */
export const GEO_DEFAULTS = {
  /** The Earth's mean radius in meters: distances are great-circle (haversine) on this sphere. */
  earthRadiusMeters: 6_371_008.8,
  /**
   * Points per leaf of a segment's k-d tree (src/geo/kdtree.ts). Range 1..: smaller leaves
   * prune more finely and make the tree's node arrays no larger (they are implicit). Part of
   * the segment format: a segment records the leaf size it was built with.
   */
  kdLeafSize: 64,
  /** Vertices a filter polygon may have. Range 3... */
  maxPolygonPoints: 10_000,
  /** Shapes one geo filter condition may list. Range 1... */
  maxShapes: 100,
} as const;

/** Vector search defaults (spec: Limits). */
export const VECTOR_DEFAULTS = { ef: 10, alpha: 0.3, k: 0 } as const;

/** Background HNSW catch-up works in slices of this many milliseconds between requests. */
export const VECTOR_SYNC_SLICE_MS = 8;
/** A changed HNSW graph is saved once writes have paused this long. */
export const VECTOR_SAVE_AFTER_MS = 2000;

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
  /**
   * Merges never make a segment of more live documents than this (a merge holds its whole
   * output in memory, about 0.7 KB a document of the million benchmark's, and reads its
   * sources: two million keep a merging process near 3 GB). A bulk import's final merge
   * then ends in segments of up to this many, not one.
   */
  maxDocs: 2_000_000,
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

// ---------------------------------------------------------------------------
// Operations (/operations/*)
// ---------------------------------------------------------------------------

export const OPERATIONS_DEFAULTS = {
  /**
   * Compaction waits this long (ms) for quiet: once for the writes in flight to finish (write
   * requests, then a cluster node's command being applied, a merge, transactions), and again
   * at the swap for the reads in flight. What has not finished by then is named in a 503, and
   * nothing is changed. A request held at a closed door this long is answered 503 (it did
   * nothing: retry it). Long imports are the usual reason. Range 100..600_000.
   */
  quietTimeoutMs: 10_000,
} as const;

// ---------------------------------------------------------------------------
// Cluster (fathom serve --cluster; src/cluster)
// ---------------------------------------------------------------------------

export const CLUSTER_DEFAULTS = {
  /**
   * An import on a cluster node is replicated in commands of up to this many lines (or
   * `batch_size` when larger) and about importCommandBytes: each command is one transaction
   * on every node, so fewer, larger commands cost each node fewer commits and segments.
   */
  importCommandLines: 1000,
  /** See importCommandLines: a command is closed once its lines reach this many bytes. */
  importCommandBytes: 512 * 1024,
  /** JetStream stream holding the cluster's commands (subject `<stream>.log`); its snapshots go to the object store `<stream>_snapshots`. */
  stream: 'FATHOM',
  /** Copies JetStream keeps of the stream and the snapshots; a write needs a majority of them. Range 1..5 (1 only for trying it out). */
  replicas: 3,
  /** A node more than this many commands behind the stream answers /health with `{"ok": false}` (the reference's healthy-read-lag). */
  healthyLag: 1000,
  /** The leader stores a snapshot every this many commands and purges the stream before it. Range 100.. */
  snapshotEvery: 10_000,
  /** Commands kept in the stream before the latest snapshot, so a node down for a while catches up from the stream. */
  keepAfterSnapshot: 10_000,
  /** Give up joining (NATS unreachable, JetStream not answering) after this long, ms. */
  joinTimeoutMs: 60_000,
  /** A write's publish is retried (same id, de-duplicated) for this long before 503, ms. */
  publishTimeoutMs: 10_000,
  /** One publish attempt's wait for JetStream's acknowledgement, ms. */
  publishAttemptMs: 3_000,
  /** Pause before publishing again after a refusal, ms: while the stream has no leader a publish is refused at once, so asking often ends the wait soon after the election. */
  publishRetryMs: 50,
  /** One JetStream API request's wait (stream state, creating a reader), ms: short, so retries follow an election closely. */
  apiTimeoutMs: 2_000,
  /** A write acknowledged by JetStream but not applied on its node within this long answers 503 (it is applied later), ms. */
  applyTimeoutMs: 60_000,
  /** How often a node reads the stream's state (leader, last sequence) and considers a snapshot, ms. */
  watchIntervalMs: 1_000,
  /** A node behind the stream that applied nothing for this long reads the stream again, ms (a reader whose NATS server died). */
  stallMs: 3_000,
  /** How long one pull for more commands waits on the server, ms (its heartbeats come at half of it). */
  readerExpiresMs: 5_000,
  /** A write this node published but has not applied after this long, with nothing applied meanwhile, makes the node read the stream again, ms. */
  kickAfterMs: 1_000,
  /** The same, for a write that JetStream took only after refusing it (an election: readers whose consumer lived on the old leader's server are gone), ms. */
  kickAfterElectionMs: 150,
  /** A new reader asks for its consumer again when no answer came within this long, keeping the earlier requests open (just after an election a request can go unanswered), ms. */
  readerAskAgainMs: 250,
  /** Pause before a new reader after a failed one, ms. */
  readerRetryMs: 200,
  /** A snapshot being read that sends nothing for this long was replaced meanwhile: read it again, ms. */
  snapshotReadIdleMs: 30_000,
} as const;

// ---------------------------------------------------------------------------
// Secrets at rest
// ---------------------------------------------------------------------------

/** Provider credentials at rest (src/storage/secrets.ts). */
export const SECRETS = {
  /** Shortest secrets key accepted (`--secrets-key`, FATHOM_SECRETS_KEY), in characters. */
  minKeyLength: 16,
  /** scrypt's cost N (memory 128 x N x 8 bytes: 32 MB; ~0.1 s once per process and salt). */
  scryptN: 32768,
  /** Derived keys kept in memory (one per salt met: each sealing process draws one). */
  derivedKeysKept: 64,
} as const;

// ---------------------------------------------------------------------------
// API keys
// ---------------------------------------------------------------------------

export const KEY_LIMITS = {
  /** Characters (letters and digits) in a key value Fathom generates. */
  generatedLength: 32,
  /** Leading characters of a value shown as `value_prefix`; a scoped search key names its parent by them. */
  prefixLength: 4,
  /** Longest accepted key value, in characters (visible ASCII only). */
  maxValueLength: 512,
  /** Longest `description`. */
  maxDescriptionLength: 4096,
  /** `expires_at` reported for a key created without one (year 3020, as the reference reports it). */
  neverExpires: 64723363199,
  /** How often expired keys with `autodelete` are purged, in ms (spec: hourly). */
  purgeIntervalMs: 3_600_000,
} as const;

// ---------------------------------------------------------------------------
// User-written patterns (src/pattern.ts)
// ---------------------------------------------------------------------------

/**
 * Bounds on the regular expressions users write (a key's `collections` entries, schema
 * field names such as `.*_facet`, `facet_by` globs). They are matched by an automaton in
 * time linear in the name; these bound the constant. A pattern beyond the first two is
 * refused with 400 when it is written (one stored earlier matches nothing).
 */
export const PATTERN_LIMITS = {
  /** Longest pattern, in characters. Range 1..100_000. */
  maxLength: 1000,
  /**
   * Largest compiled pattern, in automaton instructions (`coll_.*` is 13, `(a+)+$` 10,
   * `[a-z]{1,64}` about 130). The cost of matching one character grows with it. Range 10..10_000.
   */
  maxProgramSize: 500,
  /**
   * Most steps (name length x program size) one match may take: a longer name does not
   * match. At the default every accepted pattern covers names of 256 characters (the
   * longest collection name), and `.*` names of about 20,000. Range maxProgramSize x 256..
   */
  maxMatchWork: 128_000,
  /** Compiled patterns kept in memory (each automaton keeps up to 8 MB of states). Range 1.. */
  cacheSize: 1000,
  /**
   * Answers each compiled pattern remembers, for names of up to 256 characters: the same
   * names come back (a request's collection, a document's field names), and a remembered
   * answer costs a map lookup instead of a run of the automaton. Range 0..
   */
  memoSize: 64,
} as const;

// ---------------------------------------------------------------------------
// Search analytics (src/analytics/)
// ---------------------------------------------------------------------------

export const ANALYTICS_DEFAULTS = {
  /** Seconds between flushes of aggregated queries and counters into their collections (`--analytics-flush-interval`). */
  flushIntervalSec: 3600,
  /** Smallest `--analytics-flush-interval` (the reference's minimum). */
  minFlushIntervalSec: 60,
  /** Largest `--analytics-flush-interval` (a year). */
  maxFlushIntervalSec: 86_400 * 365,
  /** The pending-state environment's directory under the data directory when `--analytics-dir` is not given. */
  dirName: 'analytics',
  /** A user's search counts only after this long (ms) without another from the same user (spec: 4 seconds). */
  pauseMs: 4000,
  /** How often the owning process turns searches older than the pause into counts (ms); bounds the pending log. */
  compactIntervalMs: 5000,
  /** Searches decided per compaction transaction, so that one never holds the writer long. */
  compactChunk: 5000,
  /** `params.limit` of query rules when not given; range 1..maxLimit. */
  limit: 1000,
  maxLimit: 100_000,
  /** Distinct queries a rule keeps pending between flushes, as a multiple of its limit (more are dropped, as the reference does). */
  pendingQueriesPerLimit: 10,
  /** Distinct documents a counter rule keeps pending between flushes (more are dropped). */
  maxPendingCounters: 1_000_000,
  /** Longest query recorded, in UTF-8 bytes after normalising; longer ones are not recorded (a query is part of a database key). */
  maxQueryBytes: 1024,
  /** User ids (header, parameter) longer than this many UTF-8 bytes are replaced by a hash of them. */
  maxUserIdLength: 256,
  /** Largest absolute counter event `weight`. */
  maxWeight: 1_000_000,
  /** Longest rule or event name, in characters. */
  maxNameLength: 256,
  /** Rules one `POST /analytics/rules` may create (Typesense 30's array body), so a request's work is bounded. */
  maxRulesPerRequest: 100,
} as const;

// ---------------------------------------------------------------------------
// fathom serve (the HTTP daemon), beyond SERVER_DEFAULTS
// ---------------------------------------------------------------------------

/**
 * The reference's runtime settings, changed with `POST /config` (src/runtime-config.ts) and
 * kept in the data directory, so every server process and cluster node reads the same.
 */
export const RUNTIME_CONFIG_DEFAULTS = {
  /** Requests taking at least this many ms are logged again at warn level as `slow request`; -1: none. Any whole number. */
  'log-slow-requests-time-ms': -1,
  /** The reference's replication read lag limit for /health (>= 1); kept and reported, no effect in Fathom (a cluster node is healthy once caught up with its stream). */
  'healthy-read-lag': 1000,
  /** The reference's replication write lag limit (>= 1); kept, no effect in Fathom. */
  'healthy-write-lag': 500,
  /** The reference's switch for skipping writes while it replays its log at start-up; kept, no effect in Fathom (nothing is replayed). */
  'skip-writes': false,
} as const;

/** How often a server process re-reads the runtime settings (ms): a change reaches every process within this long. */
export const RUNTIME_CONFIG_REFRESH_MS = 1000;

export const SERVE_DEFAULTS = {
  /** Log level: fatal | error | warn | info (one line per request) | debug | trace | silent. */
  logLevel: 'info',
  /**
   * Server processes sharing the data directory; 0 means one per CPU core, so that every
   * core answers searches. Range 0..64. bench/http/README.md has the measurements of
   * processes against worker threads and the conditions they were taken in.
   */
  processes: 0,
  /** After SIGTERM/SIGINT, in-flight requests get this long (ms) before connections are cut. */
  shutdownGraceMs: 30_000,
  /**
   * A connection with no bytes either way for this long (ms) is closed (stuck clients).
   * At most SERVER_DEFAULTS.headersTimeoutMs: Node never closes a silent connection when
   * the idle limit is longer than the headers limit, so the server clamps it.
   */
  socketIdleTimeoutMs: 60_000,
  /** How often Node checks for clients that are too slow to send their headers (ms). */
  connectionsCheckIntervalMs: 5_000,
  /** Longest path segment (collection name, document id), in characters after decoding. */
  maxParamLength: 2048,
  /** Bytes of JSON Lines buffered for a slow export reader before reading pauses. */
  exportHighWaterMark: 256 * 1024,
  /** Serve the web dashboard on `/` and `/dashboard/...` (`--no-dashboard` turns it off). */
  dashboard: true,
  /**
   * `--search-cutoff-ms`: the longest any search may run (ms), whatever its own
   * `search_cutoff_ms` asks (a request may ask for less, never more). Past it the search
   * answers `search_cutoff: true` with what it found, so no request holds a process longer.
   * Range 0.. (0: no ceiling).
   */
  searchCutoffMs: 5_000,
} as const;

// ---------------------------------------------------------------------------
// Embedding models (src/embed/)
// ---------------------------------------------------------------------------

export const EMBED_DEFAULTS = {
  /** Texts per request to a remote embedding API during indexing (`remote_embedding_batch_size`). Range 1..10000. */
  remoteBatchSize: 200,
  /** Per-attempt timeout of a remote embedding request while indexing (`remote_embedding_timeout_ms`), ms. Range 1..3_600_000. */
  remoteTimeoutMsIndex: 60_000,
  /** The same while searching (embedding `q`), ms. */
  remoteTimeoutMsQuery: 30_000,
  /** Attempts per remote request, the first included (`remote_embedding_num_tries`). Range 1..100. */
  remoteNumTries: 2,
  /** Wait before the 2nd attempt, ms; doubles for each later attempt (plus up to 25% jitter). */
  remoteBackoffMs: 200,
  /** Longest wait between two attempts, ms. */
  remoteBackoffMaxMs: 5_000,
  /** Texts per `batchEmbedContents` request to the Google generative language API (its own limit). */
  googleMaxBatch: 100,
  /** Instances per Vertex AI `:predict` request (the limit of the gecko models; later models accept more). */
  gcpMaxInstances: 5,
  /** Vertex AI region when `model_config.region` is not given. */
  gcpRegion: 'us-central1',
  /** Vertex AI task types sent with documents and with queries (`document_task`, `query_task`). */
  gcpDocumentTask: 'RETRIEVAL_DOCUMENT',
  gcpQueryTask: 'RETRIEVAL_QUERY',
  /** An OAuth access token this close to its expiry (ms) is refreshed before use. */
  oauthRefreshMarginMs: 60_000,
  /** Texts per inference call of a local (ONNX or built-in) model. A caller's smaller batch size wins. Range 1..1024. */
  localBatchSize: 32,
  /**
   * Inference threads for `ts/use-lite` (TensorFlow.js WASM runs one core per thread), each with
   * its own copy of the model (about 60 MB). Range 1..16; capped at the machine's cores.
   */
  useLiteThreads: 2,
  /** Longest token sequence fed to a local model when its config.json names none (BERT's 512). */
  localMaxTokens: 512,
  /** Texts longer than this many characters per allowed token are cut before tokenising (the tokens past the limit are dropped anyway). */
  localMaxCharsPerToken: 32,
  /** Base URL of the repository `ts/<name>` models are downloaded from: `<url><name>/config.json`, `model.onnx`, vocabulary. */
  modelRepositoryUrl: 'https://models.typesense.org/public/',
  /** A model download that receives no bytes for this long (ms) is abandoned. */
  downloadStallTimeoutMs: 60_000,
  /** Timeout for fetching a model's config.json from the repository, ms. */
  repositoryConfigTimeoutMs: 30_000,
  /** Query embeddings kept per process (LRU), so a repeated `q` embeds once. 0 disables the cache. */
  queryCacheSize: 1_000,
} as const;

// ---------------------------------------------------------------------------
// Conversational search and natural-language search (src/conversation/, src/llm/)
// ---------------------------------------------------------------------------

export const CONVERSATION_DEFAULTS = {
  /** Seconds a conversation is kept after its last message, unless its model or a PUT says otherwise. */
  ttl: 86_400,
  /** Largest `ttl` accepted, seconds (about 68 years: fits a signed 32-bit integer). */
  maxTtl: 2 ** 31 - 1,
  /**
   * Budget of search results sent with a question, in tokens, counted as `bytesPerToken` bytes of
   * request body each. The model's `max_bytes` caps every call further.
   */
  contextTokens: 3_000,
  /** Bytes a token is counted as when budgeting (English text averages about four). */
  bytesPerToken: 4,
  /** Characters of the latest history sent for the standalone-question rewrite (the spec's ~3000 tokens, "about 1200 characters"). */
  historyChars: 1_200,
  /**
   * Time allowed per LLM call, ms: a whole answer; a streamed answer's start and then each gap
   * between its pieces. A model's `timeout_ms` overrides it. Range 1..600_000.
   */
  llmTimeoutMs: 60_000,
  /** Largest `timeout_ms` a model may set, ms. */
  maxLlmTimeoutMs: 600_000,
  /** Base URLs of the hosted providers (a model's `openai_url` / `api_url` replaces them). */
  openaiUrl: 'https://api.openai.com',
  cloudflareUrl: 'https://api.cloudflare.com',
  /** Path of the chat completions endpoint under an OpenAI-compatible base URL. */
  chatCompletionsPath: '/v1/chat/completions',
  /** Longest model id, characters. */
  maxModelIdLength: 256,
} as const;

export const NL_SEARCH_DEFAULTS = {
  /** `max_bytes` of a natural-language search model that gives none. */
  maxBytes: 16_000,
  /** Facet values per field shown to the LLM so that it can write filters with real values. */
  facetValuesPerField: 20,
  /** Fields described to the LLM, at most (wide schemas are cut; facet and sort fields first). */
  maxFields: 100,
} as const;

// ---------------------------------------------------------------------------
// Images (src/embed/image/) and image-text models (src/embed/clip/)
// ---------------------------------------------------------------------------

export const IMAGE_DEFAULTS = {
  /**
   * Largest image accepted in an `image` field, in pixels (width x height, read from the
   * header before anything is decoded): 25,000,000, e.g. 5000 x 5000. A larger image fails
   * its document. Decoding one takes about 4 bytes a pixel (100 MB at the limit).
   */
  maxPixels: 25_000_000,
  /** Images per inference call of an image tower (one session run). Range 1..256. */
  batchSize: 16,
  /** A CLIP model's input side, mean and std when its config.json names none (OpenAI CLIP's). */
  clipImageSize: 224,
  clipMean: [0.48145466, 0.4578275, 0.40821073],
  clipStd: [0.26862954, 0.26130258, 0.27577711],
  /** Tokens per text of a CLIP text tower (start and end tokens included) when config.json names none. */
  clipContextLength: 77,
  /** Size of a CLIP vocabulary when config.json names none: 256 bytes, 256 bytes + `</w>`, the merges, 2 special tokens. */
  clipVocabSize: 49408,
} as const;

// ---------------------------------------------------------------------------
// Voice queries (src/voice/)
// ---------------------------------------------------------------------------

export const VOICE_DEFAULTS = {
  /** The only audio accepted in `voice_query`: WAV, PCM, this many samples a second, 16-bit, mono. */
  sampleRate: 16_000,
  /** Longest voice query, seconds (longer audio gets 400). A spoken query is a few seconds. */
  maxSeconds: 30,
  /**
   * Audio whose loudest sample stays below this level (dB relative to full scale) is refused
   * as silence: -50 dBFS is a peak of 103 in 32767. Speech recorded at any usable level peaks
   * far above it.
   */
  silencePeakDbfs: -50,
  /** Where `ts/whisper/<name>` models come from, under the model repository's base URL: `<base>audio_query/whisper/<name>.bin`, md5s in `<base>audio_query/models.json`. */
  repositoryDir: 'audio_query',
  /** CPU threads for one whisper.cpp transcription. Range 1..16; capped at the machine's cores. */
  whisperThreads: 2,
  /** Per-attempt timeout of a remote transcription request, ms. */
  remoteTimeoutMs: 30_000,
  /** Attempts per remote transcription request, the first included. */
  remoteNumTries: 2,
  /** Debian's pocketsphinx-en-us model files (`pocketsphinx/en-us`); model_config `hmm`, `lm`, `dict` override them. */
  pocketsphinxHmm: '/usr/share/pocketsphinx/model/en-us/en-us',
  pocketsphinxLm: '/usr/share/pocketsphinx/model/en-us/en-us.lm.bin',
  pocketsphinxDict: '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict',
  /** A recogniser process that answers nothing for this long (ms) is killed and the query fails. */
  recognizerTimeoutMs: 30_000,
} as const;
