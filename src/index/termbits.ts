/**
 * index/termbits.ts: here is a common term of a segment, which documents hold it, as one
 * bit each, and where in its postings does document d start? Both are derived from the
 * postings (segment.ts) the first time a search asks, and kept in memory beside the
 * immutable segment: nothing is stored, so the on-disk format is unchanged.
 *
 *   bits    word d >>> 5, bit d & 31: document d holds the term. Unions, intersections and
 *           counts over a term held by most of a segment cost n/32 word operations instead
 *           of one varint per posting (search/bitmatch.ts).
 *   skips   every SKIP_EVERY-th posting: its document and the byte offsets of its entry in
 *           the document stream and of its positions. A cursor bound for a document far
 *           ahead jumps to the last skip before it (PostingCursor.advance) instead of
 *           decoding every posting on the way.
 *
 *   postings  [Δ tf][Δ tf][Δ tf] ... [Δ tf][Δ tf] ...
 *   skips      ^0                     ^64              (doc, doc-stream offset, positions offset)
 *
 * A term is common, and gets both, when it is held by enough of a segment's documents;
 * what is kept is bounded over all segments (termBitsLimits).
 */
import type { TextIndex } from './segment.js';
import { ByteReader } from './codec.js';

/** Postings between two skip entries. */
export const SKIP_EVERY = 64;
/**
 * When a term is common, and how much is kept (the defaults; tests lower them to reach
 * these paths on small collections):
 *
 *   share   a term held by at least n / share documents of a segment of n ...  64
 *   min     ... and by at least this many                                    2048
 *   bytes   memory kept for bitmaps and skips, over every segment of every
 *           collection, the least recently used dropped first               256 MB
 *   impactMin, impactShare   the impact classes kept (Impacts)        16384, 32
 */
export const termBitsLimits = { share: 64, min: 2048, bytes: 256 * 1024 * 1024, impactMin: 16384, impactShare: 32 };

export interface Skips {
  /** Entry j: the document of posting j * SKIP_EVERY. */
  doc: Int32Array;
  /** Entry j: the document of the posting before it (-1 for the first), which its delta is from. */
  prev: Int32Array;
  /** Entry j: byte offset of that posting in the document stream. */
  at: Uint32Array;
  /** Entry j: how many positions come before that posting's (the sum of the tfs before it). */
  before: Float64Array;
  /**
   * Entry j: byte offset of that posting's positions, for j < `resolved`; found on demand
   * (positionsAt), since walking a common term's positions costs as much again as its
   * documents and most searches never read them.
   */
  pos: Uint32Array;
  resolved: number;
  /** The term's positions stream (its first byte) and the postings bytes. */
  posStart: number;
  buf: Uint8Array;
}

/** The byte offset of skip entry j's positions (resolving the entries before it once). */
export function positionsAt(s: Skips, j: number): number {
  while (s.resolved <= j) {
    const r = s.resolved;
    if (r === 0) s.pos[0] = s.posStart;
    else {
      const buf = s.buf;
      let pp = s.pos[r - 1]!;
      for (let k = s.before[r]! - s.before[r - 1]!; k > 0; pp++) if (buf[pp]! < 0x80) k--;
      s.pos[r] = pp;
    }
    s.resolved = r + 1;
  }
  return s.pos[j]!;
}

/**
 * A term's documents grouped by what its BM25 weight depends on in each: how often it
 * holds the term (tf, up to IMPACT_TF) and how long the field is (up to IMPACT_LEN), for
 * visiting documents by their weight, heaviest first (search/bitmatch.ts). Class c is
 * tf = c >> 8 (IMPACT_TF: that many or more), length = c & 255 (255: that long or longer).
 * Only the heaviest classes are kept (what a search reads before it stops), at least
 * termBitsLimits.impactMin documents or 1/impactShare of the term's: `kept[c]` says whether
 * class c's documents are ords[starts[c] .. starts[c + 1]), ascending. Heaviest is as
 * this segment's mean field length weighs them; a search weighing by another mean (the
 * whole collection's) stops where a class it wants was not kept.
 */
export interface Impacts {
  /** Documents per class (kept or not). */
  count: Int32Array;
  starts: Int32Array;
  kept: Uint8Array;
  ords: Int32Array;
}
export const IMPACT_TF = 15;
export const IMPACT_LEN = 255;

