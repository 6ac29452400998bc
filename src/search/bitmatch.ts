/**
 * search/bitmatch.ts: the query's words are common in this segment; which documents match,
 * how many, and which of them can reach the page, without scoring every one?
 *
 * The other strategies (match.ts) score every matching document and hand each to the
 * collectors. When every word is common that is most of the segment, and the page needs
 * ten. Here matching and counting are done on bitmaps (index/termbits.ts), a word of 32
 * documents at a time, and only documents that can still enter the page are scored:
 *
 *   per token   t: its candidates' documents, per typo cost level and field   FB[t][l][f]
 *               L[t][l] = OR_f FB[t][l][f]      A_t = OR_l L[t][l]
 *   matches     M = AND_t A_t  AND filter  AND NOT (excluded | deleted | seen)
 *               found += popcount(M); facets count M's documents (BitSink.count)
 *   the page    one token  newest first; each document scored from the bitmaps and the
 *                          field lengths; stop once the page's worst beats the best any
 *                          document left could score (a single word has no rarity
 *                          tie-break, so after equal scores the newer one wins)
 *               several    the documents at every token's cheapest level first, in
 *                          ordinal order; the bound a document could reach (upperScore,
 *                          exact only where a field's length allows it) is checked
 *                          before anything is read, then with its rarity (cursors jump
 *                          to it by the terms' skips), and only then are positions read;
 *                          the other levels only while they can still enter
 *
 * A document is scored exactly as the other strategies score it (bestField, rarity and
 * the score.ts layout are shared); test/bitmatch.test.ts holds the two to the same hits
 * and counts on random collections. Which documents are skipped never changes the page:
 * each is skipped only when a bound on its whole sort key loses to the page's worst.
 */
import type { LiveSegment } from '../index/manifest.js';
import { type TextIndex } from '../index/segment.js';
import { IMPACT_TF, countBits, forEachBit, orTermInto, termBitsAndTf, termImpacts, termSkips, wordsFor, type Impacts } from '../index/termbits.js';
import { DocPositions } from './positions.js';
import { bestField, oneTokenScore, rarity, type MatchInput, type TokenCursor } from './match.js';
import { TIE_MAX, baseScore, bm25Idf, coverage, fieldPart, idfOf, popcount, rarityTie, textMatchOf, tieSumFor, upperScore } from './score.js';

/** Where bit matching puts what it finds. */
export interface BitSink {
  /** Every document set in `bits` (`n` of them) matched: counted for found and facets. Called once, before any rank. */
  count(bits: Uint32Array, n: number): void;
  /** A matched document that may reach the page, with its score. */
  rank(ord: number, score: number): void;
  /** Could a document scoring at most `score` (tie-break bits included), with seq `seq`, still enter the page? */
  mayEnter(score: number, seq: number): boolean;
  /** What a document must reach to enter, once the page is full (null: anything may enter). */
  entryBar(): EntryBar | null;
}

/** The page's worst hit: its text_match, and its tie-break when that decides among equals (else -1). */
export interface EntryBar {
  tm: number;
  tie: number;
}

/** The filters as bitmaps (null: none). */
export interface BitFilters {
  allow: Uint32Array | null;
  exclude: Uint32Array | null;
  /** Documents matched in an earlier round. */
  seen: Uint32Array | null;
}

/** Bitmaps at or above this share of a segment pay for themselves: the rarest token is held by at least n / BIT_MIN_SHARE documents. */
export const BIT_MIN_SHARE = 256;

/**
 * Matches one segment on bitmaps. Returns the documents matched (for the `seen` of later
 * rounds), or false when cut off by `shouldStop` (found and facets are then complete, the
 * page is not).
 */
