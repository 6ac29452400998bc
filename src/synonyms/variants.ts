/**
 * src/synonyms/variants.ts: a keyword search with synonyms that replace a run of words by
 * another number of words ("smart phone" -> "iphone"). (Synonyms of one word for one word
 * need none of this: they are candidates of the query word, search/candidates.ts.)
 *
 * The query and each variant of it (synonyms.ts, planned in query/plan.ts as
 * `plan.variants`) are matched one after another, each with keyword.ts's typo rounds and
 * token dropping, and each document keeps its best score over them; every document is then
 * collected once, so `found` and facets count it once.
 *
 *   the query        runRounds(plan)            score
 *   variant 1..n     runRounds(plan, variant)   score + (words replaced - words put in) tokens
 *                    (the words a synonym put in are matched as written, never dropped)
 *   best per document -> sink.collect
 *
 * Ranking, as the reference ranks synonym matches: the same as a match of the typed words.
 * A synonym's words count like the words they stand for (a match of "iphone" for the query
 * "smart phone" has both tokens matched); typos, proximity, field weight and exactness are
 * those of the variant's match. A match of the typed words is never scored lower than the
 * same match through a synonym.
 */
import type { LiveSegment } from '../index/manifest.js';
import type { SearchPlan } from '../query/plan.js';
import type { CandidateTable } from '../search/candidates.js';
import { runRounds, type RoundSink, type SegmentMasks } from '../search/keyword.js';
import { addTokensMatched } from '../search/score.js';

/** Runs the typed query and its synonym variants; returns every candidate table (for highlights). */
export function runWithSynonyms(plan: SearchPlan, segs: LiveSegment[], masks: SegmentMasks, sink: RoundSink, shouldStop: () => boolean): CandidateTable {
  const best: (Float64Array | null)[] = segs.map(() => null);
  const touched: number[][] = segs.map(() => []);
  const keep = (s: number, ord: number, score: number) => {
    let b = best[s]!;
    if (b === null) best[s] = b = new Float64Array(segs[s]!.reader.n);
    const cur = b[ord]!;
    if (cur === 0) touched[s]!.push(ord);
    if (score > cur) b[ord] = score;
  };
  const run = (p: SearchPlan, adjust: (score: number) => number): CandidateTable => {
    let n = 0;
    return runRounds(
      p,
      segs,
      masks,
      {
        collect: (s, ord, score) => {
          n++;
          keep(s, ord, adjust(score));
        },
        found: () => n,
      },
      shouldStop,
    );
  };
  const tables: CandidateTable[] = [run(plan, (score) => score)];
  for (const v of plan.variants ?? []) {
    if (shouldStop()) break;
    tables.push(run({ ...plan, words: v.words }, (score) => addTokensMatched(score, v.extra)));
  }
  for (let s = 0; s < segs.length; s++) {
    const b = best[s];
    if (!b) continue;
    const ords = touched[s]!.sort((x, y) => x - y);
    for (const ord of ords) sink.collect(s, ord, b[ord]!);
  }
  return tables.flat();
}
