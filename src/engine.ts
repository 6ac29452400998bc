/**
 * The engine: one object that the CLI commands and the HTTP server both drive. It owns
 * the data directory and exposes collections, documents, import/export, search, keys and
 * stopwords. Nothing above this layer touches LMDB directly.
 */
import { FathomError } from './errors.js';
import { DELETE_BATCH_SIZE } from './defaults.js';
import { openStore, write, type OpenOptions, type Store } from './storage/store.js';
import {
  createCollection,
  deleteCollection,
  describeCollection,
  getRecord,
  listCollections,
  type CollectionInfo,
} from './collection/catalog.js';
import { applyBatch, type BatchOp, type OpResult, type WriteAction, type WriteHooks } from './collection/writer.js';
import type { DirtyValues } from './document/document.js';
import { importLines, type ImportOptions, type ImportSummary, type ResultSink } from './io/import.js';
import { exportDocuments, type ExportOptions } from './io/export.js';
import { Merger } from './index/merger.js';
import { alterCollection } from './collection/alter.js';
import { deleteAlias, getAlias, listAliases, upsertAlias, type AliasRecord } from './collection/aliases.js';
import { evictStore, readState } from './index/manifest.js';
import { project, type Projection } from './io/project.js';
import { parseSearchParams, type RawParams } from './query/params.js';
import { filterSeqs, search, type SearchResponse } from './search/search.js';
import { deleteStopwords, getStopwords, listStopwords, putStopwords, type StopwordSet } from './stopwords/stopwords.js';

export interface EngineOptions extends OpenOptions {
  /**
   * Where segment merges run after writes: 'worker' (default) in a worker thread,
   * 'inline' on this thread between writes, 'off' never (tests of the raw write path).
   */
  merges?: 'worker' | 'inline' | 'off';
}

export interface WriteOptions {
  action?: WriteAction;
  dirtyValues?: DirtyValues;
}

export class Engine {
  readonly store: Store;
  readonly merges: 'worker' | 'inline' | 'off';
  private readonly merger: Merger;
  private hooks: WriteHooks = {};
  private closed = false;

  private constructor(store: Store, opts: EngineOptions) {
    this.store = store;
    this.merges = opts.merges ?? 'worker';
    this.merger = new Merger(store, this.merges === 'worker');
  }

  static open(dir: string, opts: EngineOptions = {}): Engine {
    return new Engine(openStore(dir, opts), opts);
  }

  get dir(): string {
    return this.store.dir;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.merger.close();
    evictStore(this.store);
    await this.store.close();
  }

  /** Adds hooks that run inside every write transaction (vector and reference indexes). */
  addHooks(h: WriteHooks): void {
    const prev = this.hooks;
    this.hooks = {
      beforeWrite: (...a) => {
        prev.beforeWrite?.(...a);
        h.beforeWrite?.(...a);
      },
      afterDelete: (...a) => {
        prev.afterDelete?.(...a);
        h.afterDelete?.(...a);
      },
    };
  }

  // -------------------------------------------------------------------------
  // Collections
  // -------------------------------------------------------------------------

  createCollection(schema: unknown): Promise<CollectionInfo> {
    return createCollection(this.store, schema);
  }
  listCollections(): CollectionInfo[] {
    return listCollections(this.store);
  }
  getCollection(name: string): CollectionInfo {
    return describeCollection(this.store, getRecord(this.store, name));
  }
  deleteCollection(name: string): Promise<CollectionInfo> {
    return deleteCollection(this.store, name);
  }

  /** PATCH: add or drop fields; every document is re-checked and the index rebuilt. */
  async updateCollection(name: string, body: unknown): Promise<{ fields: Record<string, unknown>[] }> {
    const r = await write(this.store, () => alterCollection(this.store, name, body, this.hooks));
    return { fields: r.fields };
  }

  // -------------------------------------------------------------------------
  // Aliases
  // -------------------------------------------------------------------------

  upsertAlias(name: string, body: unknown): Promise<AliasRecord> {
    return upsertAlias(this.store, name, body);
  }
  getAlias(name: string): AliasRecord {
    return getAlias(this.store, name);
  }
  listAliases(): AliasRecord[] {
    return listAliases(this.store);
  }
  deleteAlias(name: string): Promise<AliasRecord> {
    return deleteAlias(this.store, name);
  }

  // -------------------------------------------------------------------------
  // Documents
  // -------------------------------------------------------------------------

  /** Applies a batch of operations in one transaction. */
  async writeBatch(collection: string, ops: BatchOp[]): Promise<OpResult[]> {
    const results = await write(this.store, () => applyBatch(this.store, collection, ops, this.hooks));
    this.afterWrite(collection);
    return results;
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
    if (partial && typeof partial === 'object') for (const k of Object.keys(partial)) if (k in r.doc) applied[k] = r.doc[k];
    return applied;
  }

  async deleteDocument(collection: string, id: string, opts: { ignoreNotFound?: boolean } = {}): Promise<Record<string, unknown>> {
    const r = await this.single(collection, { kind: 'delete', id, ignoreNotFound: opts.ignoreNotFound });
    return r.doc;
  }

  getDocument(collection: string, id: string, projection: Projection = {}): Record<string, unknown> {
    const rec = getRecord(this.store, collection);
    const seq = this.store.ids.get([rec.id, id]);
    const doc = seq === undefined ? undefined : (this.store.docs.get([rec.id, seq]) as Record<string, unknown> | undefined);
    if (!doc) throw new FathomError('DOCUMENT_NOT_FOUND', `document \`${id}\` not found in collection \`${collection}\``);
    return project(doc, projection);
  }

  // -------------------------------------------------------------------------
  // Import / export
  // -------------------------------------------------------------------------