export function matchBits(
  seg: LiveSegment,
  input: MatchInput,
  perToken: TokenCursor[][],
  texts: (TextIndex | null)[],
  arrayField: boolean[],
  weights: number[],
  tieStats: { avgLen: number[]; n: number },
  filters: BitFilters,
  sink: BitSink,
  shouldStop: () => boolean,
): Uint32Array | false {
  const n = seg.reader.n;
  const W = wordsFor(n);
  const T = perToken.length;
  const F = weights.length;
  const parts = perToken.some((list) => list.some((tc) => tc.part === 1));
  // per token: its cost levels, and per level and field the documents of its candidates
  const costs: number[][] = [];
  const G: (Group | null)[][][] = [];
  const FB: (Uint32Array | null)[][][] = [];
  const WB: (Uint32Array | null)[][][] = [];
  const memo = groupsOf(input);
  for (let t = 0; t < T; t++) {
    const list = perToken[t]!;
    const levels = [...new Set(list.map((tc) => tc.cost))].sort((a, b) => a - b);
    costs.push(levels);
    G.push(levels.map((c) => weights.map((_, f) => groupOf(list.filter((tc) => tc.cost === c && tc.field === f), W, texts[f]!, T > 1, memo))));
    FB.push(G[t]!.map((perField) => perField.map((g) => g?.bits ?? null)));
    WB.push(parts ? levels.map((c) => weights.map((_, f) => groupOf(list.filter((tc) => tc.cost === c && tc.field === f && tc.part === 0), W, texts[f]!, false, memo)?.bits ?? null)) : FB[t]!);
  }
  // the matches, and those with every token at its cheapest level, in one pass over the words
  const full = T === input.totalTokens;
  const exactArrays = input.prioritizeExact && arrayField.some(Boolean);
  const oneToken = T === 1 && !exactArrays;
  const anyLevel = FB.map((levels) => levels.flat().filter((b): b is Uint32Array => b !== null));
  const cheapLevel = FB.map((levels) => levels[0]!.filter((b): b is Uint32Array => b !== null));
  const M = new Uint32Array(W);
  const Z = oneToken ? null : new Uint32Array(W);
  const { allow, exclude, seen } = filters;
  const deleted = seg.deleted;
  let found = 0;
  for (let w = 0; w < W; w++) {
    let m = -1;
    for (let t = 0; t < T && m !== 0; t++) {
      const list = anyLevel[t]!;
      let u = 0;
      for (let i = 0; i < list.length; i++) u |= list[i]![w]!;
      m &= u;
    }
    if (m === 0) continue;
    if (allow !== null) m &= allow[w]!;
    if (exclude !== null) m &= ~exclude[w]!;
    if (seen !== null) m &= ~seen[w]!;
    if (deleted !== null) m &= ~((deleted[4 * w] ?? 0) | ((deleted[4 * w + 1] ?? 0) << 8) | ((deleted[4 * w + 2] ?? 0) << 16) | ((deleted[4 * w + 3] ?? 0) << 24));
    if (m === 0) continue;
    M[w] = m;
    found += popcount(m);
    if (Z === null) continue;
    let z = m;
    for (let t = 0; t < T && z !== 0; t++) {
      const list = cheapLevel[t]!;
      let u = 0;
      for (let i = 0; i < list.length; i++) u |= list[i]![w]!;
      z &= u;
    }
    Z[w] = z;
  }
  if (found === 0) return M;
  sink.count(M, found);
  // (found and facets are complete; the page is what a spent budget cuts short)
  if (shouldStop()) return false;

  if (oneToken) return newestFirst(seg, input, M, costs[0]!, FB[0]!, WB[0]!, texts, weights, full, sink, shouldStop) ? M : false;

  // several tokens (or an array field to check for exactness): every token at its cheapest level first
  const cheapest = costs.reduce((sum, levels) => sum + levels[0]!, 0);
  const walk = new Walk(seg, input, perToken, texts, arrayField, weights, tieStats, costs, G, FB, WB, full, sink, shouldStop);
  if (!walk.run(Z!, true)) return false;
  if (costs.every((levels) => levels.length === 1)) return M;
  // the rest costs at least one level step more: it matters only while that can still enter
  const step = Math.min(...costs.filter((levels) => levels.length > 1).map((levels) => levels[1]! - levels[0]!));
  const maxWeight = Math.max(...weights);
  if (!sink.mayEnter(upperScore(baseScore(T, cheapest + step, F), maxWeight), Number.MAX_SAFE_INTEGER)) return M;
  const rest = new Uint32Array(M);
  andNot(rest, Z!);
  return walk.run(rest, false) ? M : false;
}

/**
 * Some candidates of one token, at one cost level, in one field: their documents, those
 * holding one more than once, and what bounds the rarity tie-break of a document among
 * them (the most times a document holds one, the fewest documents holding one).
 */
interface Group {
  bits: Uint32Array;
  /** null when not asked for (one token: no tie-break). */
  multi: Uint32Array | null;
  maxTf: number;
  minDf: number;
  /** idfOf(minDf), once computed (else -1). */
  idf: number;
  /** Per field length below BY_LENGTH, the BM25 weight (bm25Idf) of a term held once, and held maxTf times; once computed. */
  once: Float64Array | null;
  most: Float64Array | null;
  /** The text index whose lengths the tie-break reads (match.ts rarity). */
  lengths: TextIndex;
}

/**
 * A search's groups (per field's text index, by their candidates): the typo and drop rounds
 * of one search match the same tokens' candidates again, and a group is an OR over every
 * candidate's postings. Keyed by the search's CorpusStats, made once per search.
 */
const searchGroups = new WeakMap<object, WeakMap<TextIndex, Map<string, Group | null>>>();

function groupsOf(input: MatchInput): WeakMap<TextIndex, Map<string, Group | null>> | undefined {
  const owner = input.stats;
  if (!owner) return undefined;
  let m = searchGroups.get(owner);
  if (!m) searchGroups.set(owner, (m = new WeakMap()));
  return m;
}

