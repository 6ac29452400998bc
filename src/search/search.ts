/**
 * src/search: here is a search plan (query/plan.ts) and an index snapshot, which documents
 * answer it, in which order, and what does the response show?
 *
 *   1. snapshot     the collection's live segments, taken now
 *   2. masks        per segment: the documents filter_by allows, those an excluded word removes
 *   3. execute      keyword (keyword.ts): typo rounds and token dropping over
 *                     candidates (candidates.ts) -> match (match.ts, scored by score.ts)
 *                   wildcard (keyword.ts scanAll), vector (vector.ts), hybrid (hybrid.ts)
 *   4. collect      every match -> Matches: found, facets, and the top k or the groups
 *                     (collectors.ts)
 *   5. the page     hits [offset, offset + limit) hydrated: documents, highlights,
 *                     text_match_info (hits.ts)
 *
 * Synonyms run in step 3 (src/synonyms/variants.ts: the query's variants, planned with it);
 * curation wraps step 4 (src/curation/pins.ts: hidden and pinned documents masked out
 * before matching, pinned ones placed into the page after collecting).
 */
import type { Store } from '../storage/store.js';
import type { Field, Schema } from '../schema/schema.js';
import { getSchema } from '../collection/catalog.js';
import { isDeleted, snapshot } from '../index/manifest.js';
import { parseFilter } from '../query/filter.js';
import { compileFilter, evalFilter } from '../query/filter-eval.js';
import type { SortClause } from '../query/sort.js';
import type { SearchPlan } from '../query/plan.js';
import { joinResolver } from '../join/join.js';
import type { JoinAccess } from '../join/access.js';
import { Facets, Groups, Matches, TopHits, clauseValues } from './collectors.js';
import type { FacetResult } from './facets.js';
import { exclusionBytes, runRounds, scanAll, type SegmentMasks } from './keyword.js';
import { allowedSeqs, nearest, runVector, vectorRun } from './vector.js';
import { runHybrid } from './hybrid.js';
import { facetParent, highlightFields, hydrate, type SearchHit } from './hits.js';
import { Sorter, type Hit } from './topk.js';
import type { CandidateTable } from './candidates.js';
import { geoDistances } from '../geo/sort.js';
import { runWithSynonyms } from '../synonyms/variants.js';
import { curateMasks, placePinned } from '../curation/pins.js';
import { groupValue } from '../index/columns.js';
import { type Budget, budgetOf, runWith } from './budget.js';
import { visibleCount } from './visible.js';

export type { SearchHit } from './hits.js';

export interface SearchResponse {
  facet_counts: FacetResult[];
  found: number;
  found_docs?: number;
  hits?: SearchHit[];
  grouped_hits?: Array<{ group_key: unknown[]; hits: SearchHit[]; found: number }>;
  out_of: number;
  page: number;
  request_params: { collection_name: string; first_q: string; per_page: number; q: string };
  search_cutoff: boolean;
  search_time_ms: number;
  [k: string]: unknown;
}

/** What a union of searches (union.ts) needs of each: the page's sort keys and the clauses they follow. */
export interface RankedPage {
  clauses: SortClause[];
  keys: (number | string)[][];
}

/**
 * Runs a plan. `queryVector`: the embedding of plan.embed, when the plan needed one.
 * `ranked`, when given, receives the page's sort keys (a union merges pages by them).
 */
export function search(plan: SearchPlan, queryVector?: Float32Array, ranked?: (r: RankedPage) => void): SearchResponse {
  const budget = budgetOf(plan.params.search_cutoff_ms);
  return runWith(budget, () => runPlan(plan, budget, queryVector, ranked));
}

