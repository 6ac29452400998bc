/**
 * The HNSW graph of one vector field (hnswlib-node), kept consistent with LMDB.
 *
 * A graph is a cache: vectors in LMDB are the truth. Each in-memory graph remembers the
 * field epoch it reflects; before answering, it replays the change log from there
 * (upserts re-read the vector from LMDB, deletes mark the label deleted). Labels are
 * document seqs.
 *
 *   <data-dir>/vectors/<collId>-<fieldId>.hnsw   hnswlib's index file
 *   <data-dir>/vectors/<collId>-<fieldId>.json   {format, epoch, dims, space, M, efC}
 *
 * Opening a directory loads a saved graph whose epoch matches (no rebuild); a graph that
 * is behind catches up from the log; a missing, corrupt or mismatched graph (or a pruned
 * log) is rebuilt from LMDB. Saves write a temporary file and rename it, then the meta.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type hnswlibTypes from 'hnswlib-node';

// The native addon is loaded on first use (a search without vectors never needs it).
type HnswLib = typeof hnswlibTypes;
let lib: HnswLib | undefined;
function hnswlib(): HnswLib {
  lib ??= createRequire(import.meta.url)('hnswlib-node') as HnswLib;
  return lib;
}
import type { Store } from '../storage/store.js';
import { noSpaceIn } from '../storage/diskfull.js';
import type { Field } from '../schema/schema.js';
import { HNSW_DEFAULTS } from '../defaults.js';
import { allVectors, changesSince, getVector, pruneLog, readEpoch } from './vecstore.js';

const GRAPH_FORMAT = 1;
const MIN_CAPACITY = 1024;

interface GraphMeta {
  format: number;
  epoch: number;
  dims: number;
  space: 'cosine' | 'ip';
  M: number;
  efC: number;
  /** Labels in the graph file that are marked deleted. */
  deleted: number[];
}

export class VectorIndex {
  readonly dims: number;
  readonly space: 'cosine' | 'ip';
  private index: hnswlibTypes.HierarchicalNSW;
  epoch = 0;
  private savedEpoch = -1;
  /** Labels in the graph, live or marked deleted. */
  private labels = new Set<number>();
  private deleted = new Set<number>();
  private queryArray: number[] = [];
  readonly rebuilt: boolean;

  constructor(
    private readonly store: Store,
    readonly collId: number,
    readonly field: Field,
  ) {
    this.dims = field.num_dim ?? 0;
    this.space = field.vec_dist === 'ip' ? 'ip' : 'cosine';
    const loaded = this.load();
    if (loaded) {
      this.index = loaded;
      this.rebuilt = false;
    } else {
      this.index = this.fresh(MIN_CAPACITY);
      this.rebuild();
      this.rebuilt = true;
    }
    this.catchUp();
  }

  private get files() {
    const base = path.join(this.store.dir, 'vectors', `${this.collId}-${this.field.id}`);
    return { graph: `${base}.hnsw`, meta: `${base}.json` };
  }

  private fresh(capacity: number): hnswlibTypes.HierarchicalNSW {
    const idx = new (hnswlib().HierarchicalNSW)(this.space, this.dims);
    const M = this.field.hnsw_params?.M ?? HNSW_DEFAULTS.M;
    const efC = this.field.hnsw_params?.ef_construction ?? HNSW_DEFAULTS.ef_construction;
    idx.initIndex(capacity, M, efC, 100);
    return idx;
  }

  /** A saved graph that matches this field, or undefined. */
  private load(): hnswlibTypes.HierarchicalNSW | undefined {
    const { graph, meta } = this.files;
    let m: GraphMeta;
    try {
      m = JSON.parse(fs.readFileSync(meta, 'utf8')) as GraphMeta;
    } catch {
      return undefined;
    }
    const M = this.field.hnsw_params?.M ?? HNSW_DEFAULTS.M;
    const efC = this.field.hnsw_params?.ef_construction ?? HNSW_DEFAULTS.ef_construction;
    if (m.format !== GRAPH_FORMAT || m.dims !== this.dims || m.space !== this.space || m.M !== M || m.efC !== efC) return undefined;
    if (m.epoch > readEpoch(this.store, this.collId, this.field.id)) return undefined; // from a future that never committed
    const log = changesSince(this.store, this.collId, this.field.id, m.epoch);
    if (!log) return undefined;
    try {
      const idx = new (hnswlib().HierarchicalNSW)(this.space, this.dims);
      idx.readIndexSync(graph);
      if (idx.getNumDimensions() !== this.dims) return undefined;
      this.epoch = m.epoch;
      this.savedEpoch = m.epoch;
      for (const label of idx.getIdsList()) this.labels.add(label);
      for (const label of m.deleted ?? []) this.deleted.add(label);
      return idx;
    } catch {
      return undefined;
    }
  }

