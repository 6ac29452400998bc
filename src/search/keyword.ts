/**
 * search/keyword.ts: keyword execution. The typo rounds, the query's words joined or split
 * and token dropping of a text query (runRounds), and the scan of a wildcard query (scanAll).
 *
 *   1. the query as typed: typo level 0, then 1..max for the tokens that found nothing,
 *      then for all: candidates (candidates.ts) -> match every segment (match.ts) -> collect;
 *      stop the rounds once found >= typo_tokens_threshold
 *   1b. infix=fallback fields, when 1 found nothing: the same rounds, the words also found
 *      inside document words (candidates.ts infixCandidates; `always` fields do so in 1)
 *   2. split_join_tokens: `always`, or `fallback` when 1 found nothing: the query's words
 *      joined (`basket ball` -> `basketball`) or one split in two (`basketball` -> `basket
 *      ball`) as a field's dictionary has them (resolveSpaces), searched the same way
 *   3. while found < drop_tokens_threshold: tokens dropped (never a phrase's words) right
 *      to left, or as drop_tokens_mode says (droppedSets), each time the typo rounds of 1
 *
 * A document matched in one round is not matched again in a later one (`seen`).
 */
import type { Schema } from '../schema/schema.js';
import { fieldTokenizer } from '../collection/catalog.js';
import { isDeleted, type LiveSegment } from '../index/manifest.js';
import { markPhrase } from '../query/filter-eval.js';
import { queryWordsFor, type SearchPlan } from '../query/plan.js';
import { CandidateRounds, sameCandidates, type CandidateTable } from './candidates.js';
import { CorpusStats, matchSegment, type BitInput } from './match.js';
import type { BitChannel } from './collectors.js';
import type { BitFilters } from './bitmatch.js';
import { forEachBit, wordsFor } from '../index/termbits.js';
import { respaced } from './score.js';

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
  /** Bit matching's channel (collectors.ts Matches.bits), when hits are ranked by text_match. */
  bits?: BitChannel;
}

/**
 * Per segment, the documents matched in earlier rounds (`seen`), which a later round
 * leaves out: bytes for the strategies that score every match, bitmaps of what bit
 * matching found (turned into bytes only when a later round reads them), and the
 * filters as bitmaps, converted once per search.
 */
class Seen {
  /** Per segment: bytes, made only when a later round reads them; until then the ordinals matched, and bit matching's bitmaps. */
  private readonly bytes: (Uint8Array | null)[];
  private readonly ords: Int32Array[];
  private readonly count: number[];
  private readonly pending: Uint32Array[][];
  private readonly filterBits: (BitFilters | undefined)[];
  constructor(
    private readonly segs: LiveSegment[],
    private readonly masks: SegmentMasks,
  ) {
    this.bytes = segs.map(() => null);
    this.ords = segs.map(() => new Int32Array(16));
    this.count = segs.map(() => 0);
    this.pending = segs.map(() => []);
    this.filterBits = segs.map(() => undefined);
  }
  /** The documents of segment s matched so far, one byte each (null while there are none). */
  bytesOf(s: number): Uint8Array | null {
    const ords = this.ords[s]!;
    const count = this.count[s]!;
    const pending = this.pending[s]!;
    if (count === 0 && pending.length === 0) return this.bytes[s]!;
    const out = (this.bytes[s] ??= new Uint8Array(this.segs[s]!.reader.n));
    for (let i = 0; i < count; i++) out[ords[i]!] = 1;
    this.count[s] = 0;
    for (const bits of pending) forEachBit(bits, (d) => (out[d] = 1));
    pending.length = 0;
    return out;
  }
  /** Document `ord` of segment s was matched. */
  mark(s: number, ord: number): void {
    let ords = this.ords[s]!;
    const count = this.count[s]!;
    if (count === ords.length) {
      const grown = new Int32Array(count * 2);
      grown.set(ords);
      this.ords[s] = ords = grown;
    }
    ords[count] = ord;
    this.count[s] = count + 1;
  }
  add(s: number, bits: Uint32Array): void {
    this.pending[s]!.push(bits);
  }
  /** The filters and what earlier rounds matched, as bitmaps, for segment s. */
  filters(s: number): BitFilters {
    let f = this.filterBits[s];
    if (!f) f = this.filterBits[s] = { allow: toBits(this.masks.allow[s]!, 1), exclude: toBits(this.masks.exclude[s]!, 1), seen: null };
    return { ...f, seen: toBits(this.bytesOf(s), 1) };
  }
}

