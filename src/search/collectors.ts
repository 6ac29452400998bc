/**
 * search/collectors.ts: what happens to each matching document. Whatever finds documents
 * (a match strategy, the wildcard scan, the vector side, hybrid fusion) hands each one to
 * `collect`, and `harvest` gives the result once the search is done:
 *
 *   TopHits   the k best by the sort clauses, the page cut from them
 *   Groups    group_by: per group value, its best group_limit hits; groups ordered by their best
 *   Facets    facet counts and stats over every match
 *
 * Matches feeds one hits collector (TopHits or Groups) and the facets, and counts `found`.
 */
import type { Store } from '../storage/store.js';
import type { Field, Schema } from '../schema/schema.js';
import type { LiveSegment } from '../index/manifest.js';
import { groupValue } from '../index/columns.js';
import type { SortClause } from '../query/sort.js';
import type { FacetSpec, SortVector } from '../query/plan.js';
import { joinSortValue } from '../join/join.js';
import type { JoinAccess } from '../join/access.js';
import { getVector } from '../vector/vecstore.js';
import { distance as vecDistance, norm } from '../vector/vsearch.js';
import { type Sorter, TopK, type Hit } from './topk.js';
import { textMatchOf } from './score.js';
import { FacetCounter, type FacetResult, type ParentOf } from './facets.js';

/** What the vector side knows of a hit beyond its text_match score. */
export interface Extra {
  vectorDistance?: number;
  /** Rank fusion score of a hybrid hit. */
  fusion?: number;
  /** Keyword score (text_match) of a hybrid hit. */
  keyword?: number;
}

export const NO_EXTRA: Extra = {};

export interface Collector<R> {
  /** Once per matching document: its segment (index into the snapshot's), ordinal, text_match score (0: none). Hot. */
  collect(seg: number, ord: number, score: number, extra: Extra): void;
  /** The result, once every document has been collected. */
  harvest(): R;
}

/** Values of computed sort clauses, by clause index and seq. */
export type ClauseValue = (clause: number, seq: number) => number | string;

/** The k = offset + limit best hits; harvest gives the page [offset, offset + limit). */
export class TopHits implements Collector<Hit[]> {
  private readonly top: TopK;
  private readonly scratch: (number | string)[];
  /** Ranked by text_match first: a document scoring below the k-th needs no sort keys. */
  private readonly byScore: boolean;
  /** The clauses are text_match, the rarity tie-break, then newest first (mayEnter). */
  private readonly tieThenSeq: boolean;

  constructor(
    private readonly segs: LiveSegment[],
    private readonly sorter: Sorter,
    private readonly offset: number,
    private readonly limit: number,
    private readonly clauseValue?: ClauseValue,
  ) {
    this.top = new TopK(offset + limit, sorter);
    this.scratch = new Array(sorter.clauses.length);
    const first = sorter.clauses[0]!;
    this.byScore = first.kind === 'text_match' && first.dir === -1;
    const cl = sorter.clauses;
    this.tieThenSeq = this.byScore && cl.length === 3 && cl[1]!.kind === 'rarity' && cl[1]!.dir === -1 && cl[2]!.kind === 'seq' && cl[2]!.dir === -1;
  }

  /**
   * The text_match score a document must reach to enter, once k hits are kept (else
   * -Infinity), when hits are ranked by it; undefined otherwise. Matching skips the
   * positions of documents that cannot reach it.
   */
  get threshold(): (() => number) | undefined {
    return this.byScore ? () => this.top.worstFirstKey : undefined;
  }

  get size(): number {
    return this.top.size;
  }

  /**
   * Could a document scoring at most `score` (text_match and tie-break bits), with seq at
   * most `seq`, still enter the page? Only when hits are ranked by text_match: then by the
   * rarity tie-break and newest first when those are the only clauses after it, by
   * text_match alone when a sort field comes between (its value is not known here).
   */
  mayEnter(score: number, seq: number): boolean {
    const worst = this.top.worst;
    if (!this.byScore || worst === undefined) return true;
    const tm = textMatchOf(score);
    const wt = worst.keys[0] as number;
    if (tm !== wt) return tm > wt;
    if (!this.tieThenSeq) return true;
    const tie = score - tm;
    const wtie = worst.keys[1] as number;
    if (tie !== wtie) return tie > wtie;
    return seq > worst.seq;
  }

  /** The worst kept hit's text_match and (when it decides among equals) tie-break, once k are kept; null otherwise (mayEnter). */
  entryBar(): { tm: number; tie: number } | null {
    const worst = this.top.worst;
    if (!this.byScore || worst === undefined) return null;
    return { tm: worst.keys[0] as number, tie: this.tieThenSeq ? (worst.keys[1] as number) : -1 };
  }

  collect(segIndex: number, ord: number, score: number, extra: Extra): void {
    if (this.byScore && score < this.top.worstFirstKey) return; // cannot reach the page: no sort keys needed
    const segs = this.segs;
    const seq = segs[segIndex]!.reader.seqs[ord]!;
    this.sorter.keysInto(this.scratch, segs, segIndex, ord, seq, score, { vectorDistance: extra.vectorDistance, clauseValue: this.clauseValue });
    if (this.top.accepts(this.scratch)) this.top.add({ seg: segIndex, ord, seq, score, keys: this.scratch.slice(), info: extra });
  }

  harvest(): Hit[] {
    return this.top.sorted().slice(this.offset, this.offset + this.limit);
  }
}

export interface Group {
  key: unknown[];
  hits: Hit[];
  found: number;
}

/** group_by: the best group_limit hits per group value; harvest gives the page of groups, ordered by their best hit. */
export class Groups implements Collector<Group[]> {
  private readonly groups = new Map<string, { key: unknown[]; top: TopK; found: number; best?: Hit }>();