  async import(
    collection: string,
    source: AsyncIterable<Buffer | Uint8Array | string>,
    opts: ImportOptions,
    sink: ResultSink,
  ): Promise<ImportSummary> {
    let batches = 0;
    const summary = await importLines(
      this.store,
      collection,
      source,
      {
        ...opts,
        hooks: this.hooks,
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

  /** Documents of a collection in seq order; with `filterBy`, only those that match. */
  exportDocuments(collection: string, opts: ExportOptions & { filterBy?: string } = {}): Generator<Record<string, unknown>> {
    if (opts.filterBy !== undefined && opts.filterBy.trim() !== '') {
      return exportDocuments(this.store, collection, { ...opts, seqs: filterSeqs(this.store, collection, opts.filterBy) });
    }
    return exportDocuments(this.store, collection, opts);
  }

  // -------------------------------------------------------------------------
  // Search
  // -------------------------------------------------------------------------

  /** One search; `raw` holds parameters as strings (query string, CLI) or JSON values. */
  search(collection: string, raw: RawParams): SearchResponse {
    return search(this.store, collection, parseSearchParams(raw));
  }

  /**
   * Several searches in one call. `common` parameters apply to every search; a search's
   * own parameters win. A failing search reports `{code, error}` in its slot.
   */
  multiSearch(searches: unknown, common: RawParams = {}): { results: Array<SearchResponse | { code: number; error: string }> } {
    if (!Array.isArray(searches)) throw new FathomError('BAD_REQUEST', 'multi_search needs a `searches` array');
    return {
      results: searches.map((s) => {
        try {
          if (!s || typeof s !== 'object' || Array.isArray(s)) throw new FathomError('BAD_REQUEST', 'each search must be a JSON object');
          const params = { ...common, ...(s as RawParams) };
          const collection = params.collection;
          if (typeof collection !== 'string' || !collection) throw new FathomError('BAD_REQUEST', 'each search needs a `collection`');
          return this.search(collection, params);
        } catch (e) {
          if (!(e instanceof FathomError)) throw e;
          return { code: e.status, error: e.message };
        }
      }),
    };
  }

  /** Deletes every document matching `filterBy`, `batchSize` per transaction. */
  async deleteByFilter(collection: string, filterBy: string, batchSize = DELETE_BATCH_SIZE): Promise<{ num_deleted: number }> {
    if (!filterBy || !filterBy.trim()) throw new FathomError('BAD_PARAMETER', 'filter_by is required to delete documents by query');
    const seqs = filterSeqs(this.store, collection, filterBy);
    let deleted = 0;
    for (let i = 0; i < seqs.length; i += batchSize) {
      const ops: BatchOp[] = seqs.slice(i, i + batchSize).map((seq) => ({ kind: 'deleteSeq', seq }));
      const results = await this.writeBatch(collection, ops);
      deleted += results.filter((r) => r.ok).length;
    }
    return { num_deleted: deleted };
  }

  /** Applies `partial` to every document matching `filterBy`. */
  async updateByFilter(collection: string, filterBy: string, partial: unknown, opts: WriteOptions = {}): Promise<{ num_updated: number }> {
    if (!filterBy || !filterBy.trim()) throw new FathomError('BAD_PARAMETER', 'filter_by is required to update documents by query');
    if (!partial || typeof partial !== 'object' || Array.isArray(partial)) throw new FathomError('BAD_DOCUMENT', 'the update must be a JSON object');
    if ('id' in (partial as object)) throw new FathomError('BAD_DOCUMENT', 'an update by filter cannot change `id`');
    const seqs = filterSeqs(this.store, collection, filterBy);
    const collId = getRecord(this.store, collection).id;
    let updated = 0;
    for (let i = 0; i < seqs.length; i += DELETE_BATCH_SIZE) {
      const ops: BatchOp[] = [];
      for (const seq of seqs.slice(i, i + DELETE_BATCH_SIZE)) {
        const doc = this.store.docs.get([collId, seq]) as Record<string, unknown> | undefined;
        if (doc) ops.push({ kind: 'write', doc: partial, action: 'update', dirty: opts.dirtyValues, id: String(doc.id) });
      }
      const results = await this.writeBatch(collection, ops);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
      updated += results.length;
    }
    return { num_updated: updated };
  }

  // -------------------------------------------------------------------------
  // Stopwords
  // -------------------------------------------------------------------------

  putStopwords(name: string, body: unknown): Promise<StopwordSet> {
    return putStopwords(this.store, name, body);
  }
  getStopwords(name: string): StopwordSet {
    return getStopwords(this.store, name);
  }
  listStopwords(): StopwordSet[] {
    return listStopwords(this.store);
  }
  deleteStopwords(name: string): Promise<{ id: string }> {
    return deleteStopwords(this.store, name);
  }

  // -------------------------------------------------------------------------
  // Maintenance
  // -------------------------------------------------------------------------

  private afterWrite(collection: string) {
    if (this.merges !== 'off') this.merger.schedule(collection);
  }

  /** Queues a merge check for a collection (merges run in the background when due). */
  maintain(collection: string): void {
    this.merger.schedule(collection);
  }

  /** Resolves when queued background merges are done (end of an import, tests, shutdown). */
  idle(): Promise<void> {
    return this.merger.idle();
  }

  /** Merges a collection's segments into one. */
  async optimize(collection: string): Promise<number> {
    getRecord(this.store, collection);
    return this.merger.merge(collection, { full: true });
  }

  /** Seqs of all live documents, ascending (for filter-less bulk operations). */
  liveCount(collection: string): number {
    return readState(this.store, getRecord(this.store, collection).id).count;
  }
}
