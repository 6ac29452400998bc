/**
 * Binary building blocks of the on-disk index: LEB128 varints, sectioned blobs and
 * sorted string tables.
 *
 * A sectioned blob (one per segment and field) is:
 *
 *   +--------+---------+----------+--------------------------------+-----------+
 *   | "FTHM" | version | nSection | nSection x (tag, offset, size) | data ...  |
 *   +--------+---------+----------+--------------------------------+-----------+
 *     u32      u32       u32        3 x u32 each                     8-aligned
 *
 * Each section is a typed array, 8-byte aligned inside the blob so that a reader can
 * view it without copying once the blob itself sits at an aligned address.
 */

export const BLOB_MAGIC = 0x4d485446; // "FTHM" little-endian
export const BLOB_VERSION = 1;

// ---------------------------------------------------------------------------
// Varints (unsigned, < 2^32). Hot: postings are read and written with these.
// ---------------------------------------------------------------------------

/** A growable byte buffer for varint streams. */
export class ByteWriter {
  buf: Uint8Array;
  len = 0;
  constructor(initial = 256) {
    this.buf = new Uint8Array(initial);
  }
  private grow(need: number) {
    let cap = this.buf.length * 2;
    while (cap < this.len + need) cap *= 2;
    const nb = new Uint8Array(cap);
    nb.set(this.buf.subarray(0, this.len));
    this.buf = nb;
  }
  varint(v: number) {
    if (this.len + 5 > this.buf.length) this.grow(5);
    const b = this.buf;
    let l = this.len;
    while (v >= 0x80) {
      b[l++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[l++] = v;
    this.len = l;
  }
  bytes(src: Uint8Array, start: number, end: number) {
    const n = end - start;
    if (this.len + n > this.buf.length) this.grow(n);
    if (n < 32) {
      // short copies (positions of one document) are faster by hand than via subarray + set
      const b = this.buf;
      let l = this.len;
      for (let k = start; k < end; k++) b[l++] = src[k]!;
      this.len = l;
    } else {
      this.buf.set(src.subarray(start, end), this.len);
      this.len += n;
    }
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

/** Cursor over a varint stream. */
export class ByteReader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
  ) {
    this.pos = start;
  }
  varint(): number {
    const b = this.buf;
    let p = this.pos;
    let byte = b[p++]!;
    let v = byte & 0x7f;
    if (byte >= 0x80) {
      byte = b[p++]!;
      v |= (byte & 0x7f) << 7;
      if (byte >= 0x80) {
        byte = b[p++]!;
        v |= (byte & 0x7f) << 14;
        if (byte >= 0x80) {
          byte = b[p++]!;
          v |= (byte & 0x7f) << 21;
          if (byte >= 0x80) {
            byte = b[p++]!;
            v = (v >>> 0) + (byte & 0x0f) * 0x10000000;
          }
        }
      }
    }
    this.pos = p;
    return v >>> 0;
  }
  /** Skips `n` varints. */
  skip(n: number) {
    const b = this.buf;
    let p = this.pos;
    while (n > 0) {
      if (b[p++]! < 0x80) n--;
    }
    this.pos = p;
  }
}

// ---------------------------------------------------------------------------
// Sectioned blobs
// ---------------------------------------------------------------------------

export type Section = Uint8Array | Uint16Array | Uint32Array | Int32Array | Float64Array;

export function encodeBlob(sections: Map<number, Section>): Uint8Array {
  const entries = [...sections.entries()];
  const headerLen = 12 + entries.length * 12;
  let off = align8(headerLen);
  const placed: Array<[number, number, Section]> = [];
  for (const [tag, arr] of entries) {
    placed.push([tag, off, arr]);
    off = align8(off + arr.byteLength);
  }
  const out = new Uint8Array(off);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, BLOB_MAGIC, true);
  dv.setUint32(4, BLOB_VERSION, true);
  dv.setUint32(8, entries.length, true);
  placed.forEach(([tag, o, arr], i) => {
    dv.setUint32(12 + i * 12, tag, true);
    dv.setUint32(16 + i * 12, o, true);
    dv.setUint32(20 + i * 12, arr.byteLength, true);
    out.set(new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength), o);
  });
  return out;
}

