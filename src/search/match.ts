/**
 * search/match.ts: here are a query's candidate terms and a segment, which documents match
 * and how well? Matching is separate from collecting: this finds documents and scores them
 * (score.ts), and hands each one to a callback; the collectors (collectors.ts) keep the top
 * k, count facets and group.
 *
 * A document matches when every query token has a candidate in some query_by field. It is
 * scored, per token, by its cheapest candidates only: their cost, the fields holding them
 * and their positions. The reference engine scores each combination of candidates apart
 * and keeps a document's best, so a completion in one field (`evincecommon` in the name,
 * cost 3 for `evcince`) never lends that field to a cheaper whole word elsewhere (`evince`
 * in the summary, cost 2). Candidates are kept cheapest first for this. Three
 * strategies find the same documents with the same scores (test/match-strategies.test.ts
 * runs each on the same inputs), each the cheapest in its case:
 *
 *   one token, no phrase        matchOneToken: each candidate's postings decoded once into
 *                               per-document accumulators, then scored in ordinal order
 *   every token common          matchTaat: the same, token by token (rarest first), then
 *                               positions only for documents that can reach the page
 *   otherwise, and phrases      matchSegment's own loop, document-at-a-time: a leapfrog
 *                               intersection of one union iterator per token
 *
 *   token "linux"  : name/linux ∪ summary/linux ∪ description/linux   -> 3 9 12 40 ...
 *   token "kern"   : summary/kernel ∪ description/kernel ∪ ...         -> 9 12 77 ...
 *                                                            intersection: 9 12 ...
 */
import type { LiveSegment } from '../index/manifest.js';
import { isDeleted } from '../index/manifest.js';
import { ELEMENT_SHIFT, partsColumnId, type PostingCursor, type TextIndex } from '../index/segment.js';
import type { FieldSpec } from '../query/plan.js';
import type { CandidateTable } from './candidates.js';
import { termSkips } from '../index/termbits.js';
import { BIT_MIN_SHARE, matchBits, type BitFilters, type BitSink } from './bitmatch.js';
import { DocPositions, windowSpan } from './positions.js';
import { TIE_MAX, baseScore, bm25, coverage, fieldKey, fieldPart, popcount, rarityTie, upperScore } from './score.js';

export interface TokenCursor {
  cursor: PostingCursor;
  field: number; // index into FieldSpec[]
  cost: number;
  /** The text index the term is in: the field's, or for a part its parts' (PARTS_COLUMN_BASE). */
  ti: TextIndex;
  /** Index of the candidate term in that index's dictionary. */
  term: number;
  /** 1 for a part of glued words, else 0 (its positions' tag in DocPositions). */
  part: number;
  /** Documents holding the term (input.stats, or this segment's), for the rarity tie-break. */
  df: number;
}

export interface MatchInput {
  fields: FieldSpec[];
  /** Query tokens (after dropping): their indexes into the full token list. */
  tokens: number[];
  /** Total tokens in the query (for exact-match detection). */
  totalTokens: number;
  candidates: CandidateTable;
  /** Phrases: groups of consecutive token indexes that must be adjacent. */
  phrases: number[][];
  prioritizeExact: boolean;
  dropped: number;
  /** Which strategy matches: 'auto' (default) picks the cheapest; the others force one (tests). 'one-token' needs one token and no phrase, 'taat' no phrase. */
  strategy?: MatchStrategy;
  /** The statistics the rarity tie-break weighs words by: the whole collection's (default: the segment's own). */
  stats?: CorpusStats;
  /** text_match_type=max_weight: the best field is the heaviest holding a query word (else the one scoring best). */
  maxWeight?: boolean;
  /**
   * prioritize_token_position: the tie-break bits hold how early a query word stands in the
   * heaviest field holding one (earlier: higher) instead of the words' rarity; the search
   * compares them right after text_match (search.ts sortClauses).
   */
  tokenPosition?: boolean;
  /** Bit matching (bitmatch.ts), offered when the hits are ranked by text_match: used when every token is common here. */
  bits?: BitInput;
}

/** What bit matching needs of its caller, per segment. */
export interface BitInput {
  /** The filters and the documents earlier rounds matched, as bitmaps. */
  filters(): BitFilters;
  sink: BitSink;
  /** The documents it matched (for the `seen` of later rounds). */
  matched(bits: Uint32Array): void;
}