/** The group of some candidates (a common term's own bitmaps when it is the only one); null when there is none. */
function groupOf(list: TokenCursor[], W: number, text: TextIndex | null, withTf: boolean, memo?: WeakMap<TextIndex, Map<string, Group | null>>): Group | null {
  if (list.length === 0) return null;
  const first = list[0]!;
  const lengths = text ?? first.ti;
  if (list.length === 1) {
    const own = termBitsAndTf(first.ti, first.term);
    if (own) return { bits: own.bits, multi: own.multi, maxTf: own.maxTf, minDf: first.df, idf: -1, once: null, most: null, lengths };
  }
  if (memo) {
    let byTerms = memo.get(lengths);
    if (!byTerms) memo.set(lengths, (byTerms = new Map()));
    const key = `${withTf ? 1 : 0}|${list.map((tc) => `${tc.part}:${tc.term}:${tc.df}`).join(',')}`;
    let g = byTerms.get(key);
    if (g === undefined) byTerms.set(key, (g = groupOf(list, W, text, withTf)));
    return g;
  }
  const bits = new Uint32Array(W);
  // (who holds a term more than once matters only to the tie-break of several tokens)
  const multi = withTf ? new Uint32Array(W) : null;
  let maxTf = 0;
  let minDf = Infinity;
  for (const tc of list) {
    maxTf = Math.max(maxTf, orTermInto(tc.ti, tc.term, bits, multi));
    minDf = Math.min(minDf, tc.df);
  }
  return { bits, multi, maxTf, minDf, idf: -1, once: null, most: null, lengths };
}

function andNot(into: Uint32Array, b: Uint32Array): void {
  for (let w = 0; w < into.length; w++) into[w]! &= ~b[w]!;
}

/** The first cost level of a token whose candidates (in some field) hold document d. */
function levelOf(levels: (Uint32Array | null)[][], d: number): number {
  for (let li = 0; li < levels.length - 1; li++) {
    const perField = levels[li]!;
    for (let f = 0; f < perField.length; f++) if (has(perField[f]!, d)) return li;
  }
  return levels.length - 1;
}

function has(b: Uint32Array | null, d: number): boolean {
  return b !== null && (b[d >>> 5]! & (1 << (d & 31))) !== 0;
}

/** Walk.boundTable: per key (a document's bits), its bound and whether that may still enter the page. */
interface BoundTable {
  /** Bit k of a key is bit d of sources[k]. */
  sources: Uint32Array[];
  allowed: Uint8Array;
  /** Keys none of whose documents left can enter (byImpact): never allowed again. */
  done: Uint8Array;
  /** The entry bar the table was last refreshed for (null: none, all may enter). */
  bar: EntryBar | null;
  upper: Float64Array;
  /** Per allowed key, the least BM25 sum of the tie-break (Walk.tieSum) that may still enter (score.ts tieSumFor). */
  sumNeed: Float64Array;
  /** Per key, from index key * F, the tokens each field holds (as Walk.masks). */
  keyMasks: Int32Array;
  /** Per single-valued field, the key bit saying its length is the query's. */
  lengthBits: number[];
  /** The allowed keys when there are at most FEW_KEYS of them (`few` >= 0, else -1); then documents are sifted 32 at a time. */
  keys: Int32Array;
  few: number;
}

/** At most this many allowed keys are sifted word by word (Walk.run). */
const FEW_KEYS = 16;

/** Field lengths whose one-occurrence weights are tabled (Group.once). */
const BY_LENGTH = 256;

function weightsByLength(idf: number, tf: number, avgLen: number): Float64Array {
  const out = new Float64Array(BY_LENGTH);
  for (let len = 0; len < BY_LENGTH; len++) out[len] = bm25Idf(idf, tf, len, avgLen);
  return out;
}

/** One token's impact classes in one field, heaviest first (Walk.impactLists). */
interface ImpactList {
  t: number;
  f: number;
  impacts: Impacts;
  /** Class ids, heaviest first, and their weights. */
  order: Int32Array;
  weight: Float64Array;
  /** The next class to take. */
  at: number;
}

/** The threshold algorithm runs when at least `minDocs` documents have every token at its cheapest level (tests lower it). */
export const impactLimits = { minDocs: 32768 };

/** The threshold algorithm takes at most max(IMPACT_BUDGET_MIN, documents / IMPACT_BUDGET_SHARE) documents before the walk takes over. */
const IMPACT_BUDGET_MIN = 4096;
const IMPACT_BUDGET_SHARE = 16;

/** Bits a bound table may be indexed by (2^bits entries, each rebuilt when a document is ranked). */
const MAX_TABLE_BITS = 10;

/** The documents whose single-valued field is some length: as a bitmap, and as a list when they are few. */
interface OfLength {
  bits: Uint32Array;
  count: number;
  /** Ascending, when count <= n / 64 (reading the list is then cheaper than the bitmap's words). */
  list: Int32Array | null;
}

