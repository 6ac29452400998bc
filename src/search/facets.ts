/**
 * search/facets.ts: facet counts (and numeric stats) over every matching document, with
 * facet_query narrowing a field's values.
 */
import type { LiveSegment } from '../index/manifest.js';
import type { NumericColumn, TextIndex } from '../index/segment.js';
import type { Field } from '../schema/schema.js';
import type { FacetSpec } from '../query/plan.js';
import { forEachBit } from '../index/termbits.js';

export interface FacetCount {
  count: number;
  highlighted: string;
  value: string;
  /** facet_return_parent: the object holding the value, in a document that has it. */
  parent?: Record<string, unknown>;
}

/** The object holding `value` at the field's path in the document of (segment, ordinal), if any. */
export type ParentOf = (segIndex: number, ord: number, field: Field, value: string) => Record<string, unknown> | undefined;

export interface FacetResult {
  field_name: string;
  sampled: boolean;
  counts: FacetCount[];
  stats: Record<string, number>;
}

interface FieldAcc {
  spec: FacetSpec;
  /** The segment the last document came from, with its column and counts (documents arrive segment by segment). */
  lastSeg: number;
  lastText: TextIndex | null;
  lastCounts: Int32Array | null;
  lastNum: NumericColumn | null;
  text: Map<string, number>;
  /** per-segment value counts, folded into `text` at the end */
  segCounts: Map<number, Int32Array>;
  nums: Map<number, number>;
  /** Under group_by: per value, the groups that have it (a value counts groups, not documents). */
  groups: Map<string | number, Set<string>> | null;
  min: number;
  max: number;
  sum: number;
  n: number;
  /** facet_return_parent: per value, the first matching document holding it (segment, ordinal). */
  where: Map<string | number, [number, number]> | null;
}

export class FacetCounter {
  private accs: FieldAcc[];
  /**
   * `groupOf`, under group_by: a document's group key. Each facet value then counts the
   * groups among the matches that hold it, as the reference counts them.
   */
  constructor(
    specs: FacetSpec[],
    private readonly groupOf?: (segIndex: number, ord: number) => string,
  ) {
    this.accs = specs.map((spec) => ({
      spec,
      lastSeg: -1,
      lastText: null,
      lastCounts: null,
      lastNum: null,
      text: new Map(),
      segCounts: new Map(),
      nums: new Map(),
      groups: groupOf ? new Map() : null,
      min: Infinity,
      max: -Infinity,
      sum: 0,
      n: 0,
      where: spec.returnParent ? new Map() : null,
    }));
  }

  get empty(): boolean {
    return this.accs.length === 0;
  }

  /** Hot: once per matching document when facets are asked for. */
  add(segIndex: number, seg: LiveSegment, ord: number): void {
    const group = this.groupOf ? this.groupOf(segIndex, ord) : undefined;
    for (const a of this.accs) {
      const f = a.spec.field;
      if (a.lastSeg !== segIndex) {
        a.lastSeg = segIndex;
        if (f.kind === 'text') {
          const ti = seg.reader.text(f.id);
          a.lastText = ti && ti.valueIds ? ti : null;
          if (a.lastText) {
            let counts = a.segCounts.get(segIndex);
            if (!counts) {
              counts = new Int32Array(a.lastText.valueDict!.size);
              a.segCounts.set(segIndex, counts);
            }
            a.lastCounts = counts;
          }
        } else a.lastNum = seg.reader.numeric(f.id);
      }
      if (f.kind === 'text') {
        const ti = a.lastText;
        if (!ti) continue;
        const counts = a.lastCounts!;
        const { offsets, values } = ti.valueIds!;
        if (a.where) {
          const strs = ti.valueStrings();
          for (let k = offsets[ord]!; k < offsets[ord + 1]!; k++) if (!a.where.has(strs[values[k]!]!)) a.where.set(strs[values[k]!]!, [segIndex, ord]);
        }
        if (group !== undefined) {
          const strs = ti.valueStrings();
          for (let k = offsets[ord]!; k < offsets[ord + 1]!; k++) addGroup(a.groups!, strs[values[k]!]!, group);
          continue;
        }
        for (let k = offsets[ord]!; k < offsets[ord + 1]!; k++) counts[values[k]!]!++;
      } else {
        const col = a.lastNum;
        if (!col) continue;
        for (let k = col.offsets[ord]!; k < col.offsets[ord + 1]!; k++) {
          const v = col.values[k]!;
          if (a.where && !a.where.has(v)) a.where.set(v, [segIndex, ord]);
          if (group !== undefined) addGroup(a.groups!, v, group);
          else a.nums.set(v, (a.nums.get(v) ?? 0) + 1);
          if (v < a.min) a.min = v;
          if (v > a.max) a.max = v;
          a.sum += v;
          a.n++;
        }
      }
    }
  }

