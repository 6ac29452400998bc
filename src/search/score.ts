/**
 * The text_match score: one number whose bits order hits by, most significant first, the
 * tokens matched, fewer typos, the proximity of the tokens in the best field, that field's
 * weight, an exact match of the field, whole words in the field, then the number of fields
 * matched:
 *
 *   bits 44..49 tokens matched   36..43 255 - typo cost   28..35 proximity
 *   20..27 best field weight     19 exact match           18 whole words
 *   13..17 fields matched        0..12 the rarity tie-break (two words or more; rarityTie)
 *
 * "Whole words": the best field holds every query word it holds as a word of its own, not
 * only as a part of a word glued by punctuation (`dash` in `Lo-dash`). A part costs what
 * the word would in the typo bucket, so a glued word's part in a heavier field wins over
 * the word in a lighter one; among equals up to exactness the whole word wins (`evince`
 * over `evince-common` for `evcince`).
 *
 * text_match is the score without bits 0..12 (textMatchOf): what is reported and what the
 * text_match sort clause compares. The tie-break is a sort clause of its own (`rarity`,
 * search.ts sortClauses) after every other but the newest-first one, so that sort fields
 * (default_sorting_field) keep ordering equal text matches as in the reference engine.
 *
 * The match strategies (match.ts) assemble a score only through these functions: the parts
 * known from which tokens hit which fields (baseScore), plus the best field's (fieldPart).
 * text_match_info is decoded from the score alone, so nothing else is kept per document.
 * Every value is an integer below 2^50: exact in a double, whatever the order of the sums.
 */

const TOK_SHIFT = 2 ** 44;
const TYPO_SHIFT = 2 ** 36;
const PROX_SHIFT = 2 ** 28;
const WEIGHT_SHIFT = 2 ** 20;
const EXACT_SHIFT = 2 ** 19;
const WHOLE_SHIFT = 2 ** 18;
const FIELDS_SHIFT = 2 ** 13;
/** Fields matched are counted up to this many (bits 13..17). */
const MAX_FIELDS = 31;

/** The score without the best field's part: tokens matched, typo cost (summed over tokens), fields matched. */
export function baseScore(tokens: number, typoCost: number, fieldsMatched: number): number {
  return tokens * TOK_SHIFT + (255 - Math.min(255, typoCost)) * TYPO_SHIFT + Math.min(MAX_FIELDS, fieldsMatched) * FIELDS_SHIFT;
}

/** The score with `n` more tokens matched (a synonym's words counting as the words they stand for). */
export function addTokensMatched(score: number, n: number): number {
  return score + n * TOK_SHIFT;
}

/**
 * A score as if `tokens` query tokens had matched, at `extraCost` more: for the query's
 * words joined or split (search/keyword.ts), whose match stands for all the words as typed,
 * a space taken for a typo.
 */
export function respaced(score: number, tokens: number, extraCost: number): number {
  const matched = Math.floor(score / TOK_SHIFT) % 64;
  const typoBits = Math.floor(score / TYPO_SHIFT) % 256;
  return score + (Math.min(63, tokens) - matched) * TOK_SHIFT - Math.min(typoBits, extraCost) * TYPO_SHIFT;
}

/**
 * The best a document with this base can score: its tokens adjacent, whole words in a field
 * of this weight, an exact match of it unless `exact` is 0 (known impossible), the largest
 * tie-break.
 */
export function upperScore(base: number, weight: number, exact = 1): number {
  return base + 255 * PROX_SHIFT + Math.min(255, weight) * WEIGHT_SHIFT + exact * EXACT_SHIFT + WHOLE_SHIFT + TIE_MAX;
}

/** The rarity tie-break takes the bits below this unit. */
export const TIE_UNIT = 2 ** 13;

/** The largest rarity tie-break (bits 0..12). */
export const TIE_MAX = TIE_UNIT - 1;

/** text_match: the score without its tie-break bits. */
export function textMatchOf(score: number): number {
  // (a floored division by a power of two is exact, and much cheaper than % on a double)
  return Math.floor(score / TIE_UNIT) * TIE_UNIT;
}

/** BM25's term-frequency saturation and length normalisation (the usual values). */
const BM25_K1 = 1.2;
const BM25_B = 0.75;

/**
 * One query word's BM25 weight in one field of a document: `df` documents of `n` hold the
 * term, `tf` times in this one, whose field is `len` words long against `avgLen` on average.
 * (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009.)
 */
export function bm25(df: number, n: number, tf: number, len: number, avgLen: number): number {
  return bm25Idf(idfOf(df, n), tf, len, avgLen);
}

/** BM25's inverse document frequency of a term held by `df` documents of `n`. */
export function idfOf(df: number, n: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/** bm25 with the term's idfOf already computed (the same number, to the last bit). */
export function bm25Idf(idf: number, tf: number, len: number, avgLen: number): number {
  return (idf * tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * len) / Math.max(1, avgLen)));
}