/** Per text index and length L, the documents whose single-valued field is L words long (an exact match of L words is possible); kept for short lengths. */
const byLength = new WeakMap<TextIndex, Map<number, OfLength>>();
function docsOfLength(ti: TextIndex, length: number): OfLength {
  let m = byLength.get(ti);
  if (!m) byLength.set(ti, (m = new Map()));
  let r = m.get(length);
  if (!r) {
    const n = ti.lengths.offsets.length - 1;
    const bits = new Uint32Array(wordsFor(n));
    let count = 0;
    for (let d = 0; d < n; d++) {
      if (ti.lengthOf(d) === length) {
        bits[d >>> 5]! |= 1 << (d & 31);
        count++;
      }
    }
    let list: Int32Array | null = null;
    if (count * 64 <= n) {
      list = new Int32Array(count);
      let i = 0;
      for (let d = 0; d < n && i < count; d++) if (ti.lengthOf(d) === length) list[i++] = d;
    }
    r = { bits, count, list };
    if (length <= 8) m.set(length, r);
  }
  return r;
}

/**
 * One token, no array field to check: the matches scored from the bitmaps newest first
 * (the order of equal scores), the exact ones first of all, until the page's worst beats
 * what any document left could score.
 */
function newestFirst(
  seg: LiveSegment,
  input: MatchInput,
  M: Uint32Array,
  costs: number[],
  FB: (Uint32Array | null)[][],
  WB: (Uint32Array | null)[][],
  texts: (TextIndex | null)[],
  weights: number[],
  full: boolean,
  sink: BitSink,
  shouldStop: () => boolean,
): boolean {
  const F = weights.length;
  const seqs = seg.reader.seqs;
  const checkExact = input.prioritizeExact && full && costs[0] === 0;
  const score = (d: number): number => {
    const li = levelOf(FB, d);
    const typo = costs[li]!;
    let mask = 0;
    let whole = 0;
    let exact = 0;
    for (let f = 0; f < F; f++) {
      if (!has(FB[li]![f]!, d)) continue;
      mask |= 1 << f;
      if (!has(WB[li]![f]!, d)) continue;
      whole |= 1 << f;
      // (as matchOneToken: a single-valued field one word long, the word itself)
      if (checkExact && typo === 0 && texts[f]!.lengthOf(d) === 1) exact |= 1 << f;
    }
    return oneTokenScore(mask, whole, exact, typo, weights);
  };
  // the exact matches (few): scored first, so that the walk below can assume none is left
  let exactDocs: Uint32Array | null = null;
  if (checkExact) {
    for (let f = 0; f < F; f++) {
      const whole = WB[0]![f]!;
      if (whole === null || !texts[f]) continue;
      const ones = docsOfLength(texts[f]!, 1);
      if (ones.count === 0) continue;
      exactDocs ??= new Uint32Array(M.length);
      if (ones.list !== null) {
        for (const d of ones.list) if (has(M, d) && has(whole, d)) exactDocs[d >>> 5]! |= 1 << (d & 31);
      } else for (let w = 0; w < M.length; w++) exactDocs[w]! |= M[w]! & whole[w]! & ones.bits[w]!;
    }
    if (exactDocs !== null) forEachBit(exactDocs, (d) => sink.rank(d, score(d)));
  }
  // the best any other document can score: the cheapest level, every field, the heaviest
  let fieldsAny = 0;
  let heaviest = 0;
  for (let f = 0; f < F; f++) {
    if (!FB.some((perField) => perField[f] !== null)) continue;
    fieldsAny++;
    heaviest = Math.max(heaviest, weights[f]!);
  }
  const bound = baseScore(1, costs[0]!, fieldsAny) + fieldPart(255, heaviest, 0, 1);
  let steps = 0;
  for (let w = M.length - 1; w >= 0; w--) {
    let word = M[w]!;
    if (exactDocs !== null) word &= ~exactDocs[w]!;
    while (word !== 0) {
      const bit = 31 - Math.clz32(word);
      word &= ~(1 << bit);
      const d = (w << 5) | bit;
      if (!sink.mayEnter(bound, seqs[d]!)) return true;
      sink.rank(d, score(d));
      if ((++steps & 1023) === 0 && shouldStop()) return false;
    }
  }
  return true;
}

/**
 * Several tokens: documents of a bitmap in ordinal order (cursors only move forward), each
 * bounded before anything is read, then scored as matchTaat's second pass scores it.
 */
class Walk {
  private cursors: TokenCursor[][] = [];
  private readonly pos: DocPositions;
  private readonly tokMin: Int32Array;
  /** Per token, its cheapest cost level in the current document. */
  private readonly level: Int32Array;
  /** Every token at its cheapest level (level 0): the documents of a bound table. */
  private readonly cheapestLevels: Int32Array;
  private readonly masks: Int32Array;
  private readonly wholeMasks: Int32Array;
  private readonly T: number;
  private readonly F: number;