function align8(n: number) {
  return (n + 7) & ~7;
}

/** Reads a sectioned blob. Copies it once when it is not 8-byte aligned. */
export class Blob {
  readonly bytes: Uint8Array;
  private readonly index = new Map<number, [number, number]>();
  constructor(raw: Uint8Array) {
    let b = raw;
    if (b.byteOffset % 8 !== 0) {
      const copy = new Uint8Array(new ArrayBuffer(align8(b.byteLength)), 0, b.byteLength);
      copy.set(b);
      b = copy;
    }
    this.bytes = b;
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    if (b.byteLength < 12 || dv.getUint32(0, true) !== BLOB_MAGIC) throw new Error('index blob is corrupt (bad magic)');
    const version = dv.getUint32(4, true);
    if (version > BLOB_VERSION) throw new Error(`index blob version ${version} is newer than this Fathom supports`);
    const n = dv.getUint32(8, true);
    for (let i = 0; i < n; i++) {
      this.index.set(dv.getUint32(12 + i * 12, true), [dv.getUint32(16 + i * 12, true), dv.getUint32(20 + i * 12, true)]);
    }
  }
  has(tag: number): boolean {
    return this.index.has(tag);
  }
  private range(tag: number): [number, number] {
    const r = this.index.get(tag);
    if (!r) throw new Error(`index blob has no section ${tag}`);
    return r;
  }
  u8(tag: number): Uint8Array {
    const [o, l] = this.range(tag);
    return new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + o, l);
  }
  u16(tag: number): Uint16Array {
    const [o, l] = this.range(tag);
    return new Uint16Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 2);
  }
  u32(tag: number): Uint32Array {
    const [o, l] = this.range(tag);
    return new Uint32Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 4);
  }
  i32(tag: number): Int32Array {
    const [o, l] = this.range(tag);
    return new Int32Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 4);
  }
  f64(tag: number): Float64Array {
    const [o, l] = this.range(tag);
    return new Float64Array(this.bytes.buffer, this.bytes.byteOffset + o, l / 8);
  }
  json<T>(tag: number): T {
    return JSON.parse(new TextDecoder().decode(this.u8(tag))) as T;
  }
}

export function jsonSection(v: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(v));
}

// ---------------------------------------------------------------------------
// Sorted string tables (term dictionaries, facet value dictionaries)
// ---------------------------------------------------------------------------

/** Typo walks of a table before it gets its head index (StringTable.warmHeads). */
export const HEADS_AFTER_WALKS = 16;

/** StringTable.heads(): the top three levels of a table's implicit trie. */
export interface HeadIndex {
  h1: Int32Array;
  h2: Int32Array;
  c3: Int32Array;
  label3: Uint16Array;
  start3: Int32Array;
}

/** A copy of `a` with room for `n` elements (the rest zero). */
export function grown<A extends Int32Array | Uint16Array | Float32Array>(a: A, n: number): A {
  const b = new (a.constructor as new (n: number) => A)(n);
  b.set(a);
  return b;
}

/** StringTable.reversed: the reversed entries (sorted) and, per reversed entry, the index of its original. */
export interface ReversedTable {
  table: StringTable;
  ids: Int32Array;
}

/**
 * Strings sorted by UTF-16 code unit (JavaScript's default order), stored as one
 * Uint16Array of characters plus offsets. Lookups compare against the stored code units
 * directly, so a dictionary is usable without decoding it into JavaScript strings.
 */
export class StringTable {
  constructor(
    readonly offsets: Uint32Array,
    readonly chars: Uint16Array,
  ) {}

  static build(sorted: readonly string[]): StringTable {
    const offsets = new Uint32Array(sorted.length + 1);
    let total = 0;
    for (let i = 0; i < sorted.length; i++) {
      offsets[i] = total;
      total += sorted[i]!.length;
    }
    offsets[sorted.length] = total;
    const chars = new Uint16Array(total);
    let p = 0;
    for (const s of sorted) {
      for (let j = 0; j < s.length; j++) chars[p++] = s.charCodeAt(j);
    }
    return new StringTable(offsets, chars);
  }

