/**
 * Nearest-neighbour search over one vector field: the HNSW graph for broad queries, an
 * exact scan when a filter leaves few candidates (or the graph cannot fill k under the
 * filter).
 */
import type { Store } from '../storage/store.js';
import type { Field } from '../schema/schema.js';
import { vectorIndex } from './hnsw.js';
import { allVectors, vectorKey } from './vecstore.js';

/** Below this many allowed documents a filtered query scans exactly instead of walking the graph. */
export const EXACT_SCAN_BELOW = 1000;

export interface VectorHit {
  seq: number;
  distance: number;
}

export interface KnnOptions {
  k: number;
  ef: number;
  /** Allowed seqs (filter_by and deletions applied); undefined = every document. */
  allowed?: { has: (seq: number) => boolean; list: () => number[]; count: number };
  flatSearchCutoff?: number;
  distanceThreshold?: number;
  excludeSeq?: number;
}

/** Cosine distance (0 identical .. 2 opposite) or inner-product distance (1 - dot). Hot in exact scans. */
export function distance(space: 'cosine' | 'ip', q: Float32Array, qNorm: number, v: Float32Array): number {
  let dot = 0;
  let vv = 0;
  for (let i = 0; i < q.length; i++) {
    const x = v[i]!;
    dot += q[i]! * x;
    vv += x * x;
  }
  if (space === 'ip') return 1 - dot;
  if (qNorm === 0 || vv === 0) return 1;
  return 1 - dot / (qNorm * Math.sqrt(vv));
}

export function norm(q: Float32Array): number {
  let s = 0;
  for (let i = 0; i < q.length; i++) s += q[i]! * q[i]!;
  return Math.sqrt(s);
}

/** Exact k nearest among `seqs` (all stored vectors when undefined). */
export function exactKnn(store: Store, collId: number, field: Field, query: Float32Array, k: number, seqs?: number[], excludeSeq?: number): VectorHit[] {
  const space = field.vec_dist === 'ip' ? 'ip' : 'cosine';
  const qn = norm(query);
  const hits: VectorHit[] = [];
  const buf = new Float32Array(query.length);
  const bytes = new Uint8Array(buf.buffer);
  const consider = (seq: number, v: Float32Array) => {
    if (seq === excludeSeq) return;
    const d = distance(space, query, qn, v);
    if (hits.length < k) {
      hits.push({ seq, distance: d });
      if (hits.length === k) hits.sort((a, b) => a.distance - b.distance);
    } else if (d < hits[k - 1]!.distance) {
      let p = k - 1;
      while (p > 0 && hits[p - 1]!.distance > d) p--;
      hits.splice(p, 0, { seq, distance: d });
      hits.pop();
    }
  };
  if (seqs) {
    for (const seq of seqs) {
      // a view of lmdb-js's shared read buffer: only `length` bytes belong to this value
      const raw = store.vectors.getBinaryFast(vectorKey(collId, field.id, seq));
      if (!raw || raw.length !== bytes.byteLength) continue;
      bytes.set(raw.subarray(0, raw.length));
      consider(seq, buf);
    }
  } else {
    for (const [seq, v] of allVectors(store, collId, field.id)) consider(seq, v);
  }
  return hits.sort((a, b) => a.distance - b.distance || a.seq - b.seq);
}

export function knn(store: Store, collId: number, field: Field, query: Float32Array, opts: KnnOptions): VectorHit[] {
  const want = opts.k + (opts.excludeSeq !== undefined ? 1 : 0);
  let hits: VectorHit[] | undefined;
  const allowed = opts.allowed;
  if (allowed && allowed.count <= Math.max(opts.flatSearchCutoff ?? 0, EXACT_SCAN_BELOW, want)) {
    hits = exactKnn(store, collId, field, query, want, allowed.list(), opts.excludeSeq);
  } else {
    const graph = vectorIndex(store, collId, field);
    const r = graph.knn(query, want, opts.ef, allowed ? (seq) => allowed.has(seq) : undefined);
    if (r) hits = r.seqs.map((seq, i) => ({ seq, distance: r.distances[i]! })).filter((h) => h.seq !== opts.excludeSeq);
    else hits = exactKnn(store, collId, field, query, want, allowed?.list(), opts.excludeSeq);
  }
  hits = hits.slice(0, opts.k);
  if (opts.distanceThreshold !== undefined) hits = hits.filter((h) => h.distance <= opts.distanceThreshold!);
  return hits;
}
