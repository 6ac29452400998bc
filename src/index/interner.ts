/**
 * Term interner: gives every distinct term of a field a small integer id, without making
 * a string for a term it has seen before.
 *
 * Building a segment looks up every token occurrence (millions in an import). With a
 * `Map<string, number>` each lookup first needs the token as a new string (a slice, often
 * lower-cased: an allocation and a hash per occurrence). The tokenizer's ASCII path
 * (Tokenizer.termIdsInto) instead writes a word's normalised characters into a scratch
 * buffer and asks for its id here; a string is made only the first time a term appears.
 *
 *   scratch "kernel" --hash--> slots[h & mask] --> id 17 --> chars[offsets[17]..] == ?
 *                                     (linear probing; the table is at most half full)
 *
 * One interner per field of a segment being built: its ids are the segment's term ids, in
 * order of first appearance. (One interner kept for a field's lifetime, to make each
 * term's string once per process, was slower: its tables outgrow the CPU caches.)
 */
import { grown } from '../arrays.js';
import { FNV_BASIS, fnvStep } from '../tokenizer/tokenizer.js';

/** FNV-1a of chars[0..len). Hot: once per token occurrence. */
function hashChars(chars: Uint16Array, len: number): number {
  let h = FNV_BASIS;
  for (let i = 0; i < len; i++) h = fnvStep(h, chars[i]!);
  return h | 0;
}

export class TermInterner {
  /** The term of each id. */
  readonly terms: string[] = [];
  /** Per id: its hash, and where its characters start in `chars` (id + 1: where they end). */
  private hashes = new Int32Array(1024);
  private offsets = new Int32Array(1025);
  private chars = new Uint16Array(8192);
  /** Open addressing: id + 1 per slot, 0 when empty. */
  private slots = new Int32Array(2048);
  private mask = 2047;
  /** Scratch for one word's characters (Tokenizer.termIdsInto writes here). */
  scratch = new Uint16Array(64);

  get size(): number {
    return this.terms.length;
  }

  /**
   * The id of the term in scratch[0..len). Hot: once per token occurrence. `term` is that
   * term as a string when the caller has one (made here otherwise, for a new term only).
   */
  idOfScratch(len: number, term?: string): number {
    return this.idOfHashed(len, hashChars(this.scratch, len), term);
  }

  /** idOfScratch for a caller that hashed the characters as it wrote them (FNV_BASIS, fnvStep). Hot. */
  idOfHashed(len: number, h: number, term?: string): number {
    const s = this.scratch;
    const slots = this.slots;
    const mask = this.mask;
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const e = slots[p]!;
      if (e === 0) return this.insert(term ?? String.fromCharCode.apply(null, s.subarray(0, len) as unknown as number[]), h, p);
      const id = e - 1;
      if (this.hashes[id] !== h) continue;
      const a = this.offsets[id]!;
      if (this.offsets[id + 1]! - a !== len) continue;
      const c = this.chars;
      let k = 0;
      while (k < len && c[a + k] === s[k]) k++;
      if (k === len) return id;
    }
  }

  /** The id of a term given as a string (tokens from the general tokenizer path). */
  idOf(term: string): number {
    const len = term.length;
    const s = len > this.scratch.length ? this.growScratch(len) : this.scratch;
    for (let k = 0; k < len; k++) s[k] = term.charCodeAt(k);
    return this.idOfScratch(len, term);
  }

  /** Makes room in scratch for a word of `len` characters. */
  growScratch(len: number): Uint16Array {
    let cap = this.scratch.length * 2;
    while (cap < len) cap *= 2;
    return (this.scratch = grown(this.scratch, cap));
  }

  private insert(term: string, h: number, slot: number): number {
    const id = this.terms.length;
    this.terms.push(term);
    if (id + 1 >= this.hashes.length) {
      this.hashes = grown(this.hashes, this.hashes.length * 2);
      this.offsets = grown(this.offsets, this.offsets.length * 2);
    }
    this.hashes[id] = h;
    const a = this.offsets[id]!;
    if (a + term.length > this.chars.length) {
      let cap = this.chars.length * 2;
      while (cap < a + term.length) cap *= 2;
      this.chars = grown(this.chars, cap);
    }
    for (let k = 0; k < term.length; k++) this.chars[a + k] = term.charCodeAt(k);
    this.offsets[id + 1] = a + term.length;
    this.slots[slot] = id + 1;
    if ((id + 1) * 2 > this.mask) this.rehash();
    return id;
  }

  private rehash() {
    const cap = (this.mask + 1) * 2;
    const slots = new Int32Array(cap);
    const mask = cap - 1;
    for (let id = 0; id < this.terms.length; id++) {
      let p = this.hashes[id]! & mask;
      while (slots[p] !== 0) p = (p + 1) & mask;
      slots[p] = id + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}