/** Bit matching on or off (tests and benchmarks compare the two; on by default), and how many segments it has matched. */
export const bitMatching = { enabled: true, used: 0 };

/**
 * Document frequencies and field lengths over every segment of a search, so that the rarity
 * tie-break (score.ts rarityTie) does not depend on how the documents are split into
 * segments: a merge leaves the order of hits as it was (deleted documents still count until
 * a merge drops them). Counted lazily, per term and field, once per search.
 */
export class CorpusStats {
  readonly n: number;
  private readonly dfs = new Map<string, number>();
  private readonly avgs = new Map<number, number>();
  constructor(private readonly segs: readonly LiveSegment[]) {
    this.n = segs.reduce((a, s) => a + s.reader.n, 0);
  }
  /** Documents holding `term` in the text column `column` (a field's id, or its parts' column). */
  df(column: number, term: string): number {
    const key = `${column}\u0000${term}`;
    let v = this.dfs.get(key);
    if (v === undefined) {
      v = 0;
      for (const seg of this.segs) {
        const ti = seg.reader.text(column);
        const idx = ti ? ti.terms.find(term) : -1;
        if (idx >= 0) v += ti!.docFreq[idx]!;
      }
      this.dfs.set(key, v);
    }
    return v;
  }
  /** The mean length in words of the field with id `field`. */
  avgLength(field: number): number {
    let v = this.avgs.get(field);
    if (v === undefined) {
      let sum = 0;
      for (const seg of this.segs) sum += (seg.reader.text(field)?.avgLength() ?? 0) * seg.reader.n;
      v = this.n > 0 ? sum / this.n : 0;
      this.avgs.set(field, v);
    }
    return v;
  }
}

export type MatchStrategy = 'auto' | 'one-token' | 'taat' | 'daat';

export interface SegmentFilters {
  /** 1 = allowed (filter_by), or null for all. */
  allow: Uint8Array | null;
  /** 1 = excluded by a -token. */
  exclude: Uint8Array | null;
  /** 1 = already matched in an earlier round (token dropping). */
  seen: Uint8Array | null;
}

/**
 * Matches one segment, calling `onMatch(ord, score)` for every matching, allowed, live
 * document. Returns false when cut off by `shouldStop`.
 *
 * Hot: one iteration per candidate document. Nothing is allocated per document; token
 * positions are decoded only when proximity, phrases or an exact check on an array field
 * need them (a single-valued field is an exact match when its length equals the query's),
 * and not at all when even the best score the document could reach loses to the k-th hit
 * already collected (`threshold`): it is still counted, for `found` and facets.
 */
