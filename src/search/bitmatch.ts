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
import { countBits, orTermInto, termBitsAndTf, termSkips, wordsFor } from '../index/termbits.js';
import { DocPositions, bestField, rarity, type MatchInput, type TokenCursor } from './match.js';
import { TIE_MAX, baseScore, bm25, bm25Idf, coverage, fieldKey, fieldPart, idfOf, rarityTie, tieSumFor, upperScore } from './score.js';

/** Where bit matching puts what it finds. */
export interface BitSink {
  /** Every document set in `bits` (`n` of them) matched: counted for found and facets. Called once, before any rank. */
  count(bits: Uint32Array, n: number): void;
  /** A matched document that may reach the page, with its score. */
  rank(ord: number, score: number): void;
  /** Could a document scoring at most `score` (tie-break bits included), with seq `seq`, still enter the page? */
  mayEnter(score: number, seq: number): boolean;
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
  const L: Uint32Array[][] = [];
  const A: Uint32Array[] = [];
  for (let t = 0; t < T; t++) {
    const list = perToken[t]!;
    const levels = [...new Set(list.map((tc) => tc.cost))].sort((a, b) => a - b);
    costs.push(levels);
    G.push(levels.map((c) => weights.map((_, f) => groupOf(list.filter((tc) => tc.cost === c && tc.field === f), W, texts[f]!))));
    FB.push(G[t]!.map((perField) => perField.map((g) => g?.bits ?? null)));
    WB.push(parts ? levels.map((c) => weights.map((_, f) => groupOf(list.filter((tc) => tc.cost === c && tc.field === f && tc.part === 0), W, texts[f]!)?.bits ?? null)) : FB[t]!);
    L.push(FB[t]!.map((perField) => orAll(perField, W)));
    A.push(orAll(L[t]!, W));
  }
  // the matches
  const M = new Uint32Array(W);
  M.set(A[0]!);
  for (let t = 1; t < T; t++) and(M, A[t]!);
  if (filters.allow) and(M, filters.allow);
  if (filters.exclude) andNot(M, filters.exclude);
  if (filters.seen) andNot(M, filters.seen);
  const deleted = seg.deleted;
  if (deleted !== null) for (let w = 0; w < W; w++) M[w]! &= ~(deleted[4 * w]! | (deleted[4 * w + 1]! << 8) | (deleted[4 * w + 2]! << 16) | (deleted[4 * w + 3]! << 24));
  const found = countBits(M);
  if (found === 0) return M;
  sink.count(M, found);
  // (found and facets are complete; the page is what a spent budget cuts short)
  if (shouldStop()) return false;

  const full = T === input.totalTokens;
  const exactArrays = input.prioritizeExact && arrayField.some(Boolean);
  if (T === 1 && !exactArrays) return newestFirst(seg, input, M, costs[0]!, FB[0]!, WB[0]!, L[0]!, texts, weights, full, sink, shouldStop) ? M : false;

  // several tokens (or an array field to check for exactness): every token at its cheapest level first
  const Z = new Uint32Array(M);
  for (let t = 0; t < T; t++) and(Z, L[t]![0]!);
  const cheapest = costs.reduce((sum, levels) => sum + levels[0]!, 0);
  const walk = new Walk(seg, input, perToken, texts, arrayField, weights, tieStats, costs, G, FB, WB, L, full, sink, shouldStop);
  if (!walk.run(Z, true)) return false;
  if (costs.every((levels) => levels.length === 1)) return M;
  // the rest costs at least one level step more: it matters only while that can still enter
  const step = Math.min(...costs.filter((levels) => levels.length > 1).map((levels) => levels[1]! - levels[0]!));
  const maxWeight = Math.max(...weights);
  if (!sink.mayEnter(upperScore(baseScore(T, cheapest + step, F), maxWeight), Number.MAX_SAFE_INTEGER)) return M;
  const rest = new Uint32Array(M);
  andNot(rest, Z);
  return walk.run(rest, false) ? M : false;
}