  private rebuild() {
    const epoch = readEpoch(this.store, this.collId, this.field.id);
    const count = this.countVectors();
    this.index = this.fresh(Math.max(MIN_CAPACITY, Math.ceil(count * 1.25)));
    this.labels.clear();
    this.deleted.clear();
    for (const [seq, vec] of allVectors(this.store, this.collId, this.field.id)) this.upsert(seq, vec);
    this.epoch = epoch;
  }

  private countVectors(): number {
    let n = 0;
    for (const _ of this.store.vectors.getKeys({ start: [this.collId, this.field.id], end: [this.collId, this.field.id + 1] })) n++;
    return n;
  }

  private upsert(seq: number, vec: Float32Array) {
    if (this.index.getCurrentCount() >= this.index.getMaxElements()) {
      this.index.resizeIndex(Math.max(MIN_CAPACITY, this.index.getMaxElements() * 2));
    }
    // addPoint on an existing label updates it (and un-deletes it)
    this.index.addPoint(Array.from(vec), seq);
    this.labels.add(seq);
    this.deleted.delete(seq);
  }

  private remove(seq: number) {
    if (!this.labels.has(seq) || this.deleted.has(seq)) return;
    this.index.markDelete(seq);
    this.deleted.add(seq);
  }

  /**
   * Applies changes committed since this graph's epoch, oldest first, each re-reading the
   * document's current vector (so replaying an entry twice is harmless). With a time
   * budget it stops early and remembers how far it got. Returns true when caught up.
   */
  catchUp(budgetMs = Infinity): boolean {
    const current = readEpoch(this.store, this.collId, this.field.id);
    if (current === this.epoch) return true;
    const log = current > this.epoch ? changesSince(this.store, this.collId, this.field.id, this.epoch) : undefined;
    if (!log) {
      this.rebuild();
      return true;
    }
    const start = performance.now();
    const from = this.epoch;
    const done = new Set<number>();
    for (let i = 0; i < log.length; i++) {
      const seq = log[i]!;
      if (!done.has(seq)) {
        done.add(seq);
        const v = getVector(this.store, this.collId, this.field.id, seq);
        if (v) this.upsert(seq, v);
        else this.remove(seq);
      }
      if ((i & 63) === 63 && performance.now() - start > budgetMs) {
        this.epoch = from + i + 1;
        return false;
      }
    }
    this.epoch = current;
    return true;
  }

  get size(): number {
    return this.labels.size - this.deleted.size;
  }

  get dirty(): boolean {
    return this.epoch !== this.savedEpoch;
  }

  /**
   * Approximate nearest neighbours: seqs and distances, nearest first, or undefined when
   * the graph cannot return `k` results (too few pass the filter) — callers then fall back
   * to an exact scan. Hot: one call per vector query.
   */
  knn(query: Float32Array | number[], k: number, ef: number, filter?: (seq: number) => boolean): { seqs: number[]; distances: number[] } | undefined {
    const n = Math.min(k, this.size);
    if (n === 0) return { seqs: [], distances: [] };
    this.index.setEf(Math.max(ef, n));
    let q: number[];
    if (Array.isArray(query)) q = query;
    else {
      // hnswlib-node takes a plain array: one reused per graph. Its elements are generic (made
      // with null), not unboxed doubles: the addon reads them one by one through N-API, which
      // boxes each unboxed double on the way out. Boxing them here, once as they are stored,
      // is cheaper.
      q = this.queryArray.length === query.length ? this.queryArray : (this.queryArray = Array.from({ length: query.length }, () => null) as unknown as number[]);
      for (let i = 0; i < query.length; i++) q[i] = query[i]!;
    }
    try {
      const res = filter ? this.index.searchKnn(q, n, filter) : this.index.searchKnn(q, n);
      return { seqs: res.neighbors, distances: res.distances };
    } catch {
      return undefined;
    }
  }

