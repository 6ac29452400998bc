/**
 * src/index: here is a term, give me its postings; here is a document, give me its column values.
 *
 * A collection's index is a list of immutable segments (see manifest.ts). A segment
 * covers a set of documents, numbered inside the segment by ordinal 0..n-1 in ascending
 * order of their collection-wide sequence number (seq). It is stored as one blob under
 * key [collId, segId, 0]: the header sections plus each field's blob nested as a section
 * of its own (format 2). One value rather than one per field because lmdb-js hands out
 * values of 16 MB and more as views of the memory map, and copies smaller ones whole: a
 * one-shot `fathom search` on a 30 MB segment then touches only the pages it reads,
 * where separate field values of a few MB each were copied in full (format 1 kept them
 * under [collId, segId, fieldId]; such segments are still read, and merges rewrite them).
 *
 *   header   META (json: version, n, fields)         SEQS u32[n]  (ordinal -> seq)
 *            FIELD + fieldId: that field's blob, below
 *   text     TERMS (StringTable) POST_OFFSETS u32[T+1] POS_OFFSETS u32[T] DOC_FREQ u32[T] POSTINGS u8[]
 *            LENGTHS (tokens per document, or per array element)
 *            VALUES (raw strings; only for facet / sort fields)
 *   parts    a text field's glued words' parts (PARTS_COLUMN_BASE): a text blob without
 *            VALUES, LENGTHS holding the number of parts per document
 *   number   NUM (f64 per document, NaN when absent; ragged for arrays)
 *   geo      the documents' points and a k-d tree over them (src/geo/column.ts; format 3)
 *
 * Postings of one term, ordinals ascending, all varints: first the documents, then the
 * positions of each document in the same order (so walking documents never reads
 * positions, which most queries need only for a few documents):
 *
 *   POST_OFFSETS[t] -> [ordΔ][tf] [ordΔ][tf] ...   POS_OFFSETS[t] -> [posΔ x tf] [posΔ x tf] ...
 *
 * Positions count tokens from 0. In array fields a position is element * 65536 + token,
 * so phrases and proximity never span two elements.
 *
 * Deleted documents are not removed from a segment; each segment has a deletion bitmap
 * beside it (manifest.ts) and merges drop them.
 */
import type { Field } from '../schema/schema.js';
import type { IndexValue } from '../document/document.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { TermInterner } from './interner.js';
import { Blob, ByteReader, ByteWriter, encodeBlob, jsonSection, type Section } from './codec.js';
import { HEADS_AFTER_WALKS, StringTable } from '../termdict/table.js';
import { RADIX_ID_SPACE, radixSortIds } from '../termdict/radix.js';
import { unionTables, type UnionTable } from '../termdict/union.js';
import { GeoAcc, GeoColumn } from '../geo/column.js';
import { SKIP_EVERY, positionsAt, type Skips } from './termbits.js';

/**
 * The segment format: 1 kept each field in a value of its own, 2 nests them in one value,
 * 3 adds `geo` fields (geopoint, geopoint[]). Readers take every format up to this one;
 * every segment written (new or merged) is written in this one.
 */
export const SEGMENT_FORMAT = 3;

/** Section tags. Never renumber: they are part of the on-disk format. */
export const TAG = {
  META: 1,
  SEQS: 2,
  TERM_OFFSETS: 10,
  TERM_CHARS: 11,
  POST_OFFSETS: 12,
  DOC_FREQ: 13,
  POSTINGS: 14,
  POS_OFFSETS: 17,
  LENGTHS: 15,
  LEN_OFFSETS: 16,
  VAL_OFFSETS: 20,
  VAL_CHARS: 21,
  VAL_IDS: 22,
  VAL_DOC_OFFSETS: 23,
  NUM: 30,
  NUM_OFFSETS: 31,
  // 40-44: a geo field's sections (src/geo/column.ts GEO_TAG)
  /** FIELD + fieldId: a field's blob nested in the segment blob (format 2). */
  FIELD: 0x10000,
} as const;

export const ELEMENT_SHIFT = 65536;

/**
 * The parts of a text field's glued words (tokenizer rule 6: `unit-aware` has the token
 * `unitaware` and the parts `unit`, `aware`) are a text index of their own in the segment,
 * under the column id PARTS_COLUMN_BASE + the field's id: a term dictionary and postings
 * like the field's, each part at the position of the word it is part of, so a part is
 * found by its own typo walk and never taken for a whole word (search/candidates.ts).
 */
