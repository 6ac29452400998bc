/**
 * The segment manifest of a collection, deletion bitmaps, and the process-wide cache of
 * opened segments.
 *
 * CollectionState (colstate db, one record per collection) is rewritten by every write
 * transaction; it lists the live segments. Segments themselves never change, so an
 * opened SegmentReader stays valid for as long as the segment is listed: a reader in
 * another process, or the same process after a write, sees a consistent index by
 * reading the manifest and using cached readers for the segments it names.
 *
 *   colstate[collId] = { nextSeq, count, segments: [{id, n, del, min, max}, ...] }
 *   segments[collId, segId, 0]        segment blob: header (ordinal -> seq) and field blobs
 *   segments[collId, segId, fieldId]  field blobs of format 1 segments
 *   deletes[collId, segId]            bitmap: bit o set when ordinal o is deleted
 */
import { nextCounter, type Store } from '../storage/store.js';
import { onRollback } from '../storage/diskfull.js';
import { SegmentReader, type BuiltSegment } from './segment.js';

export interface SegmentInfo {
  id: number;
  /** Documents in the segment, deleted ones included. */
  n: number;
  /** Deleted documents. */
  del: number;
  /** Smallest and largest seq in the segment. */
  min: number;
  max: number;
}

export interface CollectionState {
  nextSeq: number;
  /** Live documents. */
  count: number;
  segments: SegmentInfo[];
}

export function emptyState(): CollectionState {
  return { nextSeq: 0, count: 0, segments: [] };
}

/**
 * The committed state of a collection; shared, so copy it (copyState) before changing it.
 * A new state evicts cached segments it no longer lists (followManifest).
 */
export function readState(store: Store, collId: number): CollectionState {
  const state = store.readShared<CollectionState>(store.colstate, collId) ?? emptyState();
  followManifest(store, collId, state);
  return state;
}

/** A copy of a state that can be changed freely (plain copies: structuredClone is slow). */
export function copyState(s: CollectionState): CollectionState {
  return { nextSeq: s.nextSeq, count: s.count, segments: s.segments.map((x) => ({ id: x.id, n: x.n, del: x.del, min: x.min, max: x.max })) };
}

// ---------------------------------------------------------------------------
// Segment cache
// ---------------------------------------------------------------------------

const readers = new Map<string, SegmentReader>();
const bitmaps = new Map<string, { del: number; bits: Uint8Array }>();
/**
 * The state each collection's cached readers were last checked against. A process or thread
 * that does not merge (a cluster's serving processes: their primary merges; an import
 * thread, which never searches) sees segments disappear only as a new state; each new state
 * evicts the readers and bitmaps of segments it no longer lists, which would otherwise stay
 * cached (each with a copy of its blob) for good.
 */
const checked = new WeakMap<Store, Map<number, CollectionState>>();

function followManifest(store: Store, collId: number, state: CollectionState): void {
  let seen = checked.get(store);
  if (!seen) checked.set(store, (seen = new Map()));
  const last = seen.get(collId);
  // (readShared hands back the same object while the stored state is unchanged)
  if (last === state || (last !== undefined && last.segments.length === 0 && state.segments.length === 0)) return;
  evictSegments(store, collId, state.segments.map((x) => x.id));
  seen.set(collId, state);
}

function cacheKey(store: Store, collId: number, segId: number) {
  return `${store.dir}\u0000${collId}\u0000${segId}`;
}

export function openSegment(store: Store, collId: number, segId: number): SegmentReader {
  const key = cacheKey(store, collId, segId);
  let r = readers.get(key);
  if (!r) {
    const header = store.readBlob(store.segments, [collId, segId, 0]);
    if (!header) throw new Error(`index segment ${segId} of collection ${collId} is missing`);
    r = new SegmentReader(segId, header, (fieldId) => store.readBlob(store.segments, [collId, segId, fieldId]));
    readers.set(key, r);
  }
  return r;
}

