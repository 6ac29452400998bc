/**
 * src/vector: here is a vector field, give me the documents nearest to a query vector.
 *
 * vecstore.ts keeps the source of truth in LMDB, written in the same transaction as the
 * document:
 *
 *   vectors[collId, fieldId, seq]      float32 bytes of the document's vector
 *   aux['vepoch', collId, fieldId]     change counter of the field (the "epoch")
 *   aux['vlog', collId, fieldId, e]    seq changed by the e-th change
 *
 * An HNSW graph (hnsw.ts) is a cache of these vectors that remembers the epoch it
 * reflects, and catches up by replaying the log from there.
 */
import type { Store } from '../storage/store.js';

export function vectorKey(collId: number, fieldId: number, seq: number): [number, number, number] {
  return [collId, fieldId, seq];
}

export function readEpoch(store: Store, collId: number, fieldId: number): number {
  return (store.aux.get(['vepoch', collId, fieldId]) as number | undefined) ?? 0;
}

/** Stores (or, with `vec` undefined, removes) a vector and logs the change. Inside a write transaction. */
export function putVector(store: Store, collId: number, fieldId: number, seq: number, vec: ArrayLike<number> | undefined): void {
  if (vec) {
    const f = Float32Array.from(vec as ArrayLike<number>);
    store.vectors.put(vectorKey(collId, fieldId, seq), Buffer.from(f.buffer, f.byteOffset, f.byteLength));
  } else {
    if (store.vectors.get(vectorKey(collId, fieldId, seq)) === undefined) return;
    store.vectors.remove(vectorKey(collId, fieldId, seq));
  }
  const epoch = readEpoch(store, collId, fieldId) + 1;
  store.aux.put(['vepoch', collId, fieldId], epoch);
  store.aux.put(['vlog', collId, fieldId, epoch], seq);
}

/** The stored vector of a document (a copy), or undefined. */
export function getVector(store: Store, collId: number, fieldId: number, seq: number): Float32Array | undefined {
  // getBinaryFast returns a view of lmdb-js's shared read buffer: only `length` bytes are ours
  const raw = store.vectors.getBinaryFast(vectorKey(collId, fieldId, seq));
  if (!raw) return undefined;
  const len = raw.length;
  const out = new Float32Array(len / 4);
  new Uint8Array(out.buffer).set(raw.subarray(0, len));
  return out;
}

/** Seqs changed after epoch `from` (up to the current epoch), oldest first; undefined if the log was pruned. */
export function changesSince(store: Store, collId: number, fieldId: number, from: number): number[] | undefined {
  const out: number[] = [];
  let expect = from + 1;
  for (const { key, value } of store.aux.getRange({ start: ['vlog', collId, fieldId, from + 1], end: ['vlog', collId, fieldId + 1] })) {
    const e = (key as [string, number, number, number])[3];
    if (e !== expect) return undefined; // a gap: the log was pruned
    expect++;
    out.push(value as number);
  }
  return out;
}

/** Removes log entries up to and including `upTo` (they are reflected in a saved graph). */
export function pruneLog(store: Store, collId: number, fieldId: number, upTo: number): void {
  for (const key of store.aux.getKeys({ start: ['vlog', collId, fieldId, 0], end: ['vlog', collId, fieldId, upTo + 1] })) store.aux.remove(key);
}

/** Every stored vector of a field, in seq order. */
export function* allVectors(store: Store, collId: number, fieldId: number): Generator<[number, Float32Array]> {
  for (const { key, value } of store.vectors.getRange({ start: [collId, fieldId, 0], end: [collId, fieldId + 1] })) {
    const raw = value as Buffer;
    const v = new Float32Array(raw.byteLength / 4);
    new Uint8Array(v.buffer).set(raw);
    yield [(key as [number, number, number])[2], v];
  }
}

/** Drops everything stored for a field (vectors and log). Inside a write transaction. */
export function dropField(store: Store, collId: number, fieldId: number): void {
  for (const key of store.vectors.getKeys({ start: [collId, fieldId], end: [collId, fieldId + 1] })) store.vectors.remove(key);
  for (const key of store.aux.getKeys({ start: ['vlog', collId, fieldId], end: ['vlog', collId, fieldId + 1] })) store.aux.remove(key);
  store.aux.remove(['vepoch', collId, fieldId]);
}