export const PARTS_COLUMN_BASE = 2_000_000;

export function partsColumnId(fieldId: number): number {
  return PARTS_COLUMN_BASE + fieldId;
}
const MAX_POS_IN_ELEMENT = 65535;
const MAX_ELEMENTS = 65535;

export type ColumnKind = 'text' | 'number' | 'geo';

export interface FieldMeta {
  id: number;
  kind: ColumnKind;
  isArray: boolean;
  /** Raw string values stored (facet or sort). */
  values: boolean;
}

export interface SegmentMeta {
  v: number;
  n: number;
  fields: FieldMeta[];
}

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

/**
 * Token occurrences of one text field while a segment is built. Every occurrence is
 * appended to one flat arena as (termId, ord, pos); `encodeText` groups them by term
 * with a counting sort. Term ids come from an interner (interner.ts): the hot path is one
 * hash probe and three typed-array stores per token, with no string made for a term the
 * segment has seen before.
 */
class TextAcc {
  occ = new Int32Array(4096);
  nOcc = 0;
  /** Per document: token count (single) or per-element token counts (array). */
  lengths: number[] = [];
  lenOffsets: number[] = [0];
  values: (string | string[] | undefined)[] = [];
  /** This segment's terms and their ids. */
  readonly interner = new TermInterner();
  /** The parts of the field's glued words (PARTS_COLUMN_BASE), once one is met. */
  parts: TextAcc | null = null;
  constructor(
    readonly field: Field,
    readonly keepValues: boolean,
    /** The field's tokenizer, looked up once per segment rather than once per value. */
    readonly tok: Tokenizer,
  ) {}

  /** Hot: once per token occurrence. */
  add(id: number, ord: number, pos: number) {
    let o = this.nOcc * 3;
    if (o + 3 > this.occ.length) {
      const grown = new Int32Array(this.occ.length * 2);
      grown.set(this.occ);
      this.occ = grown;
    }
    const occ = this.occ;
    occ[o++] = id;
    occ[o++] = ord;
    occ[o] = pos;
    this.nOcc++;
  }
}

class NumAcc {
  values: number[] = [];
  offsets: number[] = [0];
  constructor(readonly field: Field) {}
}

export interface BuiltSegment {
  n: number;
  seqs: Uint32Array;
  minSeq: number;
  maxSeq: number;
  /** The segment blob (header and every field), stored under [collId, segId, 0]. */
  blob: Uint8Array;
}

/** The one stored blob of a segment: header sections plus each field blob as a section. */
export function encodeSegment(meta: SegmentMeta, seqs: Uint32Array, fields: Map<number, Uint8Array>): Uint8Array {
  const sections = new Map<number, Section>([
    [TAG.META, jsonSection(meta)],
    [TAG.SEQS, seqs],
  ]);
  for (const [fieldId, blob] of fields) sections.set(TAG.FIELD + fieldId, blob);
  return encodeBlob(sections);
}

/** Does this field get index data at all? */
export function isIndexed(f: Field): boolean {
  return f.index && f.id > 0 && (f.kind === 'text' || f.kind === 'number' || f.kind === 'bool' || f.kind === 'geo');
}

function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return NaN;
}

/**
 * Accumulates documents for one new segment. Documents may arrive in any seq order;
 * `build` assigns ordinals by ascending seq.
 */
export class SegmentBuilder {
  private docs = new Map<number, Array<[Field, IndexValue]>>();
  /** Term ids of one string (Tokenizer.termIdsInto). */
  private readonly scratchIds = { ids: new Int32Array(256) };

  add(seq: number, values: Array<[Field, IndexValue]>): void {
    this.docs.set(seq, values);
  }
  remove(seq: number): void {
    this.docs.delete(seq);
  }
  has(seq: number): boolean {
    return this.docs.has(seq);
  }
  get size(): number {
    return this.docs.size;
  }

