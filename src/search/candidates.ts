/**
 * search/candidates.ts: here is a query word and the fields it is looked up in, which
 * terms stand for it? The word itself, prefix expansions of the last word, typo
 * expansions: the typo walk (termdict/walk.ts) offers every term within the budget, and
 * each segment keeps the best few per field (TopTerms) before any is decoded.
 *
 * CandidateRounds builds the table (token x field -> candidate terms) for each typo round
 * of a keyword search (search/keyword.ts), expanding each token and field once per budget.
 */
import type { Field } from '../schema/schema.js';
import type { LiveSegment } from '../index/manifest.js';
import { partsColumnId, type TextIndex } from '../index/segment.js';
import { enumerateTerms } from '../termdict/walk.js';
import { termWithinEdits } from '../termdict/distance.js';
import type { StringTable } from '../termdict/table.js';
import { grown } from '../arrays.js';
import type { SearchPlan } from '../query/plan.js';
import { current } from './budget.js';

export interface Candidate {
  term: string;
  /** What the term costs as a stand-in for the query word (candidateCost): 2 per typo, 1 more for a completion; a part costs as the word. */
  cost: number;
  /** A part of glued words (index/segment.ts PARTS_COLUMN_BASE), looked up in the field's parts. */
  part?: true;
}

/**
 * What a term costs as a stand-in for a query word, as the reference engine counts it: two
 * per typo, and one more when the term is a completion (found by prefix and longer than the
 * word plus its typos), so that a whole word ranks above a completion of it with as many
 * typos (`evince` above `evincecommon` for `evcince`), and a completion is never an exact
 * match. `typos` is the walk's edit distance (of the term, or with prefix of its closest
 * prefix). (The reference engine stops at this length test; TopTerms.offer also checks
 * the terms it lets pass, so that a term of which only a prefix is close, `gnupg2` for
 * `cgnupg`, is a completion too.)
 */
export function candidateCost(typos: number, termLength: number, wordLength: number, prefix: boolean): number {
  return 2 * typos + (prefix && termLength > wordLength + typos ? 1 : 0);
}

/** candidates[token][fieldSpec] */
export type CandidateTable = Candidate[][][];

/** A field's candidate terms as they are found: lowest cost, and document count summed over segments. */
type Agg = Map<string, { cost: number; df: number }>;

/**
 * The best `cap` entries of one field's dictionary in one segment, in the order candidates
 * are chosen: lower cost (candidateCost: a whole word before a completion with as many
 * typos), the query token itself, more documents, then table order (which is the terms'
 * order). A walk's matches and ranges are offered here as numbers, and only
 * the kept entries are ever decoded into strings.
 *
 * Hot: one typo walk of a short last word with prefix (`libt`, 1 typo) matches hundreds of
 * ranges and thousands of terms, of which at most `cap` can survive, so none is decoded
 * into a string before it is kept. The kept entries are a binary heap with
 * the worst at the root (slot 0), so an offer that cannot enter costs one comparison and
 * one that can costs log(cap), whatever max_candidates asks for:
 *
 *            worst            each slot s is not before its children 2s+1, 2s+2
 *           /     \
 *        ...       ...
 */
class TopTerms {
  // (grown as entries come, up to cap: max_candidates may ask for 40,000 slots per field)
  idx: Int32Array;
  cost: Int32Array;
  df: Int32Array;
  n = 0;
  private terms: StringTable | null = null;
  private ti: TextIndex | null = null;
  /** filter_by's documents in this segment (null: no filter): a term none of them holds is no candidate. */
  private allow: Uint8Array | null = null;
  private token = '';
  private prefix = false;
  /** Table index of the query token itself: -1 when absent, -2 until looked up. */
  private exact = -2;

  constructor(readonly cap: number) {
    const size = Math.min(cap, 64);
    this.idx = new Int32Array(size);
    this.cost = new Int32Array(size);
    this.df = new Int32Array(size);
  }

