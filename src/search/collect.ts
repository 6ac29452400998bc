/**
 * Collectors: what happens to each matching document. TopK keeps the best k by the
 * sort clauses; FacetCounter counts facet values and numeric stats over every match;
 * Groups keeps the best hits per group_by key.
 */
import type { LiveSegment } from '../index/manifest.js';
import type { NumericColumn, TextIndex } from '../index/segment.js';
import type { Field } from '../schema/schema.js';
import type { SortClause } from '../query/sort.js';

/** One collected document. `keys` holds its sort values, one per clause. */
export interface Hit {
  seg: number;
  ord: number;
  seq: number;
  score: number;
  keys: (number | string)[];
  info?: unknown;
}

/** What a sort clause may need beyond the index: the hit's vector distance, a computed value per clause (joins, `_vector_query`). */
type SortExtra = { vectorDistance?: number; clauseValue?: (clause: number, seq: number) => number | string };

/** Builds sort keys for a document and compares two documents. */
export class Sorter {
  readonly clauses: SortClause[];
  constructor(clauses: SortClause[]) {
    this.clauses = clauses;
  }

  keys(
    segs: LiveSegment[],
    segIndex: number,
    ord: number,
    seq: number,
    score: number,
    extra?: SortExtra,
  ): (number | string)[] {
    return this.keysInto(new Array(this.clauses.length), segs, segIndex, ord, seq, score, extra);
  }

  /** Fills `out` with the sort keys of a document (no allocation; hot). */
  keysInto(
    out: (number | string)[],
    segs: LiveSegment[],
    segIndex: number,
    ord: number,
    seq: number,
    score: number,
    extra?: SortExtra,
  ): (number | string)[] {
    const seg = segs[segIndex]!;
    const cl = this.clauses;
    for (let i = 0; i < cl.length; i++) out[i] = this.key(cl[i]!, i, seg, ord, seq, score, extra);
    return out;
  }

  private key(
    c: SortClause,
    i: number,
    seg: LiveSegment,
    ord: number,
    seq: number,
    score: number,
    extra?: SortExtra,
  ): number | string {
    {
      switch (c.kind) {
        case 'text_match':
          return score;
        case 'seq':
          return seq;
        case 'vector_distance':
          return extra?.vectorDistance ?? Infinity;
        case 'vector_query':
        case 'join':
          return extra?.clauseValue ? extra.clauseValue(i, seq) : NaN;
        case 'field':
          return fieldSortValue(seg, c.field, ord);
        default:
          return 0;
      }
    }
  }

  /** Negative when a sorts before b. Missing values (NaN, '') sort last in both directions. */
  compare(a: Hit, b: Hit): number {
    return this.compareKeys(a.keys, b.keys);
  }

  compareKeys(ak: (number | string)[], bk: (number | string)[]): number {
    const cl = this.clauses;
    for (let i = 0; i < cl.length; i++) {
      const x = ak[i]!;
      const y = bk[i]!;
      if (x === y) continue;
      const xm = x !== x || x === MISSING; // NaN check
      const ym = y !== y || y === MISSING;
      if (xm || ym) {
        if (xm && ym) continue;
        return xm ? 1 : -1;
      }
      const d = x < y ? -1 : 1;
      return d * cl[i]!.dir;
    }
    return 0;
  }
}

const MISSING = '\u0000missing';

export function fieldSortValue(seg: LiveSegment, field: Field, ord: number): number | string {
  if (field.kind === 'text') {
    const ti = seg.reader.text(field.id);
    if (!ti || !ti.valueIds) return MISSING;
    const a = ti.valueIds.offsets[ord]!;
    if (a >= ti.valueIds.offsets[ord + 1]!) return MISSING;
    return ti.valueStrings()[ti.valueIds.values[a]!]!;
  }
  const col = seg.reader.numeric(field.id);
  if (!col) return NaN;
  return col.first(ord);
}

/** Bounded heap keeping the k best hits (the root is the worst kept). */
export class TopK {
  private heap: Hit[] = [];
  constructor(
    private readonly k: number,
    private readonly sorter: Sorter,
  ) {}

  /** Would a hit with these sort keys be kept? (checked before allocating the hit) */
  accepts(keys: (number | string)[]): boolean {
    return this.k > 0 && (this.heap.length < this.k || this.sorter.compareKeys(keys, this.heap[0]!.keys) < 0);
  }

  add(h: Hit): void {
    if (this.k === 0) return;
    const heap = this.heap;
    if (heap.length < this.k) {
      heap.push(h);
      this.up(heap.length - 1);
    } else if (this.sorter.compare(h, heap[0]!) < 0) {
      heap[0] = h;
      this.down(0);
    }
  }

  get size(): number {
    return this.heap.length;
  }

  /** The first sort key of the worst kept hit once k are kept (else -Infinity). */
  get worstFirstKey(): number {
    if (this.heap.length < this.k || this.k === 0) return -Infinity;
    const v = this.heap[0]!.keys[0];
    return typeof v === 'number' ? v : -Infinity;
  }

  /** Kept hits, best first. */
  sorted(): Hit[] {
    return [...this.heap].sort((a, b) => this.sorter.compare(a, b));
  }

  // "worse" = compare > 0; the root holds the worst
  private worse(i: number, j: number): boolean {
    return this.sorter.compare(this.heap[i]!, this.heap[j]!) > 0;
  }
  private up(i: number) {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.worse(i, p)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }
  private down(i: number) {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.worse(l, m)) m = l;
      if (r < h.length && this.worse(r, m)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

// ---------------------------------------------------------------------------
// Facets
// ---------------------------------------------------------------------------

export interface FacetSpec {
  field: Field;
  /** facet_query tokens for this field (prefix match on the value's tokens). */
  query?: string[];
}

export interface FacetCount {
  count: number;
  highlighted: string;
  value: string;
}

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
  min: number;
  max: number;
  sum: number;
  n: number;
}

export class FacetCounter {
  private accs: FieldAcc[];
  constructor(specs: FacetSpec[]) {
    this.accs = specs.map((spec) => ({
      spec,
      lastSeg: -1,
      lastText: null,
      lastCounts: null,
      lastNum: null,
      text: new Map(),
      segCounts: new Map(),
      nums: new Map(),
      min: Infinity,
      max: -Infinity,
      sum: 0,
      n: 0,
    }));
  }

  get empty(): boolean {
    return this.accs.length === 0;
  }

  /** Hot: once per matching document when facets are asked for. */
  add(segIndex: number, seg: LiveSegment, ord: number): void {
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
        for (let k = offsets[ord]!; k < offsets[ord + 1]!; k++) counts[values[k]!]!++;
      } else {
        const col = a.lastNum;
        if (!col) continue;
        for (let k = col.offsets[ord]!; k < col.offsets[ord + 1]!; k++) {
          const v = col.values[k]!;
          a.nums.set(v, (a.nums.get(v) ?? 0) + 1);
          if (v < a.min) a.min = v;
          if (v > a.max) a.max = v;
          a.sum += v;
          a.n++;
        }
      }
    }
  }

  results(segs: LiveSegment[], maxValues: number, startTag: string, endTag: string): FacetResult[] {
    return this.accs.map((a) => {
      const f = a.spec.field;
      let entries: Array<[string, number]>;
      if (f.kind === 'text') {
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
      return {
        field_name: f.name,
        sampled: false,
        counts: withHighlight.slice(0, maxValues).map(({ count, highlighted, value }) => ({ count, highlighted, value })),
        stats,
      };
    });
  }
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
