/**
 * Merging segments: several segments in, one out, deleted documents dropped.
 *
 *   seg A (seq 0..63)   seg B (seq 64..127)   seg C (seq 3, an upsert of A's doc 3)
 *        \                     |                    /
 *         +------ k-way by seq, skip deleted -------+
 *                              |
 *                 new ordinals 0..n-1 in seq order
 *
 * Postings are re-encoded with the new ordinals; position bytes are copied as they
 * are (position deltas do not depend on ordinals). When every source is one contiguous
 * block of the new ordinals (a bulk import's segments), document streams are copied too,
 * with only each source's first delta rewritten (see mergeText). A tiered policy in the style of
 * Lucene's TieredMergePolicy keeps the segment count logarithmic in the collection size:
 * a segment's tier is floor(log_factor(live / base)), and `factor` segments of one tier
 * merge into one segment of the next.
 */
import { MERGE_POLICY } from '../defaults.js';
import { ByteWriter, encodeBlob, type Section } from './codec.js';
import { StringTableBuilder, compareEntries } from '../termdict/table.js';
import { isDeleted, type SegmentInfo } from './manifest.js';
import { GeoAcc } from '../geo/column.js';
import { TAG, SEGMENT_FORMAT, addValueSections, encodeSegment, type BuiltSegment, type FieldMeta, type SegmentMeta, type SegmentReader } from './segment.js';

export interface MergeSource {
  reader: SegmentReader;
  deleted: Uint8Array | null;
}

export interface MergeResult {
  built: BuiltSegment;
  /** Per source: old ordinal -> new ordinal, -1 when dropped. */
  remap: Int32Array[];
}

/** What the merge policy weighs (defaults.ts MERGE_POLICY). */
export interface MergePolicy {
  factor: number;
  base: number;
  maxDeletedRatio: number;
  maxDocs: number;
}

/** Which segments to merge next, or undefined when the manifest is in shape. */
export function planMerge(segments: readonly SegmentInfo[], policy: MergePolicy = MERGE_POLICY): SegmentInfo[] | undefined {
  // A segment that is mostly deleted is rewritten on its own.
  for (const s of segments) {
    if (s.n > 0 && s.del / s.n > policy.maxDeletedRatio) return [s];
  }
  const tiers = new Map<number, SegmentInfo[]>();
  for (const s of segments) {
    const live = Math.max(1, s.n - s.del);
    if (live >= policy.maxDocs) continue; // (full: merged no further)
    const tier = live <= policy.base ? 0 : Math.floor(Math.log(live / policy.base) / Math.log(policy.factor)) + 1;
    let t = tiers.get(tier);
    if (!t) tiers.set(tier, (t = []));
    t.push(s);
  }
  for (const tier of [...tiers.keys()].sort((a, b) => a - b)) {
    const group = tiers.get(tier)!;
    if (group.length < policy.factor) continue;
    // (up to policy.maxDocs live documents: the first of the group that fit, at least two)
    const fit = fitting(group.slice(0, policy.factor), policy.maxDocs);
    if (fit.length >= 2) return fit;
  }
  return undefined;
}

/** The first segments of a list whose live documents add up to at most `max`. */
function fitting(list: readonly SegmentInfo[], max: number): SegmentInfo[] {
  const out: SegmentInfo[] = [];
  let live = 0;
  for (const s of list) {
    live += s.n - s.del;
    if (live > max && out.length > 0) break;
    out.push(s);
  }
  return out;
}

/**
 * Everything into as few segments as policy.maxDocs allows (used after bulk imports and by
 * `optimize`): runs of segments in seq order packed up to that many live documents; the
 * first run of two or more, or a segment with deletions on its own. Undefined when none.
 */
export function planFullMerge(segments: readonly SegmentInfo[], policy: MergePolicy = MERGE_POLICY): SegmentInfo[] | undefined {
  const sorted = [...segments].sort((a, b) => a.min - b.min);
  for (let i = 0; i < sorted.length; ) {
    const run = fitting(sorted.slice(i), policy.maxDocs);
    if (run.length > 1 || run[0]!.del > 0) return run;
    i += run.length;
  }
  return undefined;
}

export interface MergeOptions {
  /**
   * Copy the postings of sources that land in one contiguous block of new ordinals each (no
   * deletions, disjoint seq ranges: a bulk import's segments) instead of re-encoding them.
   * Default true; false forces the general path (tests compare the two byte for byte).
   */
  concatenate?: boolean;
}