  constructor(
    private readonly seg: LiveSegment,
    private readonly input: MatchInput,
    private readonly perToken: TokenCursor[][],
    private readonly texts: (TextIndex | null)[],
    private readonly arrayField: boolean[],
    private readonly weights: number[],
    private readonly tieStats: { avgLen: number[]; n: number },
    private readonly costs: number[][],
    private readonly G: (Group | null)[][][],
    private readonly FB: (Uint32Array | null)[][][],
    private readonly WB: (Uint32Array | null)[][][],
    private readonly full: boolean,
    private readonly sink: BitSink,
    private readonly shouldStop: () => boolean,
  ) {
    this.T = perToken.length;
    this.F = weights.length;
    this.pos = new DocPositions(this.T * this.F);
    this.tokMin = new Int32Array(this.T);
    this.level = new Int32Array(this.T);
    this.cheapestLevels = new Int32Array(this.T);
    this.masks = new Int32Array(this.F);
    this.wholeMasks = new Int32Array(this.F);
  }

  /**
   * A bound on document d's rarity tie-break (match.ts rarity), from the field lengths and
   * the groups' bounds: tieSum's, as rarityTie weighs it.
   */
  private tieBound(d: number, level: Int32Array): number {
    return rarityTie(this.tieSum(d, level, this.masks, 0), this.T, this.tieStats.n);
  }

  /**
   * The BM25 sum a bound on the tie-break is made from: per token (at cost level level[t])
   * the best weight over the fields holding it (masks[at + f] has bit t), each with its
   * group's fewest documents and, where the document holds a term more than once, the most
   * times any does. Exact when each group is one term held once.
   */
  private tieSum(d: number, level: Int32Array, masks: Int32Array, at: number): number {
    const { T, F, G } = this;
    const { avgLen, n } = this.tieStats;
    let sum = 0;
    for (let t = 0; t < T; t++) {
      let best = 0;
      const groups = G[t]![level[t]!]!;
      for (let f = 0; f < F; f++) {
        if ((masks[at + f]! & (1 << t)) === 0) continue;
        const g = groups[f]!;
        if (g.idf < 0) g.idf = idfOf(g.minDf, n);
        const len = g.lengths.docLength(d);
        let w: number;
        // (the weight of this length, held once or the most times any document does, tabled once per search)
        if (len >= BY_LENGTH) w = bm25Idf(g.idf, has(g.multi, d) ? g.maxTf : 1, len, avgLen[f]!);
        else if (!has(g.multi, d)) w = (g.once ??= weightsByLength(g.idf, 1, avgLen[f]!))[len]!;
        else w = (g.most ??= weightsByLength(g.idf, g.maxTf, avgLen[f]!))[len]!;
        if (w > best) best = w;
      }
      sum += best;
    }
    return sum;
  }

  /**
   * Scores the documents of X that may enter the page; false when cut off. `cheapest`: X
   * holds only documents with every token at its cheapest level, where a table decides
   * for most documents, from a few bits, that they cannot enter (see bounds).
   */
  run(X: Uint32Array, cheapest: boolean): boolean {
    // fresh cursors (they only move forward), which jump by the common terms' skips
    this.cursors = this.perToken.map((list) => list.map((tc) => ({ ...tc, cursor: tc.ti.cursor(tc.term, termSkips(tc.ti, tc.term)) })));
    const table = cheapest ? this.boundTable(X) : null;
    let steps = 0;
    // several tokens, each one common term per field at its cheapest level: heaviest tie-break first
    // (on a few thousand documents the walk is cheaper than the impact classes' first use)
    if (table !== null && this.T > 1 && countBits(X) >= impactLimits.minDocs) {
      const lists = this.impactLists();
      if (lists !== null) {
        const rest = this.byImpact(X, table, lists);
        if (rest === false) return false;
        X = rest;
        // (fresh cursors for the walk below, in ordinal order)
        this.cursors = this.perToken.map((list) => list.map((tc) => ({ ...tc, cursor: tc.ti.cursor(tc.term, termSkips(tc.ti, tc.term)) })));
      }
    }
    if (table === null) {
      for (let w = 0; w < X.length; w++) {
        let word = X[w]!;
        while (word !== 0) {
          const low = word & -word;
          word ^= low;
          if ((++steps & 1023) === 0 && this.shouldStop()) return false;
          this.visit((w << 5) | (31 - Math.clz32(low)));
        }
      }
      return true;
    }
    const { sources, allowed } = table;
    const K = sources.length;
    const T = this.T;
    const words = new Int32Array(K);
    for (let w = 0; w < X.length; w++) {
      let word = X[w]!;
      if (word === 0) continue;
      for (let k = 0; k < K; k++) words[k] = sources[k]![w]!;
      // few keys allowed (once the page is full): the word's documents with one of them, 32 at a time
      if (table.few === 0) return true; // (no key can enter any more)
      if (table.few > 0) {
        let any = 0;
        for (let i = 0; i < table.few; i++) {
          const key = table.keys[i]!;
          let m = word;
          for (let k = 0; k < K && m !== 0; k++) m &= (key >>> k) & 1 ? words[k]! : ~words[k]!;
          any |= m;
        }
        word = any;
      }
      while (word !== 0) {
        const low = word & -word;
        word ^= low;
        const bit = 31 - Math.clz32(low);
        let key = 0;
        for (let k = 0; k < K; k++) key |= ((words[k]! >>> bit) & 1) << k;
        if (allowed[key] === 0) continue;
        if ((++steps & 1023) === 0 && this.shouldStop()) return false;
        const d = (w << 5) | bit;
        // (the bound on the tie-break's BM25 sum, before anything else is read)
        if (T > 1 && this.tieSum(d, this.cheapestLevels, table.keyMasks, key * this.F) < table.sumNeed[key]!) continue;
        if (this.visit(d)) this.refresh(table);
      }
    }
    return true;
  }