function runPlan(plan: SearchPlan, budget: Budget, queryVector?: Float32Array, ranked?: (r: RankedPage) => void): SearchResponse {
  const { store, schema, params } = plan;
  const snap = snapshot(store, schema.id);
  const segs = snap.segments;
  const vrun = vectorRun(plan, queryVector);
  const mode: 'keyword' | 'vector' | 'hybrid' = vrun ? (plan.textual ? 'hybrid' : 'vector') : 'keyword';

  const filter = plan.filter;
  const masks: SegmentMasks = {
    // (past the deadline a segment's filter allows nothing: a cut filter never lets more through)
    allow: segs.map((seg) => (filter ? (budget.stop() ? new Uint8Array(seg.reader.n) : evalFilter(filter, seg)) : null)),
    exclude: segs.map((seg) => exclusionBytes(seg, plan, schema)),
  };
  // (before curation marks its documents in the masks)
  const outOf = visibleCount(plan, snap, masks.allow);
  // curation: hidden and pinned documents out of the matching; pinned ones placed below
  const pinned = plan.curation ? curateMasks(plan, snap, masks) : [];
  const [offset, limit] = pinned.length > 0 ? [0, plan.offset + plan.limit] : [plan.offset, plan.limit];

  const clauses = sortClauses(plan, mode);
  const sorter = new Sorter(clauses);
  const clauseValue = clauseValues(store, schema, clauses, plan.sortVectors, plan.joins);
  const grouping = plan.groupFields.length > 0;
  const hits = grouping
    ? new Groups(segs, sorter, plan.groupFields, params.group_limit, offset, limit, clauseValue)
    : new TopHits(segs, sorter, offset, limit, clauseValue);
  const parentOf = plan.facets.some((f) => f.returnParent)
    ? (segIndex: number, ord: number, field: Field, value: string) => facetParent(store, schema, plan, segs[segIndex]!.reader.seqs[ord]!, field.name, value)
    : undefined;
  const matches = new Matches(hits, new Facets(segs, plan.facets, params.max_facet_values, params.highlight_start_tag, params.highlight_end_tag, plan.groupFields, parentOf));
  // (the matching loops look every 1,024 documents or steps: that is the work counted)
  const shouldStop = () => {
    budget.work += 1024;
    return budget.stop();
  };

  let candidates: CandidateTable | undefined;
  if (plan.emptyAfterStopwords) {
    // every word was a stopword: nothing to match
  } else if (mode === 'keyword' && plan.wildcard) {
    scanAll(segs, masks, matches.collect, shouldStop);
  } else if (mode === 'keyword') {
    const found = () => matches.found;
    const sink = { collect: matches.collect, found, ...(hits instanceof TopHits && hits.threshold ? { threshold: hits.threshold } : {}), ...(matches.bits ? { bits: matches.bits } : {}) };
    candidates = plan.variants ? runWithSynonyms(plan, segs, masks, sink, shouldStop) : runRounds(plan, segs, masks, sink, shouldStop);
  } else {
    const vhits = nearest(store, plan, vrun!, allowedSeqs(plan, snap, masks));
    if (mode === 'vector') runVector(snap, vhits, matches.collect);
    else candidates = runHybrid(plan, snap, masks, vrun!, vhits, matches.collect, shouldStop);
  }

  const hfields = highlightFields(plan, candidates);
  const show = (h: Hit): SearchHit => {
    // past the deadline, hits come without highlights (the documents are what was asked for)
    const hit = hydrate(store, schema, plan, h, budget.stop() ? [] : hfields, !plan.textual);
    const geo = geoDistances(plan.userSort, segs[h.seg]!, h.ord);
    if (geo) hit.geo_distance_meters = geo;
    return hit;
  };
  let pageHits: SearchHit[] | undefined;
  let grouped: SearchResponse['grouped_hits'];
  if (hits instanceof Groups) {
    let groups = hits.harvest();
    if (pinned.length > 0) {
      // each pinned document is a group of its own at its position
      const pins = pinned.map((p) => ({ item: { key: plan.groupFields.map((f) => groupValue(segs[p.hit.seg]!, f, p.hit.ord)), hits: [p.hit], found: 1 }, position: p.position }));
      groups = placePinned(groups, pins, plan.offset, plan.limit);
    }
    grouped = groups.map((g) => ({ group_key: g.key, hits: g.hits.map(show), found: g.found }));
  } else {
    let top = hits.harvest();
    if (pinned.length > 0) top = placePinned(top, pinned.map((p) => ({ item: p.hit, position: p.position })), plan.offset, plan.limit);
    ranked?.({ clauses, keys: top.map((h) => h.keys) });
    pageHits = top.map(show);
  }
  return {
    facet_counts: matches.facets.harvest(),
    found: (grouping ? hits.size : matches.found) + pinned.length,
    ...(grouping ? { found_docs: matches.found } : {}),
    ...(grouping ? { grouped_hits: grouped } : { hits: pageHits }),
    out_of: outOf,
    page: params.page,
    request_params: { collection_name: schema.name, first_q: params.q, per_page: params.per_page, q: params.q },
    search_cutoff: budget.cut,
    search_time_ms: Math.round(budget.elapsed()),
    ...(plan.curation?.metadata ? { metadata: plan.curation.metadata } : {}),
  };
}