  build(tokenizerOf: (f: Field) => Tokenizer): BuiltSegment {
    const seqList = [...this.docs.keys()].sort((a, b) => a - b);
    const n = seqList.length;
    const texts = new Map<number, TextAcc>();
    const nums = new Map<number, NumAcc>();
    const geos = new Map<number, GeoAcc>();
    const tokens: string[] = [];

    for (let ord = 0; ord < n; ord++) {
      const values = this.docs.get(seqList[ord]!)!;
      for (const [f, v] of values) {
        if (!isIndexed(f)) continue;
        if (f.kind === 'text') {
          let acc = texts.get(f.id);
          if (!acc) {
            acc = new TextAcc(f, f.facet || f.sort, tokenizerOf(f));
            texts.set(f.id, acc);
          }
          this.addText(acc, ord, v, acc.tok, tokens);
        } else if (f.kind === 'geo') {
          let acc = geos.get(f.id);
          if (!acc) geos.set(f.id, (acc = new GeoAcc()));
          acc.add(ord, v);
        } else {
          let acc = nums.get(f.id);
          if (!acc) {
            acc = new NumAcc(f);
            nums.set(f.id, acc);
          }
          padNum(acc, ord);
          if (Array.isArray(v)) {
            for (const x of v) acc.values.push(toNumber(x));
            acc.offsets.push(acc.values.length);
          } else {
            acc.values.push(toNumber(v));
            acc.offsets.push(acc.values.length);
          }
        }
      }
    }

    const blobs = new Map<number, Uint8Array>();
    const metas: FieldMeta[] = [];
    for (const acc of texts.values()) {
      padText(acc, n);
      blobs.set(acc.field.id, encodeText(acc, n));
      metas.push({ id: acc.field.id, kind: 'text', isArray: isArrayText(acc.field), values: acc.keepValues });
      const parts = acc.parts;
      if (parts) {
        padText(parts, n);
        blobs.set(parts.field.id, encodeText(parts, n));
        metas.push({ id: parts.field.id, kind: 'text', isArray: isArrayText(acc.field), values: false });
      }
    }
    for (const acc of nums.values()) {
      padNum(acc, n);
      blobs.set(acc.field.id, encodeNum(acc, n));
      metas.push({ id: acc.field.id, kind: 'number', isArray: acc.field.isArray, values: false });
    }
    for (const [id, acc] of geos) {
      blobs.set(id, acc.encode(n));
      metas.push({ id, kind: 'geo', isArray: true, values: false });
    }
    const seqs = Uint32Array.from(seqList);
    const meta: SegmentMeta = { v: SEGMENT_FORMAT, n, fields: metas };
    return { n, seqs, minSeq: n ? seqList[0]! : 0, maxSeq: n ? seqList[n - 1]! : 0, blob: encodeSegment(meta, seqs, blobs) };
  }

  /** Hot: called once per indexed string value. */
  private addText(acc: TextAcc, ord: number, v: IndexValue, tok: Tokenizer, tokens: string[]) {
    // documents skipped for this field get empty lengths
    padText(acc, ord);
    let parts = 0;
    if (isArrayText(acc.field) || Array.isArray(v)) {
      const arr = (Array.isArray(v) ? v : [v]) as unknown[];
      const elements = Math.min(arr.length, MAX_ELEMENTS);
      for (let e = 0; e < elements; e++) {
        const text = String(arr[e]);
        const count = this.addTokens(acc, text, ord, e * ELEMENT_SHIFT, MAX_POS_IN_ELEMENT + 1, tok, tokens);
        acc.lengths.push(count);
        parts += this.addParts(acc, text, ord, e * ELEMENT_SHIFT, MAX_POS_IN_ELEMENT + 1, tok);
      }
      acc.lenOffsets.push(acc.lengths.length);
      if (acc.keepValues) acc.values.push(arr.map(String));
    } else {
      const text = String(v);
      acc.lengths.push(this.addTokens(acc, text, ord, 0, Infinity, tok, tokens));
      acc.lenOffsets.push(acc.lengths.length);
      if (acc.keepValues) acc.values.push(text);
      parts = this.addParts(acc, text, ord, 0, Infinity, tok);
    }
    if (parts > 0) {
      const p = acc.parts!;
      padText(p, ord);
      p.lengths.push(parts);
      p.lenOffsets.push(p.lengths.length);
    }
  }

  /** Adds the parts of one string's glued words (the first `max` tokens') at their words' positions; returns how many. */
  private addParts(acc: TextAcc, text: string, ord: number, base: number, max: number, tok: Tokenizer): number {
    let added = 0;
    tok.partsOf(text, (i, parts) => {
      if (i >= max) return;
      const p = (acc.parts ??= new TextAcc({ ...acc.field, id: partsColumnId(acc.field.id) }, false, tok));
      for (const part of parts) p.add(p.interner.idOf(part), ord, base + i);
      added += parts.length;
    });
    return added;
  }

