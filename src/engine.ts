/**
 * The engine: one object that the CLI commands and the HTTP server both drive. It owns
 * the data directory and exposes collections, aliases, documents, import/export, search,
 * stopwords, synonyms, curation rules, presets, keys, conversation and NL search models,
 * conversations, analytics rules and the operations on the environment. Nothing above this
 * layer (commands/, src/server/) touches `store`: the engine's own modules (src/cluster,
 * src/analytics, src/conversation, src/nlsearch, src/rulesets) reach it through here. Every method that writes goes through `commit`
 * (src/cluster/command.ts), so a cluster node replicates it.
 */
import { FathomError } from './errors.js';
import { settlesBy } from './deadline.js';
import { DELETE_BATCH_SIZE, MAX_NAME_LENGTH, SEARCH_CACHE_ENTRIES, VECTOR_SAVE_AFTER_MS, VECTOR_SYNC_SLICE_MS } from './defaults.js';
import { openStore, write, type OpenOptions, type Store } from './storage/store.js';
import { isNoSpace } from './storage/diskfull.js';
import {
  aliasTarget,
  createCollection,
  deleteCollection,
  describeCollection,
  getRecord,
  getSchema,
  listCollections,
  type CollectionInfo,
} from './collection/catalog.js';
import { applyBatch, type BatchOp, type OpResult, type WriteAction, type WriteHooks } from './collection/writer.js';
import type { DirtyValues } from './document/document.js';
import { copyRecord, sealSchemaSecrets } from './schema/schema.js';
import { importLines, type ImportOptions, type ImportSummary, type ResultSink } from './io/import.js';
import { exportDocuments, exportLines, type ExportOptions } from './io/export.js';
import { Merger } from './index/merger.js';
import { Preparer } from './io/prepare.js';
import { vectorHooks } from './vector/hooks.js';
import { forgetGraphs, saveGraphs, vectorIndex } from './vector/hnsw.js';
import { alterCollection, rebuildIndex } from './collection/alter.js';
import { makeReferenceHooks, referencingCollections } from './join/refs.js';
import { checkJoinIncludes, decorateWithJoins, parseJoinIncludes } from './join/join.js';
import { joinAccessOf } from './join/access.js';
import type { Scope } from './keys/scope.js';
import { loadDocument, projectionWants } from './document/stored.js';
import { embedQuery, enrichOps, resolveEmbedFields, type RemoteEmbeddingOptions } from './vector/autoembed.js';
import type { EmbedEnv } from './embed/index.js';
import { checkVoiceModel, transcribeVoiceQuery } from './voice/index.js';
import { isPlainObject, setOwn } from './json.js';
import { deleteAlias, getAlias, listAliases, upsertAlias, type AliasRecord } from './collection/aliases.js';
import { evictStore, nextSegmentId, readState } from './index/manifest.js';
import { project, type Projection } from './io/project.js';
import { parseCacheParams, parseSearchParams, type RawParams, type SearchParams } from './query/params.js';
import { SearchCache } from './search/cache.js';
import { commit, goesThroughStream } from './cluster/command.js';
import { replicatedImport } from './cluster/import.js';
import { leaveOutUnstored } from './cluster/unstored.js';
import { snapshot } from './storage/copy.js';
import type { SearchScope } from './query/scope.js';
import { filterSeqs, search, type RankedPage, type SearchResponse } from './search/search.js';
import { unionSearch, type UnionResponse } from './search/union.js';
import { deleteDictionary, getDictionary, importDictionary, listDictionaries, parseDictionaryLines, type StemmingDictionary } from './stemming/dictionaries.js';
import { planSearch, type EmbeddingNeed } from './query/plan.js';
import { deleteStopwords, getStopwords, listStopwords, putStopwords, type StopwordSet } from './stopwords/stopwords.js';
import { naturalLanguageSearch, nlSearchModels, wantsNlQuery, type NlSearchModel } from './nlsearch/nlsearch.js';
import { createKey, deleteKey, getKey, keyFinder, listKeys, purgeExpiredKeys, type CreatedKey, type KeyView } from './keys/keys.js';
import type { KeyFinder } from './keys/redact.js';
import { Authenticator } from './keys/auth.js';
import { conversationModels, type ConversationModel } from './conversation/models.js';
import { deleteConversation, getConversation, listConversations, purgeExpiredConversations, updateConversation, type Conversation, type ConversationActor } from './conversation/history.js';
import type { ModelRegistry } from './llm/registry.js';
import { deleteRule, getRule, listRules, putRule, ruleIndex, type AnalyticsRule } from './analytics/rules.js';
import { copyEnvironment } from './storage/copy.js';
import { replicateThrough, type Replicate } from './cluster/command.js';
import type { Schema } from './schema/schema.js';
import { checkLinkedSets, revisionToken, Rules } from './rulesets/rulesets.js';
import { parseRuntimeConfig, readRuntimeConfig, storeRuntimeConfig, type RuntimeConfig } from './runtime-config.js';
import { SYNONYMS, type SynonymItem } from './synonyms/synonyms.js';
import { CURATION, type CurationItem } from './curation/rules.js';
import { Budget, runWith } from './search/budget.js';
import { curate } from './curation/curate.js';
import { deletePreset, getPreset, listPresets, presetSearches, putPreset, withPreset, type Preset } from './presets/presets.js';