export function mergeSegments(sources: MergeSource[], keepField: (fieldId: number) => boolean, opts: MergeOptions = {}): MergeResult {
  // 1. New ordinals, in seq order: which (source, old ordinal) each comes from, and back.
  const origin = liveInSeqOrder(sources);
  const n = origin.seqs.length;
  const seqs = origin.seqs;
  const remap = sources.map((s) => new Int32Array(s.reader.n).fill(-1));
  for (let i = 0; i < n; i++) remap[origin.src[i]!]![origin.ord[i]!] = i;

  // 2. Fields.
  const fieldMetas = new Map<number, FieldMeta>();
  for (const { reader } of sources) {
    for (const [id, m] of reader.fields) if (keepField(id) && !fieldMetas.has(id)) fieldMetas.set(id, m);
  }
  const blobs = new Map<number, Uint8Array>();
  const metas: FieldMeta[] = [];
  const bases = opts.concatenate === false ? null : blockBases(remap);
  for (const [fieldId, meta] of fieldMetas) {
    if (meta.kind === 'text') blobs.set(fieldId, mergeText(sources, fieldId, meta, remap, origin, n, bases));
    else if (meta.kind === 'geo') blobs.set(fieldId, mergeGeo(sources, fieldId, origin, n));
    else blobs.set(fieldId, mergeNumeric(sources, fieldId, origin, n));
    metas.push(meta);
  }
  const header: SegmentMeta = { v: SEGMENT_FORMAT, n, fields: metas };
  return { built: { n, seqs, minSeq: n ? seqs[0]! : 0, maxSeq: n ? seqs[n - 1]! : 0, blob: encodeSegment(header, seqs, blobs) }, remap };
}

/** The live documents of the sources in seq order: new ordinal i is source src[i]'s ordinal ord[i]. */
interface Origin {
  seqs: Uint32Array;
  src: Int32Array;
  ord: Int32Array;
}

/**
 * The sources' live documents, ascending by seq. When the sources, taken by their first
 * seq, follow one another (a bulk import's segments), that is their concatenation;
 * otherwise (upserts keep their seq) a sort by seq.
 */
function liveInSeqOrder(sources: MergeSource[]): Origin {
  let total = 0;
  for (const { reader, deleted } of sources) for (let o = 0; o < reader.n; o++) if (!isDeleted(deleted, o)) total++;
  const seqs = new Uint32Array(total);
  const src = new Int32Array(total);
  const ord = new Int32Array(total);
  const order = Array.from({ length: sources.length }, (_, s) => s);
  const first = (s: number) => (sources[s]!.reader.n > 0 ? sources[s]!.reader.seqs[0]! : 0);
  order.sort((a, b) => first(a) - first(b));
  let i = 0;
  let sorted = true;
  for (const s of order) {
    const { reader, deleted } = sources[s]!;
    for (let o = 0; o < reader.n; o++) {
      if (isDeleted(deleted, o)) continue;
      const seq = reader.seqs[o]!;
      if (i > 0 && seq < seqs[i - 1]!) sorted = false;
      seqs[i] = seq;
      src[i] = s;
      ord[i] = o;
      i++;
    }
  }
  if (sorted) return { seqs, src, ord };
  const perm = Array.from({ length: total }, (_, j) => j).sort((a, b) => seqs[a]! - seqs[b]!);
  return { seqs: Uint32Array.from(perm, (j) => seqs[j]!), src: Int32Array.from(perm, (j) => src[j]!), ord: Int32Array.from(perm, (j) => ord[j]!) };
}

/** Per source, the first new ordinal when every source maps onto one contiguous block (old ordinal o -> base + o); else null. */
function blockBases(remap: Int32Array[]): Int32Array | null {
  const bases = new Int32Array(remap.length);
  for (let s = 0; s < remap.length; s++) {
    const map = remap[s]!;
    const base = map.length > 0 ? map[0]! : 0;
    if (base < 0) return null;
    for (let o = 1; o < map.length; o++) if (map[o] !== base + o) return null;
    bases[s] = base;
  }
  return bases;
}

/**
 * One text field of the merged segment. When the sources are contiguous blocks of the new
 * ordinals (`bases`), a term's postings are the sources' postings one after the other:
 *
 *   source A (base 0):    [3,tf][2,tf]...   positions A      (ordinals 3, 5, ... last 900)
 *   source B (base 1000): [7,tf][1,tf]...   positions B      (ordinals 7, 8, ...)
 *   merged:               [3,tf][2,tf]... [1000+7-900,tf][1,tf]...   positions A | positions B
 *
 * so only each source's first delta is rewritten and the rest is copied (a bulk import's
 * final merge re-encoded every posting before). Otherwise each posting is re-encoded with
 * its new ordinal.
 */