  /** Adds the first `max` tokens of one string at positions base, base + 1, ...; returns its token count. */
  private addTokens(acc: TextAcc, text: string, ord: number, base: number, max: number, tok: Tokenizer, tokens: string[]): number {
    const scratch = this.scratchIds;
    const count = tok.termIdsInto(text, acc.interner, scratch);
    if (count >= 0) {
      const ids = scratch.ids;
      const m = Math.min(count, max);
      for (let i = 0; i < m; i++) acc.add(ids[i]!, ord, base + i);
      return count;
    }
    tokens.length = 0;
    tok.tokensInto(text, tokens);
    const m = Math.min(tokens.length, max);
    for (let i = 0; i < m; i++) acc.add(acc.interner.idOf(tokens[i]!), ord, base + i);
    return tokens.length;
  }
}

function isArrayText(f: Field): boolean {
  return f.type === 'string[]' || f.type === 'string*';
}

function padText(acc: TextAcc, upTo: number) {
  while (acc.lenOffsets.length - 1 < upTo) {
    acc.lenOffsets.push(acc.lengths.length);
    if (acc.keepValues) acc.values.push(undefined);
  }
}

function padNum(acc: NumAcc, upTo: number) {
  while (acc.offsets.length - 1 < upTo) acc.offsets.push(acc.values.length);
}

/**
 * Term ids in the order of their terms (code unit order, as Array.prototype.sort orders
 * strings), for a new segment's term table: termdict/radix.ts's radixSortIds over the terms' code
 * units. Hot: once per text field of every segment an import builds (~20k terms per 1,000
 * Debian descriptions). Sorting the strings and looking each one's id up again took twice
 * as long.
 */
export function sortedTermIds(terms: readonly string[]): Int32Array {
  const T = terms.length;
  const ids = new Int32Array(T);
  for (let i = 0; i < T; i++) ids[i] = i;
  return radixSortIds(
    ids,
    (keys, start, end, pass) => {
      const u = pass * 2;
      for (let j = start; j < end; j++) {
        const id = ids[j]!;
        const t = terms[id]!;
        keys[j] = ((u < t.length ? t.charCodeAt(u) + 1 : 0) * 65537 + (u + 1 < t.length ? t.charCodeAt(u + 1) + 1 : 0)) * RADIX_ID_SPACE + id;
      }
    },
    (a, b) => {
      const x = terms[a]!;
      const y = terms[b]!;
      return x > y ? 1 : x < y ? -1 : a - b;
    },
  );
}

function encodeText(acc: TextAcc, n: number): Uint8Array {
  const terms = acc.interner.terms;
  const T = terms.length;
  const N = acc.nOcc;
  const occ = acc.occ;
  // Counting sort of occurrences by term id; stable, so each term's occurrences stay in
  // (ord, pos) order.
  const start = new Int32Array(T + 1);
  for (let i = 0; i < N; i++) start[occ[i * 3]! + 1]!++;
  for (let t = 0; t < T; t++) start[t + 1]! += start[t]!;
  const fill = start.slice(0, T);
  const grouped = new Int32Array(N * 2); // (ord, pos) pairs
  for (let i = 0; i < N; i++) {
    const t = occ[i * 3]!;
    const at = fill[t]!++ * 2;
    grouped[at] = occ[i * 3 + 1]!;
    grouped[at + 1] = occ[i * 3 + 2]!;
  }
  const dense = sortedTermIds(terms); // term id by sorted position
  const postOffsets = new Uint32Array(T + 1);
  const posOffsets = new Uint32Array(T);
  const docFreq = new Uint32Array(T);
  const w = new ByteWriter(Math.max(1024, N * 2));
  for (let i = 0; i < T; i++) {
    const t = dense[i]!;
    postOffsets[i] = w.len;
    const end = start[t + 1]! * 2;
    // documents: [ordΔ][tf]
    let k = start[t]! * 2;
    let last = 0;
    let df = 0;
    while (k < end) {
      const ord = grouped[k]!;
      let e = k + 2;
      while (e < end && grouped[e] === ord) e += 2;
      w.varint(ord - last);
      last = ord;
      w.varint((e - k) >> 1);
      df++;
      k = e;
    }
    // positions, document by document
    posOffsets[i] = w.len;
    k = start[t]! * 2;
    while (k < end) {
      const ord = grouped[k]!;
      let prev = 0;
      while (k < end && grouped[k] === ord) {
        w.varint(grouped[k + 1]! - prev);
        prev = grouped[k + 1]!;
        k += 2;
      }
    }
    docFreq[i] = df;
  }
  postOffsets[T] = w.len;
  const sorted = new Array<string>(T);
  for (let i = 0; i < T; i++) sorted[i] = terms[dense[i]!]!;
  const table = StringTable.build(sorted);
  const sections = new Map<number, Section>([
    [TAG.TERM_OFFSETS, table.offsets],
    [TAG.TERM_CHARS, table.chars],
    [TAG.POST_OFFSETS, postOffsets],
    [TAG.POS_OFFSETS, posOffsets],
    [TAG.DOC_FREQ, docFreq],
    [TAG.POSTINGS, w.result()],
    [TAG.LENGTHS, Uint32Array.from(acc.lengths)],
    [TAG.LEN_OFFSETS, Uint32Array.from(acc.lenOffsets)],
  ]);
  if (acc.keepValues) addValueSections(sections, acc.values, n);
  return encodeBlob(sections);
}