export function matchSegment(
  seg: LiveSegment,
  input: MatchInput,
  filters: SegmentFilters,
  onMatch: (ord: number, score: number) => void,
  shouldStop: () => boolean,
  threshold: () => number = NO_THRESHOLD,
): boolean {
  const { fields, tokens } = input;
  const T = tokens.length;
  const F = fields.length;
  const texts: (TextIndex | null)[] = fields.map((f) => seg.reader.text(f.field.id));
  const partTexts: (TextIndex | null)[] = fields.map((f) => seg.reader.text(partsColumnId(f.field.id)));
  const arrayField = fields.map((f) => f.field.isArray || f.field.type === 'string*');
  const weights = fields.map((f) => f.weight);
  // (only queries of two words or more break ties by rarity)
  const stats = T > 1 ? input.stats : undefined;
  const N = stats ? stats.n : seg.reader.n;
  const avgLen = fields.map((f, i) => (stats ? stats.avgLength(f.field.id) : (texts[i]?.avgLength() ?? 0)));
  // cursors per token
  const perToken: TokenCursor[][] = [];
  for (let t = 0; t < T; t++) {
    const list: TokenCursor[] = [];
    const cand = input.candidates[tokens[t]!]!;
    for (let f = 0; f < F; f++) {
      for (const c of cand[f]!) {
        const ti = c.part ? partTexts[f] : texts[f];
        if (!ti) continue;
        const idx = ti.terms.find(c.term);
        if (idx < 0) continue;
        const df = stats ? stats.df(c.part ? partsColumnId(fields[f]!.field.id) : fields[f]!.field.id, c.term) : ti.docFreq[idx]!;
        list.push({ cursor: ti.cursor(idx, termSkips(ti, idx)), field: f, cost: c.cost, ti, term: idx, part: c.part ? 1 : 0, df });
      }
    }
    if (list.length === 0) return true; // a token with no postings here: nothing matches
    // cheapest first: each strategy credits a document for its cheapest candidates only
    list.sort((a, b) => a.cost - b.cost);
    perToken.push(list);
  }
  // (word positions are read document by document)
  const strategy = input.tokenPosition ? 'daat' : (input.strategy ?? 'auto');
  // every token common here: matched and counted on bitmaps, only the page's contenders scored
  if (input.bits && bitMatching.enabled && strategy === 'auto' && input.phrases.length === 0 && !input.maxWeight) {
    const rarest = Math.min(...perToken.map((list) => list.reduce((sum, tc) => sum + tc.ti.docFreq[tc.term]!, 0)));
    if (rarest * BIT_MIN_SHARE >= seg.reader.n) {
      const matched = matchBits(seg, input, perToken, texts, arrayField, weights, { avgLen, n: N }, input.bits.filters(), input.bits.sink, shouldStop);
      bitMatching.used++;
      if (matched === false) return false;
      input.bits.matched(matched);
      return true;
    }
  }
  if (T === 1 && input.phrases.length === 0 && (strategy === 'auto' || strategy === 'one-token')) return matchOneToken(seg, input, filters, perToken[0]!, texts, arrayField, weights, onMatch);
  // Term-at-a-time pays off when every token is common (the intersection is large); with a
  // rare token, the leapfrog below skips most of the common tokens' documents.
  if (input.phrases.length === 0 && strategy !== 'daat') {
    // documents per token (summed over its candidates); matchTaat takes the rarest first
    const df = perToken.map((list) => list.reduce((sum, tc) => sum + tc.ti.docFreq[tc.term]!, 0));
    if (strategy === 'taat' || Math.min(...df) * TAAT_MIN_SHARE >= seg.reader.n) return matchTaat(seg, input, filters, perToken, df, texts, arrayField, weights, { avgLen, n: N }, onMatch, threshold);
  }
  const deleted = seg.deleted;
  const { allow, exclude, seen } = filters;
  const tokMin = new Int32Array(T);
  const fieldTokenMask = new Int32Array(F);
  /** Per field, the tokens its cheapest candidates hold as words of their own (not parts). */
  const fieldWholeMask = new Int32Array(F);
  const pos = new DocPositions(T * F);
  const needAll = T > 1 || input.phrases.length > 0;
  const exactArrays = input.prioritizeExact && T === input.totalTokens && arrayField.some(Boolean);
  const full = T === input.totalTokens;
  // (with max_weight the best field may be heavier than the bound assumes: no pruning)
  const canPrune = input.phrases.length === 0 && !input.maxWeight;
  let target = 0;
  let steps = 0;
  for (;;) {
    // leapfrog: bring every token's union iterator to the same document
    let agreed = true;
    for (let t = 0; t < T; t++) {
      let min = Infinity;
      const list = perToken[t]!;
      for (let x = 0; x < list.length; x++) {
        const c = list[x]!.cursor;
        const d = c.doc < target ? c.advance(target) : c.doc;
        if (d < min) min = d;
      }
      if (min === Infinity) return true;
      if (min > target) {
        target = min;
        agreed = false;
        break;
      }
    }
    if (!agreed) continue;
    const d = target;
    target = d + 1;
    if ((++steps & 1023) === 0 && shouldStop()) return false;
    if ((allow !== null && allow[d] === 0) || (exclude !== null && exclude[d] === 1) || (seen !== null && seen[d] === 1) || isDeleted(deleted, d)) continue;

    // typos and which fields hold which tokens (the cheapest candidates only)
    for (let f = 0; f < F; f++) {
      fieldTokenMask[f] = 0;
      fieldWholeMask[f] = 0;
    }
    let typoCost = 0;
    for (let t = 0; t < T; t++) {
      let minCost = 99;
      const list = perToken[t]!;
      for (let x = 0; x < list.length; x++) {
        const tc = list[x]!;
        if (tc.cursor.doc !== d || tc.cost > minCost) continue;
        minCost = tc.cost; // (the list is cheapest first)
        fieldTokenMask[tc.field]! |= 1 << t;
        if (tc.part === 0) fieldWholeMask[tc.field]! |= 1 << t;
      }
      tokMin[t] = minCost;
      typoCost += minCost;
    }
    const cov = coverage(fieldTokenMask, weights);
    const base = baseScore(T, typoCost, cov >>> 8);
    // the best this document could score (adjacent tokens, an exact match) loses to the k-th hit:
    // counted, but it cannot reach the page
    if (canPrune && upperScore(base, cov & 255) < threshold()) {
      onMatch(d, base);
      continue;
    }
    if (needAll || exactArrays || input.tokenPosition) {
      pos.reset();
      for (let t = 0; t < T; t++) {
        const list = perToken[t]!;
        for (let x = 0; x < list.length; x++) {
          const tc = list[x]!;
          if (tc.cursor.doc !== d || tc.cost !== tokMin[t] || (!needAll && !input.tokenPosition && !arrayField[tc.field])) continue;
          pos.add(t * F + tc.field, tc.cursor, tc.cost === 0 && tc.part === 0, tc.part);
        }
      }
      // phrases must be adjacent in one field
      if (input.phrases.length > 0 && !phrasesHold(input, pos, F)) continue;
    }
    const tie = input.tokenPosition ? earliness(pos, fieldTokenMask, T, weights) : T > 1 ? rarity(perToken, tokMin, texts, avgLen, d, N) : 0;
    onMatch(d, base + bestField(pos, fieldTokenMask, fieldWholeMask, T, weights, input.prioritizeExact && full, tokMin, texts, d, arrayField, input.maxWeight === true) + tie);
  }
}