  private grow(): void {
    const size = Math.min(this.cap, this.idx.length * 2);
    this.idx = grown(this.idx, size);
    this.cost = grown(this.cost, size);
    this.df = grown(this.df, size);
  }

  reset(ti: TextIndex, token: string, prefix: boolean, allow: Uint8Array | null): void {
    this.n = 0;
    this.ti = ti;
    this.terms = ti.terms;
    this.allow = allow;
    this.token = token;
    this.prefix = prefix;
    this.exact = -2;
  }

  /** The token's own index, looked up only once a match of cost 0 needs it (typo walks rarely do). */
  private exactIndex(): number {
    if (this.exact === -2) this.exact = this.terms!.find(this.token);
    return this.exact;
  }

  /**
   * May entry i be kept? Under a filter, only a term some allowed document holds stands for
   * the word, as in the reference engine, whose prefix and typo expansions are taken among
   * the filtered documents' terms: a filter must not leave the word's slots
   * (max_candidates) to terms it removes. The query word itself is always kept, as there.
   * Read only for an entry that would enter: up to the term's first allowed posting.
   */
  private admits(i: number): boolean {
    const allow = this.allow;
    if (allow === null || i === this.exactIndex()) return true;
    const read = this.ti!.postingsUntil(i, allow);
    current().spend(read < 0 ? -read : read);
    return read > 0;
  }

  /** Would entry (i, cost, df) come before kept slot s? */
  private before(i: number, cost: number, df: number, s: number): boolean {
    const c = this.cost[s]!;
    if (cost !== c) return cost < c;
    const j = this.idx[s]!;
    if (cost === 0) {
      const ex = this.exactIndex();
      if (i === ex) return true;
      if (j === ex) return false;
    }
    const d = this.df[s]!;
    return df !== d ? df > d : i < j;
  }

  /**
   * Entry i, found by the walk at `typos` edits (with prefix, of its closest prefix). With
   * prefix, a term is a whole word only when the whole term is within those edits: beyond
   * the length test (candidateCost), the few short enough are checked (`gnupg2` for `cgnupg`
   * is a completion of `gnupg`, one edit away, not a word one edit away).
   */
  offer(i: number, typos: number, df: number): void {
    let cost = 2 * typos;
    if (this.prefix) {
      const t = this.terms!;
      const len = t.length(i);
      cost = candidateCost(typos, len, this.token.length, true);
      if (typos > 0 && cost % 2 === 0 && !termWithinEdits(t.chars, t.offsets[i]!, len, this.token, typos)) cost++;
    }
    if (this.n === this.idx.length && this.n < this.cap) this.grow();
    const { idx, cost: costs, df: dfs } = this;
    let s: number;
    if (this.n < this.cap) {
      if (!this.admits(i)) return;
      // sift up: the hole rises while its parent comes before the new entry
      s = this.n++;
      while (s > 0) {
        const p = (s - 1) >> 1;
        if (this.before(i, cost, df, p)) break;
        idx[s] = idx[p]!;
        costs[s] = costs[p]!;
        dfs[s] = dfs[p]!;
        s = p;
      }
    } else {
      if (!this.before(i, cost, df, 0) || !this.admits(i)) return;
      // replace the worst: the hole sinks while the new entry comes before its worse child
      s = 0;
      for (;;) {
        const l = 2 * s + 1;
        if (l >= this.n) break;
        const r = l + 1;
        const w = r < this.n && this.before(idx[l]!, costs[l]!, dfs[l]!, r) ? r : l;
        if (!this.before(i, cost, df, w)) break;
        idx[s] = idx[w]!;
        costs[s] = costs[w]!;
        dfs[s] = dfs[w]!;
        s = w;
      }
    }
    idx[s] = i;
    costs[s] = cost;
    dfs[s] = df;
  }

  /** Entries [lo, hi), all found at `typos` edits. */
  offerRange(lo: number, hi: number, typos: number, docFreq: ArrayLike<number>): void {
    for (let i = lo; i < hi; i++) {
      // full, and even a whole word at the range's typos costs more than everything kept: none of the rest can enter
      if (this.n === this.cap && 2 * typos > this.cost[0]!) return;
      this.offer(i, typos, docFreq[i]!);
    }
  }