/** Deletion bitmap of a segment as of `del` deletions (null when none). */
export function deletionBits(store: Store, collId: number, info: SegmentInfo): Uint8Array | null {
  if (info.del === 0) return null;
  const key = cacheKey(store, collId, info.id);
  const c = bitmaps.get(key);
  if (c && c.del === info.del) return c.bits;
  const raw = store.deletes.getBinary([collId, info.id]);
  const bits = raw ? new Uint8Array(raw) : new Uint8Array((info.n + 7) >> 3);
  bitmaps.set(key, { del: info.del, bits });
  return bits;
}

/** Forgets cached readers of segments no longer listed (after merges or deletes). */
export function evictSegments(store: Store, collId: number, live: Iterable<number>): void {
  const keep = new Set<string>();
  for (const id of live) keep.add(cacheKey(store, collId, id));
  const prefix = `${store.dir}\u0000${collId}\u0000`;
  for (const k of readers.keys()) if (k.startsWith(prefix) && !keep.has(k)) readers.delete(k);
  for (const k of bitmaps.keys()) if (k.startsWith(prefix) && !keep.has(k)) bitmaps.delete(k);
  checked.get(store)?.delete(collId);
}

/** Forgets everything cached for a data directory (on close). */
export function evictStore(store: Store): void {
  const prefix = `${store.dir}\u0000`;
  for (const k of readers.keys()) if (k.startsWith(prefix)) readers.delete(k);
  for (const k of bitmaps.keys()) if (k.startsWith(prefix)) bitmaps.delete(k);
  checked.delete(store);
}

/** How many segment readers the process holds (tests: the cache must follow the manifest). */
export function cachedSegments(): number {
  return readers.size;
}

// A transaction may read segments and bitmaps written earlier in the same commit; when that
// commit fails, their ids and deletion counts are handed out again with other contents.
onRollback(evictStore);

export function isDeleted(bits: Uint8Array | null, ord: number): boolean {
  return bits !== null && (bits[ord >> 3]! & (1 << (ord & 7))) !== 0;
}

// ---------------------------------------------------------------------------
// Snapshots for reading
// ---------------------------------------------------------------------------

export interface LiveSegment {
  info: SegmentInfo;
  reader: SegmentReader;
  deleted: Uint8Array | null;
}

export interface IndexSnapshot {
  collId: number;
  state: CollectionState;
  segments: LiveSegment[];
}

/** The collection's index as of now. Must be used synchronously (one LMDB read snapshot). */
export function snapshot(store: Store, collId: number): IndexSnapshot {
  const state = readState(store, collId);
  const segments = state.segments.map((info) => ({
    info,
    reader: openSegment(store, collId, info.id),
    deleted: deletionBits(store, collId, info),
  }));
  return { collId, state, segments };
}

/** Finds the live (segment, ordinal) holding `seq`. */
export function locate(snap: IndexSnapshot, seq: number): { seg: LiveSegment; ord: number } | undefined {
  for (let i = snap.segments.length - 1; i >= 0; i--) {
    const seg = snap.segments[i]!;
    if (seq < seg.info.min || seq > seg.info.max) continue;
    const ord = seg.reader.ordinalOf(seq);
    if (ord >= 0 && !isDeleted(seg.deleted, ord)) return { seg, ord };
  }
  return undefined;
}

/** Deletes a segment's blob and deletion bitmap (the caller unlists it from the manifest). */
export function removeSegment(store: Store, collId: number, segId: number): void {
  for (const key of store.segments.getKeys({ start: [collId, segId], end: [collId, segId + 1] })) store.segments.remove(key);
  store.deletes.remove([collId, segId]);
}

/** `meta` counter of segment ids (never reused, so a larger id is a newer segment). */
const SEGMENT_COUNTER = 'next_segment_id';

/** The id the next segment will get: every segment that exists now has a smaller one. */
export function nextSegmentId(store: Store): number {
  return (store.meta.get(SEGMENT_COUNTER) as number | undefined) ?? 1;
}

/** Writes a built segment and lists it in the manifest. */
export function addSegment(store: Store, collId: number, state: CollectionState, built: BuiltSegment): SegmentInfo {
  const id = nextCounter(store, SEGMENT_COUNTER);
  const blob = built.blob;
  store.segments.put([collId, id, 0], Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength));
  const info: SegmentInfo = { id, n: built.n, del: 0, min: built.minSeq, max: built.maxSeq };
  state.segments.push(info);
  return info;
}