/**
 * prioritize_token_position's tie-break: TIE_MAX minus the earliest position of a query word
 * in the heaviest field holding one (the first among equals), so earlier ranks higher.
 */
function earliness(pos: DocPositions, masks: Int32Array, T: number, weights: readonly number[]): number {
  const F = weights.length;
  let field = -1;
  for (let f = 0; f < F; f++) if (masks[f] !== 0 && (field < 0 || weights[f]! > weights[field]!)) field = f;
  let first = TIE_MAX;
  for (let t = 0; t < T && field >= 0; t++) {
    const slot = t * F + field;
    if (pos.len[slot]! > 0) first = Math.min(first, pos.buf[slot]![0]! >> 1);
  }
  return TIE_MAX - first;
}

/**
 * The rarity tie-break (score.ts rarityTie) of document `d`: per query token, the best BM25
 * weight among its cheapest candidates' cursors standing on `d`, summed, with the
 * collection's statistics (CorpusStats) when given. A part of a glued word counts its own
 * rarity over its field's length. Read only for documents that may
 * reach the page (after the upperScore test), from cursors already on them.
 */
export function rarity(perToken: TokenCursor[][], tokMin: Int32Array, texts: (TextIndex | null)[], avgLen: number[], d: number, n: number): number {
  let sum = 0;
  for (let t = 0; t < perToken.length; t++) {
    let best = 0;
    for (const tc of perToken[t]!) {
      if (tc.cursor.doc !== d || tc.cost !== tokMin[t]) continue;
      const len = (texts[tc.field] ?? tc.ti).docLength(d);
      const w = bm25(tc.df, n, Math.max(1, tc.cursor.tf), len, avgLen[tc.field]!);
      if (w > best) best = w;
    }
    sum += best;
  }
  return rarityTie(sum, perToken.length, n);
}

/**
 * The score part (score.ts fieldPart) of a document's best field: per field holding any
 * token, the proximity of its tokens (from `pos`) and, when asked, whether it is exactly
 * the query; the best by fieldKey. Shared by the document-at-a-time and term-at-a-time
 * strategies.
 */