  /**
   * Per token and field, the impact classes (index/termbits.ts termImpacts) of its cheapest
   * candidate, heaviest first, with their BM25 weights as the tie-break weighs them; null
   * unless each is one common term held as a word of its own.
   */
  private impactLists(): ImpactList[] | null {
    const { T, F, G, perToken } = this;
    const { avgLen, n } = this.tieStats;
    const lists: ImpactList[] = [];
    for (let t = 0; t < T; t++) {
      for (let f = 0; f < F; f++) {
        const g = G[t]![0]![f];
        if (!g) continue;
        const cheapest = perToken[t]!.filter((tc) => tc.cost === this.costs[t]![0] && tc.field === f);
        if (cheapest.length !== 1 || cheapest[0]!.part === 1 || g.lengths !== cheapest[0]!.ti) return null;
        const impacts = termImpacts(cheapest[0]!.ti, cheapest[0]!.term);
        if (!impacts) return null;
        if (g.idf < 0) g.idf = idfOf(g.minDf, n);
        const classes: number[] = [];
        const weight = new Float64Array(impacts.count.length);
        for (let c = 0; c < weight.length; c++) {
          if (impacts.count[c] === 0) continue;
          // (the last class of each kind holds that many or more: weighed as the most)
          const tf = c >> 8 === IMPACT_TF ? Math.max(IMPACT_TF, g.maxTf) : c >> 8;
          weight[c] = bm25Idf(g.idf, tf, c & 255, avgLen[f]!);
          classes.push(c);
        }
        classes.sort((a, b) => weight[b]! - weight[a]!);
        lists.push({ t, f, impacts, order: Int32Array.from(classes), weight: Float64Array.from(classes, (c) => weight[c]!), at: 0 });
      }
    }
    return lists;
  }

  /**
   * The threshold algorithm (Fagin, Lotem and Naor, "Optimal aggregation algorithms for
   * middleware", 2001) over the impact lists: documents are taken class by class from the
   * list whose next class weighs most, and scored as the walk scores them (cursors seek to
   * them by the skips). A document not yet taken weighs at most each list's next class in
   * each field, so its tie-break's sum is at most the threshold
   *
   *   th = sum over tokens of the heaviest next class among the token's fields
   *
   * and a key whose least sum that may still enter (sumNeed) is above th is done: none of
   * its documents left can enter. Stops when every allowed key is done (the usual end: the
   * page's worst has a high tie-break after a few thousand documents), or after a budget
   * of documents, leaving the rest (what is returned: X less the documents taken) to the
   * walk in ordinal order, with the done keys out of it.
   *
   *   list "dekako" in title   [tf 3, len 3] [tf 2, len 3] [tf 1, len 3] [tf 2, len 5] ...
   *   list "dekako" in body    [tf 4, len 15] [tf 3, len 15] ...
   *   list "poka"   ...                   ^ next classes: their weights sum to th
   */
  private byImpact(X: Uint32Array, table: BoundTable, lists: ImpactList[]): Uint32Array | false {
    const { T } = this;
    const taken = new Uint32Array(X.length);
    const { sources } = table;
    const K = sources.length;
    let visits = 0;
    const budget = Math.max(IMPACT_BUDGET_MIN, countBits(X) / IMPACT_BUDGET_SHARE);
    const heaviest = new Float64Array(T);
    const second = new Float64Array(T);
    const holder = new Int32Array(T);
    const head = (list: ImpactList, ahead = 0) => (list.at + ahead < list.order.length ? list.weight[list.at + ahead]! : 0);
    for (;;) {
      // per token, its heaviest next class (and the list holding it) and the next heaviest
      heaviest.fill(0);
      second.fill(0);
      holder.fill(-1);
      for (let i = 0; i < lists.length; i++) {
        const list = lists[i]!;
        const w = head(list);
        if (w > heaviest[list.t]!) {
          second[list.t] = heaviest[list.t]!;
          heaviest[list.t] = w;
          holder[list.t] = i;
        } else if (w > second[list.t]!) second[list.t] = w;
      }
      // the next class to take: the one that lowers the threshold most per document taken (only a
      // token's heaviest list lowers it; not one whose next class this segment did not keep)
      let next = -1;
      let gain = -1;
      for (let t = 0; t < T; t++) {
        const i = holder[t]!;
        if (i < 0) continue;
        const list = lists[i]!;
        const c = list.order[list.at]!;
        if (list.impacts.kept[c] === 0) continue;
        const size = list.impacts.count[c]!;
        const g = (heaviest[t]! - Math.max(second[t]!, head(list, 1))) / Math.max(1, size);
        if (g > gain) {
          gain = g;
          next = i;
        }
      }
      // per key, the threshold over its own fields only (a token in the body alone weighs at most the body's next class)
      let open = 0;
      for (let key = 0; key < table.allowed.length; key++) {
        if (table.allowed[key] === 0) continue;
        let thKey = 0;
        for (let t = 0; t < T; t++) {
          let m = 0;
          for (let i = 0; i < lists.length; i++) {
            const list = lists[i]!;
            if (list.t !== t || (key & (1 << (t * this.F + list.f))) === 0) continue;
            const w = head(list);
            if (w > m) m = w;
          }
          thKey += m;
        }
        if (table.sumNeed[key]! > thKey) {
          table.done[key] = 1;
          table.allowed[key] = 0;
        } else open++;
      }
      if (open === 0 || next < 0 || visits > budget) break;
      const list = lists[next]!;
      const c = list.order[list.at++]!;
      const { starts, ords } = list.impacts;
      for (let i = starts[c]!, end = starts[c + 1]!; i < end; i++) {
        const d = ords[i]!;
        if (!has(X, d) || has(taken, d)) continue;
        taken[d >>> 5]! |= 1 << (d & 31);
        if ((++visits & 1023) === 0 && this.shouldStop()) return false;
        let key = 0;
        for (let k = 0; k < K; k++) if (has(sources[k]!, d)) key |= 1 << k;
        if (table.allowed[key] === 0) continue;
        if (this.tieSum(d, this.cheapestLevels, table.keyMasks, key * this.F) < table.sumNeed[key]!) continue;
        if (this.visit(d, true)) this.refresh(table);
      }
    }
    table.bar = null; // (done keys changed: recompute whatever the bar)
    this.refresh(table);
    const rest = new Uint32Array(X);
    andNot(rest, taken);
    return rest;
  }