export interface EngineOptions extends OpenOptions {
  /** Base URL of the repository `ts/` models are downloaded from (default: the public one). */
  modelRepositoryUrl?: string;
  /**
   * Where segment merges run after writes: 'worker' (default) in a worker thread,
   * 'inline' on this thread between writes, 'off' never (tests of the raw write path).
   */
  merges?: 'worker' | 'inline' | 'off';
  /** Answers kept for searches sent with `use_cache` (default SEARCH_CACHE_ENTRIES; 0: none). */
  searchCacheEntries?: number;
  /** The longest any search may run, ms, whatever its `search_cutoff_ms` (`fathom serve --search-cutoff-ms`; default 0: no ceiling). */
  searchCutoffMs?: number;
  /** Where background failures (merges, vector graph upkeep) are reported (default: one JSON line on stderr). */
  log?: EngineLog;
}

/** A logger with pino's call shape (fastify's `app.log` is one). */
export interface EngineLog {
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/** The default EngineLog: one JSON line per failure on stderr. */
export const stderrLog: EngineLog = {
  warn: (fields, msg) => process.stderr.write(JSON.stringify({ level: 'warn', msg, ...errorFields(fields) }) + '\n'),
  error: (fields, msg) => process.stderr.write(JSON.stringify({ level: 'error', msg, ...errorFields(fields) }) + '\n'),
};

function errorFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? v.message : v;
  return out;
}

/** A cluster node's record of the stream it follows (its data directory changes only through it). */
export interface ClusterMembership {
  name: string;
  node?: string;
}

export interface WriteOptions {
  action?: WriteAction;
  dirtyValues?: DirtyValues;
}

export class Engine {
  /** The data directory's databases: for the engine's own modules and tests, never for commands/ or src/server/ (the lint forbids it there). */
  readonly store: Store;
  readonly merges: 'worker' | 'inline' | 'off';
  private merger: Merger;
  /** Prepares import batches ahead of their transactions (a worker thread, started on demand). */
  private readonly preparer = new Preparer();
  /** Between suspend and resume: the environment may be closed, background work waits. */
  private suspended = false;
  /** Answers of `use_cache` searches (search/cache.ts). */
  private readonly searchCache: SearchCache<SearchResponse>;
  private hooks: WriteHooks = vectorHooks;
  private closed = false;
  /** Background failures go here (EngineOptions.log); the server points it at its own log. */
  log: EngineLog;

  private readonly modelRepositoryUrl?: string;
  /** EngineOptions.searchCutoffMs (0: none). */
  private readonly searchCutoffMs: number;

  private constructor(store: Store, opts: EngineOptions) {
    this.store = store;
    this.searchCutoffMs = opts.searchCutoffMs ?? 0;
    this.modelRepositoryUrl = opts.modelRepositoryUrl ?? process.env.FATHOM_MODEL_REPOSITORY_URL;
    this.merges = opts.merges ?? 'worker';
    this.searchCache = new SearchCache(opts.searchCacheEntries ?? SEARCH_CACHE_ENTRIES);
    this.log = opts.log ?? stderrLog;
    this.merger = this.newMerger();
    this.addHooks(makeReferenceHooks(() => this.hooks));
  }

  private newMerger(): Merger {
    return new Merger(this.store, this.merges === 'worker', (collection, e) => this.log.error({ collection, err: e }, 'a background segment merge failed'));
  }

  static open(dir: string, opts: EngineOptions = {}): Engine {
    return new Engine(openStore(dir, opts), opts);
  }

  get dir(): string {
    return this.store.dir;
  }

  /** Closes the engine; `exiting`: see Store.close. */
  async close(opts: { exiting?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.vectorTimer) clearTimeout(this.vectorTimer);
    await this.merger.close();
    await this.preparer.close();
    try {
      saveGraphs(this.store);
    } catch (e) {
      // a graph that cannot be saved is rebuilt on next open
      this.log.warn({ err: e }, 'vector graphs not saved at close; the next open rebuilds them');
    }
    forgetGraphs(this.store);
    evictStore(this.store);
    await this.store.close(opts);
  }

  /** Adds hooks that run inside every write transaction (vector and reference indexes). */
  addHooks(h: WriteHooks): void {
    const prev = this.hooks;
    this.hooks = {
      beforeWrite: (...a) => {
        prev.beforeWrite?.(...a);
        h.beforeWrite?.(...a);
      },
      afterWrite: (...a) => {
        prev.afterWrite?.(...a);
        h.afterWrite?.(...a);
      },
      afterDelete: (...a) => {
        prev.afterDelete?.(...a);
        h.afterDelete?.(...a);
      },
      needsDocuments: (store, schema) => !!prev.needsDocuments?.(store, schema) || !!h.needsDocuments?.(store, schema),
    };
  }

  // -------------------------------------------------------------------------
  // Collections
  // -------------------------------------------------------------------------

  /**
   * Creates a collection from a schema, or, with `srcName`, with the schema of collection
   * `srcName` under the name the body gives (`POST /collections?src_name=`; documents are
   * not copied). The copied schema is settled here, so the replicated command carries it.
   */
  createCollection(schema: unknown, opts: { srcName?: string } = {}): Promise<CollectionInfo> {
    if (opts.srcName !== undefined) {
      const src = describeCollection(this.store, getRecord(this.store, opts.srcName));
      if (!isPlainObject(schema) || typeof schema.name !== 'string') throw new FathomError('BAD_SCHEMA', 'a copy (`src_name`) needs the new collection\'s `name` in the body');
      const { num_documents: _n, created_at: _c, ...copy } = src;
      schema = { ...copy, name: schema.name };
    }
    // credentials sealed before the command is made, so that the stream carries them sealed
    schema = sealSchemaSecrets(schema);
    // (each node fetches the embedding models into its own directory as it applies this)
    return commit(this.store, { op: 'collection.create', schema }, () =>
      createCollection(this.store, schema, async (valid) => {
        this.checkLinks(valid);
        await resolveEmbedFields(valid.fields, this.embedEnv);
        if (valid.voice_query_model) await checkVoiceModel(valid.voice_query_model, this.embedEnv);
      }),
    );
  }

