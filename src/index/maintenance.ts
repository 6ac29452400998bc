/**
 * Background upkeep of a collection's segments: merging small segments and rewriting
 * segments with many deletions.
 *
 * A merge is computed from a snapshot without holding the write lock, then committed
 * in a short transaction that first checks the source segments are still listed and
 * carries over any documents deleted from them in the meantime.
 */
import type { Key, Store } from '../storage/store.js';
import { write } from '../storage/store.js';
import { checkRoom } from '../storage/diskfull.js';
import { compile } from '../collection/catalog.js';
import type { CollectionRecord } from '../schema/schema.js';
import { addSegment, copyState, deletionBits, evictSegments, isDeleted, openSegment, readState, removeSegment, type SegmentInfo } from './manifest.js';
import { mergeSegments, planFullMerge, planMerge, type MergeResult } from './merge.js';
import { isLiveColumn } from '../join/refs.js';

interface ComputedMerge {
  sources: SegmentInfo[];
  bits: (Uint8Array | null)[];
  result: MergeResult;
}

function computeMerge(store: Store, record: CollectionRecord, plan: SegmentInfo[]): ComputedMerge {
  // in seq order, so that postings from different sources rarely interleave
  const sources = [...plan].sort((a, b) => a.min - b.min);
  const schema = compile(store, record);
  const bits = sources.map((s) => {
    const b = deletionBits(store, record.id, s);
    return b ? b.slice() : null;
  });
  const result = mergeSegments(
    sources.map((s, i) => ({ reader: openSegment(store, record.id, s.id), deleted: bits[i]! })),
    (fieldId) => isLiveColumn(schema, fieldId),
  );
  return { sources: sources.map((s) => ({ ...s })), bits, result };
}

/** Commits a computed merge. Returns false when the sources changed shape (another merge won). */
function commitMerge(store: Store, collId: number, m: ComputedMerge): boolean {
  const state = copyState(readState(store, collId));
  const current = new Map(state.segments.map((s) => [s.id, s]));
  for (const s of m.sources) if (!current.has(s.id)) return false;
  const built = m.result.built;
  let lateDeletes: number[] = [];
  m.sources.forEach((src, i) => {
    const now = current.get(src.id)!;
    if (now.del === src.del) return;
    const raw = store.deletes.getBinary([collId, src.id]);
    if (!raw) return;
    const before = m.bits[i];
    const map = m.result.remap[i]!;
    for (let o = 0; o < src.n; o++) {
      if (isDeleted(raw, o) && !isDeleted(before ?? null, o) && map[o]! >= 0) lateDeletes.push(map[o]!);
    }
  });
  const sourceIds = new Set(m.sources.map((s) => s.id));
  for (const id of sourceIds) removeSegment(store, collId, id);
  state.segments = state.segments.filter((s) => !sourceIds.has(s.id));
  if (built.n > 0) {
    const info = addSegment(store, collId, state, built);
    lateDeletes = [...new Set(lateDeletes)];
    if (lateDeletes.length > 0) {
      const b = new Uint8Array((built.n + 7) >> 3);
      for (const o of lateDeletes) b[o >> 3] = b[o >> 3]! | (1 << (o & 7));
      info.del = lateDeletes.length;
      if (info.del >= info.n) {
        removeSegment(store, collId, info.id);
        state.segments.pop();
      } else store.deletes.put([collId, info.id], Buffer.from(b));
    }
  }
  state.segments.sort((a, b) => a.min - b.min || a.id - b.id);
  store.colstate.put(collId, state);
  return true;
}

/** The stored size of segments: about what merging them writes (deleted documents are dropped). */
function sourceBytes(store: Store, collId: number, plan: SegmentInfo[]): number {
  // lmdb-js's shared read buffer: no copy of a large value, and `length` is the value's
  const segments = store.segments as unknown as { getBinaryFast(key: Key): Uint8Array | undefined };
  let n = 0;
  for (const s of plan) n += segments.getBinaryFast([collId, s.id, 0])?.length ?? 0;
  return n;
}

export interface MergeOptions {
  /** Into as few segments as the policy allows, instead of until the tiered policy is satisfied. */
  full?: boolean;
  /** Stop after this many merges. */
  maxMerges?: number;
  /**
   * Merge only segments whose id is below this: those that existed when it was read. Each
   * such segment is merged at most once (an output or a concurrent writer's segment has a
   * higher id), so the merging ends however fast writes keep adding segments.
   */
  below?: number;
}

/**
 * Merges until the tiered policy is satisfied (or, with `full`, into one segment).
 * Returns the number of merges committed.
 */
export async function mergeCollection(store: Store, name: string, opts: MergeOptions = {}): Promise<number> {
  let merges = 0;
  const max = opts.maxMerges ?? Infinity;
  while (merges < max) {
    const record = store.collections.get(store.aliases.get(name) ?? name) as CollectionRecord | undefined;
    if (!record) return merges;
    const state = readState(store, record.id);
    const segments = opts.below === undefined ? state.segments : state.segments.filter((s) => s.id < opts.below!);
    const plan = opts.full ? planFullMerge(segments) : planMerge(segments);
    if (!plan) break;
    // A merge writes its whole output in one transaction: one that would not fit on the
    // disk is not even computed (see diskfull.ts, checkRoom).
    checkRoom(store, sourceBytes(store, record.id, plan), 'merging index segments', 1.1);
    const computed = computeMerge(store, record, plan);
    const ok = await write(store, () => commitMerge(store, record.id, computed));
    if (ok) {
      merges++;
      evictSegments(store, record.id, readState(store, record.id).segments.map((s) => s.id));
    }
  }
  return merges;
}