  get size(): number {
    return this.offsets.length - 1;
  }

  private headIndex?: HeadIndex;
  private walks = 0;

  /**
   * The head index once the table has been walked HEADS_AFTER_WALKS times, else null.
   * Building it takes 1-2 ms in a warm process but 10-30 ms in a cold one (the loop runs
   * interpreted), more than it saves a one-query CLI process; a server builds it within
   * its first few typo queries.
   */
  warmHeads(): HeadIndex | null {
    if (this.headIndex) return this.headIndex;
    return ++this.walks >= HEADS_AFTER_WALKS ? this.heads() : null;
  }

  /**
   * Where the entries starting with each ASCII character, each pair and each triple of
   * them begin: the top three levels of the trie the table implicitly is, so that a trie
   * walk (search/expand.ts) finds those children without a binary search over the table.
   * Built in one pass over the table and kept with it (warmHeads decides when): for the
   * Debian `description` dictionary, 113k terms and 11k triples, ~200 KB in ~2 ms.
   *
   *   h1[c]           first entry whose first code unit is >= c        (c = 0..128; 128: any >= 128)
   *   h2[a * 129 + c] first entry starting with a whose second code unit is >= c
   *                   (a < 128; the entry "a" itself sorts first, before c = 0)
   *   c3[a * 129 + b] .. c3[a * 129 + b + 1]
   *                   the node "ab"'s children (a, b < 128): triples x, in order, each with
   *                   its third code unit label3[x] and its first entry start3[x]; a
   *                   child's entries end where the next child's begin, the last one's
   *                   where "ab"'s do (h2[a * 129 + b + 1])
   */
  heads(): HeadIndex {
    if (this.headIndex) return this.headIndex;
    const n = this.size;
    const off = this.offsets;
    const ch = this.chars;
    const c1 = new Int32Array(129);
    const c2 = new Int32Array(128 * 129);
    const single = new Int32Array(128);
    // triples, in table order (which is slot order: a, then b)
    const c3 = new Int32Array(128 * 129 + 1);
    let label3: Uint16Array = new Uint16Array(1024);
    let start3: Int32Array = new Int32Array(1024);
    let n3 = 0;
    let lastSlot = -1;
    let lastThird = -1;
    let empty = 0;
    for (let i = 0; i < n; i++) {
      const a = off[i]!;
      const len = off[i + 1]! - a;
      if (len === 0) {
        empty++;
        continue;
      }
      const f = ch[a]!;
      if (f >= 128) {
        c1[128]++;
        continue;
      }
      c1[f]++;
      if (len === 1) single[f]++;
      else {
        const s = ch[a + 1]!;
        const slot = f * 129 + (s < 128 ? s : 128);
        c2[slot]++;
        if (len >= 3 && s < 128 && (slot !== lastSlot || ch[a + 2] !== lastThird)) {
          if (n3 === label3.length) {
            label3 = grown(label3, n3 * 2);
            start3 = grown(start3, n3 * 2);
          }
          label3[n3] = ch[a + 2]!;
          start3[n3++] = i;
          c3[slot + 1]++;
          lastSlot = slot;
          lastThird = ch[a + 2]!;
        }
      }
    }
    for (let x = 1; x < c3.length; x++) c3[x]! += c3[x - 1]!;
    const h1 = new Int32Array(129);
    const h2 = new Int32Array(128 * 129);
    let at = empty;
    for (let c = 0; c < 129; c++) {
      h1[c] = at;
      if (c < 128) {
        let at2 = at + single[c]!;
        for (let d = 0; d < 129; d++) {
          h2[c * 129 + d] = at2;
          at2 += c2[c * 129 + d]!;
        }
      }
      at += c1[c]!;
    }
    this.headIndex = { h1, h2, c3, label3: label3.slice(0, n3), start3: start3.slice(0, n3) };
    return this.headIndex;
  }

  private tailIndex: (Int32Array | undefined)[] = [];