/** The documents whose byte is `value`, as a bitmap; null for no bytes. */
function toBits(bytes: Uint8Array | null, value: number): Uint32Array | null {
  if (bytes === null) return null;
  const out = new Uint32Array(wordsFor(bytes.length));
  for (let d = 0; d < bytes.length; d++) if (bytes[d] === value) out[d >>> 5]! |= 1 << (d & 31);
  return out;
}

/**
 * Typo escalation, joined or split words and token dropping; returns the candidate table
 * of the first round that ran (for highlighting), with the joined or split words' after it.
 */
export function runRounds(plan: SearchPlan, segs: LiveSegment[], masks: SegmentMasks, sink: RoundSink, shouldStop: () => boolean): CandidateTable {
  const { params, words } = plan;
  const T = words.tokens.length;
  const seen = new Seen(segs, masks);
  const all = words.tokens.map((_, t) => t);
  const rounds = new CandidateRounds(plan, segs, masks.allow);
  // (one set of statistics for the whole search: the rarity tie-break does not depend on segments)
  const stats = new CorpusStats(segs);
  const typed = typoRounds(plan, rounds, all, 0, segs, masks, seen, sink, shouldStop, stats);
  if (typed.stopped) return typed.first!;
  let first = typed.first;
  // infix=fallback: words found inside document words, when nothing matched as typed
  if (sink.found() === 0 && plan.fields.some((f) => f.infix === 'fallback')) {
    const r = typoRounds(plan, new CandidateRounds(plan, segs, masks.allow, WITH_FALLBACK), all, 0, segs, masks, seen, sink, shouldStop, stats);
    // (the same words, with more candidates: their table replaces the first for highlighting)
    if (r.first) first = r.first;
    if (r.stopped) return first!;
  }
  const sj = params.split_join_tokens;
  if ((sj === 'always' || (sj === 'fallback' && sink.found() === 0)) && words.phrases.length === 0) {
    const resolved = resolveSpaces(plan, segs);
    if (resolved) {
      const alt: SearchPlan = { ...plan, words: queryWordsFor(plan, resolved) };
      // (a match of the joined or split words stands for every word as typed, a space taken for a typo)
      const r = typoRounds(alt, new CandidateRounds(alt, segs, masks.allow), alt.words.tokens.map((_, t) => t), 0, segs, masks, seen, sink, shouldStop, stats, (score) => respaced(score, T, SPACE_COST));
      if (r.first) first = first ? [...first, ...r.first] : r.first;
      if (r.stopped) return first!;
    }
  }
  // tokens are dropped as drop_tokens_mode says; words of a quoted phrase are never dropped
  const droppable = all.filter((t) => !words.inPhrase.has(t));
  for (let drop = 1; drop <= droppable.length && drop < T && sink.found() < params.drop_tokens_threshold; drop++) {
    let stopped = false;
    for (const gone of droppedSets(droppable, drop, params.drop_tokens_mode, T)) {
      const active = all.filter((t) => !gone.has(t));
      if (active.length === 0) continue;
      const r = typoRounds(plan, rounds, active, drop, segs, masks, seen, sink, shouldStop, stats);
      first ??= r.first;
      if ((stopped = r.stopped)) break;
    }
    if (stopped) break;
  }
  return first!;
}

/**
 * The tokens left out at one drop step, `drop` of the `droppable` ones (in query order):
 *
 *   right_to_left   a b [c d]      the last `drop` (the default)
 *   left_to_right   [a b] c d      the first `drop`
 *   both_sides:N    a b [c], [a] b c    the last, then the first (queries of up to N
 *                   words, e.g. both_sides:3; longer ones drop right to left)
 *
 * A document found at one set is not found again at the next (`seen`), so both sides rank
 * together by their own scores.
 */
export function droppedSets(droppable: number[], drop: number, mode: string, T: number): Set<number>[] {
  const right = new Set(droppable.slice(droppable.length - drop));
  const left = new Set(droppable.slice(0, drop));
  if (mode === 'left_to_right') return [left];
  if (mode.startsWith('both_sides:') && T <= Number(mode.slice('both_sides:'.length))) return [right, left].filter((s, i) => i === 0 || [...s].some((t) => !right.has(t)));
  return [right];
}

const WITH_FALLBACK: ReadonlySet<string> = new Set(['always', 'fallback']);

/**
 * The typo rounds of one set of a plan's tokens: level 0, then typos for the tokens that
 * found nothing, then for all, until found >= typo_tokens_threshold. `stopped`: cut off.
 */