  /**
   * For documents with every token at its cheapest level, the bound (upperScore) depends on
   * a few bits only: which fields hold which tokens, and per single-valued field whether
   * its length is the query's (an exact match is possible). A table of those bits says
   * which bounds may still enter; it is rebuilt whenever a document is ranked. Undefined
   * beyond MAX_TABLE_BITS bits.
   */
  private boundTable(X: Uint32Array): BoundTable | null {
    const { T, F, FB, texts, arrayField, costs, input } = this;
    const zeroCost = costs.every((levels) => levels[0] === 0);
    const checkExact = input.prioritizeExact && this.full && zeroCost;
    const sources: Uint32Array[] = [];
    const empty = new Uint32Array(0);
    for (let t = 0; t < T; t++) for (let f = 0; f < F; f++) sources.push(FB[t]![0]![f]! ?? empty);
    const lengthBits: number[] = [];
    for (let f = 0; f < F; f++) {
      if (!checkExact || arrayField[f] || !texts[f]) continue;
      // (no document of X as long as the query in this field: no bit for it)
      const docs = docsOfLength(texts[f]!, T);
      let any = 0;
      if (docs.list !== null) for (let i = 0; i < docs.list.length && any === 0; i++) any = has(X, docs.list[i]!) ? 1 : 0;
      else for (let w = 0; w < X.length && any === 0; w++) any = X[w]! & docs.bits[w]!;
      if (any === 0) continue;
      lengthBits[f] = sources.length;
      sources.push(docs.bits);
    }
    if (sources.length > MAX_TABLE_BITS) return null;
    const size = 1 << sources.length;
    const table: BoundTable = { sources, allowed: new Uint8Array(size), done: new Uint8Array(size), upper: new Float64Array(size), sumNeed: new Float64Array(size), keyMasks: new Int32Array(size * this.F), keys: new Int32Array(FEW_KEYS), few: 0, lengthBits, bar: null };
    this.uppers(table);
    this.refresh(table);
    return table;
  }

  /** Each key's bound (upperScore; -1 for a key that never occurs: a token in no field). */
  private uppers(table: BoundTable): void {
    const { T, F, weights, masks, arrayField, costs, input } = this;
    const cheapest = costs.reduce((sum, levels) => sum + levels[0]!, 0);
    const checkExact = input.prioritizeExact && this.full && cheapest === 0;
    const all = T === 32 ? -1 : (1 << T) - 1;
    for (let key = 0; key < table.upper.length; key++) {
      let held = 0;
      for (let f = 0; f < F; f++) {
        masks[f] = 0;
        for (let t = 0; t < T; t++) if (key & (1 << (t * F + f))) masks[f]! |= 1 << t;
        held |= masks[f]!;
      }
      table.keyMasks.set(masks, key * F);
      if (held !== all) {
        table.upper[key] = -1;
        continue;
      }
      const cov = coverage(masks, weights);
      let exact = 0;
      for (let f = 0; f < F && checkExact && exact === 0; f++) {
        if (masks[f] !== all) continue;
        const lb = table.lengthBits[f];
        if (arrayField[f] || (lb !== undefined && key & (1 << lb))) exact = 1;
      }
      table.upper[key] = upperScore(baseScore(T, cheapest, cov >>> 8), cov & 255, exact);
    }
  }