  constructor(
    private readonly segs: LiveSegment[],
    private readonly sorter: Sorter,
    private readonly fields: Field[],
    private readonly groupLimit: number,
    private readonly offset: number,
    private readonly limit: number,
    private readonly clauseValue?: ClauseValue,
  ) {}

  /** Groups seen so far. */
  get size(): number {
    return this.groups.size;
  }

  collect(segIndex: number, ord: number, score: number, extra: Extra): void {
    const seg = this.segs[segIndex]!;
    const seq = seg.reader.seqs[ord]!;
    const hit: Hit = {
      seg: segIndex,
      ord,
      seq,
      score,
      keys: this.sorter.keysInto(new Array(this.sorter.clauses.length), this.segs, segIndex, ord, seq, score, { vectorDistance: extra.vectorDistance, clauseValue: this.clauseValue }),
      info: extra,
    };
    const key = this.fields.map((f) => groupValue(seg, f, ord));
    const ks = JSON.stringify(key);
    let g = this.groups.get(ks);
    if (!g) {
      g = { key, top: new TopK(this.groupLimit, this.sorter), found: 0 };
      this.groups.set(ks, g);
    }
    g.found++;
    g.top.add(hit);
    if (!g.best || this.sorter.compare(hit, g.best) < 0) g.best = hit;
  }

  harvest(): Group[] {
    const all = [...this.groups.values()].sort((a, b) => this.sorter.compare(a.best!, b.best!));
    return all.slice(this.offset, this.offset + this.limit).map((g) => ({ key: g.key, hits: g.top.sorted(), found: g.found }));
  }
}

/** Facet counts over every match. */
export class Facets implements Collector<FacetResult[]> {
  private readonly counter: FacetCounter;

  /** `groupFields`: under group_by, a value counts the groups that hold it (facets.ts). */
  constructor(
    private readonly segs: LiveSegment[],
    specs: FacetSpec[],
    private readonly maxValues: number,
    private readonly startTag: string,
    private readonly endTag: string,
    groupFields: Field[] = [],
    private readonly parentOf?: ParentOf,
  ) {
    this.counter = new FacetCounter(
      specs,
      groupFields.length > 0 ? (segIndex, ord) => JSON.stringify(groupFields.map((f) => groupValue(segs[segIndex]!, f, ord))) : undefined,
    );
  }

  get empty(): boolean {
    return this.counter.empty;
  }

  collect(segIndex: number, ord: number): void {
    this.counter.add(segIndex, this.segs[segIndex]!, ord);
  }

  /** Every document of a segment set in `bits` (bit matching). */
  collectBits(segIndex: number, bits: Uint32Array): void {
    this.counter.addBits(segIndex, this.segs[segIndex]!, bits);
  }

  harvest(): FacetResult[] {
    return this.counter.results(this.segs, this.maxValues, this.startTag, this.endTag, this.parentOf);
  }
}

/** Every match of a search: counted in `found`, counted for facets, offered to the hits collector. */
export class Matches {
  found = 0;
  /** The facets, when any are asked for. */
  private readonly counting: Facets | null;

  constructor(
    readonly hits: TopHits | Groups,
    readonly facets: Facets,
  ) {
    this.counting = facets.empty ? null : facets;
    this.bits = hits instanceof TopHits && hits.threshold ? this.bitChannel(hits) : undefined;
  }

  private bitChannel(hits: TopHits): BitChannel {
    return {
      count: (segIndex, bits, n) => {
        this.found += n;
        this.counting?.collectBits(segIndex, bits);
      },
      rank: (segIndex, ord, score) => hits.collect(segIndex, ord, score, NO_EXTRA),
      mayEnter: (score, seq) => hits.mayEnter(score, seq),
      entryBar: () => hits.entryBar(),
    };
  }

  readonly collect = (segIndex: number, ord: number, score: number, extra: Extra = NO_EXTRA): void => {
    this.found++;
    if (this.counting !== null) this.counting.collect(segIndex, ord);
    this.hits.collect(segIndex, ord, score, extra);
  };

  /**
   * The same, for bit matching (bitmatch.ts): the matches counted from a bitmap at once,
   * and only the documents that may reach the page offered to the hits. Only when hits
   * are ranked by text_match (TopHits.mayEnter); undefined otherwise.
   */
  readonly bits: BitChannel | undefined;
}

/** What bit matching (search/bitmatch.ts) reports to, per segment. */
export interface BitChannel {
  count(segIndex: number, bits: Uint32Array, n: number): void;
  rank(segIndex: number, ord: number, score: number): void;
  mayEnter(score: number, seq: number): boolean;
  entryBar(): { tm: number; tie: number } | null;
}

/** Values of computed sort clauses: `_vector_query(...)` distances (re-ranking) and `$coll(field)` joined values. */
export function clauseValues(store: Store, schema: Schema, clauses: SortClause[], vectors: (SortVector | undefined)[], access?: JoinAccess): ClauseValue | undefined {
  const joins = clauses.map((c) => (c.kind === 'join' ? joinSortValue(store, schema, c.collection, c.field, access) : undefined));
  const plans = clauses.map((c, i) => {
    if (c.kind !== 'vector_query') return undefined;
    const { field, q } = vectors[i]!;
    return { field, q, qn: norm(q), space: (field.vec_dist === 'ip' ? 'ip' : 'cosine') as 'ip' | 'cosine' };
  });
  if (!plans.some(Boolean) && !joins.some(Boolean)) return undefined;
  return (clause, seq) => {
    const j = joins[clause];
    if (j) return j(seq);
    const p = plans[clause]!;
    const v = getVector(store, schema.id, p.field.id, seq);
    return v ? vecDistance(p.space, p.q, p.qn, v) : Infinity;
  };
}
