/**
 * src/termdict: here is a field's vocabulary, which of its terms stand for a query word?
 *
 * table.ts: a term dictionary is a sorted string table (UTF-16 code unit order), stored as
 * one Uint16Array of characters plus offsets, so a segment's dictionary is used as it lies
 * in the segment blob, without decoding it into JavaScript strings. Beside it, built on
 * first need and kept with the table, the indexes the typo walk (walk.ts) reads: the head
 * index (the top three trie levels), tails (entries ordered from an offset on) and the
 * reversed table (entries spelt backwards). Facet value dictionaries are tables too.
 */
import { grown } from '../arrays.js';
import { radixSortIds, RADIX_ID_SPACE } from './radix.js';

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
   * Building it in a cold process (the loop runs interpreted) costs more than it saves a
   * one-query CLI process; a server builds it within its first few typo queries.
   */
  warmHeads(): HeadIndex | null {
    if (this.headIndex) return this.headIndex;
    return ++this.walks >= HEADS_AFTER_WALKS ? this.heads() : null;
  }

  /**
   * Where the entries starting with each ASCII character, each pair and each triple of
   * them begin: the top three levels of the trie the table implicitly is, so that a trie
   * walk (walk.ts) finds those children without a binary search over the table.
   * Built in one pass over the table and kept with it (warmHeads decides when): for the
   * Debian `description` dictionary, 113k terms and 11k triples, ~200 KB.
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
        c1[128]!++;
        continue;
      }
      c1[f]!++;
      if (len === 1) single[f]!++;
      else {
        const s = ch[a + 1]!;
        const slot = f * 129 + (s < 128 ? s : 128);
        c2[slot]!++;
        if (len >= 3 && s < 128 && (slot !== lastSlot || ch[a + 2] !== lastThird)) {
          if (n3 === label3.length) {
            label3 = grown(label3, n3 * 2);
            start3 = grown(start3, n3 * 2);
          }
          label3[n3] = ch[a + 2]!;
          start3[n3++] = i;
          c3[slot + 1]!++;
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
   * a typo walk (walk.ts) looks up "anything of `from` units, then exactly this"
   * with one binary search here instead of one per trie node at that depth. Built on
   * demand and kept with the table (walk.ts asks once the head index is warm); for the
   * Debian `name` dictionary, 36k terms, 144 KB per offset.
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
   * each one reverses: the second half of a forward/backward typo walk (walk.ts)
   * matches the end of a query exactly by walking from the ends of the terms. Built on
   * demand and kept with the table (walk.ts asks once the head index is warm); it is as
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