  /** Adds the kept entries, decoded, to the field's aggregate. */
  flush(agg: Agg, ti: TextIndex): void {
    for (let s = 0; s < this.n; s++) {
      const term = ti.terms.get(this.idx[s]!);
      const cost = this.cost[s]!;
      const cur = agg.get(term);
      if (!cur) agg.set(term, { cost, df: this.df[s]! });
      else {
        if (cost < cur.cost) cur.cost = cost;
        cur.df += this.df[s]!;
      }
    }
    this.n = 0;
  }
}

/** Chooses the candidate terms for one token in one field, across all segments (`allow`: filter_by's documents per segment, see selectCandidatesShared). */
export function selectCandidates(
  segments: LiveSegment[],
  field: Field,
  token: string,
  maxCost: number,
  prefix: boolean,
  limit: number,
  allow?: readonly (Uint8Array | null)[],
): Candidate[] {
  return selectCandidatesShared(segments, [field], token, maxCost, prefix, limit, allow)[0]!;
}

/**
 * selectCandidates for several fields that look the same token up with the same typo
 * budget and prefix rule: one list per field, each exactly what selectCandidates gives.
 * With typos, a segment whose union dictionary of those fields is warm
 * (SegmentReader.sharedTerms) is walked once instead of once per field; each term found
 * counts for the fields that hold it: the top of the trie, where a walk spends most of its
 * time, is walked once.
 *
 * Each segment keeps its best max(4 x limit, 16) terms per field (TopTerms); their counts
 * are then summed over segments and the best `limit` chosen, with the token itself always
 * among them when it is found. With one segment that is exactly the best `limit` of all
 * the terms matched; with several, a term kept in only some segments counts only there.
 * `allow` (per segment, aligned with `segments`; null: no filter there): filter_by's
 * documents; a segment keeps only terms one of them holds (TopTerms.admits), counted by
 * their documents in the whole segment, as the reference engine orders them.
 */
export function selectCandidatesShared(
  segments: LiveSegment[],
  fields: readonly Pick<Field, 'id'>[],
  token: string,
  maxCost: number,
  prefix: boolean,
  limit: number,
  allow?: readonly (Uint8Array | null)[],
): Candidate[][] {
  const aggs = fields.map((): Agg => new Map());
  const keep = Math.max(limit * 4, 16);
  const tops = fields.map(() => new TopTerms(keep));
  for (let si = 0; si < segments.length; si++) {
    const seg = segments[si]!;
    const segAllow = allow?.[si] ?? null;
    // the fields with a text index in this segment
    const tis: TextIndex[] = [];
    const fieldTops: TopTerms[] = [];
    const fieldAggs: Agg[] = [];
    const ids: number[] = [];
    for (let f = 0; f < fields.length; f++) {
      const ti = seg.reader.text(fields[f]!.id);
      if (!ti) continue;
      tis.push(ti);
      const top = tops[f]!;
      top.reset(ti, token, prefix, segAllow);
      fieldTops.push(top);
      fieldAggs.push(aggs[f]!);
      ids.push(fields[f]!.id);
    }
    const union = maxCost > 0 && tis.length > 1 ? seg.reader.sharedTerms(ids) : null;
    if (!union) {
      for (let f = 0; f < tis.length; f++) {
        const ti = tis[f]!;
        const top = fieldTops[f]!;
        const docFreq = ti.docFreq;
        enumerateTerms(
          ti.terms,
          token,
          maxCost,
          prefix,
          (i, cost) => top.offer(i, cost, docFreq[i]!),
          (lo, hi, cost) => top.offerRange(lo, hi, cost, docFreq),
        );
      }
    } else {
      // one walk of the union: entry u is field f's entry pos[f][u] when the field holds it
      const { table, pos } = union;
      enumerateTerms(
        table,
        token,
        maxCost,
        prefix,
        (u, cost) => {
          for (let f = 0; f < tis.length; f++) {
            const p = pos[f]!;
            const i = p[u]!;
            if (p[u + 1]! !== i) fieldTops[f]!.offer(i, cost, tis[f]!.docFreq[i]!);
          }
        },
        (lo, hi, cost) => {
          for (let f = 0; f < tis.length; f++) {
            const p = pos[f]!;
            if (p[hi]! > p[lo]!) fieldTops[f]!.offerRange(p[lo]!, p[hi]!, cost, tis[f]!.docFreq);
          }
        },
      );
    }
    for (let f = 0; f < tis.length; f++) fieldTops[f]!.flush(fieldAggs[f]!, tis[f]!);
  }
  return aggs.map((agg) => {
    const list = [...agg.entries()].map(([term, v]) => ({ term, cost: v.cost, df: v.df }));
    list.sort((a, b) => a.cost - b.cost || (a.term === token ? -1 : b.term === token ? 1 : 0) || b.df - a.df || (a.term < b.term ? -1 : 1));
    const out = list.slice(0, limit).map(({ term, cost }) => ({ term, cost }));
    if (!out.some((c) => c.term === token)) {
      const ex = list.find((c) => c.term === token);
      if (ex) out.unshift({ term: ex.term, cost: ex.cost });
    }
    return out;
  });
}