/** Stores raw string values as a sorted dictionary plus per-document ids (ragged). */
export function addValueSections(sections: Map<number, Section>, values: (string | string[] | undefined)[], n: number) {
  const distinct = new Set<string>();
  for (const v of values) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) distinct.add(x);
    else distinct.add(v);
  }
  const dict = [...distinct].sort();
  const idOf = new Map<string, number>();
  dict.forEach((s, i) => idOf.set(s, i));
  const offsets = new Uint32Array(n + 1);
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    offsets[i] = ids.length;
    const v = values[i];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) ids.push(idOf.get(x)!);
    else ids.push(idOf.get(v)!);
  }
  offsets[n] = ids.length;
  const table = StringTable.build(dict);
  sections.set(TAG.VAL_OFFSETS, table.offsets);
  sections.set(TAG.VAL_CHARS, table.chars);
  sections.set(TAG.VAL_DOC_OFFSETS, offsets);
  sections.set(TAG.VAL_IDS, Uint32Array.from(ids));
}

function encodeNum(acc: NumAcc, _n: number): Uint8Array {
  return encodeBlob(
    new Map<number, Section>([
      [TAG.NUM, Float64Array.from(acc.values)],
      [TAG.NUM_OFFSETS, Uint32Array.from(acc.offsets)],
    ]),
  );
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

/** Ragged per-document values: document i owns values[offsets[i] .. offsets[i+1]). */
export interface Ragged<T extends Uint32Array | Float64Array> {
  offsets: Uint32Array;
  values: T;
}

export class TextIndex {
  readonly terms: StringTable;
  readonly postOffsets: Uint32Array;
  readonly posOffsets: Uint32Array;
  readonly docFreq: Uint32Array;
  readonly postings: Uint8Array;
  readonly lengths: Ragged<Uint32Array>;
  readonly valueDict?: StringTable;
  readonly valueIds?: Ragged<Uint32Array>;
  private valueCache?: string[];

  constructor(blob: Blob, hasValues: boolean) {
    this.terms = new StringTable(blob.u32(TAG.TERM_OFFSETS), blob.u16(TAG.TERM_CHARS));
    this.postOffsets = blob.u32(TAG.POST_OFFSETS);
    this.posOffsets = blob.u32(TAG.POS_OFFSETS);
    this.docFreq = blob.u32(TAG.DOC_FREQ);
    this.postings = blob.u8(TAG.POSTINGS);
    this.lengths = { offsets: blob.u32(TAG.LEN_OFFSETS), values: blob.u32(TAG.LENGTHS) };
    if (hasValues) {
      this.valueDict = new StringTable(blob.u32(TAG.VAL_OFFSETS), blob.u16(TAG.VAL_CHARS));
      this.valueIds = { offsets: blob.u32(TAG.VAL_DOC_OFFSETS), values: blob.u32(TAG.VAL_IDS) };
    }
  }

  /** The document's length in words (summed over an array's elements). */
  docLength(d: number): number {
    const { offsets, values } = this.lengths;
    let sum = 0;
    for (let i = offsets[d]!, end = offsets[d + 1]!; i < end; i++) sum += values[i]!;
    return sum;
  }

  /** The length in words of the document's first value (of a single-valued field, its value); -1 when it has none. */
  lengthOf(d: number): number {
    const { offsets, values } = this.lengths;
    const a = offsets[d]!;
    return a < offsets[d + 1]! ? values[a]! : -1;
  }

  private avg = -1;
  /** The mean docLength over the segment's documents (for BM25's length normalisation; cached). */
  avgLength(): number {
    if (this.avg < 0) {
      const { offsets, values } = this.lengths;
      let sum = 0;
      for (let i = 0; i < values.length; i++) sum += values[i]!;
      this.avg = offsets.length > 1 ? sum / (offsets.length - 1) : 0;
    }
    return this.avg;
  }

  /** Decoded facet value strings (cached). */
  valueStrings(): string[] {
    if (!this.valueCache) {
      const d = this.valueDict!;
      const out = new Array<string>(d.size);
      for (let i = 0; i < d.size; i++) out[i] = d.get(i);
      this.valueCache = out;
    }
    return this.valueCache;
  }

  /**
   * Decodes the document ordinals of term index `t`, ascending, into `into.ords` (grown
   * when too small) and returns how many there are. For term-at-a-time matching, which
   * needs no positions: the [ordΔ][tf] pairs are read straight from the bytes, tf skipped,
   * with no cursor in between. Hot: once per posting of every common query word.
   */
  docOrdinals(t: number, into: { ords: Int32Array }): number {
    const df = this.docFreq[t]!;
    if (into.ords.length < df) into.ords = new Int32Array(Math.max(df, into.ords.length * 2));
    const out = into.ords;
    const buf = this.postings;
    let p = this.postOffsets[t]!;
    let d = 0;
    for (let i = 0; i < df; i++) {
      let byte = buf[p++]!;
      let delta = byte & 0x7f;
      let scale = 128;
      while (byte >= 0x80) {
        byte = buf[p++]!;
        delta += (byte & 0x7f) * scale;
        scale *= 128;
      }
      while (buf[p++]! >= 0x80); // tf
      d += delta;
      out[i] = d;
    }
    return df;
  }

  /**
   * Does term index `t` hold a document whose byte in `mask` is set? Reads its postings
   * (as docOrdinals does) up to the first such document: the number read (1..df) when
   * there is one, minus the number read (-df) when there is none.
   */
  postingsUntil(t: number, mask: Uint8Array): number {
    const df = this.docFreq[t]!;
    const buf = this.postings;
    let p = this.postOffsets[t]!;
    let d = 0;
    for (let i = 0; i < df; i++) {
      let byte = buf[p++]!;
      d += byte & 0x7f;
      let scale = 128;
      while (byte >= 0x80) {
        byte = buf[p++]!;
        d += (byte & 0x7f) * scale;
        scale *= 128;
      }
      while (buf[p++]! >= 0x80); // tf
      if (mask[d] !== 0) return i + 1;
    }
    return -df;
  }

  /**
   * The last document ordinal of term index `t`: docOrdinals' sum of deltas, without
   * storing them. For merges that copy postings whole (once per term per source). The
   * varints are read inline, as in docOrdinals: through a ByteReader the merges took longer.
   */
  lastOrdinal(t: number): number {
    const df = this.docFreq[t]!;
    const buf = this.postings;
    let p = this.postOffsets[t]!;
    let d = 0;
    for (let i = 0; i < df; i++) {
      let byte = buf[p++]!;
      d += byte & 0x7f;
      let scale = 128;
      while (byte >= 0x80) {
        byte = buf[p++]!;
        d += (byte & 0x7f) * scale;
        scale *= 128;
      }
      while (buf[p++]! >= 0x80); // tf
    }
    return d;
  }

  /** A cursor over the postings of term index `t`; with the term's skips (index/termbits.ts), advance jumps. */
  cursor(t: number, skips?: Skips): PostingCursor {
    return new PostingCursor(this.postings, this.postOffsets[t]!, this.posOffsets[t]!, this.docFreq[t]!, skips);
  }
}

export class NumericColumn {
  readonly values: Float64Array;
  readonly offsets: Uint32Array;
  readonly single: boolean;
  constructor(blob: Blob, isArray: boolean) {
    this.values = blob.f64(TAG.NUM);
    this.offsets = blob.u32(TAG.NUM_OFFSETS);
    this.single = !isArray;
  }
  /** First value of document `ord` (NaN when absent). */
  first(ord: number): number {
    const a = this.offsets[ord]!;
    return a < this.offsets[ord + 1]! ? this.values[a]! : NaN;
  }
}

/**
 * Walks one term's postings in ordinal order (document-at-a-time matching).
 *
 *   doc      current ordinal, or -1 before the first `next()`, or Infinity when exhausted
 *   tf       positions of the current document
 *   positions()  decodes the current document's positions (call before next())
 */
export class PostingCursor {
  private r: ByteReader;
  /** Reader of the positions stream, and how many position varints it must skip first. */
  private pr: ByteReader;
  private pending = 0;
  doc = -1;
  tf = 0;
  private left: number;
  private posRead = true;
  private readonly df: number;
  /** After a jump: the skip entry the positions stream is to be found at (else -1). */
  private posEntry = -1;
  constructor(
    buf: Uint8Array,
    private readonly start: number,
    private readonly posStart: number,
    df: number,
    private readonly skips?: Skips,
  ) {
    this.r = new ByteReader(buf, start);
    this.pr = new ByteReader(buf, posStart);
    this.left = df;
    this.df = df;
  }
  /** Advances to the next document; returns its ordinal or Infinity. Hot. */
  next(): number {
    if (!this.posRead) this.pending += this.tf;
    if (this.left === 0) {
      this.doc = Infinity;
      this.posRead = true;
      return Infinity;
    }
    this.left--;
    const d = this.r.varint();
    this.doc = this.doc < 0 ? d : this.doc + d;
    this.tf = this.r.varint();
    this.posRead = false;
    return this.doc;
  }
  /** Advances to the first document >= target. */
  advance(target: number): number {
    if (this.skips !== undefined && this.doc < target) this.jump(target);
    while (this.doc < target) {
      if (this.next() === Infinity) return Infinity;
    }
    return this.doc;
  }
  /**
   * Moves to the first document >= target, backwards as well as forwards: by the skips,
   * from the last entry at or below it (documents visited out of order, search/bitmatch.ts).
   * Without skips only forwards.
   */
  seek(target: number): number {
    if (target <= this.doc && this.skips !== undefined) {
      // back to the start, then forward by the skips
      this.r.pos = this.start;
      this.pr.pos = this.posStart;
      this.posEntry = -1;
      this.pending = 0;
      this.posRead = true;
      this.left = this.df;
      this.doc = -1;
      this.tf = 0;
    }
    return this.advance(target);
  }

  /**
   * With skips: moves to just before the last skip entry at or below `target` when that
   * is ahead of the postings read so far, as if every posting before it had been read.
   */
  private jump(target: number): void {
    const s = this.skips!;
    // (a target before the next skip entry: read on, no search)
    const next = Math.floor((this.df - this.left) / SKIP_EVERY) + 1;
    if (next >= s.doc.length || s.doc[next]! > target) return;
    let lo = next;
    let hi = s.doc.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (s.doc[mid]! <= target) lo = mid;
      else hi = mid - 1;
    }
    const index = lo * SKIP_EVERY;
    // (postings read so far: df - left; the jump must only go forward)
    if (index <= this.df - this.left) return;
    this.r.pos = s.at[lo]!;
    // (the positions' offset is found only if they are read: seekPositions)
    this.posEntry = lo;
    this.pending = 0;
    this.posRead = true;
    this.left = this.df - index;
    this.doc = s.prev[lo]!;
    this.tf = 0;
  }

  private seekPositions() {
    if (this.posEntry >= 0) {
      this.pr.pos = positionsAt(this.skips!, this.posEntry);
      this.posEntry = -1;
    }
    if (this.pending > 0) {
      this.pr.skip(this.pending);
      this.pending = 0;
    }
  }
  positions(out: number[] = []): number[] {
    out.length = 0;
    this.seekPositions();
    const r = this.pr;
    let p = 0;
    for (let i = 0; i < this.tf; i++) {
      p += r.varint();
      out.push(p);
    }
    this.posRead = true;
    return out;
  }

  /**
   * Decodes the current document's positions into `out` from index `at`; returns the
   * index after the last one written. `out` must have room for `tf` more values. Hot.
   */
  positionsInto(out: Int32Array, at: number): number {
    this.seekPositions();
    const r = this.pr;
    let p = 0;
    for (let i = 0; i < this.tf; i++) {
      p += r.varint();
      out[at++] = p;
    }
    this.posRead = true;
    return at;
  }

  /** positionsInto, each position p written as 2p + tag (search/match.ts DocPositions). */
  positionsTagged(out: Int32Array, at: number, tag: number): number {
    this.seekPositions();
    const r = this.pr;
    let p = 0;
    for (let i = 0; i < this.tf; i++) {
      p += r.varint();
      out[at++] = 2 * p + tag;
    }
    this.posRead = true;
    return at;
  }

  /** The raw bytes of the current document's positions (for merges). */
  positionBytes(): [number, number] {
    this.seekPositions();
    const from = this.pr.pos;
    this.pr.skip(this.tf);
    this.posRead = true;
    return [from, this.pr.pos];
  }
}