function mergeText(
  sources: MergeSource[],
  fieldId: number,
  meta: FieldMeta,
  remap: Int32Array[],
  origin: Origin,
  n: number,
  bases: Int32Array | null,
): Uint8Array {
  const idx = sources.map((s) => s.reader.text(fieldId));
  const k = sources.length;
  // k-way merge of the sorted term tables, comparing stored code units directly.
  const ptr = new Int32Array(k);
  const sizes = idx.map((t) => (t ? t.terms.size : 0));
  // room for every source's postings: the copy path writes about that much
  let postingBytes = 1 << 16;
  for (const t of idx) postingBytes += t ? t.postings.length : 0;
  const w = new ByteWriter(postingBytes);
  const out = new StringTableBuilder();
  const postOffsets: number[] = [];
  const posOffsets: number[] = [];
  const docFreq: number[] = [];
  const entries: number[] = []; // newOrd, tf, from, to, source (flat)
  const withTerm = new Int32Array(k); // the sources holding the current term: withTerm[0..nw)
  let nw = 0;
  // Sources are visited in the order of their ordinal blocks (contiguous path), so the
  // sources holding a term are found already in the order their postings are copied.
  const visit = Int32Array.from({ length: k }, (_, i) => i);
  if (bases !== null) visit.sort((a, b) => bases[a]! - bases[b]!);
  // Each source's current term's first four code units, two per number (missing ones 0):
  // most comparisons end there, without reading the tables. Hot: every step compares the
  // current terms of all k sources.
  const head0 = new Float64Array(k);
  const head1 = new Float64Array(k);
  const setHead = (s: number) => {
    if (ptr[s]! >= sizes[s]!) return;
    const tb = idx[s]!.terms;
    const a = tb.offsets[ptr[s]!]!;
    const len = tb.offsets[ptr[s]! + 1]! - a;
    const c = tb.chars;
    head0[s] = (len > 0 ? c[a]! * 65536 : 0) + (len > 1 ? c[a + 1]! : 0);
    head1[s] = (len > 2 ? c[a + 2]! * 65536 : 0) + (len > 3 ? c[a + 3]! : 0);
  };
  for (let s = 0; s < k; s++) setHead(s);
  for (;;) {
    // sources whose current term is the smallest
    nw = 0;
    let min = -1;
    for (let j = 0; j < k; j++) {
      const s = visit[j]!;
      if (ptr[s]! >= sizes[s]!) continue;
      if (min < 0) {
        min = s;
        withTerm[nw++] = s;
        continue;
      }
      let c = head0[s]! - head0[min]!;
      if (c === 0) c = head1[s]! - head1[min]!;
      if (c === 0) c = compareEntries(idx[s]!.terms, ptr[s]!, idx[min]!.terms, ptr[min]!);
      if (c < 0) {
        min = s;
        nw = 0;
        withTerm[nw++] = s;
      } else if (c === 0) withTerm[nw++] = s;
    }
    if (min < 0) break;
    if (bases !== null) {
      out.appendFrom(idx[min]!.terms, ptr[min]!);
      postOffsets.push(w.len);
      let df = 0;
      let last = 0;
      for (let j = 0; j < nw; j++) {
        const s = withTerm[j]!;
        const ti = idx[s]!;
        const t = ptr[s]!;
        // the first ordinal (a varint, read inline: a ByteReader here slowed whole merges
        // measurably), then the rest of the document stream as it is
        const buf = ti.postings;
        let rest = ti.postOffsets[t]!;
        let byte = buf[rest++]!;
        let first = byte & 0x7f;
        for (let scale = 128; byte >= 0x80; scale *= 128) {
          byte = buf[rest++]!;
          first += (byte & 0x7f) * scale;
        }
        w.varint(bases[s]! + first - last);
        w.bytes(buf, rest, ti.posOffsets[t]!);
        last = bases[s]! + ti.lastOrdinal(t);
        df += ti.docFreq[t]!;
      }
      docFreq.push(df);
      posOffsets.push(w.len);
      for (let j = 0; j < nw; j++) {
        const s = withTerm[j]!;
        const ti = idx[s]!;
        const t = ptr[s]!;
        w.bytes(ti.postings, ti.posOffsets[t]!, ti.postOffsets[t + 1]!);
        ptr[s]!++;
        setHead(s);
      }
      continue;
    }
    entries.length = 0;
    let sorted = true;
    let lastNo = -1;
    for (let j = 0; j < nw; j++) {
      const s = withTerm[j]!;
      const ti = idx[s]!;
      const cur = ti.cursor(ptr[s]!);
      const map = remap[s]!;
      while (cur.next() !== Infinity) {
        const no = map[cur.doc]!;
        if (no < 0) continue;
        const [from, to] = cur.positionBytes();
        if (no < lastNo) sorted = false;
        lastNo = no;
        entries.push(no, cur.tf, from, to, s);
      }
    }
    const minTable = idx[min]!.terms;
    const minIdx = ptr[min]!;
    for (let j = 0; j < nw; j++) {
      ptr[withTerm[j]!]!++;
      setHead(withTerm[j]!);
    }
    const count = entries.length / 5;
    if (count === 0) continue;
    let order: number[] | undefined;
    if (!sorted) {
      order = Array.from({ length: count }, (_, i) => i);
      order.sort((a, b) => entries[a * 5]! - entries[b * 5]!);
    }
    out.appendFrom(minTable, minIdx);
    postOffsets.push(w.len);
    docFreq.push(count);
    let last = 0;
    for (let e = 0; e < count; e++) {
      const x = (order ? order[e]! : e) * 5;
      const no = entries[x]!;
      w.varint(no - last);
      last = no;
      w.varint(entries[x + 1]!);
    }
    posOffsets.push(w.len);
    for (let e = 0; e < count; e++) {
      const x = (order ? order[e]! : e) * 5;
      w.bytes(idx[entries[x + 4]!]!.postings, entries[x + 2]!, entries[x + 3]!);
    }
  }
  postOffsets.push(w.len);
  // Lengths (ragged) and values, in new ordinal order.
  const lenOffsets = new Uint32Array(n + 1);
  let room = 0;
  for (const t of idx) room += t ? t.lengths.values.length : 0;
  const lengths = new Uint32Array(room);
  let nl = 0;
  const values: (string | string[] | undefined)[] = meta.values ? new Array(n) : [];
  for (let i = 0; i < n; i++) {
    lenOffsets[i] = nl;
    const s = origin.src[i]!;
    const o = origin.ord[i]!;
    const t = idx[s];
    if (!t) continue;
    const a = t.lengths.offsets[o]!;
    const b = t.lengths.offsets[o + 1]!;
    for (let k = a; k < b; k++) lengths[nl++] = t.lengths.values[k]!;
    if (meta.values && t.valueIds) {
      const strs = t.valueStrings();
      const va = t.valueIds.offsets[o]!;
      const vb = t.valueIds.offsets[o + 1]!;
      if (vb > va) {
        if (meta.isArray) {
          const arr: string[] = [];
          for (let k = va; k < vb; k++) arr.push(strs[t.valueIds.values[k]!]!);
          values[i] = arr;
        } else values[i] = strs[t.valueIds.values[va]!]!;
      }
    }
  }
  lenOffsets[n] = nl;
  const table = out.build();
  const sections = new Map<number, Section>([
    [TAG.TERM_OFFSETS, table.offsets],
    [TAG.TERM_CHARS, table.chars],
    [TAG.POST_OFFSETS, Uint32Array.from(postOffsets)],
    [TAG.POS_OFFSETS, Uint32Array.from(posOffsets)],
    [TAG.DOC_FREQ, Uint32Array.from(docFreq)],
    [TAG.POSTINGS, w.result()],
    [TAG.LENGTHS, lengths.subarray(0, nl)],
    [TAG.LEN_OFFSETS, lenOffsets],
  ]);
  if (meta.values) addValueSections(sections, values, n);
  return encodeBlob(sections);
}

