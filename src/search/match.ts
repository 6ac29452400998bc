/**
 * src/search: here is a parsed query and an index snapshot, which documents match and
 * how well?
 *
 * Matching is separate from collecting: match.ts finds documents and scores them, and
 * hands each one to a callback; collect.ts keeps the top k, counts facets and groups.
 *
 * For each query token we pick candidate terms per field (the token itself, prefix
 * expansions of the last token, typo expansions), then walk the postings of every
 * candidate document-at-a-time. A document matches when every token has a candidate in
 * some query_by field (a leapfrog intersection of one union-iterator per token):
 *
 *   token "linux"  : name/linux ∪ summary/linux ∪ description/linux   -> 3 9 12 40 ...
 *   token "kern"   : summary/kernel ∪ description/kernel ∪ ...         -> 9 12 77 ...
 *                                                            intersection: 9 12 ...
 *
 * The text_match score orders by, most significant first: tokens matched, fewer typos,
 * proximity of the tokens in the best field, that field's weight, exact field match.
 *
 *   bits 44..49 tokens matched   36..43 255 - typo cost   28..35 proximity
 *   20..27 best field weight     19 exact match           13..18 fields matched
 */
import type { Field } from '../schema/schema.js';
import type { LiveSegment } from '../index/manifest.js';
import { isDeleted } from '../index/manifest.js';
import { ELEMENT_SHIFT, type PostingCursor, type TextIndex } from '../index/segment.js';
import { enumerateTerms } from './expand.js';

export interface FieldSpec {
  field: Field;
  /** Index of the field in query_by. */
  index: number;
  weight: number;
  prefix: boolean;
  numTypos: number;
}

export interface Candidate {
  term: string;
  cost: number;
}

/** candidates[token][fieldSpec] */
export type CandidateTable = Candidate[][][];

export interface DocMatch {
  seg: number;
  ord: number;
  score: number;
  tokensMatched: number;
  typoCost: number;
  bestFieldWeight: number;
  bestFieldScore: number;
  fieldsMatched: number;
  /** Tokens dropped to reach this document. */
  dropped: number;
}

/** Chooses the candidate terms for one token in one field, across all segments. */
export function selectCandidates(
  segments: LiveSegment[],
  field: Field,
  token: string,
  maxCost: number,
  prefix: boolean,
  limit: number,
): Candidate[] {
  const agg = new Map<string, { cost: number; df: number }>();
  const add = (term: string, cost: number, df: number) => {
    const cur = agg.get(term);
    if (!cur) agg.set(term, { cost, df });
    else {
      if (cost < cur.cost) cur.cost = cost;
      cur.df += df;
    }
  };
  const keepPerRange = Math.max(limit * 4, 16);
  for (const seg of segments) {
    const ti = seg.reader.text(field.id);
    if (!ti) continue;
    enumerateTerms(
      ti.terms,
      token,
      maxCost,
      prefix,
      (i, cost) => add(ti.terms.get(i), cost, ti.docFreq[i]!),
      (lo, hi, cost) => {
        if (hi - lo <= keepPerRange) {
          for (let i = lo; i < hi; i++) add(ti.terms.get(i), cost, ti.docFreq[i]!);
          return;
        }
        // a short prefix covers many terms: keep the most frequent ones (and the token itself)
        const exact = ti.terms.find(token);
        if (exact >= lo && exact < hi) add(token, 0, ti.docFreq[exact]!);
        const top: number[] = [];
        const df = ti.docFreq;
        for (let i = lo; i < hi; i++) {
          if (top.length < keepPerRange) {
            top.push(i);
            if (top.length === keepPerRange) top.sort((a, b) => df[b]! - df[a]!);
          } else if (df[i]! > df[top[top.length - 1]!]!) {
            let p = top.length - 1;
            while (p > 0 && df[top[p - 1]!]! < df[i]!) p--;
            top.splice(p, 0, i);
            top.pop();
          }
        }
        for (const i of top) add(ti.terms.get(i), cost, df[i]!);
      },
    );
  }
  const list = [...agg.entries()].map(([term, v]) => ({ term, cost: v.cost, df: v.df }));
  list.sort((a, b) => a.cost - b.cost || (a.term === token ? -1 : b.term === token ? 1 : 0) || b.df - a.df || (a.term < b.term ? -1 : 1));
  const out = list.slice(0, limit).map(({ term, cost }) => ({ term, cost }));
  if (!out.some((c) => c.term === token)) {
    const ex = list.find((c) => c.term === token);
    if (ex) out.unshift({ term: ex.term, cost: ex.cost });
  }
  return out;
}

