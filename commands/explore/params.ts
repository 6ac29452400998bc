/**
 * commands/explore/params.ts: from the explorer's state to search parameters. `userParams`
 * is what the user tuned (and what the equivalent command lines carry); `searchPlan` adds
 * what the screen needs: highlight markers and one facet-only search per field that has a
 * selection, for disjunctive counts.
 */
import type { SearchParams } from './client.js';
import { combineFilters, selected, selectionClauses } from './facets.js';
import type { ExploreState } from './state.js';

/** Highlight markers the hit list turns into colour (as `fathom search` does). */
export const MARK_START = '\u0001';
export const MARK_END = '\u0002';

export const DEFAULT_PER_PAGE = 10;

export function effectiveFilter(state: ExploreState, except?: string): string {
  return combineFilters(state.text.filter.value, selectionClauses(state.facetFields, state.selections, state.fieldTypes, except));
}

/**
 * A `filter_by ... at position N` error counts from the start of the effective filter,
 * where the free filter may sit in parentheses after trimming; this rewrites N to count
 * from the start of the filter_by box, when the error lies inside what the user typed.
 */
export function errorForFilterBox(message: string, state: ExploreState): string {
  const m = /^(filter_by: .*\bat position )(\d+)(.*)$/.exec(message);
  const free = state.text.filter.value;
  if (!m || free.trim() === '') return message;
  const wrapped = selectionClauses(state.facetFields, state.selections, state.fieldTypes).length > 0 ? 1 : 0;
  const leading = free.length - free.trimStart().length;
  const pos = Number(m[2]) - wrapped;
  if (pos < 0 || pos > free.trim().length) return message;
  return `${m[1]}${pos + leading}${m[3]}`;
}

/** The parameters the user tuned, in a stable order, without empty ones. */
export function userParams(state: ExploreState): SearchParams {
  const p: SearchParams = {};
  p.q = state.text.query.value.trim() === '' ? '*' : state.text.query.value;
  const set = (k: string, v: string) => {
    if (v.trim() !== '') p[k] = v.trim();
  };
  set('query_by', state.text.queryBy.value);
  set('query_by_weights', state.text.weights.value);
  set('filter_by', effectiveFilter(state));
  set('sort_by', state.text.sort.value);
  set('facet_by', state.facetFields.join(','));
  if (state.page > 1) p.page = String(state.page);
  if (state.perPage !== DEFAULT_PER_PAGE) p.per_page = String(state.perPage);
  for (const [k, v] of Object.entries(state.extraParams)) if (!(k in p)) p[k] = v;
  return p;
}

export interface SearchPlan {
  main: SearchParams;
  /** One facet-only search per selected field: its counts without its own clause. */
  facetQueries: Array<{ field: string; params: SearchParams }>;
}

export function searchPlan(state: ExploreState): SearchPlan {
  const user = userParams(state);
  const main: SearchParams = { ...user, highlight_start_tag: MARK_START, highlight_end_tag: MARK_END };
  const facetQueries = state.facetFields
    .filter((f) => (selected(state.selections, f)?.length ?? 0) > 0)
    .map((field) => {
      const params: SearchParams = { ...user, facet_by: field, per_page: '0', page: '1' };
      const filter = effectiveFilter(state, field);
      if (filter) params.filter_by = filter;
      else delete params.filter_by;
      delete params.sort_by;
      return { field, params };
    });
  return { main, facetQueries };
}

/** A stable key: the search loop runs again only when this changes. */
export function planKey(plan: SearchPlan): string {
  return JSON.stringify(plan);
}