/** rarityTie's divisor for the last `n` it was asked for (one log per search, not per document). */
let tieN = -1;
let tieMost = 0;

/**
 * The tie-break bits of a score: the BM25 sum of a document's `tokens` query words (each its
 * best field's weight), scaled into 0..TIE_MAX by the most one word can weigh in a segment of
 * `n` documents. Only documents equal in every bucket above compare by it: rarer words, and
 * the same words in shorter fields, first; equals then fall to the sort's next clause.
 */
export function rarityTie(sum: number, tokens: number, n: number): number {
  if (n !== tieN) {
    tieN = n;
    tieMost = Math.log(1 + (n + 0.5) / 0.5) * (BM25_K1 + 1);
  }
  const most = tieMost;
  return Math.max(0, Math.min(TIE_MAX, Math.round((sum / (tokens * most)) * TIE_MAX)));
}

/**
 * The smallest BM25 sum whose rarityTie (same `tokens`, `n`) may reach `tie`, a little
 * below it: a sum under it has a tie-break below `tie` (for bounds: never above the exact
 * threshold, whatever the rounding).
 */
export function tieSumFor(tie: number, tokens: number, n: number): number {
  if (tie <= 0) return -Infinity;
  rarityTie(0, tokens, n); // (sets tieMost for n)
  return ((tie - 0.5) / TIE_MAX) * tokens * tieMost * (1 - 1e-9) - 1e-12;
}

/**
 * How one field of a document ranks against its other fields: more query tokens, then
 * closer together, then heavier, then exact, then whole words. `prox` 0..255 (255:
 * adjacent), `weight` 0..255, `exact` and `whole` 0 or 1. The largest key is the
 * document's best field.
 */
export function fieldKey(count: number, prox: number, weight: number, exact: number, whole: number): number {
  return count * 2 ** 24 + prox * 2 ** 16 + weight * 4 + exact * 2 + whole;
}

/** The best field's part of the score: `prox` 0..255 (match.ts windowSpan never puts two tokens on one position). */
export function fieldPart(prox: number, weight: number, exact: number, whole: number): number {
  return prox * PROX_SHIFT + Math.min(255, weight) * WEIGHT_SHIFT + exact * EXACT_SHIFT + whole * WHOLE_SHIFT;
}

/**
 * The fields a document matched and the weight of the field holding most of its tokens
 * (the heaviest among equals), packed as fieldsMatched * 256 + weight: what baseScore and
 * upperScore need before any position is read. `masks[f]` has bit t set when field f holds
 * token t.
 */
export function coverage(masks: Int32Array, weights: readonly number[]): number {
  let fieldsMatched = 0;
  let maxCount = 0;
  let maxWeight = 0;
  for (let f = 0; f < weights.length; f++) {
    const m = masks[f]!;
    if (m === 0) continue;
    fieldsMatched++;
    const count = popcount(m);
    if (count > maxCount) {
      maxCount = count;
      maxWeight = weights[f]!;
    } else if (count === maxCount && weights[f]! > maxWeight) maxWeight = weights[f]!;
  }
  return fieldsMatched * 256 + maxWeight;
}

export function popcount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The parts of a score, as text_match_info reports them. */
export interface MatchInfo {
  score: number;
  tokensMatched: number;
  typoCost: number;
  bestFieldWeight: number;
  bestFieldScore: number;
  fieldsMatched: number;
  /** Tokens dropped to reach this document. */
  dropped: number;
}

/** The text_match_info fields, decoded from the score bits. */
export function matchInfo(withTie: number, totalTokens: number): MatchInfo {
  const score = textMatchOf(withTie);
  const tokensMatched = Math.floor(score / TOK_SHIFT) % 64;
  const typoCost = 255 - (Math.floor(score / TYPO_SHIFT) % 256);
  const bestFieldWeight = Math.floor(score / WEIGHT_SHIFT) % 256;
  const fieldsMatched = Math.floor(score / FIELDS_SHIFT) % (MAX_FIELDS + 1);
  return {
    score,
    tokensMatched,
    typoCost,
    bestFieldWeight,
    bestFieldScore: score - tokensMatched * TOK_SHIFT - (score % FIELDS_SHIFT) - fieldsMatched * FIELDS_SHIFT,
    fieldsMatched,
    dropped: totalTokens - tokensMatched,
  };
}

/** A hit's `text_match_info`, as the reference engine writes it. */
export function textMatchInfo(score: number, totalTokens: number): { text_match: number; text_match_info: Record<string, unknown> } {
  const m = matchInfo(score, totalTokens);
  return {
    text_match: m.score,
    text_match_info: {
      best_field_score: String(m.bestFieldScore),
      best_field_weight: m.bestFieldWeight,
      fields_matched: m.fieldsMatched,
      num_tokens_dropped: m.dropped,
      score: String(m.score),
      tokens_matched: m.tokensMatched,
      typo_prefix_score: m.typoCost,
    },
  };
}