  /**
   * Writes the graph to disk (temporary file, then rename), then its meta. On a full disk
   * it throws NO_SPACE and leaves the last saved graph as it was (a graph is a cache: the next
   * process catches up from the change log, or rebuilds).
   */
  save(): void {
    if (!this.dirty) return;
    const { graph, meta } = this.files;
    const tmp = `${graph}.tmp-${process.pid}`;
    const metaTmp = `${meta}.tmp-${process.pid}`;
    try {
      fs.mkdirSync(path.dirname(graph), { recursive: true, mode: 0o700 });
      this.index.writeIndexSync(tmp);
      // hnswlib does not check its writes: a short file means the disk filled up
      if (fs.statSync(tmp).size < this.minimumFileSize()) throw Object.assign(new Error('the graph file was cut short'), { code: 'ENOSPC' });
      const m: GraphMeta = {
        format: GRAPH_FORMAT,
        epoch: this.epoch,
        dims: this.dims,
        space: this.space,
        M: this.field.hnsw_params?.M ?? HNSW_DEFAULTS.M,
        efC: this.field.hnsw_params?.ef_construction ?? HNSW_DEFAULTS.ef_construction,
        deleted: [...this.deleted],
      };
      fs.writeFileSync(metaTmp, JSON.stringify(m));
      fs.renameSync(tmp, graph);
      fs.renameSync(metaTmp, meta);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      fs.rmSync(metaTmp, { force: true });
      throw noSpaceIn(e, this.store.dir, 'saving a vector graph') ?? e;
    }
    this.savedEpoch = this.epoch;
  }

  /**
   * A size hnswlib's file of this graph cannot be below: its 96-byte header, then each
   * element's vector and label (the links come on top; a file cut short among them fails
   * to load and is rebuilt).
   */
  private minimumFileSize(): number {
    return 96 + this.index.getCurrentCount() * (this.dims * 4 + 8);
  }

  /** Log entries this saved graph covers can go (other processes rebuild if they were further behind). */
  prune(): Promise<void> {
    const upTo = this.savedEpoch;
    if (upTo <= 0) return Promise.resolve();
    return this.store.transact(() => pruneLog(this.store, this.collId, this.field.id, upTo));
  }
}

// ---------------------------------------------------------------------------
// Registry: one graph per (data directory, collection, field) per process.
// ---------------------------------------------------------------------------

const graphs = new Map<string, VectorIndex>();

function key(store: Store, collId: number, fieldId: number) {
  return `${store.dir}\u0000${collId}\u0000${fieldId}`;
}

/** The up-to-date graph of a vector field. */
export function vectorIndex(store: Store, collId: number, field: Field): VectorIndex {
  const k = key(store, collId, field.id);
  let g = graphs.get(k);
  if (!g) {
    g = new VectorIndex(store, collId, field);
    graphs.set(k, g);
  } else g.catchUp();
  return g;
}

/** Saves every graph of a data directory that changed since its last save. */
export function saveGraphs(store: Store): void {
  const prefix = `${store.dir}\u0000`;
  for (const [k, g] of graphs) {
    if (!k.startsWith(prefix)) continue;
    g.catchUp();
    g.save();
  }
}

/** Forgets the graphs of a data directory (on close) or of one collection (on delete). */
export function forgetGraphs(store: Store, collId?: number): void {
  const prefix = collId === undefined ? `${store.dir}\u0000` : `${store.dir}\u0000${collId}\u0000`;
  for (const k of [...graphs.keys()]) if (k.startsWith(prefix)) graphs.delete(k);
  if (collId !== undefined) {
    const dir = path.join(store.dir, 'vectors');
    if (fs.existsSync(dir)) for (const f of fs.readdirSync(dir)) if (f.startsWith(`${collId}-`)) fs.rmSync(path.join(dir, f), { force: true });
  }
}