  /**
   * The entries longer than `from` code units, ordered by their code units from `from` on:
   * a typo walk (search/expand.ts) looks up "anything of `from` units, then exactly this"
   * with one binary search here instead of one per trie node at that depth. Built on
   * demand and kept with the table (expand.ts asks once the head index is warm); for the
   * Debian `name` dictionary, 36k terms, ~5 ms and 144 KB per offset.
   */
  tails(from: number): Int32Array {
    let t = this.tailIndex[from];
    if (!t) {
      t = sortByTail(this.offsets, this.chars, from);
      this.tailIndex[from] = t;
    }
    return t;
  }

  private reversedTable?: ReversedTable;

  /**
   * Every entry spelt backwards, as a sorted table of its own, with the index of the entry
   * each one reverses: the second half of a forward/backward typo walk (search/expand.ts)
   * matches the end of a query exactly by walking from the ends of the terms. Built on
   * demand and kept with the table (expand.ts asks once the head index is warm); it is as
   * large again as the table, plus 4 bytes an entry. (Empty entries are left out.)
   */
  reversed(): ReversedTable {
    if (this.reversedTable) return this.reversedTable;
    const { offsets, chars } = this;
    const back = new Uint16Array(chars.length);
    for (let i = 0; i < this.size; i++) {
      const a = offsets[i]!;
      const b = offsets[i + 1]!;
      for (let k = a; k < b; k++) back[a + b - 1 - k] = chars[k]!;
    }
    // (the entries reversed in place, unsorted: a table only for the sort and the copy)
    const unsorted = new StringTable(offsets, back);
    const ids = sortByTail(offsets, back, 0);
    const sorted = new StringTableBuilder();
    for (let r = 0; r < ids.length; r++) sorted.appendFrom(unsorted, ids[r]!);
    this.reversedTable = { table: sorted.build(), ids };
    return this.reversedTable;
  }

  get(i: number): string {
    const a = this.offsets[i]!;
    const b = this.offsets[i + 1]!;
    if (b - a < 64) return String.fromCharCode.apply(null, this.chars.subarray(a, b) as unknown as number[]);
    let s = '';
    for (let k = a; k < b; k += 4096) s += String.fromCharCode.apply(null, this.chars.subarray(k, Math.min(b, k + 4096)) as unknown as number[]);
    return s;
  }

  length(i: number): number {
    return this.offsets[i + 1]! - this.offsets[i]!;
  }

  charAt(i: number, k: number): number {
    return this.chars[this.offsets[i]! + k]!;
  }

  /** Compares entry i with s: negative when entry < s. */
  compare(i: number, s: string): number {
    const a = this.offsets[i]!;
    const la = this.offsets[i + 1]! - a;
    const ls = s.length;
    const n = la < ls ? la : ls;
    const ch = this.chars;
    for (let k = 0; k < n; k++) {
      const d = ch[a + k]! - s.charCodeAt(k);
      if (d !== 0) return d;
    }
    return la - ls;
  }

  /** First index whose entry is >= s. */
  lowerBound(s: string, lo = 0, hi = this.size): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compare(mid, s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of s, or -1. */
  find(s: string): number {
    const i = this.lowerBound(s);
    return i < this.size && this.compare(i, s) === 0 ? i : -1;
  }

  /** [from, to) range of entries starting with `prefix`. */
  prefixRange(prefix: string): [number, number] {
    const from = this.lowerBound(prefix);
    let lo = from;
    let hi = this.size;
    // first entry not starting with prefix
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.startsWith(mid, prefix)) lo = mid + 1;
      else hi = mid;
    }
    return [from, lo];
  }

  startsWith(i: number, prefix: string): boolean {
    const a = this.offsets[i]!;
    if (this.offsets[i + 1]! - a < prefix.length) return false;
    for (let k = 0; k < prefix.length; k++) if (this.chars[a + k] !== prefix.charCodeAt(k)) return false;
    return true;
  }
}