export type BlobLoader = (fieldId: number) => Uint8Array | undefined;

/** A segment opened for reading. Field data is loaded on first use and kept. */
export class SegmentReader {
  readonly id: number;
  readonly n: number;
  readonly seqs: Uint32Array;
  readonly fields = new Map<number, FieldMeta>();
  private texts = new Map<number, TextIndex | null>();
  private numerics = new Map<number, NumericColumn | null>();
  private geos = new Map<number, GeoColumn | null>();
  private readonly blob: Blob;

  /** `load` reads a field blob stored on its own (format 1 segments). */
  constructor(
    id: number,
    header: Uint8Array,
    private readonly load: BlobLoader,
  ) {
    const blob = new Blob(header);
    this.blob = blob;
    const meta = blob.json<SegmentMeta>(TAG.META);
    if (meta.v > SEGMENT_FORMAT) throw new Error(`segment format ${meta.v} is newer than this Fathom supports`);
    this.id = id;
    this.n = meta.n;
    this.seqs = blob.u32(TAG.SEQS);
    for (const f of meta.fields) this.fields.set(f.id, f);
  }

  text(fieldId: number): TextIndex | null {
    let t = this.texts.get(fieldId);
    if (t === undefined) {
      const m = this.fields.get(fieldId);
      const raw = m && m.kind === 'text' ? this.fieldBlob(fieldId) : undefined;
      t = raw ? new TextIndex(new Blob(raw), m!.values) : null;
      this.texts.set(fieldId, t);
    }
    return t;
  }

