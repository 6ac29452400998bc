/**
 * Search parameters of the reference that change nothing in Fathom's answers, or that
 * Fathom does not implement: each is checked here, so that none is silently ignored.
 *
 *   facet_strategy        exhaustive | top_values | automatic: Fathom always counts every
 *                         match exactly, which each strategy's answer approximates at best
 *   text_match_type       max_score and max_weight (params.ts, search/match.ts bestField);
 *                         sum_score: 400. The packed score (search/score.ts) holds the
 *                         words matched and typo cost of the whole document and the
 *                         proximity, weight and exactness of one field; a sum of per-field
 *                         scores needs each field's own words and typos packed and added, a
 *                         different layout that text_match_info, the joined / split words
 *                         and synonyms (respaced, addTokensMatched) and the pruning bound
 *                         (upperScore) would all have to read
 *
 * (`exhaustive_search`, `enable_highlight_v1`, `infix` and `facet_return_parent` are
 * implemented in params.ts, plan.ts and the search;
 * `split_join_tokens` and `drop_tokens_mode` are ranking parameters: search/keyword.ts.)
 */
import { FathomError } from '../errors.js';
import type { RawParams } from './params.js';

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

function text(raw: RawParams, k: string): string | undefined {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return undefined;
  return Array.isArray(v) ? v.map(String).join(',') : String(v);
}

export function checkCompatParams(raw: RawParams): void {
  const fs = text(raw, 'facet_strategy');
  if (fs !== undefined && !['exhaustive', 'top_values', 'automatic'].includes(fs.trim())) {
    bad(`parameter \`facet_strategy\` must be exhaustive, top_values or automatic, got ${JSON.stringify(fs)}`);
  }
  const tm = text(raw, 'text_match_type');
  if (tm !== undefined) {
    const v = tm.trim();
    if (v === 'sum_score') {
      bad(`parameter \`text_match_type\`: \`sum_score\` is not supported; a document scores by one field (max_score: its best, max_weight: its heaviest)`);
    }
    if (v !== 'max_score' && v !== 'max_weight') bad(`parameter \`text_match_type\` must be max_score, max_weight or sum_score, got ${JSON.stringify(tm)}`);
  }
}