export function bestField(
  pos: DocPositions,
  masks: Int32Array,
  /** Per field, the tokens it holds as words of their own (not only as parts of glued words). */
  wholeMasks: Int32Array,
  T: number,
  weights: readonly number[],
  checkExact: boolean,
  tokMin: Int32Array,
  texts: (TextIndex | null)[],
  d: number,
  arrayField: boolean[],
  byWeight: boolean,
): number {
  const F = weights.length;
  let best = -1;
  let bestProx = 0;
  let bestWeight = 0;
  let bestExact = 0;
  let bestWhole = 0;
  for (let f = 0; f < F; f++) {
    const mask = masks[f]!;
    if (mask === 0) continue;
    const count = popcount(mask);
    const whole = (wholeMasks[f]! & mask) === mask ? 1 : 0;
    let prox = 255;
    // (parts of one word may stand for several tokens: a window narrower than adjacent is adjacent)
    if (count > 1) prox = 255 - Math.min(255, Math.max(0, windowSpan(pos, mask, f, T, F, count - 1 + 255) - (count - 1)));
    let exact = 0;
    // (a part of a glued word is never an exact match)
    if (checkExact && count === T && whole === 1 && texts[f]) exact = isExact(pos, f, T, F, tokMin, texts[f]!, d, arrayField[f]!) ? 1 : 0;
    const key = byWeight ? weights[f]! * 2 ** 30 + fieldKey(count, prox, 0, exact, whole) : fieldKey(count, prox, weights[f]!, exact, whole);
    if (key > best) {
      best = key;
      bestProx = prox;
      bestWeight = weights[f]!;
      bestExact = exact;
      bestWhole = whole;
    }
  }
  return fieldPart(bestProx, bestWeight, bestExact, bestWhole);
}

const NO_THRESHOLD = () => -Infinity;

/** Term-at-a-time when the rarest token's postings cover at least 1/TAAT_MIN_SHARE of the segment. */
const TAAT_MIN_SHARE = 8;

/**
 * Accumulator buffers reused from query to query, grown on demand. Between queries they
 * are clean (tok, fmask and wmask 0, cost 255): a query clears exactly the entries it touched as
 * it reads them, instead of filling the whole range up front (megabytes per query on a
 * large segment, whatever the number of hits). `inUse` marks a
 * query in progress: a query that threw half-way leaves the buffers dirty, and the next
 * one then cleans them in full.
 */
const pool = { tok: new Int32Array(0), fmask: new Int32Array(0), wmask: new Int32Array(0), cost: new Uint8Array(0), inUse: false };
function poolFor(n: number, F: number, T: number) {
  if (pool.inUse) {
    pool.tok.fill(0);
    pool.fmask.fill(0);
    pool.wmask.fill(0);
    pool.cost.fill(255);
  }
  if (pool.tok.length < n) pool.tok = new Int32Array(n);
  if (pool.fmask.length < n * F) pool.fmask = new Int32Array(n * F);
  if (pool.wmask.length < n * F) pool.wmask = new Int32Array(n * F);
  if (pool.cost.length < n * T) pool.cost = new Uint8Array(n * T).fill(255);
  pool.inUse = true;
  return pool;
}

/** Scratch for TextIndex.docOrdinals, reused from query to query. */
const ords = { ords: new Int32Array(1024) };

/** One-token matching lists the documents it touches (instead of scanning lo..hi) when its postings are this many times sparser than the segment. */
const SPARSE_RATIO = 16;

/**
 * Several query tokens, no phrases: term-at-a-time, then positions only where needed.
 *
 *   pass 1  decode every candidate's document stream once into per-document accumulators:
 *           which tokens matched, in which fields, at what typo cost (rarest token first;
 *           later tokens touch only documents that hold all the earlier ones)
 *   pass 2  for each document holding every token: score what the accumulators allow; if
 *           the best it could reach still loses to the k-th hit, count it and move on;
 *           otherwise advance fresh cursors to it, read positions, score proximity.
 */
