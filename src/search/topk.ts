/**
 * search/topk.ts: the order of hits. Sorter builds a document's sort keys (one per sort_by
 * clause) and compares two documents; TopK keeps the best k of them.
 */
import type { LiveSegment } from '../index/manifest.js';
import { MISSING, fieldSortValue } from '../index/columns.js';
import type { SortClause } from '../query/sort.js';
import { geoSortKey } from '../geo/sort.js';
import { TIE_UNIT } from './score.js';

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
          // a keyword score (at least one token: >= 2^44) without its tie-break bits (score.ts
          // textMatchOf); a fused hybrid score (below 1) as it is
          return score >= TIE_UNIT ? score - (score % TIE_UNIT) : score;
        case 'rarity':
          return score % TIE_UNIT;
        case 'seq':
          return seq;
        case 'vector_distance':
          return extra?.vectorDistance ?? Infinity;
        case 'vector_query':
        case 'join':
          return extra?.clauseValue ? extra.clauseValue(i, seq) : NaN;
        case 'field':
          return fieldSortValue(seg, c.field, ord);
        case 'geo':
          return geoSortKey(c, seg, ord);
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

  /** The worst kept hit once k are kept (else undefined). */
  get worst(): Hit | undefined {
    return this.heap.length < this.k || this.k === 0 ? undefined : this.heap[0];
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