/** A token's candidates in one field, with its synonyms in that field added (cost 0: they count as the token). */
function withSynonyms(list: Candidate[], synonyms: string[] | undefined): Candidate[] {
  if (!synonyms || synonyms.length === 0) return list;
  const out = list.slice();
  for (const term of synonyms) if (!out.some((c) => c.term === term)) out.push({ term, cost: 0 });
  return out;
}

/** Do two candidate tables list the same terms? (a round that adds nothing is skipped) */
export function sameCandidates(a: CandidateTable, b: CandidateTable | undefined): boolean {
  if (!b) return false;
  for (let t = 0; t < a.length; t++) {
    for (let f = 0; f < a[t]!.length; f++) {
      const x = a[t]![f]!;
      const y = b[t]![f]!;
      if (x === y) continue;
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) if (x[i]!.term !== y[i]!.term || x[i]!.part !== y[i]!.part) return false;
    }
  }
  return true;
}

/**
 * The candidate tables of a keyword search's typo rounds. In 'missing' mode only tokens
 * without an exact (or prefix) match anywhere get typo expansions; in 'all' mode every
 * token does. Each token and field is expanded once per typo budget (the walk is the
 * costly part of a typo query), and fields that look a token up with the same budget and
 * prefix rule share one walk (selectCandidatesShared). A token's synonyms (single words that
 * stand for it, QueryWords.synonyms) join its candidates in every round, as written.
 */
export class CandidateRounds {
  private readonly tables = new Map<string, CandidateTable>();
  /** Candidates by (token, field, typo budget). */
  private readonly expanded = new Map<number, Candidate[]>();

  constructor(
    private readonly plan: SearchPlan,
    private readonly segs: LiveSegment[],
    /** filter_by's documents per segment (keyword.ts SegmentMasks.allow): candidates are terms they hold. */
    private readonly allow: readonly (Uint8Array | null)[],
    /** The infix modes whose fields also take words found inside document words (`always`; with `fallback` for the fallback rounds). */
    private readonly infix: ReadonlySet<string> = ALWAYS,
  ) {}