  /** Where embedding models live and come from. */
  get embedEnv(): EmbedEnv {
    return { dataDir: this.store.dir, ...(this.modelRepositoryUrl ? { modelRepositoryUrl: this.modelRepositoryUrl } : {}) };
  }
  listCollections(): CollectionInfo[] {
    return listCollections(this.store);
  }
  getCollection(name: string): CollectionInfo {
    return describeCollection(this.store, getRecord(this.store, name));
  }
  deleteCollection(name: string): Promise<CollectionInfo> {
    return commit(this.store, { op: 'collection.delete', name }, async () => {
      const id = getRecord(this.store, name).id;
      const info = await deleteCollection(this.store, name);
      forgetGraphs(this.store, id);
      return info;
    });
  }

  /** PATCH: add or drop fields; every document is re-checked and the index rebuilt. */
  async updateCollection(name: string, body: unknown): Promise<{ fields: Record<string, unknown>[]; synonym_sets?: string[]; curation_sets?: string[] }> {
    if (isPlainObject(body) && Array.isArray(body.fields) && body.fields.some((f) => isPlainObject(f) && f.embed !== undefined && f.drop !== true)) {
      throw new FathomError('BAD_SCHEMA', 'an embedding field cannot be added to an existing collection; create a new collection with it and import the documents again');
    }
    return commit(this.store, { op: 'collection.update', name, body }, async () => {
      if (isPlainObject(body)) this.checkLinks(body);
      const r = await write(this.store, () => alterCollection(this.store, name, body, this.hooks));
      const out: { fields: Record<string, unknown>[]; synonym_sets?: string[]; curation_sets?: string[] } = { fields: r.fields };
      if (isPlainObject(body) && body.synonym_sets !== undefined) out.synonym_sets = r.record.synonym_sets ?? [];
      if (isPlainObject(body) && body.curation_sets !== undefined) out.curation_sets = r.record.curation_sets ?? [];
      return out;
    });
  }

  /** A collection's linked synonym and curation sets must exist (400 naming the one that does not). */
  private checkLinks(body: Record<string, unknown>): void {
    checkLinkedSets(this.store, SYNONYMS, 'synonym_sets', body.synonym_sets ?? undefined);
    checkLinkedSets(this.store, CURATION, 'curation_sets', body.curation_sets ?? undefined);
  }

  // -------------------------------------------------------------------------
  // Aliases
  // -------------------------------------------------------------------------