  /**
   * Which keys may still enter the page, and with what least tie-break sum, from the
   * page's entry bar (TopHits.entryBar): a key bounded above the bar's text_match may enter
   * whatever its tie-break; one bounded at it, with a tie-break at least the bar's.
   */
  private refresh(table: BoundTable): void {
    const bar = this.sink.entryBar();
    if (bar !== null && table.bar !== null && bar.tm === table.bar.tm && bar.tie === table.bar.tie) return;
    table.bar = bar;
    const need = bar === null || bar.tie < 0 ? -Infinity : tieSumFor(bar.tie, this.T, this.tieStats.n);
    for (let key = 0; key < table.upper.length; key++) {
      const upper = table.upper[key]!;
      if (upper < 0 || table.done[key] === 1) {
        table.allowed[key] = 0;
        continue;
      }
      const tm = textMatchOf(upper);
      if (bar === null || tm > bar.tm) {
        table.allowed[key] = 1;
        table.sumNeed[key] = -Infinity;
      } else if (tm < bar.tm) table.allowed[key] = 0;
      else {
        table.allowed[key] = 1;
        table.sumNeed[key] = need;
      }
    }
    // the allowed keys, when there are few
    let few = 0;
    for (let key = 0; key < table.allowed.length && few <= FEW_KEYS; key++) if (table.allowed[key] === 1 && few++ < FEW_KEYS) table.keys[few - 1] = key;
    table.few = few <= FEW_KEYS ? few : -1;
  }

  /** Scores document d if it may enter the page; true when it was offered (ranked). */
  private visit(d: number, random = false): boolean {
    const level = this.level;
    const { T, F, tokMin, masks, wholeMasks, weights, costs, FB, WB, sink, input, texts, arrayField, pos, cursors } = this;
    const seqs = this.seg.reader.seqs;
    const checkExact = input.prioritizeExact && this.full;
    // typos and which fields hold which tokens, at each token's cheapest level here
    for (let f = 0; f < F; f++) {
      masks[f] = 0;
      wholeMasks[f] = 0;
    }
    let typoCost = 0;
    for (let t = 0; t < T; t++) {
      const li = levelOf(FB[t]!, d);
      level[t] = li;
      tokMin[t] = costs[t]![li]!;
      typoCost += tokMin[t]!;
      const fb = FB[t]![li]!;
      const wb = WB[t]![li]!;
      for (let f = 0; f < F; f++) {
        if (!has(fb[f]!, d)) continue;
        masks[f]! |= 1 << t;
        if (has(wb[f]!, d)) wholeMasks[f]! |= 1 << t;
      }
    }
    const cov = coverage(masks, weights);
    const base = baseScore(T, typoCost, cov >>> 8);
    // an exact match needs a field holding every token, none with a typo, as long as the query
    let exactPossible = 0;
    if (checkExact && typoCost === 0) {
      const all = T === 32 ? -1 : (1 << T) - 1;
      for (let f = 0; f < F && exactPossible === 0; f++) {
        if (masks[f] !== all || wholeMasks[f] !== all) continue;
        if (arrayField[f] || texts[f]!.lengthOf(d) === T) exactPossible = 1;
      }
    }
    const seq = seqs[d]!;
    const upper = upperScore(base, cov & 255, exactPossible);
    if (!sink.mayEnter(upper, seq)) return false;
    const untied = upper - TIE_MAX;
    let tie = 0;
    // the tie-break's bound from the lengths alone (exact where each term is held once)
    if (T > 1 && !sink.mayEnter(untied + this.tieBound(d, level), seq)) return false;
    // the cursors of each token's cheapest candidates, on this document
    for (let t = 0; t < T; t++) {
      for (const tc of cursors[t]!) {
        if (tc.cost !== tokMin[t]) continue;
        if (random) {
          if (tc.cursor.doc !== d) tc.cursor.seek(d);
        } else if (tc.cursor.doc < d) tc.cursor.advance(d);
      }
    }
    if (T > 1) {
      tie = rarity(cursors, tokMin, texts, this.tieStats.avgLen, d, this.tieStats.n);
      if (!sink.mayEnter(untied + tie, seq)) return false;
    }
    pos.reset();
    for (let t = 0; t < T; t++) {
      for (const tc of cursors[t]!) {
        if (tc.cost !== tokMin[t] || tc.cursor.doc !== d) continue;
        pos.add(t * F + tc.field, tc.cursor, tc.cost === 0 && tc.part === 0, tc.part);
      }
    }
    sink.rank(d, base + bestField(pos, masks, wholeMasks, T, weights, checkExact, tokMin, texts, d, arrayField, false) + tie);
    return true;
  }
}