function matchTaat(
  seg: LiveSegment,
  input: MatchInput,
  filters: SegmentFilters,
  perToken: TokenCursor[][],
  /** Documents per token (summed over its candidates). */
  df: number[],
  texts: (TextIndex | null)[],
  arrayField: boolean[],
  weights: number[],
  /** The statistics of the rarity tie-break (matchSegment). */
  tieStats: { avgLen: number[]; n: number },
  onMatch: (ord: number, score: number) => void,
  threshold: () => number,
): boolean {
  const n = seg.reader.n;
  const T = perToken.length;
  const F = weights.length;
  const { tok, fmask, wmask, cost } = poolFor(n, F, T);
  // (with no part of a glued word among the candidates every field holds its tokens whole:
  // the whole masks are the field masks, and nothing is kept for them)
  const parts = perToken.some((list) => list.some((tc) => tc.part === 1));
  let lo = n;
  let hi = -1;
  // Rarest token first: a document must hold every token, so from the second token on only
  // documents holding all the earlier ones are updated (`need`), and only they need
  // clearing below. On "library for the" this skips most postings of "for" and "the*".
  const order = Array.from({ length: T }, (_, t) => t).sort((a, b) => df[a]! - df[b]!);
  let need = 0;
  for (const t of order) {
    const bit = 1 << t;
    for (const tc of perToken[t]!) {
      const f = tc.field;
      const tcost = tc.cost;
      const wbit = tc.part === 0 ? bit : 0;
      const count = tc.ti.docOrdinals(tc.term, ords);
      const docs = ords.ords;
      // (candidates come cheapest first: a document's fields are credited for its cheapest ones only)
      if (need === 0) {
        for (let x = 0; x < count; x++) {
          const d = docs[x]!;
          const k = d * T + t;
          if (tcost > cost[k]!) continue;
          if (d < lo) lo = d;
          if (d > hi) hi = d;
          tok[d]! |= bit;
          fmask[d * F + f]! |= bit;
          if (parts) wmask[d * F + f]! |= wbit;
          cost[k] = tcost;
        }
        continue;
      }
      for (let x = 0; x < count; x++) {
        const d = docs[x]!;
        const held = tok[d]!;
        const k = d * T + t;
        if ((held & need) !== need || tcost > cost[k]!) continue;
        tok[d] = held | bit;
        fmask[d * F + f]! |= bit;
        if (parts) wmask[d * F + f]! |= wbit;
        cost[k] = tcost;
      }
    }
    need |= bit;
  }
  const all = T === 32 ? -1 : (1 << T) - 1;
  const { allow, exclude, seen } = filters;
  const deleted = seg.deleted;
  const full = T === input.totalTokens;
  const pos = new DocPositions(T * F);
  const tokMin = new Int32Array(T);
  // fresh cursors for pass 2 (pass 1 used up the others)
  const cursors: TokenCursor[][] = perToken.map((list) => list.map((tc) => ({ ...tc, cursor: tc.ti.cursor(tc.term, termSkips(tc.ti, tc.term)) })));
  const masks = new Int32Array(F);
  const wholeMasks = parts ? new Int32Array(F) : masks;
  for (let d = lo; d <= hi; d++) {
    const held = tok[d]!;
    if (held === 0) continue;
    // read this document's accumulators and leave them clean (see pool)
    tok[d] = 0;
    let typoCost = 0;
    for (let t = 0; t < T; t++) {
      tokMin[t] = cost[d * T + t]!;
      cost[d * T + t] = 255;
      typoCost += tokMin[t]!;
    }
    for (let f = 0; f < F; f++) {
      masks[f] = fmask[d * F + f]!;
      fmask[d * F + f] = 0;
      if (parts) {
        wholeMasks[f] = wmask[d * F + f]!;
        wmask[d * F + f] = 0;
      }
    }
    if (held !== all) continue;
    if ((allow !== null && allow[d] === 0) || (exclude !== null && exclude[d] === 1) || (seen !== null && seen[d] === 1) || isDeleted(deleted, d)) continue;
    const cov = coverage(masks, weights);
    const base = baseScore(T, typoCost, cov >>> 8);
    if (!input.maxWeight && upperScore(base, cov & 255) < threshold()) {
      onMatch(d, base); // counted, but it cannot reach the page
      continue;
    }
    pos.reset();
    for (let t = 0; t < T; t++) {
      for (const tc of cursors[t]!) {
        const c = tc.cursor;
        if (tc.cost !== tokMin[t]) continue;
        if (c.doc < d) c.advance(d);
        if (c.doc === d) pos.add(t * F + tc.field, c, tc.cost === 0 && tc.part === 0, tc.part);
      }
    }
    onMatch(d, base + bestField(pos, masks, wholeMasks, T, weights, input.prioritizeExact && full, tokMin, texts, d, arrayField, input.maxWeight === true) + (T > 1 ? rarity(cursors, tokMin, texts, tieStats.avgLen, d, tieStats.n) : 0));
  }
  pool.inUse = false;
  return true;
}