interface Entry {
  impacts?: Impacts;
  bits: Uint32Array;
  /** The documents holding the term more than once. */
  multi: Uint32Array;
  /** The most times one document holds it. */
  maxTf: number;
  skips: Skips;
  bytes: number;
  owner: Map<number, Entry>;
  term: number;
}

const perIndex = new WeakMap<TextIndex, Map<number, Entry>>();
/** Every kept entry, least recently used first (a Map keeps insertion order). */
const lru = new Map<Entry, true>();
let kept = 0;

/** Words of a bitmap over n documents. */
export function wordsFor(n: number): number {
  return (n + 31) >>> 5;
}

/** Is term index `t` common in `ti` (does it get bits and skips)? */
export function isCommon(ti: TextIndex, t: number): boolean {
  const df = ti.docFreq[t]!;
  return df >= termBitsLimits.min && df * termBitsLimits.share >= ti.lengths.offsets.length - 1;
}

function entry(ti: TextIndex, t: number): Entry | undefined {
  if (!isCommon(ti, t)) return undefined;
  let m = perIndex.get(ti);
  if (!m) perIndex.set(ti, (m = new Map()));
  let e = m.get(t);
  if (e) {
    lru.delete(e);
    lru.set(e, true);
    return e;
  }
  e = build(ti, t, m);
  m.set(t, e);
  lru.set(e, true);
  kept += e.bytes;
  for (const old of lru.keys()) {
    if (kept <= termBitsLimits.bytes || old === e) break;
    lru.delete(old);
    old.owner.delete(old.term);
    kept -= old.bytes;
  }
  return e;
}

/** One pass over the postings: the bitmap and the skips. */
function build(ti: TextIndex, t: number, owner: Map<number, Entry>): Entry {
  const n = ti.lengths.offsets.length - 1;
  const df = ti.docFreq[t]!;
  const bits = new Uint32Array(wordsFor(n));
  const multi = new Uint32Array(wordsFor(n));
  let maxTf = 0;
  const entries = Math.ceil(df / SKIP_EVERY);
  const buf = ti.postings;
  const skips: Skips = { doc: new Int32Array(entries), prev: new Int32Array(entries), at: new Uint32Array(entries), before: new Float64Array(entries), pos: new Uint32Array(entries), resolved: 0, posStart: ti.posOffsets[t]!, buf };
  const r = new ByteReader(buf, ti.postOffsets[t]!);
  let positions = 0;
  let d = 0;
  let last = -1;
  for (let i = 0; i < df; i++) {
    const at = r.pos;
    const delta = r.varint();
    const tf = r.varint();
    d += delta;
    if ((i & (SKIP_EVERY - 1)) === 0) {
      const j = i / SKIP_EVERY;
      skips.doc[j] = d;
      skips.prev[j] = last;
      skips.at[j] = at;
      skips.before[j] = positions;
    }
    positions += tf;
    last = d;
    const w = d >>> 5;
    const m = 1 << (d & 31);
    bits[w]! |= m;
    if (tf > 1) {
      multi[w]! |= m;
      if (tf > maxTf) maxTf = tf;
    }
  }
  if (df > 0 && maxTf === 0) maxTf = 1;
  return { bits, multi, maxTf, skips, bytes: 2 * bits.byteLength + entries * 28, owner, term: t };
}

/** The term's bitmap when it is common (shared: never write to it), else undefined. */
export function termBits(ti: TextIndex, t: number): Uint32Array | undefined {
  return entry(ti, t)?.bits;
}

/** The term's skips when it is common, else undefined (a cursor then reads every posting). */
export function termSkips(ti: TextIndex, t: number): Skips | undefined {
  return entry(ti, t)?.skips;
}

/** The term's documents, those holding it more than once, and the most times one does, when it is common (shared: never write to them). */
export function termBitsAndTf(ti: TextIndex, t: number): { bits: Uint32Array; multi: Uint32Array; maxTf: number } | undefined {
  return entry(ti, t);
}

/**
 * Sets the bits of the term's documents in `out`, and in `multi` (when given) those holding it more
 * than once (a common term's bitmaps are OR-ed in; a rare term's postings are read).
 * Returns the most times one document holds it.
 */