  private unions = new Map<string, { uses: number; union: UnionTable | null }>();

  /** How many field combinations' unions (and counts of asks) sharedTerms keeps, per segment. */
  static readonly SHARED_TERMS_KEPT = 16;

  /**
   * The union of the term dictionaries of these text fields (termdict/union.ts), for
   * one typo walk instead of one per field: null until it has been asked for
   * HEADS_AFTER_WALKS times (a one-query CLI process walks each field instead), or when
   * a field has no text index here. Kept with the segment, like the fields' own data.
   */
  sharedTerms(fieldIds: readonly number[]): UnionTable | null {
    const key = fieldIds.join(',');
    let u = this.unions.get(key);
    if (u) this.unions.delete(key);
    else u = { uses: 0, union: null };
    // (most recently asked last; a client cycling through many query_by combinations keeps
    // only the last SHARED_TERMS_KEPT of them, so memory stays bounded)
    this.unions.set(key, u);
    if (this.unions.size > SegmentReader.SHARED_TERMS_KEPT) this.unions.delete(this.unions.keys().next().value!);
    if (u.union || ++u.uses < HEADS_AFTER_WALKS) return u.union;
    const tables: StringTable[] = [];
    for (const id of fieldIds) {
      const t = this.text(id);
      if (!t) return null;
      tables.push(t.terms);
    }
    u.union = unionTables(tables);
    return u.union;
  }

