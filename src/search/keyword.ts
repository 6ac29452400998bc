/**
 * search/keyword.ts: keyword execution. The typo rounds and token dropping of a text
 * query (runRounds), and the scan of a wildcard query (scanAll).
 *
 *   for drop = 0, 1, ... (tokens dropped right to left, never a phrase's words)
 *     for each round: typo level 0, then 1..max for the tokens that found nothing, then for all
 *       candidates (candidates.ts) -> match every segment (match.ts) -> collect
 *       stop the rounds once found >= typo_tokens_threshold
 *     stop dropping once found >= drop_tokens_threshold
 *
 * A document matched in one round is not matched again in a later one (`seen`).
 */
import type { Schema } from '../schema/schema.js';
import { fieldTokenizer } from '../collection/catalog.js';
import { isDeleted, type LiveSegment } from '../index/manifest.js';
import { markPhrase } from '../query/filter-eval.js';
import type { SearchPlan } from '../query/plan.js';
import { CandidateRounds, sameCandidates, type CandidateTable } from './candidates.js';
import { matchSegment } from './match.js';

/** Per segment: filter_by's allowed documents and the documents an excluded word removes (null: none). */
export interface SegmentMasks {
  allow: (Uint8Array | null)[];
  exclude: (Uint8Array | null)[];
}

/** Where runRounds puts what it finds. */
export interface RoundSink {
  collect(segIndex: number, ord: number, score: number): void;
  /** Documents found so far (the thresholds compare it). */
  found(): number;
  /** The score a document must reach to matter (TopHits.threshold), when there is one. */
  threshold?: () => number;
}

/** Typo escalation and token dropping; returns the candidate table of the first round that ran (for highlighting). */
export function runRounds(plan: SearchPlan, segs: LiveSegment[], masks: SegmentMasks, sink: RoundSink, shouldStop: () => boolean): CandidateTable {
  const { params, words, fields } = plan;
  const T = words.tokens.length;
  const seen = segs.map((s) => new Uint8Array(s.reader.n));
  const rounds = new CandidateRounds(plan, segs);
  // typo rounds: level 0, then typos for the tokens that found nothing, then for all
  const levels: Array<[number, 'missing' | 'all']> = [[0, 'all']];
  for (let l = 1; l <= words.maxTypos; l++) levels.push([l, 'missing']);
  for (let l = 1; l <= words.maxTypos; l++) levels.push([l, 'all']);
  let first: CandidateTable | undefined;
  // tokens are dropped right to left; words of a quoted phrase are never dropped
  const droppable = words.tokens.map((_, t) => t).filter((t) => !words.inPhrase.has(t));
  for (let drop = 0; drop <= droppable.length && drop < T; drop++) {
    const gone = new Set(droppable.slice(droppable.length - drop));
    const active = words.tokens.map((_, t) => t).filter((t) => !gone.has(t));
    if (active.length === 0) break;
    let previous: CandidateTable | undefined;
    for (const [level, mode] of levels) {
      // (prefix applies to the query's last token only, so not after it has been dropped)
      const candidates = rounds.at(level, mode);
      if (candidates === previous || sameCandidates(candidates, previous)) continue;
      previous = candidates;
      if (!first) first = candidates;
      for (let s = 0; s < segs.length; s++) {
        const segSeen = seen[s]!;
        const ok = matchSegment(
          segs[s]!,
          { fields, tokens: active, totalTokens: T, candidates, phrases: words.phrases, prioritizeExact: params.prioritize_exact_match, dropped: drop },
          { allow: masks.allow[s]!, exclude: masks.exclude[s]!, seen: segSeen },
          (ord, score) => {
            segSeen[ord] = 1;
            sink.collect(s, ord, score);
          },
          shouldStop,
          sink.threshold,
        );
        if (!ok) return first;
      }
      first = candidates;
      if (sink.found() >= params.typo_tokens_threshold) break;
    }
    if (sink.found() >= params.drop_tokens_threshold) break;
  }
  return first!;
}

/** Wildcard: every live, allowed, not excluded document, with no score. */
export function scanAll(segs: LiveSegment[], masks: SegmentMasks, collect: (segIndex: number, ord: number, score: number) => void, shouldStop: () => boolean): void {
  let stopped = false;
  for (let s = 0; s < segs.length && !stopped; s++) {
    const seg = segs[s]!;
    const a = masks.allow[s];
    const ex = masks.exclude[s];
    const n = seg.reader.n;
    // A filter's mask is read four documents at a time: a selective filter (a small
    // radius over a million points) leaves runs of zero words, and reading them byte by
    // byte was most of such a search's time.
    const words = a && a.byteOffset % 4 === 0 ? new Uint32Array(a.buffer, a.byteOffset, n >> 2) : null;
    for (let o = 0; o < n; o++) {
      if (words !== null && (o & 3) === 0 && o + 4 <= n && words[o >> 2] === 0) {
        o += 3;
        if ((o & 4095) === 4095 && shouldStop()) {
          stopped = true;
          break;
        }
        continue;
      }
      if ((a && !a[o]) || (ex && ex[o]) || isDeleted(seg.deleted, o)) continue;
      collect(s, o, 0);
      if ((o & 4095) === 4095 && shouldStop()) {
        stopped = true;
        break;
      }
    }
  }
}

/** The documents of a segment that an excluded word or phrase (`-word`) removes, or null when there is none. */
export function exclusionBytes(seg: LiveSegment, plan: SearchPlan, schema: Schema): Uint8Array | null {
  const excluded = plan.words.excluded;
  if (excluded.length === 0) return null;
  const out = new Uint8Array(seg.reader.n);
  for (const f of plan.fields) {
    const ti = seg.reader.text(f.field.id);
    if (!ti) continue;
    const tok = fieldTokenizer(schema, f.field);
    for (const words of excluded) markPhrase(ti, f.field.stem || f.field.stem_dictionary ? words.map((w) => tok.normalizeWord(w)) : words, false, out);
  }
  return out;
}