export function orTermInto(ti: TextIndex, t: number, out: Uint32Array, multi: Uint32Array | null): number {
  const e = entry(ti, t);
  if (e) {
    const { bits, multi: m } = e;
    for (let w = 0; w < bits.length; w++) out[w]! |= bits[w]!;
    if (multi !== null) for (let w = 0; w < bits.length; w++) multi[w]! |= m[w]!;
    return e.maxTf;
  }
  const df = ti.docFreq[t]!;
  const r = new ByteReader(ti.postings, ti.postOffsets[t]!);
  let d = 0;
  let maxTf = 0;
  for (let i = 0; i < df; i++) {
    const delta = r.varint();
    const tf = r.varint();
    d += delta;
    out[d >>> 5]! |= 1 << (d & 31);
    if (tf > 1 && multi !== null) multi[d >>> 5]! |= 1 << (d & 31);
    if (tf > maxTf) maxTf = tf;
  }
  return maxTf;
}

/** The term's impact classes (Impacts) when it is common: built on first use, kept with its bitmaps. */
export function termImpacts(ti: TextIndex, t: number): Impacts | undefined {
  const e = entry(ti, t);
  if (!e) return undefined;
  if (!e.impacts) {
    e.impacts = buildImpacts(ti, t);
    const bytes = e.impacts.ords.byteLength + e.impacts.starts.byteLength + e.impacts.kept.byteLength + e.impacts.count.byteLength;
    e.bytes += bytes;
    kept += bytes;
  }
  return e.impacts;
}

function buildImpacts(ti: TextIndex, t: number): Impacts {
  const df = ti.docFreq[t]!;
  const classes = (IMPACT_TF + 1) * 256;
  const cls = new Uint16Array(df);
  const docs = new Int32Array(df);
  const count = new Int32Array(classes);
  const { offsets, values } = ti.lengths;
  // pass 1: each posting's document and class
  const r = new ByteReader(ti.postings, ti.postOffsets[t]!);
  let d = 0;
  for (let i = 0; i < df; i++) {
    const delta = r.varint();
    const tf = r.varint();
    d += delta;
    const a = offsets[d]!;
    const len = offsets[d + 1]! - a === 1 ? values[a]! : ti.docLength(d);
    const c = (Math.min(tf, IMPACT_TF) << 8) | Math.min(len, IMPACT_LEN);
    cls[i] = c;
    docs[i] = d;
    count[c]!++;
  }
  // the heaviest classes (BM25's shape, idf aside, at this segment's mean length) up to the share kept
  const avg = Math.max(1, ti.avgLength());
  const weight = (c: number) => (c >> 8) / ((c >> 8) + 1.2 * (0.25 + (0.75 * (c & 255)) / avg));
  const present: number[] = [];
  for (let c = 0; c < classes; c++) if (count[c]! > 0) present.push(c);
  present.sort((a, b) => weight(b) - weight(a));
  const kept = new Uint8Array(classes);
  const want = Math.max(termBitsLimits.impactMin, Math.ceil(df / termBitsLimits.impactShare));
  let total = 0;
  for (const c of present) {
    if (total >= want) break;
    kept[c] = 1;
    total += count[c]!;
  }
  const starts = new Int32Array(classes + 1);
  for (let c = 0; c < classes; c++) starts[c + 1] = starts[c]! + (kept[c] ? count[c]! : 0);
  // the kept classes' documents (ordinals ascending within a class)
  const fill = starts.slice(0, classes);
  const ords = new Int32Array(total);
  for (let i = 0; i < df; i++) {
    const c = cls[i]!;
    if (kept[c]) ords[fill[c]!++] = docs[i]!;
  }
  return { count, starts, kept, ords };
}

/** Calls `fn` with each document set in a bitmap, ascending. */
export function forEachBit(bits: Uint32Array, fn: (d: number) => void): void {
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w]!;
    while (word !== 0) {
      const low = word & -word;
      fn((w << 5) | (31 - Math.clz32(low)));
      word ^= low;
    }
  }
}

/** Bits set in a bitmap. */
export function countBits(bits: Uint32Array): number {
  let c = 0;
  for (let w = 0; w < bits.length; w++) {
    let x = bits[w]!;
    if (x === 0) continue;
    x = x - ((x >>> 1) & 0x55555555);
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    c += (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return c;
}

/** Forgets every bitmap, skip and impact kept (tests and benchmarks: the cost of a first use). */
export function clearTermBits(): void {
  for (const e of lru.keys()) e.owner.delete(e.term);
  lru.clear();
  kept = 0;
}

/** What the cache holds now (tests). */
export function termBitsKept(): { entries: number; bytes: number } {
  return { entries: lru.size, bytes: kept };
}