  numeric(fieldId: number): NumericColumn | null {
    let c = this.numerics.get(fieldId);
    if (c === undefined) {
      const m = this.fields.get(fieldId);
      const raw = m && m.kind === 'number' ? this.fieldBlob(fieldId) : undefined;
      c = raw ? new NumericColumn(new Blob(raw), m!.isArray) : null;
      this.numerics.set(fieldId, c);
    }
    return c;
  }

  geo(fieldId: number): GeoColumn | null {
    let c = this.geos.get(fieldId);
    if (c === undefined) {
      const m = this.fields.get(fieldId);
      const raw = m && m.kind === 'geo' ? this.fieldBlob(fieldId) : undefined;
      c = raw ? new GeoColumn(new Blob(raw)) : null;
      this.geos.set(fieldId, c);
    }
    return c;
  }

  private fieldBlob(fieldId: number): Uint8Array | undefined {
    return this.blob.has(TAG.FIELD + fieldId) ? this.blob.u8(TAG.FIELD + fieldId) : this.load(fieldId);
  }

  /** Ordinal of `seq` in this segment, or -1. */
  ordinalOf(seq: number): number {
    let lo = 0;
    let hi = this.n;
    const s = this.seqs;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (s[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.n && s[lo] === seq ? lo : -1;
  }
}