  /** The candidate table at a typo level (0..2). */
  at(level: number, mode: 'missing' | 'all'): CandidateTable {
    const key = `${level}:${mode}`;
    let table = this.tables.get(key);
    if (table) return table;
    const { fields, words, params } = this.plan;
    const base = level === 0 ? undefined : this.at(0, 'all');
    table = words.tokens.map((_tok, t) => {
      const exact = base?.[t]!.some((perField) => perField.length > 0);
      const allowedFor = (fi: number) => Math.min(level, words.typos[t]![fi]!);
      // the same token, field and typo budget in another round: the same candidates
      const memoKey = (fi: number, allowed: number) => (t * fields.length + fi) * 4 + allowed;
      const reused = (fi: number): Candidate[] | undefined => {
        if (base && mode === 'missing' && exact) return base[t]![fi]!;
        const allowed = allowedFor(fi);
        if (base && allowed === 0) return base[t]![fi]!;
        return this.expanded.get(memoKey(fi, allowed));
      };
      const groups = new Map<string, { word: string; allowed: number; prefix: boolean; members: number[] }>();
      fields.forEach((_f, fi) => {
        if (reused(fi) !== undefined) return;
        const word = words.forField[t]![fi]!;
        const allowed = allowedFor(fi);
        const prefix = words.prefix[t]![fi]!;
        const key = `${allowed}${prefix ? 'p' : 'w'}${word}`;
        const g = groups.get(key);
        if (g) g.members.push(fi);
        else groups.set(key, { word, allowed, prefix, members: [fi] });
      });
      // glued words' parts too (not for a phrase's words, which must be whole and adjacent)
      const parts = params.split_join_tokens !== 'off' && !words.inPhrase.has(t);
      for (const { word, allowed, prefix, members } of groups.values()) {
        const lists = selectCandidatesShared(this.segs, members.map((g) => fields[g]!.field), word, allowed, prefix, params.max_candidates, this.allow);
        if (parts) {
          const ids = members.map((g) => ({ id: partsColumnId(fields[g]!.field.id) }));
          const partLists = selectCandidatesShared(this.segs, ids, word, allowed, prefix, params.max_candidates, this.allow);
          partLists.forEach((pl, k) => {
            if (pl.length === 0) return;
            // A part of a glued word (`aware` in `unit-aware`) costs what the word costs, so that
            // the part in a heavier field is not outranked by the word in a lighter one; it is
            // never an exact match, and among equals the whole word ranks first (score.ts, the
            // best field's whole-words bit). (The sort is stable: words before parts.)
            const merged = [...lists[k]!, ...pl.map((c): Candidate => ({ term: c.term, cost: c.cost, part: true }))];
            lists[k] = merged.sort((a, b) => a.cost - b.cost);
          });
        }
        members.forEach((g, k) => {
          // infix: words holding the query word inside them, as written (not a phrase's words)
          const f = fields[g]!;
          if (this.infix.has(f.infix) && !words.inPhrase.has(t)) lists[k] = [...lists[k]!, ...infixCandidates(this.segs, f.field, word, params.max_candidates, lists[k]!)];
          this.expanded.set(memoKey(g, allowed), withSynonyms(lists[k]!, words.synonyms?.[t]?.[g]));
        });
      }
      return fields.map((_f, fi) => reused(fi)!);
    });
    this.tables.set(key, table);
    return table;
  }
}

const ALWAYS: ReadonlySet<string> = new Set(['always']);

/** What a word found inside a longer document word costs: like a completion, never exact. */
export const INFIX_COST = 1;

/**
 * infix: the terms of `field` that hold `word` (anywhere but as the whole term), the `limit`
 * most frequent over all segments, leaving out terms already in `have`. A scan of the field's term dictionaries (an infix index of n-grams would
 * answer without one): only fields created with `infix: true`, only when a search asks.
 */
export function infixCandidates(segs: LiveSegment[], field: Field, word: string, limit: number, have: readonly Candidate[]): Candidate[] {
  if (word.length === 0) return [];
  const taken = new Set(have.map((c) => c.term));
  const df = new Map<string, number>();
  for (const seg of segs) {
    const ti = seg.reader.text(field.id);
    if (!ti) continue;
    const terms = ti.terms;
    for (let i = 0; i < terms.size; i++) {
      if (terms.length(i) <= word.length) continue;
      const term = terms.get(i);
      if (term.indexOf(word) < 0 || taken.has(term)) continue;
      df.set(term, (df.get(term) ?? 0) + ti.docFreq[i]!);
    }
  }
  return [...df.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, limit)
    .map(([term]) => ({ term, cost: INFIX_COST }));
}