/**
 * Some candidates of one token, at one cost level, in one field: their documents, those
 * holding one more than once, and what bounds the rarity tie-break of a document among
 * them (the most times a document holds one, the fewest documents holding one).
 */
interface Group {
  bits: Uint32Array;
  multi: Uint32Array;
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

/** The group of some candidates (a common term's own bitmaps when it is the only one); null when there is none. */
function groupOf(list: TokenCursor[], W: number, text: TextIndex | null): Group | null {
  if (list.length === 0) return null;
  const first = list[0]!;
  const lengths = text ?? first.ti;
  if (list.length === 1) {
    const own = termBitsAndTf(first.ti, first.term);
    if (own) return { bits: own.bits, multi: own.multi, maxTf: own.maxTf, minDf: first.df, idf: -1, once: null, most: null, lengths };
  }
  const bits = new Uint32Array(W);
  const multi = new Uint32Array(W);
  let maxTf = 0;
  let minDf = Infinity;
  for (const tc of list) {
    maxTf = Math.max(maxTf, orTermInto(tc.ti, tc.term, bits, multi));
    minDf = Math.min(minDf, tc.df);
  }
  return { bits, multi, maxTf, minDf, idf: -1, once: null, most: null, lengths };
}

function orAll(list: (Uint32Array | null)[], W: number): Uint32Array {
  const present = list.filter((b): b is Uint32Array => b !== null);
  if (present.length === 1) return present[0]!;
  const out = new Uint32Array(W);
  for (const b of present) for (let w = 0; w < W; w++) out[w]! |= b[w]!;
  return out;
}

function and(into: Uint32Array, b: Uint32Array): void {
  for (let w = 0; w < into.length; w++) into[w]! &= b[w]!;
}

function andNot(into: Uint32Array, b: Uint32Array): void {
  for (let w = 0; w < into.length; w++) into[w]! &= ~b[w]!;
}

function has(b: Uint32Array | null, d: number): boolean {
  return b !== null && (b[d >>> 5]! & (1 << (d & 31))) !== 0;
}

/** Walk.boundTable: per key (a document's bits), its bound and whether that may still enter the page. */
interface BoundTable {
  /** Bit k of a key is bit d of sources[k]. */
  sources: Uint32Array[];
  allowed: Uint8Array;
  upper: Float64Array;
  /** Per allowed key, the least BM25 sum of the tie-break (keyTieSum) that may still enter (score.ts tieSumFor). */
  sumNeed: Float64Array;
  /** Per single-valued field, the key bit saying its length is the query's. */
  lengthBits: number[];
  /** The allowed keys when there are at most FEW_KEYS of them (`few` > 0); then documents are sifted 32 at a time. */
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

/** Bits a bound table may be indexed by (2^bits entries, each rebuilt when a document is ranked). */
const MAX_TABLE_BITS = 10;

/** Per text index and length L, the documents whose single-valued field is L words long (an exact match of L words is possible); kept for short lengths. */
const byLength = new WeakMap<TextIndex, Map<number, Uint32Array>>();
function docsOfLength(ti: TextIndex, length: number): Uint32Array {
  let m = byLength.get(ti);
  if (!m) byLength.set(ti, (m = new Map()));
  let b = m.get(length);
  if (!b) {
    const { offsets, values } = ti.lengths;
    const n = offsets.length - 1;
    b = new Uint32Array(wordsFor(n));
    for (let d = 0; d < n; d++) {
      const a = offsets[d]!;
      if (a < offsets[d + 1]! && values[a] === length) b[d >>> 5]! |= 1 << (d & 31);
    }
    if (length <= 8) m.set(length, b);
  }
  return b;
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
  L: Uint32Array[],
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
    let li = 0;
    while (!has(L[li]!, d)) li++;
    const typo = costs[li]!;
    let fieldsMatched = 0;
    let best = -1;
    let bestWeight = 0;
    let bestExact = 0;
    let bestWhole = 0;
    for (let f = 0; f < F; f++) {
      if (!has(FB[li]![f]!, d)) continue;
      fieldsMatched++;
      const whole = has(WB[li]![f]!, d) ? 1 : 0;
      let exact = 0;
      // (as matchOneToken: a single-valued field one word long, the word itself)
      if (checkExact && typo === 0 && whole === 1) {
        const ti = texts[f]!;
        const a = ti.lengths.offsets[d]!;
        exact = a < ti.lengths.offsets[d + 1]! && ti.lengths.values[a] === 1 ? 1 : 0;
      }
      const key = fieldKey(1, 255, weights[f]!, exact, whole);
      if (key > best) {
        best = key;
        bestWeight = weights[f]!;
        bestExact = exact;
        bestWhole = whole;
      }
    }
    return baseScore(1, typo, fieldsMatched) + fieldPart(255, bestWeight, bestExact, bestWhole);
  };
  // the exact matches (few): scored first, so that the walk below can assume none is left
  let exactDocs: Uint32Array | null = null;
  if (checkExact) {
    for (let f = 0; f < F; f++) {
      const whole = WB[0]![f]!;
      if (whole === null || !texts[f]) continue;
      exactDocs ??= new Uint32Array(M.length);
      const ones = docsOfLength(texts[f]!, 1);
      for (let w = 0; w < M.length; w++) exactDocs[w]! |= M[w]! & whole[w]! & ones[w]!;
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

function forEachBit(bits: Uint32Array, fn: (d: number) => void): void {
  for (let w = 0; w < bits.length; w++) {
    let word = bits[w]!;
    while (word !== 0) {
      const low = word & -word;
      fn((w << 5) | (31 - Math.clz32(low)));
      word ^= low;
    }
  }
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
    private readonly L: Uint32Array[][],
    private readonly full: boolean,
    private readonly sink: BitSink,
    private readonly shouldStop: () => boolean,
  ) {
    this.T = perToken.length;
    this.F = weights.length;
    this.pos = new DocPositions(this.T * this.F);
    this.tokMin = new Int32Array(this.T);
    this.level = new Int32Array(this.T);
    this.masks = new Int32Array(this.F);
    this.wholeMasks = new Int32Array(this.F);
  }

  /**
   * A bound on document d's rarity tie-break (match.ts rarity), from the field lengths and
   * the groups' bounds: per token the best BM25 weight over the fields holding it, with
   * the fewest documents of its group and, where the document holds a term more than
   * once, the most times any does. Exact when each group is one term held once.
   */
  private tieBound(d: number, level: Int32Array): number {
    const { T, F, G, masks } = this;
    const { avgLen, n } = this.tieStats;
    let sum = 0;
    for (let t = 0; t < T; t++) {
      let best = 0;
      const groups = G[t]![level[t]!]!;
      for (let f = 0; f < F; f++) {
        if ((masks[f]! & (1 << t)) === 0) continue;
        const g = groups[f]!;
        const tf = has(g.multi, d) ? g.maxTf : 1;
        const w = bm25(g.minDf, n, tf, g.lengths.docLength(d), avgLen[f]!);
        if (w > best) best = w;
      }
      sum += best;
    }
    return rarityTie(sum, T, n);
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
        if (T > 1 && this.keyTieSum(d, key) < table.sumNeed[key]!) continue;
        if (this.visit(d)) this.refresh(table);
      }
    }
    return true;
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
      for (let w = 0; w < X.length && any === 0; w++) any = X[w]! & docs[w]!;
      if (any === 0) continue;
      lengthBits[f] = sources.length;
      sources.push(docs);
    }
    if (sources.length > MAX_TABLE_BITS) return null;
    const size = 1 << sources.length;
    const table = { sources, allowed: new Uint8Array(size), upper: new Float64Array(size), sumNeed: new Float64Array(size), keys: new Int32Array(FEW_KEYS), few: 0, lengthBits };
    this.refresh(table);
    return table;
  }