  /**
   * Points an alias at a collection. Collections whose references go through the alias
   * are re-resolved against the new collection (their stored internal ids change).
   */
  upsertAlias(name: string, body: unknown): Promise<AliasRecord> {
    return commit(this.store, { op: 'alias.upsert', name, body }, async () => {
      const before = aliasTarget(this.store, name);
      // an alias may name a collection that does not exist yet, unless references go through
      // it: they must resolve to documents, so that would leave them pointing nowhere
      const target = isPlainObject(body) ? body.collection_name : undefined;
      if (typeof target === 'string' && target.length <= MAX_NAME_LENGTH && this.store.collections.get(target) === undefined) {
        const users = referencingCollections(this.store, name);
        if (users.length > 0) {
          throw new FathomError('BAD_REQUEST', `collection \`${target}\` does not exist, and references of ${users.map((r) => `\`${r.name}\``).join(', ')} go through alias \`${name}\`: create the collection first`);
        }
      }
      const rec = await upsertAlias(this.store, name, body);
      if (before !== undefined && before !== rec.collection_name) {
        for (const r of referencingCollections(this.store, name)) {
          await write(this.store, () => rebuildIndex(this.store, copyRecord(getRecord(this.store, r.name)), this.hooks));
        }
      }
      return rec;
    });
  }
  getAlias(name: string): AliasRecord {
    return getAlias(this.store, name);
  }
  listAliases(): AliasRecord[] {
    return listAliases(this.store);
  }
  deleteAlias(name: string): Promise<AliasRecord> {
    return commit(this.store, { op: 'alias.delete', name }, () => deleteAlias(this.store, name));
  }

  // -------------------------------------------------------------------------
  // Documents
  // -------------------------------------------------------------------------

  /** Applies a batch of operations in one transaction (embedding fields are computed first). */
  async writeBatch(collection: string, ops: BatchOp[], remote: RemoteEmbeddingOptions = {}): Promise<OpResult[]> {
    return this.commitOps(collection, await this.prepareOps(collection, ops, remote));
  }

  /** Computes a batch's embedding fields: here, once, by the node that received the write (a command carries the vectors). */
  prepareOps(collection: string, ops: BatchOp[], remote: RemoteEmbeddingOptions = {}): Promise<BatchOp[]> {
    return enrichOps(this.store, collection, ops, this.embedEnv, remote);
  }

  /**
   * Writes prepared operations (a replicated write on a cluster node, whose command leaves
   * out `store: false` values: src/cluster/unstored.ts).
   */
  commitOps(collection: string, ready: BatchOp[]): Promise<OpResult[]> {
    const ops = goesThroughStream(this.store) ? this.commandOps(collection, ready) : ready;
    return commit(this.store, { op: 'docs.write', collection, ops }, () => this.applyOps(collection, ready));
  }

  private commandOps(collection: string, ready: BatchOp[]): BatchOp[] {
    let schema: Schema;
    try {
      schema = getSchema(this.store, collection);
    } catch {
      return ready; // (applying the command answers that the collection is not there)
    }
    return leaveOutUnstored(schema, ready);
  }

  /** Applies ready operations (embeddings computed) in one transaction. */
  async applyOps(collection: string, ops: BatchOp[]): Promise<OpResult[]> {
    const results = await write(this.store, () => applyBatch(this.store, collection, ops, this.hooks));
    this.afterWrite(collection);
    return results;
  }

  /**
   * Runs `fn` in one write transaction in which `apply(collection, ops)` applies a batch as
   * writeBatch does (hooks included, no embedding); several collections and other records
   * commit together or not at all (an analytics flush: the destination documents and the
   * record of what was applied). Resolves with fn's result and the collections written,
   * once durable.
   */
  async writeTogether<T>(fn: (apply: (collection: string, ops: BatchOp[]) => OpResult[]) => T): Promise<{ result: T; written: string[] }> {
    const written = new Set<string>();
    const result = await write(this.store, () =>
      fn((c, ops) => {
        written.add(c);
        return applyBatch(this.store, c, ops, this.hooks);
      }),
    );
    for (const c of written) this.afterWrite(c);
    return { result, written: [...written] };
  }

  private async single(collection: string, op: BatchOp): Promise<OpResult & { ok: true }> {
    const [r] = await this.writeBatch(collection, [op]);
    if (!r!.ok) throw r!.error;
    return r as OpResult & { ok: true };
  }

  /** Creates (or upserts / emplaces) one document; returns it as stored. */
  async writeDocument(collection: string, doc: unknown, opts: WriteOptions = {}): Promise<Record<string, unknown>> {
    const r = await this.single(collection, { kind: 'write', doc, action: opts.action ?? 'create', dirty: opts.dirtyValues });
    return r.doc;
  }

  /** Partial update by id; returns the fields that were applied, with the id. */
  async updateDocument(collection: string, id: string, partial: unknown, opts: WriteOptions = {}): Promise<Record<string, unknown>> {
    const r = await this.single(collection, { kind: 'write', doc: partial, action: 'update', dirty: opts.dirtyValues, id });
    const applied: Record<string, unknown> = { id: r.id };
    if (partial && typeof partial === 'object') for (const k of Object.keys(partial)) if (Object.hasOwn(r.doc, k)) setOwn(applied, k, r.doc[k]);
    return applied;
  }

  async deleteDocument(collection: string, id: string, opts: { ignoreNotFound?: boolean } = {}): Promise<Record<string, unknown>> {
    const r = await this.single(collection, { kind: 'delete', id, ignoreNotFound: opts.ignoreNotFound });
    return r.doc;
  }

  /** `keyScope`: the patterns of a key that may not read every collection (joined fields reach only those it allows). */
  getDocument(collection: string, id: string, projection: Projection = {}, keyScope?: Scope): Record<string, unknown> {
    const joins = parseJoinIncludes(projection.include, projection.exclude);
    const access = joinAccessOf(this.store, keyScope, 'documents:get');
    checkJoinIncludes(joins, access);
    const schema = getSchema(this.store, collection);
    const seq = this.store.ids.get([schema.id, id]);
    const doc = seq === undefined ? undefined : loadDocument(this.store, schema, seq, projectionWants(projection.include, projection.exclude));
    if (!doc) throw new FathomError('DOCUMENT_NOT_FOUND', `document \`${id}\` not found in collection \`${collection}\``);
    return decorateWithJoins(this.store, schema, joins, project(doc, projection), seq!, access);
  }

  // -------------------------------------------------------------------------
  // Import / export
  // -------------------------------------------------------------------------

  async import(
    collection: string,
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts: ImportOptions,
    sink: ResultSink,
  ): Promise<ImportSummary> {
    // a cluster node's import is a series of replicated batches
    if (goesThroughStream(this.store)) return replicatedImport(this, collection, source, opts, sink);
    const summary = await importLines(
      this.store,
      collection,
      source,
      {
        ...opts,
        hooks: this.hooks,
        preparer: this.preparer,
        enrich: (ops) => enrichOps(this.store, collection, ops, this.embedEnv, opts.remoteEmbedding),
        afterBatch: async (done) => {
          await opts.afterBatch?.(done);
          this.afterWrite(collection);
        },
      },
      sink,
    );
    this.afterWrite(collection);
    return summary;
  }

  /** Like exportDocuments, as JSON text lines (stored text streamed as it is when nothing is projected). */
  exportLines(collection: string, opts: ExportOptions & { filterBy?: string; keyScope?: Scope } = {}): Generator<string> {
    return exportLines(this.store, collection, this.exportOptions(collection, opts));
  }

  /** Documents of a collection in seq order; with `filterBy`, only those that match. Joined fields with `$c(...)`. */
  exportDocuments(collection: string, opts: ExportOptions & { filterBy?: string; keyScope?: Scope } = {}): Generator<Record<string, unknown>> {
    return exportDocuments(this.store, collection, this.exportOptions(collection, opts));
  }

  /** An export's options with its joins and filter resolved; `keyScope` as for getDocument. */
  private exportOptions(collection: string, opts: ExportOptions & { filterBy?: string; keyScope?: Scope }): ExportOptions {
    const { filterBy, keyScope, ...rest } = opts;
    const schema = getSchema(this.store, collection);
    const joins = parseJoinIncludes(opts.include, opts.exclude);
    const access = joinAccessOf(this.store, keyScope, 'documents:export');
    checkJoinIncludes(joins, access);
    const o: ExportOptions = rest;
    if (joins.length > 0) o.decorate = (doc, seq) => decorateWithJoins(this.store, schema, joins, doc, seq, access);
    if (filterBy !== undefined && filterBy.trim() !== '') o.seqs = filterSeqs(this.store, collection, filterBy, access);
    return o;
  }

  // -------------------------------------------------------------------------
  // Search
  // -------------------------------------------------------------------------

  /**
   * One search; `raw` holds parameters as strings (query string, CLI) or JSON values.
   * Asynchronous because a query on an embedding field embeds `q` first.
   */
  async search(collection: string, raw: RawParams, scope?: SearchScope): Promise<SearchResponse> {
    // a preset's parameters lie under the request's (src/presets)
    raw = withPreset(this.store, raw);
    // Natural-language search asks an LLM for the parameters, then comes back here without it.
    if (wantsNlQuery(raw)) return naturalLanguageSearch(this, collection, raw, { scope });
    const conv = raw.conversation;
    if (conv === true || conv === 'true' || conv === '1') {
      throw new FathomError('BAD_PARAMETER', 'conversational search runs through POST /multi_search (`q`, `conversation=true` and `conversation_model_id` in its query string) or `fathom ask`');
    }
    const cache = parseCacheParams(raw);
    if (!cache.use) return this.searchNow(collection, raw, scope);
    const key = SearchCache.key(collection, raw, scope);
    // (read before the search: a write that lands meanwhile leaves the entry stale-marked, not stale)
    const record = getRecord(this.store, collection);
    const version = [record, readState(this.store, record.id), revisionToken(this.store)];
    const hit = this.searchCache.get(key, version);
    if (hit) return hit;
    const answer = await this.searchNow(collection, raw, scope);
    this.searchCache.set(key, version, answer, cache.ttlMs);
    return answer;
  }

  private async searchNow(collection: string, raw: RawParams, scope?: SearchScope, ranked?: (r: RankedPage) => void): Promise<SearchResponse> {
    // a spoken query is transcribed into q first (src/voice)
    const voice = raw.voice_query !== undefined ? await transcribeVoiceQuery(getRecord(this.store, collection), raw, this.embedEnv) : undefined;
    // the clock runs from here: planning (dictionary walks, joins in filters) spends from the budget too
    const budget = new Budget(this.searchCutoffMs);
    const { params, plan } = runWith(budget, () => {
      // curation rules and pinned / hidden hits first: they may change q (src/curation)
      const curated = curate(this.store, collection, voice ? voice.params : raw, scope);
      const params = parseSearchParams(curated.raw);
      return { params, plan: planSearch(this.store, collection, params, scope, curated.curation) };
    });
    const queryVector = plan.embed ? await this.embedQuery(plan.embed, params) : undefined;
    const res = runWith(budget, () => search(plan, queryVector, ranked));
    if (voice) res.request_params = { ...res.request_params, voice_query: { transcribed_query: voice.text } } as SearchResponse['request_params'];
    return res;
  }

  /** A search that needs no embedding, answered synchronously (benchmarks, hot loops). */
  searchSync(collection: string, raw: RawParams): SearchResponse {
    const curated = curate(this.store, collection, withPreset(this.store, raw));
    const plan = planSearch(this.store, collection, parseSearchParams(curated.raw), undefined, curated.curation);
    if (plan.embed) throw new FathomError('BAD_PARAMETER', 'this query needs an embedding model; use search()');
    return search(plan);
  }

  /** Embeds the texts a query needs (weighted average for `queries`, normalised). */
  protected embedQuery(need: EmbeddingNeed, params: SearchParams): Promise<Float32Array> {
    const raw = params.raw;
    const num = (k: string) => (raw[k] === undefined || raw[k] === '' ? undefined : Number(raw[k]));
    return embedQuery(need.field, need.texts, need.weights, this.embedEnv, {
      timeoutMs: num('remote_embedding_timeout_ms'),
      numTries: num('remote_embedding_num_tries'),
    });
  }

  /**
   * Several searches in one call. `common` parameters apply to every search; a search's
   * own parameters win. A failing search reports `{code, error}` in its slot. `scope`
   * (a scoped key's bounds) applies to every search.
   */
  async multiSearch(searches: unknown, common: RawParams = {}, scope?: SearchScope): Promise<{ results: Array<SearchResponse | { code: number; error: string }> }> {
    if (!Array.isArray(searches)) throw new FathomError('BAD_REQUEST', 'multi_search needs a `searches` array');
    // an empty `searches` with a multi_search preset in the common parameters: the preset's searches
    let list: unknown[] = searches;
    const multi = searches.length === 0 ? this.presetSearches(common) : undefined;
    if (multi) {
      list = multi;
      const { preset: _p, ...rest } = common;
      common = rest;
    }
    const results: Array<SearchResponse | { code: number; error: string }> = [];
    for (const s of list) {
      try {
        if (!s || typeof s !== 'object' || Array.isArray(s)) throw new FathomError('BAD_REQUEST', 'each search must be a JSON object');
        // (a preset may name the collection)
        const params = withPreset(this.store, { ...common, ...(s as RawParams) });
        const collection = params.collection;
        if (typeof collection !== 'string' || !collection) throw new FathomError('BAD_REQUEST', 'each search needs a `collection`');
        results.push(await this.search(collection, params, scope));
      } catch (e) {
        if (!(e instanceof FathomError)) throw e;
        results.push({ code: e.status, error: e.message });
      }
    }
    return { results };
  }

  /**
   * A union of searches (search/union.ts): their hits merged into one ranked list, paged
   * by `paging` (the request's page, per_page, offset, limit, limit_hits). `common`
   * parameters apply to every search; `scope` too.
   */
  unionSearch(searches: unknown, paging: RawParams, common: RawParams = {}, scope?: SearchScope, opts: { removeDuplicates?: boolean } = {}): Promise<UnionResponse> {
    return unionSearch(
      searches,
      paging,
      async (collection, params) => {
        let ranked: RankedPage | undefined;
        const res = await this.searchNow(collection, { ...common, ...params }, scope, (r) => (ranked = r));
        return { res, ranked: ranked ?? { clauses: [], keys: [] } };
      },
      opts.removeDuplicates ?? true,
    );
  }

  /** Deletes every document matching `filterBy`, `batchSize` per transaction. */
  async deleteByFilter(collection: string, filterBy: string, batchSize = DELETE_BATCH_SIZE, keyScope?: Scope): Promise<{ num_deleted: number }> {
    if (!filterBy || !filterBy.trim()) throw new FathomError('BAD_PARAMETER', 'filter_by is required to delete documents by query');
    const seqs = filterSeqs(this.store, collection, filterBy, joinAccessOf(this.store, keyScope, 'documents:delete'));
    let deleted = 0;
    for (let i = 0; i < seqs.length; i += batchSize) {
      const ops: BatchOp[] = seqs.slice(i, i + batchSize).map((seq) => ({ kind: 'deleteSeq', seq }));
      const results = await this.writeBatch(collection, ops);
      deleted += results.filter((r) => r.ok).length;
    }
    return { num_deleted: deleted };
  }

  /**
   * Applies `partial` to every document matching `filterBy`. Answers the fields applied
   * (as stored: coerced values, as a single update answers) and `num_updated`.
   */
  async updateByFilter(collection: string, filterBy: string, partial: unknown, opts: WriteOptions & { keyScope?: Scope } = {}): Promise<Record<string, unknown> & { num_updated: number }> {
    if (!filterBy || !filterBy.trim()) throw new FathomError('BAD_PARAMETER', 'filter_by is required to update documents by query');
    if (!partial || typeof partial !== 'object' || Array.isArray(partial)) throw new FathomError('BAD_DOCUMENT', 'the update must be a JSON object');
    if ('id' in (partial as object)) throw new FathomError('BAD_DOCUMENT', 'an update by filter cannot change `id`');
    const seqs = filterSeqs(this.store, collection, filterBy, joinAccessOf(this.store, opts.keyScope, 'documents:update'));
    const collId = getRecord(this.store, collection).id;
    let updated = 0;
    let applied: Record<string, unknown> | undefined;
    for (let i = 0; i < seqs.length; i += DELETE_BATCH_SIZE) {
      const ops: BatchOp[] = [];
      for (const seq of seqs.slice(i, i + DELETE_BATCH_SIZE)) {
        const doc = this.store.docs.get([collId, seq]) as Record<string, unknown> | undefined;
        if (doc) ops.push({ kind: 'write', doc: partial, action: 'update', dirty: opts.dirtyValues, id: String(doc.id) });
      }
      const results = await this.writeBatch(collection, ops);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
      const first = results[0];
      if (first && first.ok && applied === undefined) {
        applied = {};
        for (const k of Object.keys(partial)) if (Object.hasOwn(first.doc, k)) setOwn(applied, k, first.doc[k]);
      }
      updated += results.length;
    }
    return { ...(applied ?? (partial as Record<string, unknown>)), num_updated: updated };
  }

  // -------------------------------------------------------------------------
  // Stopwords
  // -------------------------------------------------------------------------

  putStopwords(name: string, body: unknown): Promise<StopwordSet> {
    return commit(this.store, { op: 'stopwords.put', name, body }, () => putStopwords(this.store, name, body));
  }
  getStopwords(name: string): StopwordSet {
    return getStopwords(this.store, name);
  }
  listStopwords(): StopwordSet[] {
    return listStopwords(this.store);
  }
  deleteStopwords(name: string): Promise<{ id: string }> {
    return commit(this.store, { op: 'stopwords.delete', name }, () => deleteStopwords(this.store, name));
  }

  // -------------------------------------------------------------------------
  // Stemming dictionaries
  // -------------------------------------------------------------------------

  /**
   * Adds word -> root pairs to a stemming dictionary: JSON Lines text (an import body),
   * checked and normalised here, or pairs already so (a replicated command).
   */
  importStemmingDictionary(id: string | undefined, lines: string | Array<[string, string]>): Promise<Array<{ word: string; root: string }>> {
    const words = typeof lines === 'string' ? parseDictionaryLines(lines) : lines;
    return commit(this.store, { op: 'stemdict.import', id: id ?? '', words }, () => importDictionary(this.store, id, words));
  }
  getStemmingDictionary(id: string): StemmingDictionary {
    return getDictionary(this.store, id);
  }
  listStemmingDictionaries(): { dictionaries: string[] } {
    return listDictionaries(this.store);
  }
  deleteStemmingDictionary(id: string): Promise<{ id: string }> {
    return commit(this.store, { op: 'stemdict.delete', id }, () => deleteDictionary(this.store, id));
  }

  // -------------------------------------------------------------------------
  // Synonyms, curation rules, presets
  // -------------------------------------------------------------------------

  /** Synonyms: a collection's own (Typesense <= 29) and synonym sets (30). */
  synonyms(): Rules<SynonymItem> {
    return new Rules(this.store, SYNONYMS);
  }
  /** Curation rules: a collection's overrides (Typesense <= 29) and curation sets (30). */
  curation(): Rules<CurationItem> {
    return new Rules(this.store, CURATION);
  }
  putPreset(name: string, body: unknown): Promise<Preset> {
    return putPreset(this.store, name, body);
  }
  getPreset(name: string): Preset {
    return getPreset(this.store, name);
  }
  listPresets(): Preset[] {
    return listPresets(this.store);
  }
  deletePreset(name: string): Promise<{ name: string }> {
    return deletePreset(this.store, name);
  }
  /** Search parameters with their preset's laid under them (no `preset`: unchanged). */
  applyPreset(raw: RawParams): RawParams {
    return withPreset(this.store, raw);
  }
  /**
   * The searches of the multi_search preset that `common` (a multi_search's query-string
   * parameters) names, or undefined when it names none or a preset of search parameters.
   */
  presetSearches(common: RawParams): RawParams[] | undefined {
    const name = common.preset;
    return typeof name === 'string' && name !== '' ? presetSearches(this.store, name) : undefined;
  }

  // -------------------------------------------------------------------------
  // Keys
  // -------------------------------------------------------------------------

  /** Creates an API key; the answer is the only place its value is shown. */
  createKey(body: unknown): Promise<CreatedKey> {
    return createKey(this.store, body);
  }
  listKeys(): KeyView[] {
    return listKeys(this.store);
  }
  getKey(id: string | number): KeyView {
    return getKey(this.store, id);
  }
  deleteKey(id: string | number): Promise<{ id: number }> {
    return deleteKey(this.store, id);
  }

  /**
   * When no bootstrap key is given and the data directory has no keys at all, creates an
   * admin key and returns its value (to be shown once). Otherwise returns undefined.
   */
  async ensureFirstKey(bootstrapKey: string | undefined): Promise<string | undefined> {
    if (bootstrapKey || this.listKeys().length > 0) return undefined;
    const k = await this.createKey({ description: 'admin key generated by the first `fathom serve` (no --api-key given)', actions: ['*'], collections: ['*'] });
    return k.value;
  }

  /** Checks requests' keys against this directory's keys (and a bootstrap key, never stored). */
  authenticator(bootstrapKey?: string): Authenticator {
    return new Authenticator(this.store, bootstrapKey);
  }

  /** Finds this directory's key values (and the bootstrap key) in text, to mask them in logs; kept current as keys are created. */
  keyFinder(bootstrapKey?: string): () => KeyFinder {
    return keyFinder(this.store, bootstrapKey);
  }

  /** Deletes expired keys that have `autodelete`, and expired conversations. */
  async purgeExpired(): Promise<void> {
    await Promise.all([purgeExpiredKeys(this.store), purgeExpiredConversations(this.store)]);
  }

  /** The collection an alias stands for, or undefined when `name` is no alias. */
  aliasTarget(name: string): string | undefined {
    return aliasTarget(this.store, name);
  }

  /** A collection's compiled schema. */
  schema(collection: string): Schema {
    return getSchema(this.store, collection);
  }

  // -------------------------------------------------------------------------
  // Conversations, LLM models, analytics rules
  // -------------------------------------------------------------------------

  /** The conversation models (the LLMs that answer conversational searches). */
  conversationModels(): ModelRegistry<ConversationModel> {
    return conversationModels(this.store);
  }
  /** The natural-language search models. */
  nlSearchModels(): ModelRegistry<NlSearchModel> {
    return nlSearchModels(this.store);
  }
  /** The conversations `actor` may see (src/conversation/history.ts: a key sees those it started; ADMIN_ACTOR every one). */
  listConversations(actor: ConversationActor): Conversation[] {
    return listConversations(this.store, actor);
  }
  getConversation(id: string, actor: ConversationActor): Conversation {
    return getConversation(this.store, id, actor);
  }
  updateConversation(id: string, body: unknown, actor: ConversationActor): Promise<Conversation> {
    return updateConversation(this.store, id, body, actor);
  }
  deleteConversation(id: string, actor: ConversationActor): Promise<{ id: string }> {
    return deleteConversation(this.store, id, actor);
  }

  /** POST /config: changes the reference's runtime settings (src/runtime-config.ts), for every process and node. */
  updateRuntimeConfig(body: unknown): Promise<RuntimeConfig> {
    const changes = parseRuntimeConfig(body);
    return commit(this.store, { op: 'config.update', changes }, () => write(this.store, () => storeRuntimeConfig(this.store, changes)));
  }
  /** The runtime settings in force (one shared read). */
  runtimeConfig(): RuntimeConfig {
    return readRuntimeConfig(this.store);
  }

  putAnalyticsRule(name: string, body: unknown, opts: { create?: boolean } = {}): Promise<AnalyticsRule> {
    return putRule(this.store, name, body, opts);
  }
  listAnalyticsRules(): AnalyticsRule[] {
    return listRules(this.store);
  }
  getAnalyticsRule(name: string): AnalyticsRule {
    return getRule(this.store, name);
  }
  deleteAnalyticsRule(name: string): Promise<{ name: string }> {
    return deleteRule(this.store, name);
  }
  /** The rule an analytics event of this name counts for (a counter rule's event, or a query rule named so), if any. */
  analyticsRuleOfEvent(event: string): AnalyticsRule | undefined {
    const idx = ruleIndex(this.store);
    return idx.byEvent.get(event)?.rule ?? idx.queryByName.get(event);
  }

  // -------------------------------------------------------------------------
  // Maintenance
  // -------------------------------------------------------------------------

  private afterWrite(collection: string) {
    if (this.merges !== 'off') this.merger.schedule(collection);
    this.scheduleVectorSync(collection);
  }

  private vectorQueue = new Set<string>();
  private vectorTimer: NodeJS.Timeout | null = null;
  private vectorDirtySince = 0;

  /**
   * Brings vector graphs up to date in the background, in slices of a few milliseconds
   * so queries keep flowing, and saves them once writes have paused.
   */
  private scheduleVectorSync(collection: string) {
    if (this.closed || this.merges === 'off') return;
    let rec;
    try {
      rec = getRecord(this.store, collection);
    } catch {
      return;
    }
    if (!rec.fields.some((f) => f.type === 'float[]' && (f.num_dim !== undefined || f.embed !== undefined))) return;
    this.vectorQueue.add(collection);
    this.vectorDirtySince = Date.now();
    if (this.vectorTimer) return;
    const tick = () => {
      this.vectorTimer = null;
      if (this.closed) return;
      if (this.suspended) {
        // the environment may be closed: look again later
        this.vectorTimer = setTimeout(tick, 50);
        this.vectorTimer.unref();
        return;
      }
      let pending = false;
      for (const name of this.vectorQueue) {
        try {
          const schema = getSchema(this.store, name);
          for (const f of schema.fields) {
            if (f.kind !== 'vector' || f.id <= 0) continue;
            const g = vectorIndex(this.store, schema.id, f);
            if (!g.catchUp(VECTOR_SYNC_SLICE_MS)) pending = true;
            else if (g.dirty && Date.now() - this.vectorDirtySince > VECTOR_SAVE_AFTER_MS) g.save();
            else if (g.dirty) pending = true;
          }
          if (!pending) this.vectorQueue.delete(name);
        } catch (e) {
          this.vectorQueue.delete(name);
          // a collection dropped meanwhile is no failure
          if (!(e instanceof FathomError && e.code === 'COLLECTION_NOT_FOUND')) this.log.error({ collection: name, err: e }, 'bringing a vector graph up to date failed');
        }
      }
      if (pending || this.vectorQueue.size > 0) {
        this.vectorTimer = setTimeout(tick, 1);
        this.vectorTimer.unref();
      }
    };
    this.vectorTimer = setTimeout(tick, 1);
    this.vectorTimer.unref();
  }

  /** Queues a merge check for a collection (merges run in the background when due). */
  maintain(collection: string): void {
    this.merger.schedule(collection);
  }

  /**
   * Brings the HNSW graphs of a collection's vector fields up to date and saves them, so
   * that the next process to open the directory loads them instead of rebuilding. A graph
   * that finds no room on the disk is left unsaved: it is a cache, caught up or rebuilt
   * from LMDB by the next process.
   */
  syncVectors(collection: string): void {
    const schema = getSchema(this.store, collection);
    for (const f of schema.fields) {
      if (f.kind !== 'vector' || f.id <= 0) continue;
      const g = vectorIndex(this.store, schema.id, f);
      try {
        g.save();
      } catch (e) {
        if (!isNoSpace(e)) throw e;
      }
    }
  }

  /** Resolves when queued background merges are done (end of an import, tests, shutdown). */
  idle(): Promise<void> {
    return this.merger.idle();
  }

  // -------------------------------------------------------------------------
  // Operations
  // -------------------------------------------------------------------------

  /** A compacted point-in-time copy of the data directory into a new or empty directory. */
  snapshot(target: unknown): Promise<{ dir: string; bytes: number }> {
    return snapshot(this.store, target);
  }

  /** A compacted copy of the environment into an empty directory (compaction, cluster snapshots). */
  copyEnvironment(dir: string): Promise<void> {
    return copyEnvironment(this.store, dir);
  }

  /** Closes the environment under a held engine (suspend first); openEnvironment reopens it. */
  closeEnvironment(): Promise<void> {
    return this.store.closeEnv();
  }
  openEnvironment(): void {
    this.store.openEnv();
  }

  /** The cluster stream this data directory follows, when it is a cluster node's. */
  clusterMembership(): ClusterMembership | undefined {
    return this.store.meta.get('cluster_stream') as ClusterMembership | undefined;
  }

  /** Sends every write of this engine through `r` (a cluster's stream), or back to local (undefined). */
  replicateThrough(r: Replicate | undefined): void {
    replicateThrough(this.store, r);
  }

  /** Forgets every cached search answer of this process. */
  clearCache(): void {
    this.searchCache.clear();
  }

  /** The environment's last committed transaction (any process): unchanged means nothing was written. */
  lastTxnId(): number {
    return (this.store.env.getStats() as { lastTxnId: number }).lastTxnId;
  }

  /**
   * Stops this engine's writers so that the environment can be closed: the merge thread
   * ends (after its merge in progress), vector maintenance waits, and new transactions are
   * held until `resume`; resolves once those already started are flushed. Throws
   * SERVICE_UNAVAILABLE, saying what it waited for, when that has not happened by
   * `deadline` (ms since the epoch); the engine is suspended either way (`resume` undoes it).
   */
  async suspend(deadline = Infinity): Promise<void> {
    if (this.suspended) return;
    this.suspended = true;
    // (a merge that outlives the deadline still ends its thread when it is done)
    if (!(await settlesBy(this.merger.close(), deadline))) {
      throw new FathomError('SERVICE_UNAVAILABLE', 'a segment merge in progress did not finish');
    }
    if (!(await this.store.hold(deadline))) {
      throw new FathomError('SERVICE_UNAVAILABLE', 'write transactions in progress did not finish');
    }
  }

  /** Lets writes go again (after the environment was reopened, if it was closed). */
  resume(): void {
    if (!this.suspended) return;
    this.merger = this.newMerger();
    this.suspended = false;
    this.store.release();
  }

  /**
   * Merges a collection's segments into one. With `existingOnly`, only the segments that
   * exist now: segments that writes add meanwhile (and the outputs of these merges) are left
   * alone, so it ends however fast writes keep coming (compaction merges this way).
   */
  async optimize(collection: string, opts: { existingOnly?: boolean } = {}): Promise<number> {
    getRecord(this.store, collection);
    return this.merger.merge(collection, { full: true, ...(opts.existingOnly ? { below: nextSegmentId(this.store) } : {}) });
  }

  /** Seqs of all live documents, ascending (for filter-less bulk operations). */
  liveCount(collection: string): number {
    return readState(this.store, getRecord(this.store, collection).id).count;
  }
}