  /**
   * Counts every document of a segment set in `bits` at once (bit matching: search/bitmatch.ts),
   * as `add` would one by one, reading the documents' values in one tight
   * loop; what needs a document at a time (group_by, facet_return_parent) takes `add`.
   */
  addBits(segIndex: number, seg: LiveSegment, bits: Uint32Array): void {
    if (this.groupOf || this.accs.some((a) => a.where)) {
      forEachBit(bits, (ord) => this.add(segIndex, seg, ord));
      return;
    }
    for (const a of this.accs) {
      const f = a.spec.field;
      a.lastSeg = -1; // (add re-reads the segment's column next time)
      if (f.kind === 'text') {
        const ti = seg.reader.text(f.id);
        if (!ti || !ti.valueIds) continue;
        let counts = a.segCounts.get(segIndex);
        if (!counts) a.segCounts.set(segIndex, (counts = new Int32Array(ti.valueDict!.size)));
        const flat = singleValues(ti);
        if (flat !== null) {
          // one value or none per document: its id + 1 (0: none), read 32 documents a word
          const tally = new Int32Array(counts.length + 1);
          for (let w = 0; w < bits.length; w++) {
            let word = bits[w]!;
            const base = w << 5;
            if (word === -1) {
              for (let i = 0; i < 32; i++) tally[flat[base + i]!]!++;
              continue;
            }
            while (word !== 0) {
              const low = word & -word;
              word ^= low;
              tally[flat[base + 31 - Math.clz32(low)]!]!++;
            }
          }
          for (let v = 0; v < counts.length; v++) counts[v]! += tally[v + 1]!;
          continue;
        }
        const { offsets, values } = ti.valueIds;
        for (let w = 0; w < bits.length; w++) {
          let word = bits[w]!;
          while (word !== 0) {
            const low = word & -word;
            const ord = (w << 5) | (31 - Math.clz32(low));
            word ^= low;
            for (let k = offsets[ord]!, end = offsets[ord + 1]!; k < end; k++) counts[values[k]!]!++;
          }
        }
      } else {
        const col = seg.reader.numeric(f.id);
        if (!col) continue;
        forEachBit(bits, (ord) => {
          for (let k = col.offsets[ord]!; k < col.offsets[ord + 1]!; k++) {
            const v = col.values[k]!;
            a.nums.set(v, (a.nums.get(v) ?? 0) + 1);
            if (v < a.min) a.min = v;
            if (v > a.max) a.max = v;
            a.sum += v;
            a.n++;
          }
        });
      }
    }
  }