/**
 * StringTable.tails: the indices of the entries longer than `from` units, ordered by their
 * code units from `from` on (radixSortIds; equal tails by index). Within one trie node at
 * depth `from` the tails are already in order, which the native sort's runs detection likes.
 */
function sortByTail(offsets: Uint32Array, chars: Uint16Array, from: number): Int32Array {
  const size = offsets.length - 1;
  let T = 0;
  for (let i = 0; i < size; i++) if (offsets[i + 1]! - offsets[i]! > from) T++;
  const ids = new Int32Array(T);
  for (let i = 0, k = 0; i < size; i++) if (offsets[i + 1]! - offsets[i]! > from) ids[k++] = i;
  return radixSortIds(
    ids,
    (keys, start, end, pass) => {
      const u = from + pass * 2;
      for (let j = start; j < end; j++) {
        const id = ids[j]!;
        const p = offsets[id]! + u;
        const e = offsets[id + 1]!;
        keys[j] = ((p < e ? chars[p]! + 1 : 0) * 65537 + (p + 1 < e ? chars[p + 1]! + 1 : 0)) * RADIX_ID_SPACE + id;
      }
    },
    (a, b) => compareTails(offsets, chars, a, b, from),
  );
}

/** Ids below 2^19 fit beside a two-unit prefix (33 bits) in a double's 53 (radixSortIds). */
export const RADIX_ID_SPACE = 2 ** 19;
/** Runs this short are sorted by comparison (radixSortIds). */
const RADIX_SHORT_RUN = 12;

/**
 * Sorts `ids` in place by the strings they stand for, in code unit order, equal strings by
 * id: a most-significant-first radix sort, two code units per pass, each pass one native
 * sort of numbers. Shared by a new segment's term order (segment.ts's sortedTermIds, hot:
 * once per text field of every segment an import builds) and StringTable.tails.
 *
 *   key = (unit(2p) * 65537 + unit(2p+1)) * 2^19 + id      (52 bits: exact in a double)
 *   unit(i) = code unit i + 1, or 0 past the end (so "ab" sorts before "ab\0")
 *
 *   pass 0:  [ab|7] [ab|2] [ac|5] [b_|1] ...    ids sharing their first two units form a run
 *   pass 1:  each run sorted again by units 2 and 3, and so on; short runs by `compare`
 *
 * `fill(keys, start, end, pass)` writes the keys of ids[start..end) for that pass (once per
 * run, so the per-id loop stays in the caller, monomorphic). A run whose strings end within
 * the pass (second unit 0) holds equal strings and keeps id order. With an id at or above
 * RADIX_ID_SPACE everything goes to `compare`, which must break ties by id.
 */
export function radixSortIds(
  ids: Int32Array,
  fill: (keys: Float64Array, start: number, end: number, pass: number) => void,
  compare: (a: number, b: number) => number,
): Int32Array {
  const T = ids.length;
  let top = 0;
  for (let i = 0; i < T; i++) if (ids[i]! > top) top = ids[i]!;
  if (top >= RADIX_ID_SPACE) return ids.sort(compare);
  const keys = new Float64Array(T);
  const runs: number[] = [0, T, 0]; // start, end, pass
  while (runs.length > 0) {
    const pass = runs.pop()!;
    const end = runs.pop()!;
    const start = runs.pop()!;
    if (end - start <= RADIX_SHORT_RUN) {
      // insertion sort
      for (let i = start + 1; i < end; i++) {
        const id = ids[i]!;
        let j = i - 1;
        while (j >= start && compare(ids[j]!, id) > 0) {
          ids[j + 1] = ids[j]!;
          j--;
        }
        ids[j + 1] = id;
      }
      continue;
    }
    fill(keys, start, end, pass);
    keys.subarray(start, end).sort();
    let runStart = start;
    let runPrefix = -1;
    for (let j = start; j <= end; j++) {
      let prefix = -2;
      if (j < end) {
        const k = keys[j]!;
        prefix = Math.floor(k / RADIX_ID_SPACE);
        ids[j] = k - prefix * RADIX_ID_SPACE;
      }
      if (prefix === runPrefix) continue;
      if (j - runStart > 1 && runPrefix % 65537 !== 0) runs.push(runStart, j, pass + 1);
      runStart = j;
      runPrefix = prefix;
    }
  }
  return ids;
}

