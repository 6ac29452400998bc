/**
 * search/vector.ts: vector execution. The query vector (given, a stored document's, or
 * embedded from text by the engine), the documents a filter allows, and the nearest
 * neighbours (src/vector) handed to the collectors with their distances.
 */
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import type { Field } from '../schema/schema.js';
import { isDeleted, locate, type IndexSnapshot, type LiveSegment } from '../index/manifest.js';
import type { SearchPlan } from '../query/plan.js';
import type { VectorQuery } from '../vector/vquery.js';
import { knn, type VectorHit } from '../vector/vsearch.js';
import { getVector } from '../vector/vecstore.js';
import { VECTOR_DEFAULTS } from '../defaults.js';
import type { Extra } from './collectors.js';
import type { SegmentMasks } from './keyword.js';

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

/** The vector side of a search, ready to run. */
export interface VectorRun {
  field: Field;
  query: Float32Array;
  vq?: VectorQuery;
  k: number;
  ef: number;
  alpha: number;
  excludeSeq?: number;
}

/**
 * The query vector and the search's k, ef and alpha; undefined when the search has no vector
 * side (or `q` is `*` on an embedding field: nothing to embed). `embedded` is the vector the
 * engine computed for plan.embed.
 */
export function vectorRun(plan: SearchPlan, embedded: Float32Array | undefined): VectorRun | undefined {
  const spec = plan.vector;
  if (!spec) return undefined;
  const { store, schema } = plan;
  const { field, vq, semantic } = spec;
  const dims = field.num_dim;
  let query: Float32Array | undefined;
  let excludeSeq: number | undefined;
  if (vq && vq.vector.length > 0) {
    if (dims !== undefined && vq.vector.length !== dims) {
      bad(`vector_query: field \`${field.name}\` has ${dims} dimensions but the query vector has ${vq.vector.length}`);
    }
    query = Float32Array.from(vq.vector);
  } else if (vq && vq.id !== undefined) {
    const seq = store.ids.get([schema.id, vq.id]);
    if (seq === undefined) throw new FathomError('NOT_FOUND', `vector_query: document \`${vq.id}\` not found`);
    query = getVector(store, schema.id, field.id, seq);
    if (!query) bad(`vector_query: document \`${vq.id}\` has no value in \`${field.name}\``);
    excludeSeq = seq;
  } else if (embedded) {
    query = embedded;
  } else if (vq && !semantic) {
    bad('vector_query: give a vector, an `id`, or `queries` (or search an embedding field with `q`)');
  } else return undefined;
  const k = Math.max(vq?.k ?? 0, plan.offset + plan.limit);
  const alpha = vq?.alpha ?? plan.params.alpha;
  return { field, query, vq, k, ef: vq?.ef ?? VECTOR_DEFAULTS.ef, alpha, excludeSeq };
}

/** Live documents passing filter_by (and not excluded: by a word, or hidden by curation), as a seq-indexed byte map, or undefined when every document is allowed. */
export function allowedSeqs(plan: SearchPlan, snap: IndexSnapshot, masks: SegmentMasks) {
  if (!plan.filter && masks.exclude.every((m) => m === null)) return undefined;
  const segs: LiveSegment[] = snap.segments;
  const map = new Uint8Array(snap.state.nextSeq);
  let count = 0;
  segs.forEach((seg, s) => {
    const a = masks.allow[s];
    const ex = masks.exclude[s];
    const seqs = seg.reader.seqs;
    for (let o = 0; o < seg.reader.n; o++) {
      if ((a && !a[o]) || (ex && ex[o]) || isDeleted(seg.deleted, o)) continue;
      map[seqs[o]!] = 1;
      count++;
    }
  });
  return {
    has: (seq: number) => map[seq] === 1,
    list: () => {
      const out: number[] = [];
      for (let i = 0; i < map.length; i++) if (map[i]) out.push(i);
      return out;
    },
    count,
  };
}

/** The nearest neighbours among the allowed documents. */
export function nearest(store: Store, plan: SearchPlan, run: VectorRun, allowed: ReturnType<typeof allowedSeqs>): VectorHit[] {
  return knn(store, plan.schema.id, run.field, run.query, {
    k: run.k,
    ef: run.ef,
    allowed,
    flatSearchCutoff: run.vq?.flatSearchCutoff,
    distanceThreshold: run.vq?.distanceThreshold,
    excludeSeq: run.excludeSeq,
  });
}

/** A vector search: the nearest neighbours, each collected with its distance. */
export function runVector(snap: IndexSnapshot, hits: VectorHit[], collect: (segIndex: number, ord: number, score: number, extra: Extra) => void): void {
  for (const h of hits) {
    const at = locate(snap, h.seq);
    if (at) collect(snap.segments.indexOf(at.seg), at.ord, 0, { vectorDistance: h.distance });
  }
}