function mergeNumeric(sources: MergeSource[], fieldId: number, origin: Origin, n: number): Uint8Array {
  const cols = sources.map((s) => s.reader.numeric(fieldId));
  const offsets = new Uint32Array(n + 1);
  const values: number[] = [];
  for (let i = 0; i < n; i++) {
    offsets[i] = values.length;
    const s = origin.src[i]!;
    const o = origin.ord[i]!;
    const c = cols[s];
    if (!c) continue;
    for (let k = c.offsets[o]!; k < c.offsets[o + 1]!; k++) values.push(c.values[k]!);
  }
  offsets[n] = values.length;
  return encodeBlob(
    new Map<number, Section>([
      [TAG.NUM, Float64Array.from(values)],
      [TAG.NUM_OFFSETS, offsets],
    ]),
  );
}

/** A geo field of the merged segment: the points in new ordinal order, and a new tree over them. */
function mergeGeo(sources: MergeSource[], fieldId: number, origin: Origin, n: number): Uint8Array {
  const cols = sources.map((s) => s.reader.geo(fieldId));
  const acc = new GeoAcc();
  for (let i = 0; i < n; i++) {
    const c = cols[origin.src[i]!];
    if (!c) continue;
    const o = origin.ord[i]!;
    if (c.has(o)) acc.addPairs(i, c.points, 2 * c.offsets[o]!, 2 * c.offsets[o + 1]!);
  }
  return acc.encode(n);
}