/**
 * The sort clauses: sort_by (with text_match, then seq, added as tie-breakers), or by
 * default text_match (the fused score in hybrid search; the distance in vector search),
 * then the default_sorting_field, then newest first. A keyword search ranking by text_match
 * breaks the ties left before newest first by the words' rarity (score.ts rarityTie).
 */
function sortClauses(plan: SearchPlan, mode: 'keyword' | 'vector' | 'hybrid'): SortClause[] {
  const out = baseSortClauses(plan, mode);
  const tm = out.findIndex((c) => c.kind === 'text_match');
  if (mode !== 'keyword' || tm < 0) return out;
  // prioritize_token_position: the tie-break is the words' position, part of the text match
  const last = out.findIndex((c) => c.kind === 'seq');
  out.splice(plan.params.prioritize_token_position ? tm + 1 : last < 0 ? out.length : last, 0, { kind: 'rarity', dir: -1 });
  return out;
}

function baseSortClauses(plan: SearchPlan, mode: 'keyword' | 'vector' | 'hybrid'): SortClause[] {
  const user = plan.userSort;
  if (mode === 'vector' && !user) return [{ kind: 'vector_distance', dir: 1 }, { kind: 'seq', dir: -1 }];
  if (mode === 'hybrid' && !user) return [{ kind: 'text_match', dir: -1 }, { kind: 'seq', dir: -1 }];
  const wildcard = mode === 'keyword' ? plan.wildcard : false;
  const seq: SortClause = { kind: 'seq', dir: -1 };
  if (user && user.length > 0) {
    const out = [...user];
    if (!wildcard && !out.some((c) => c.kind === 'text_match')) out.push({ kind: 'text_match', dir: -1 });
    if (!out.some((c) => c.kind === 'seq')) out.push(seq);
    return out;
  }
  const out: SortClause[] = [];
  if (!wildcard) out.push({ kind: 'text_match', dir: -1 });
  const dsf = plan.schema.record.default_sorting_field;
  if (dsf) {
    const f = plan.schema.field(dsf);
    if (f) out.push({ kind: 'field', field: f, dir: -1 });
  }
  out.push(seq);
  return out;
}

/** Matching documents' seqs, ascending (for export, update and delete by filter). */
export function filterSeqs(store: Store, collection: string, filterBy: string, joins?: JoinAccess): number[] {
  const schema: Schema = getSchema(store, collection);
  const snap = snapshot(store, schema.id);
  const filter = compileFilter(parseFilter(filterBy), schema, store, joinResolver(store, schema, joins));
  const out: number[] = [];
  for (const seg of snap.segments) {
    const allow = evalFilter(filter, seg);
    for (let o = 0; o < seg.reader.n; o++) if (allow[o] && !isDeleted(seg.deleted, o)) out.push(seg.reader.seqs[o]!);
  }
  return out.sort((a, b) => a - b);
}