  results(segs: LiveSegment[], maxValues: number, startTag: string, endTag: string, parentOf?: ParentOf): FacetResult[] {
    return this.accs.map((a) => {
      const f = a.spec.field;
      let entries: Array<[string, number]>;
      if (a.groups) {
        entries = [...a.groups.entries()].map(([v, g]) => [typeof v === 'number' ? formatNumber(v, f) : v, g.size]);
      } else if (f.kind === 'text') {
        for (const [segIndex, counts] of a.segCounts) {
          const strs = segs[segIndex]!.reader.text(f.id)!.valueStrings();
          for (let i = 0; i < counts.length; i++) if (counts[i]! > 0) a.text.set(strs[i]!, (a.text.get(strs[i]!) ?? 0) + counts[i]!);
        }
        entries = [...a.text.entries()];
      } else {
        entries = [...a.nums.entries()].map(([v, c]) => [formatNumber(v, f), c]);
      }
      const q = a.spec.query;
      let withHighlight = entries.map(([value, count]) => ({ value, count, highlighted: value }));
      if (q && q.length > 0) {
        withHighlight = withHighlight.filter((e) => {
          const h = facetMatch(e.value, q, startTag, endTag);
          if (h === undefined) return false;
          e.highlighted = h;
          return true;
        });
      }
      withHighlight.sort((x, y) => y.count - x.count || (x.value < y.value ? -1 : x.value > y.value ? 1 : 0));
      const stats: Record<string, number> = { total_values: withHighlight.length };
      if (f.kind !== 'text' && f.kind !== 'bool' && a.n > 0) {
        stats.min = a.min;
        stats.max = a.max;
        stats.sum = a.sum;
        stats.avg = a.sum / a.n;
      }
      const where = a.where;
      const located = where ? new Map([...where.entries()].map(([v, at]) => [typeof v === 'number' ? formatNumber(v, f) : v, at])) : null;
      return {
        field_name: f.name,
        sampled: false,
        counts: withHighlight.slice(0, maxValues).map(({ count, highlighted, value }) => {
          const c: FacetCount = { count, highlighted, value };
          const at = located?.get(value);
          const parent = at && parentOf ? parentOf(at[0], at[1], f, value) : undefined;
          if (parent) c.parent = parent;
          return c;
        }),
        stats,
      };
    });
  }
}

/** Per text index of a single-valued field with fewer than 65,535 values: each document's value id + 1 (0: none), built on first use; null otherwise. */
const flatValues = new WeakMap<TextIndex, Uint16Array | null>();
function singleValues(ti: TextIndex): Uint16Array | null {
  let out = flatValues.get(ti);
  if (out === undefined) {
    out = null;
    const { offsets, values } = ti.valueIds!;
    const n = offsets.length - 1;
    if (ti.valueDict!.size < 65535 && values.length <= n) {
      // (padded to whole words of 32 documents: the last word may be read in full)
      const flat = new Uint16Array(((n + 31) >>> 5) << 5);
      let single = true;
      for (let d = 0; d < n && single; d++) {
        const len = offsets[d + 1]! - offsets[d]!;
        if (len > 1) single = false;
        else if (len === 1) flat[d] = values[offsets[d]!]! + 1;
      }
      if (single) out = flat;
    }
    flatValues.set(ti, out);
  }
  return out;
}

function addGroup(groups: Map<string | number, Set<string>>, value: string | number, group: string): void {
  let g = groups.get(value);
  if (!g) groups.set(value, (g = new Set()));
  g.add(group);
}

function formatNumber(v: number, f: Field): string {
  if (f.kind === 'bool') return v ? 'true' : 'false';
  return String(v);
}

/** Highlights `value` when every facet_query token prefixes one of its words, else undefined. */
function facetMatch(value: string, query: string[], start: string, end: string): string | undefined {
  const words = [...value.matchAll(/[\p{L}\p{N}]+/gu)];
  const marks: Array<[number, number]> = [];
  for (const q of query) {
    const w = words.find((m) => m[0].toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '').startsWith(q));
    if (!w) return undefined;
    marks.push([w.index!, w.index! + Math.min(q.length, w[0].length)]);
  }
  marks.sort((a, b) => a[0] - b[0]);
  let out = '';
  let last = 0;
  for (const [a, b] of marks) {
    if (a < last) continue;
    out += value.slice(last, a) + start + value.slice(a, b) + end;
    last = b;
  }
  return out + value.slice(last);
}