  private refresh(table: BoundTable): void {
    const { T, F, weights, masks, arrayField, costs, input, sink } = this;
    const cheapest = costs.reduce((sum, levels) => sum + levels[0]!, 0);
    const checkExact = input.prioritizeExact && this.full && cheapest === 0;
    const all = T === 32 ? -1 : (1 << T) - 1;
    for (let key = 0; key < table.allowed.length; key++) {
      let held = 0;
      for (let f = 0; f < F; f++) {
        masks[f] = 0;
        for (let t = 0; t < T; t++) if (key & (1 << (t * F + f))) masks[f]! |= 1 << t;
        held |= masks[f]!;
      }
      // (every token is in some field here: a key without one never occurs)
      if (held !== all) {
        table.allowed[key] = 0;
        continue;
      }
      const cov = coverage(masks, weights);
      let exact = 0;
      for (let f = 0; f < F && checkExact && exact === 0; f++) {
        if (masks[f] !== all) continue;
        const lb = table.lengthBits[f];
        if (arrayField[f] || (lb !== undefined && key & (1 << lb))) exact = 1;
      }
      const upper = upperScore(baseScore(T, cheapest, cov >>> 8), cov & 255, exact);
      table.upper[key] = upper;
      const allowed = sink.mayEnter(upper, Number.MAX_SAFE_INTEGER);
      table.allowed[key] = allowed ? 1 : 0;
      // the least tie-break that may still enter (mayEnter grows with it), as a BM25 sum
      if (allowed && T > 1) {
        const untied = upper - TIE_MAX;
        let lo = 0;
        let hi = TIE_MAX;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (sink.mayEnter(untied + mid, Number.MAX_SAFE_INTEGER)) hi = mid;
          else lo = mid + 1;
        }
        table.sumNeed[key] = tieSumFor(lo, T, this.tieStats.n);
      }
    }
    // the allowed keys, when there are few
    let few = 0;
    for (let key = 0; key < table.allowed.length && few <= FEW_KEYS; key++) if (table.allowed[key] === 1 && few++ < FEW_KEYS) table.keys[few - 1] = key;
    table.few = few <= FEW_KEYS ? few : 0;
  }

  /** tieBound's BM25 sum (before rarityTie) for a document at every token's cheapest level, its fields read from its table key. */
  private keyTieSum(d: number, key: number): number {
    const { T, F, G } = this;
    const { avgLen, n } = this.tieStats;
    let sum = 0;
    for (let t = 0; t < T; t++) {
      let best = 0;
      const groups = G[t]![0]!;
      for (let f = 0; f < F; f++) {
        if ((key & (1 << (t * F + f))) === 0) continue;
        const g = groups[f]!;
        if (g.idf < 0) g.idf = idfOf(g.minDf, n);
        const { offsets, values } = g.lengths.lengths;
        const a = offsets[d]!;
        const len = offsets[d + 1]! - a === 1 ? values[a]! : g.lengths.docLength(d);
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

  /** Scores document d if it may enter the page; true when it was offered (ranked). */
  private visit(d: number): boolean {
    const level = this.level;
    const { T, F, tokMin, masks, wholeMasks, weights, costs, FB, WB, L, sink, input, texts, arrayField, pos, cursors } = this;
    const seqs = this.seg.reader.seqs;
    const checkExact = input.prioritizeExact && this.full;
    // typos and which fields hold which tokens, at each token's cheapest level here
    for (let f = 0; f < F; f++) {
      masks[f] = 0;
      wholeMasks[f] = 0;
    }
    let typoCost = 0;
    for (let t = 0; t < T; t++) {
      let li = 0;
      while (!has(L[t]![li]!, d)) li++;
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
        if (arrayField[f]) exactPossible = 1;
        else {
          const ti = texts[f]!;
          const a = ti.lengths.offsets[d]!;
          if (a < ti.lengths.offsets[d + 1]! && ti.lengths.values[a] === T) exactPossible = 1;
        }
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
        if (tc.cursor.doc < d) tc.cursor.advance(d);
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