/**
 * One query token: term-at-a-time. Each candidate's postings are decoded once, straight
 * into per-document accumulators (fields matched, cheapest typo cost, exact element match
 * in array fields), then the documents are scored in ordinal order. For common words this
 * is several times cheaper than walking a union of cursors document by document. Hot.
 */
function matchOneToken(
  seg: LiveSegment,
  input: MatchInput,
  filters: SegmentFilters,
  cursors: TokenCursor[],
  texts: (TextIndex | null)[],
  arrayField: boolean[],
  weights: number[],
  onMatch: (ord: number, score: number) => void,
): boolean {
  const n = seg.reader.n;
  const acc = poolFor(n, 1, 1);
  const fmask = acc.tok;
  /** Per document, the fields holding the token as a word of its own (not only as a part). */
  const wmask = acc.wmask;
  // (no part among the candidates: every field holds the token whole, nothing kept for it)
  const parts = cursors.some((tc) => tc.part === 1);
  const cost = acc.cost;
  let postings = 0;
  for (const tc of cursors) postings += tc.ti.docFreq[tc.term]!;
  // few postings: list the documents touched, so scoring does not scan the segment
  const touched = postings * SPARSE_RATIO < n ? new Int32Array(postings) : null;
  let nTouched = 0;
  const exactArr = input.prioritizeExact && arrayField.some(Boolean) ? new Uint8Array(n) : null;
  let scratch = new Int32Array(16);
  let lo = n;
  let hi = -1;
  for (const tc of cursors) {
    const c = tc.cursor;
    const bit = 1 << tc.field;
    const wbit = tc.part === 0 ? bit : 0;
    const tcost = tc.cost;
    const checkExact = exactArr !== null && arrayField[tc.field] && tcost === 0 && tc.part === 0;
    const lengths = checkExact ? texts[tc.field]!.lengths : null;
    // (cursors come cheapest first: a document's fields are credited for its cheapest candidates only)
    if (lengths === null) {
      // no positions needed: the document ordinals alone, decoded in one tight loop
      const count = tc.ti.docOrdinals(tc.term, ords);
      const docs = ords.ords;
      for (let x = 0; x < count; x++) {
        const d = docs[x]!;
        if (tcost > cost[d]!) continue;
        if (touched !== null && fmask[d] === 0) touched[nTouched++] = d;
        fmask[d]! |= bit;
        if (parts) wmask[d]! |= wbit;
        cost[d] = tcost;
        if (d < lo) lo = d;
        if (d > hi) hi = d;
      }
      continue;
    }
    while (c.next() !== Infinity) {
      const d = c.doc;
      if (tcost > cost[d]!) continue;
      if (touched !== null && fmask[d] === 0) touched[nTouched++] = d;
      fmask[d]! |= bit;
      if (parts) wmask[d]! |= wbit;
      cost[d] = tcost;
      if (d < lo) lo = d;
      if (d > hi) hi = d;
      if (lengths !== null) {
        if (c.tf > scratch.length) scratch = new Int32Array(c.tf * 2);
        const m = c.positionsInto(scratch, 0);
        const base = lengths.offsets[d]!;
        for (let i = 0; i < m; i++) {
          const p = scratch[i]!;
          if (p % ELEMENT_SHIFT === 0 && lengths.values[base + p / ELEMENT_SHIFT] === 1) {
            exactArr![d] = 1;
            break;
          }
        }
      }
    }
  }
  const { allow, exclude, seen } = filters;
  const deleted = seg.deleted;
  const F = weights.length;
  const full = input.totalTokens === 1;
  // sorting the list costs ~k log k; scanning lo..hi ~1 per slot: take the cheaper
  const order = touched !== null && nTouched * Math.log2(nTouched + 2) * 4 < hi - lo ? touched.subarray(0, nTouched).sort() : null;
  const count = order !== null ? order.length : hi - lo + 1;
  // Newest first: equal scores are ordered by seq, newest first (the default sort's last
  // clause), so walking down lets the top k fill with the winners at once and turns the
  // rest away at the first comparison; walking up, every tie would displace the heap's
  // root (a common word would cost a heap update per document).
  for (let i = count - 1; i >= 0; i--) {
    const d = order !== null ? order[i]! : lo + i;
    const mask = fmask[d]!;
    if (mask === 0) continue;
    // read this document's accumulators and leave them clean (see pool)
    const typo = cost[d]!;
    const wholeFields = parts ? wmask[d]! : mask;
    fmask[d] = 0;
    if (parts) wmask[d] = 0;
    cost[d] = 255;
    if ((allow !== null && allow[d] === 0) || (exclude !== null && exclude[d] === 1) || (seen !== null && seen[d] === 1) || isDeleted(deleted, d)) continue;
    // (a part of a glued word is never an exact match)
    let exact = 0;
    if (input.prioritizeExact && full && typo === 0) {
      for (let f = 0; f < F; f++) {
        if (((mask & wholeFields) >> f) & 1 && (arrayField[f] ? exactArr![d] === 1 : texts[f]!.lengthOf(d) === 1)) exact |= 1 << f;
      }
    }
    onMatch(d, oneTokenScore(mask, wholeFields, exact, typo, weights));
  }
  pool.inUse = false;
  return true;
}