interface TokenCursor {
  cursor: PostingCursor;
  field: number; // index into FieldSpec[]
  cost: number;
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
}

export interface SegmentFilters {
  /** 1 = allowed (filter_by), or null for all. */
  allow: Uint8Array | null;
  /** 1 = excluded by a -token. */
  exclude: Uint8Array | null;
  /** 1 = already matched in an earlier round (token dropping). */
  seen: Uint8Array | null;
}

const TOK_SHIFT = 2 ** 44;
const TYPO_SHIFT = 2 ** 36;
const PROX_SHIFT = 2 ** 28;
const WEIGHT_SHIFT = 2 ** 20;
const EXACT_SHIFT = 2 ** 19;
const FIELDS_SHIFT = 2 ** 13;

/** The text_match_info fields, decoded from the score bits (nothing else is kept per document). */
export function matchInfo(score: number, totalTokens: number): DocMatch {
  const tokensMatched = Math.floor(score / TOK_SHIFT) % 64;
  const typoCost = 255 - (Math.floor(score / TYPO_SHIFT) % 256);
  const bestFieldWeight = Math.floor(score / WEIGHT_SHIFT) % 256;
  const fieldsMatched = Math.floor(score / FIELDS_SHIFT) % 64;
  return {
    seg: -1,
    ord: -1,
    score,
    tokensMatched,
    typoCost,
    bestFieldWeight,
    bestFieldScore: score - tokensMatched * TOK_SHIFT - (score % FIELDS_SHIFT) - fieldsMatched * FIELDS_SHIFT,
    fieldsMatched,
    dropped: totalTokens - tokensMatched,
  };
}

/**
 * Matches one segment, calling `onMatch(ord, score)` for every matching, allowed, live
 * document. Returns false when cut off by `shouldStop`.
 *
 * Hot: one iteration per candidate document. Nothing is allocated per document; token
 * positions are decoded only when proximity, phrases or an exact check on an array field
 * need them (a single-valued field is an exact match when its length equals the query's).
 */
export function matchSegment(
  seg: LiveSegment,
  input: MatchInput,
  filters: SegmentFilters,
  onMatch: (ord: number, score: number) => void,
  shouldStop: () => boolean,
): boolean {
  const { fields, tokens } = input;
  const T = tokens.length;
  const F = fields.length;
  const texts: (TextIndex | null)[] = fields.map((f) => seg.reader.text(f.field.id));
  const arrayField = fields.map((f) => f.field.isArray || f.field.type === 'string*');
  // cursors per token
  const perToken: TokenCursor[][] = [];
  for (let t = 0; t < T; t++) {
    const list: TokenCursor[] = [];
    const cand = input.candidates[tokens[t]!]!;
    for (let f = 0; f < F; f++) {
      const ti = texts[f];
      if (!ti) continue;
      for (const c of cand[f]!) {
        const idx = ti.terms.find(c.term);
        if (idx >= 0) list.push({ cursor: ti.cursor(idx), field: f, cost: c.cost });
      }
    }
    if (list.length === 0) return true; // a token with no postings here: nothing matches
    perToken.push(list);
  }
  const deleted = seg.deleted;
  const { allow, exclude, seen } = filters;
  const tokMin = new Int32Array(T);
  const fieldTokenMask = new Int32Array(F);
  const positions: number[][][] = Array.from({ length: T }, () => Array.from({ length: F }, () => [] as number[]));
  const filled: number[][] = [];
  const scratch: number[] = [];
  const needAll = T > 1 || input.phrases.length > 0;
  const exactArrays = input.prioritizeExact && T === input.totalTokens && arrayField.some(Boolean);
  const full = T === input.totalTokens;
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

    // score the document
    for (let f = 0; f < F; f++) fieldTokenMask[f] = 0;
    let typoCost = 0;
    for (let t = 0; t < T; t++) {
      let minCost = 99;
      const list = perToken[t]!;
      for (let x = 0; x < list.length; x++) {
        const tc = list[x]!;
        if (tc.cursor.doc !== d) continue;
        if (tc.cost < minCost) minCost = tc.cost;
        fieldTokenMask[tc.field]! |= 1 << t;
      }
      tokMin[t] = minCost;
      typoCost += minCost;
    }
    if (needAll || exactArrays) {
      for (let x = 0; x < filled.length; x++) filled[x]!.length = 0;
      filled.length = 0;
      for (let t = 0; t < T; t++) {
        const list = perToken[t]!;
        for (let x = 0; x < list.length; x++) {
          const tc = list[x]!;
          if (tc.cursor.doc !== d || (!needAll && !arrayField[tc.field])) continue;
          const dst = positions[t]![tc.field]!;
          if (dst.length === 0) {
            tc.cursor.positions(dst);
            filled.push(dst);
          } else {
            tc.cursor.positions(scratch);
            for (let y = 0; y < scratch.length; y++) dst.push(scratch[y]!);
            dst.sort((a, b) => a - b);
          }
        }
      }
      // phrases must be adjacent in one field
      if (input.phrases.length > 0 && !phrasesHold(input, positions, F)) continue;
    }
    let best = -1;
    let bestProx = 0;
    let bestWeight = 0;
    let bestExact = 0;
    let fieldsMatched = 0;
    for (let f = 0; f < F; f++) {
      const mask = fieldTokenMask[f]!;
      if (mask === 0) continue;
      fieldsMatched++;
      const count = popcount(mask);
      let prox = 255;
      if (count > 1) prox = 255 - Math.min(255, windowSpan(positions, mask, f, T) - (count - 1));
      let exact = 0;
      if (input.prioritizeExact && full && count === T && texts[f]) {
        exact = isExact(positions, f, T, tokMin, texts[f]!, d, arrayField[f]!) ? 1 : 0;
      }
      const weight = fields[f]!.weight;
      const key = count * 2 ** 24 + prox * 2 ** 16 + weight * 2 + exact;
      if (key > best) {
        best = key;
        bestProx = prox;
        bestWeight = weight;
        bestExact = exact;
      }
    }
    onMatch(
      d,
      T * TOK_SHIFT +
        (255 - Math.min(255, typoCost)) * TYPO_SHIFT +
        bestProx * PROX_SHIFT +
        Math.min(255, bestWeight) * WEIGHT_SHIFT +
        bestExact * EXACT_SHIFT +
        Math.min(63, fieldsMatched) * FIELDS_SHIFT,
    );
  }
}