function typoRounds(
  plan: SearchPlan,
  rounds: CandidateRounds,
  active: number[],
  drop: number,
  segs: LiveSegment[],
  masks: SegmentMasks,
  seen: Seen,
  sink: RoundSink,
  shouldStop: () => boolean,
  stats: CorpusStats,
  rescore?: (score: number) => number,
): { first: CandidateTable | undefined; stopped: boolean } {
  const { params, words, fields } = plan;
  const rescored = rescore !== undefined;
  const rescoreOf = rescore ?? ((score: number) => score);
  const levels: Array<[number, 'missing' | 'all']> = [[0, 'all']];
  for (let l = 1; l <= words.maxTypos; l++) levels.push([l, 'missing']);
  for (let l = 1; l <= words.maxTypos; l++) levels.push([l, 'all']);
  let first: CandidateTable | undefined;
  let previous: CandidateTable | undefined;
  for (const [level, mode] of levels) {
    // (prefix applies to the query's last token only, so not after it has been dropped)
    const candidates = rounds.at(level, mode);
    if (candidates === previous || sameCandidates(candidates, previous)) continue;
    previous = candidates;
    if (!first) first = candidates;
    for (let s = 0; s < segs.length; s++) {
      const segSeen = seen.bytesOf(s);
      const channel = sink.bits;
      // (bit matching ranks by the raw score: not for the joined or split words, whose scores are rescored)
      const bits: BitInput | undefined =
        channel && !rescored
          ? {
              filters: () => seen.filters(s),
              sink: { count: (b, n) => channel.count(s, b, n), rank: (ord, score) => channel.rank(s, ord, score), mayEnter: channel.mayEnter, entryBar: channel.entryBar },
              matched: (b) => seen.add(s, b),
            }
          : undefined;
      const ok = matchSegment(
        segs[s]!,
        { fields, tokens: active, totalTokens: words.tokens.length, candidates, phrases: words.phrases, prioritizeExact: params.prioritize_exact_match, dropped: drop, stats, maxWeight: params.text_match_type === 'max_weight', tokenPosition: params.prioritize_token_position, bits },
        { allow: masks.allow[s]!, exclude: masks.exclude[s]!, seen: segSeen },
        (ord, score) => {
          seen.mark(s, ord);
          sink.collect(s, ord, rescoreOf(score));
        },
        shouldStop,
        sink.threshold,
      );
      if (!ok) return { first, stopped: true };
    }
    first = candidates;
    if (sink.found() >= params.typo_tokens_threshold) break;
  }
  return { first, stopped: false };
}

/** What the joined or split words cost above the words as typed: a space taken for a typo (candidates.ts: 2 per typo). */
const SPACE_COST = 2;

/**
 * split_join_tokens: the query's words as some query_by field's dictionary has them when
 * a space is taken for a typo, as the reference engine resolves them: all words joined
 * (`basket ball` -> `basketball`); else two adjacent words joined; else one word split in
 * two (`basketball` -> `basket ball`, the longest first half first); the first field,
 * in query_by order, where every resulting word is a term. Only the first five words are
 * joined or split. Undefined when nothing resolves.
 */
export function resolveSpaces(plan: SearchPlan, segs: LiveSegment[]): string[] | undefined {
  const { fields, words } = plan;
  const T = Math.min(5, words.tokens.length);
  for (let fi = 0; fi < fields.length; fi++) {
    const id = fields[fi]!.field.id;
    const tokens = words.forField.map((perField) => perField[fi]!);
    const isTerm = (w: string) => w.length > 0 && segs.some((seg) => (seg.reader.text(id)?.terms.find(w) ?? -1) >= 0);
    const allTerms = (ws: string[]) => ws.every(isTerm);
    if (tokens.length > 1) {
      const joined = tokens.join('');
      if (isTerm(joined)) return [joined];
    }
    if (tokens.length > 2) {
      for (let i = 0; i + 1 < T; i++) {
        const cand = [...tokens.slice(0, i), tokens[i]! + tokens[i + 1]!, ...tokens.slice(i + 2)];
        if (allTerms(cand)) return cand;
      }
    }
    for (let i = 0; i < T; i++) {
      const w = tokens[i]!;
      for (let cut = w.length - 1; cut >= 1; cut--) {
        const a = w.slice(0, cut);
        const b = w.slice(cut);
        if (!isTerm(a) || !isTerm(b)) continue;
        const cand = [...tokens.slice(0, i), a, b, ...tokens.slice(i + 1)];
        if (allTerms(cand)) return cand;
        break;
      }
    }
  }
  return undefined;
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