/** Compares entries a and b from code unit `from` on (code unit order; equal tails by index). */
function compareTails(offsets: Uint32Array, chars: Uint16Array, a: number, b: number, from: number): number {
  const ao = offsets[a]! + from;
  const la = offsets[a + 1]! - ao;
  const bo = offsets[b]! + from;
  const lb = offsets[b + 1]! - bo;
  const n = la < lb ? la : lb;
  for (let k = 0; k < n; k++) {
    const d = chars[ao + k]! - chars[bo + k]!;
    if (d !== 0) return d;
  }
  return la - lb || a - b;
}

/** Compares entry i of table a with entry j of table b (code unit order). */
export function compareEntries(a: StringTable, i: number, b: StringTable, j: number): number {
  const ao = a.offsets[i]!;
  const la = a.offsets[i + 1]! - ao;
  const bo = b.offsets[j]!;
  const lb = b.offsets[j + 1]! - bo;
  const n = la < lb ? la : lb;
  const ac = a.chars;
  const bc = b.chars;
  for (let k = 0; k < n; k++) {
    const d = ac[ao + k]! - bc[bo + k]!;
    if (d !== 0) return d;
  }
  return la - lb;
}

/** unionTables: the entries of several tables, and where each table's entries sit among them. */
export interface UnionTable {
  table: StringTable;
  /**
   * Per source table t, pos[t][u]: how many of t's entries sort before union entry u
   * (size + 1 numbers). Union entry u is t's entry pos[t][u] when pos[t][u + 1] > pos[t][u];
   * the union's entries [lo, hi) hold t's entries [pos[t][lo], pos[t][hi]).
   */
  pos: Int32Array[];
}

/**
 * The sorted union of a few sorted tables (a k-way merge), so that one typo walk serves
 * the dictionaries of several fields (search/match.ts). For the Debian `name` and
 * `summary` dictionaries (36k and 21k terms, 46k together): ~14 ms.
 */
export function unionTables(tables: readonly StringTable[]): UnionTable {
  const k = tables.length;
  const at = new Int32Array(k);
  const out = new StringTableBuilder();
  const pos: number[][] = tables.map(() => []);
  for (;;) {
    // the smallest entry among the tables' next ones
    let min = -1;
    for (let t = 0; t < k; t++) {
      if (at[t]! >= tables[t]!.size) continue;
      if (min < 0 || compareEntries(tables[t]!, at[t]!, tables[min]!, at[min]!) < 0) min = t;
    }
    for (let t = 0; t < k; t++) pos[t]!.push(at[t]!);
    if (min < 0) break;
    out.appendFrom(tables[min]!, at[min]!);
    const src = tables[min]!;
    const i = at[min]!;
    for (let t = 0; t < k; t++) if (t === min || (at[t]! < tables[t]!.size && compareEntries(tables[t]!, at[t]!, src, i) === 0)) at[t]!++;
  }
  return { table: out.build(), pos: pos.map((p) => Int32Array.from(p)) };
}

/** Builds a StringTable by appending entries in sorted order. */
export class StringTableBuilder {
  private offsets: number[] = [0];
  private chars = new Uint16Array(1024);
  private len = 0;
  appendFrom(src: StringTable, i: number) {
    const a = src.offsets[i]!;
    const b = src.offsets[i + 1]!;
    const n = b - a;
    if (this.len + n > this.chars.length) {
      let cap = this.chars.length * 2;
      while (cap < this.len + n) cap *= 2;
      const nc = new Uint16Array(cap);
      nc.set(this.chars.subarray(0, this.len));
      this.chars = nc;
    }
    const c = this.chars;
    const sc = src.chars;
    let l = this.len;
    for (let k = a; k < b; k++) c[l++] = sc[k]!;
    this.len = l;
    this.offsets.push(l);
  }
  build(): StringTable {
    return new StringTable(Uint32Array.from(this.offsets), this.chars.slice(0, this.len));
  }
}