function popcount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Smallest window (max - min position) holding one occurrence of every token in `mask`. */
function windowSpan(positions: number[][][], mask: number, f: number, T: number): number {
  const lists: number[][] = [];
  for (let t = 0; t < T; t++) if (mask & (1 << t)) lists.push(positions[t]![f]!);
  const k = lists.length;
  const ptr = new Array<number>(k).fill(0);
  let best = Infinity;
  for (;;) {
    let minI = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < k; i++) {
      const v = lists[i]![ptr[i]!]!;
      if (v < min) {
        min = v;
        minI = i;
      }
      if (v > max) max = v;
    }
    if (max - min < best) best = max - min;
    if (best <= k - 1) break;
    ptr[minI]!++;
    if (ptr[minI]! >= lists[minI]!.length) break;
  }
  return best;
}

/** The field (one element) consists of exactly the query tokens, in order, without typos. */
function isExact(positions: number[][][], f: number, T: number, tokMin: Int32Array, ti: TextIndex, d: number, array: boolean): boolean {
  for (let t = 0; t < T; t++) if (tokMin[t] !== 0) return false;
  if (!array && T === 1) {
    // a single-valued field holding one token that matched: exactly the query
    const a = ti.lengths.offsets[d]!;
    return a < ti.lengths.offsets[d + 1]! && ti.lengths.values[a] === 1;
  }
  for (const p of positions[0]![f]!) {
    if (p % ELEMENT_SHIFT !== 0) continue;
    const el = Math.floor(p / ELEMENT_SHIFT);
    const lo = ti.lengths.offsets[d]!;
    if (lo + el >= ti.lengths.offsets[d + 1]! || ti.lengths.values[lo + el] !== T) continue;
    let ok = true;
    for (let t = 1; t < T && ok; t++) ok = positions[t]![f]!.includes(p + t);
    if (ok) return true;
  }
  return false;
}

function phrasesHold(input: MatchInput, positions: number[][][], F: number): boolean {
  for (const phrase of input.phrases) {
    // phrase token indexes are into the full token list; map to positions in `tokens`
    const local = phrase.map((ti) => input.tokens.indexOf(ti));
    if (local.some((x) => x < 0)) continue; // dropped
    let found = false;
    for (let f = 0; f < F && !found; f++) {
      const first = positions[local[0]!]![f]!;
      for (const p of first) {
        let ok = true;
        for (let i = 1; i < local.length && ok; i++) ok = positions[local[i]!]![f]!.includes(p + i);
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