/**
 * The score of a document one query token matched (matchOneToken, bitmatch.ts): `mask` has
 * bit f for each field holding the token at its cheapest cost `typo`, `whole` for those
 * holding it as a word of its own, `exact` for those that are exactly the token.
 */
export function oneTokenScore(mask: number, whole: number, exact: number, typo: number, weights: readonly number[]): number {
  let best = -1;
  let bestWeight = 0;
  let bestExact = 0;
  let bestWhole = 0;
  for (let f = 0; f < weights.length; f++) {
    if ((mask & (1 << f)) === 0) continue;
    const w = (whole >> f) & 1;
    const x = (exact >> f) & 1;
    const key = fieldKey(1, 255, weights[f]!, x, w);
    if (key > best) {
      best = key;
      bestWeight = weights[f]!;
      bestExact = x;
      bestWhole = w;
    }
  }
  return baseScore(1, typo, popcount(mask)) + fieldPart(255, bestWeight, bestExact, bestWhole);
}

/** The field (one element) consists of exactly the query tokens, in order, without typos. */
function isExact(pos: DocPositions, f: number, T: number, F: number, tokMin: Int32Array, ti: TextIndex, d: number, array: boolean): boolean {
  for (let t = 0; t < T; t++) if (tokMin[t] !== 0) return false;
  if (!array && T === 1) {
    // a single-valued field holding one token that matched: exactly the query
    return ti.lengthOf(d) === 1;
  }
  // (the positions of candidates without typos only)
  const X = pos.exact;
  const first = pos.buf[X + f]!;
  for (let i = 0; i < pos.len[X + f]!; i++) {
    const v = first[i]!; // (2p: parts never enter the exact twin)
    const p = v >> 1;
    if (p % ELEMENT_SHIFT !== 0) continue;
    const el = Math.floor(p / ELEMENT_SHIFT);
    const lo = ti.lengths.offsets[d]!;
    if (lo + el >= ti.lengths.offsets[d + 1]! || ti.lengths.values[lo + el] !== T) continue;
    let ok = true;
    for (let t = 1; t < T && ok; t++) ok = pos.has(X + t * F + f, v + 2 * t);
    if (ok) return true;
  }
  return false;
}

function phrasesHold(input: MatchInput, pos: DocPositions, F: number): boolean {
  for (const phrase of input.phrases) {
    // phrase token indexes are into the full token list; map to positions in `tokens`
    const local = phrase.map((ti) => input.tokens.indexOf(ti));
    if (local.some((x) => x < 0)) continue; // dropped
    let found = false;
    for (let f = 0; f < F && !found; f++) {
      const slot0 = local[0]! * F + f;
      const first = pos.buf[slot0]!;
      for (let i = 0; i < pos.len[slot0]!; i++) {
        const p = first[i]!;
        let ok = true;
        // (2p: a phrase's words are matched whole, never by parts)
        for (let j = 1; j < local.length && ok; j++) ok = pos.has(local[j]! * F + f, p + 2 * j);
        if (ok) {
          found = true;
          break;
        }
      }
    }
    if (!found) return false;
  }
  return true;
}
