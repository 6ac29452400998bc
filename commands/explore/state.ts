/**
 * commands/explore/state.ts: everything the explorer shows, and a pure reducer over it.
 *
 * The query, the free filter_by / sort_by / query_by / weights inputs, the facet
 * selections, the page, which pane has focus and the last answer all live here; keys.ts
 * turns keystrokes into these actions and the search loop feeds answers back in. No
 * terminal is needed to test any of it.
 */
import type { CollectionSchema, FacetResult, SearchHit, SearchParams, SearchResponse } from './client.js';
import { facetRows, toggleSelection, type Selections } from './facets.js';
import { DEFAULT_PER_PAGE, errorForFilterBox } from './params.js';
import { applyEdit, textValue, type Edit, type TextValue } from './text-edit.js';

export type TextFocus = 'query' | 'filter' | 'sort' | 'queryBy' | 'weights';
export type Focus = TextFocus | 'hits' | 'facets';
export type Overlay = 'help' | 'command' | null;

/** The order Tab moves focus in. */
export const FOCUS_ORDER: readonly Focus[] = ['query', 'hits', 'facets', 'filter', 'sort', 'queryBy', 'weights'];

export function isTextFocus(f: Focus): f is TextFocus {
  return f !== 'hits' && f !== 'facets';
}

export interface ExploreState {
  collection: string;
  /** Field name → schema type, to quote facet values in filter_by. */
  fieldTypes: Record<string, string>;
  facetFields: string[];
  text: Record<TextFocus, TextValue>;
  selections: Selections;
  page: number;
  perPage: number;
  /** Other parameters given with --param, carried into every search. */
  extraParams: SearchParams;
  focus: Focus;
  overlay: Overlay;
  selectedHit: number;
  detailScroll: number;
  facetCursor: number;
  /** The last answer to the current (or an earlier) query; null before the first. */
  response: SearchResponse | null;
  facetCounts: FacetResult[];
  loading: boolean;
  /** The last search's error, shown inline until a search succeeds. */
  error: string | null;
  /** A transient message (e.g. "copied"), cleared by the next key. */
  notice: string | null;
}

export type Action =
  | { type: 'edit'; field: TextFocus; edit: Edit }
  | { type: 'focus'; focus: Focus }
  | { type: 'focusNext' }
  | { type: 'focusPrev' }
  | { type: 'moveHit'; by: number }
  | { type: 'moveHitTo'; index: number | 'last' }
  | { type: 'scrollDetail'; by: number; max: number }
  | { type: 'moveFacet'; by: number }
  | { type: 'toggleFacet' }
  | { type: 'clearFacets' }
  | { type: 'page'; by: number }
  | { type: 'overlay'; overlay: Overlay }
  | { type: 'notice'; message: string | null }
  | { type: 'searching' }
  | { type: 'results'; response: SearchResponse; facetCounts: FacetResult[] }
  | { type: 'failed'; message: string }
  // Effects the App carries out; the reducer leaves the state as it is.
  | { type: 'quit' }
  | { type: 'refresh' }
  | { type: 'copy'; what: 'fathom' | 'curl' };

export interface InitialOptions {
  q?: string;
  queryBy?: string;
  weights?: string;
  filterBy?: string;
  sortBy?: string;
  perPage?: number;
  extraParams?: SearchParams;
}

const TEXT_TYPES = new Set(['string', 'string[]']);

/** Default query_by: the collection's indexed string and string[] fields, in schema order. */
export function defaultQueryBy(schema: CollectionSchema): string[] {
  return schema.fields.filter((f) => TEXT_TYPES.has(f.type) && f.index !== false && !/[*^$]/.test(f.name)).map((f) => f.name);
}

/** Default facet panel: every field declared with `facet: true`. */
export function defaultFacetFields(schema: CollectionSchema): string[] {
  return schema.fields.filter((f) => f.facet === true && !/[*^$]/.test(f.name)).map((f) => f.name);
}

export function initialState(schema: CollectionSchema, o: InitialOptions = {}): ExploreState {
  return {
    collection: schema.name,
    fieldTypes: Object.fromEntries(schema.fields.map((f) => [f.name, f.type])),
    facetFields: defaultFacetFields(schema),
    text: {
      query: textValue(o.q ?? ''),
      filter: textValue(o.filterBy ?? ''),
      sort: textValue(o.sortBy ?? ''),
      queryBy: textValue(o.queryBy ?? defaultQueryBy(schema).join(',')),
      weights: textValue(o.weights ?? ''),
    },
    selections: {},
    page: 1,
    perPage: o.perPage ?? DEFAULT_PER_PAGE,
    extraParams: o.extraParams ?? {},
    focus: 'query',
    overlay: null,
    selectedHit: 0,
    detailScroll: 0,
    facetCursor: 0,
    response: null,
    facetCounts: [],
    loading: false,
    error: null,
    notice: null,
  };
}

/** The hits of the current answer (grouped hits flattened). */
export function hitsOf(state: ExploreState): SearchHit[] {
  const r = state.response;
  if (!r) return [];
  return r.hits ?? (r.grouped_hits ?? []).flatMap((g) => g.hits);
}

export function selectedHit(state: ExploreState): SearchHit | undefined {
  return hitsOf(state)[state.selectedHit];
}

export function lastPage(state: ExploreState): number {
  if (!state.response || state.perPage <= 0) return state.page;
  return Math.max(1, Math.ceil(state.response.found / state.perPage));
}

export function currentFacetRows(state: ExploreState) {
  return facetRows(state.facetFields, state.facetCounts, state.selections);
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, n));
}

/** After the query changed: back to page 1 and the first hit. */
function requeried(s: ExploreState): ExploreState {
  return { ...s, page: 1, selectedHit: 0, detailScroll: 0 };
}

export function reduce(state: ExploreState, action: Action): ExploreState {
  switch (action.type) {
    case 'edit': {
      const before = state.text[action.field];
      const after = applyEdit(before, action.edit);
      if (after.value === before.value && after.cursor === before.cursor) return state;
      const next = { ...state, text: { ...state.text, [action.field]: after } };
      return after.value === before.value ? next : requeried(next);
    }
    case 'focus':
      return { ...state, focus: action.focus, overlay: null };
    case 'focusNext':
    case 'focusPrev': {
      const i = FOCUS_ORDER.indexOf(state.focus);
      const n = FOCUS_ORDER.length;
      return { ...state, focus: FOCUS_ORDER[(i + (action.type === 'focusNext' ? 1 : n - 1)) % n]! };
    }
    case 'moveHit':
    case 'moveHitTo': {
      const count = hitsOf(state).length;
      if (count === 0) return state;
      const target = action.type === 'moveHit' ? state.selectedHit + action.by : action.index === 'last' ? count - 1 : action.index;
      const i = clamp(target, 0, count - 1);
      return i === state.selectedHit ? state : { ...state, selectedHit: i, detailScroll: 0 };
    }
    case 'scrollDetail': {
      const d = clamp(state.detailScroll + action.by, 0, Math.max(0, action.max));
      return d === state.detailScroll ? state : { ...state, detailScroll: d };
    }
    case 'moveFacet': {
      const rows = currentFacetRows(state).length;
      if (rows === 0) return state;
      return { ...state, facetCursor: clamp(state.facetCursor + action.by, 0, rows - 1) };
    }
    case 'toggleFacet': {
      const row = currentFacetRows(state)[state.facetCursor];
      if (!row) return state;
      return requeried({ ...state, selections: toggleSelection(state.selections, row.field, row.value) });
    }
    case 'clearFacets':
      return Object.keys(state.selections).length === 0 ? state : requeried({ ...state, selections: {} });
    case 'page': {
      const page = clamp(state.page + action.by, 1, Math.max(1, lastPage(state)));
      return page === state.page ? state : { ...state, page, selectedHit: 0, detailScroll: 0 };
    }
    case 'overlay':
      return { ...state, overlay: action.overlay };
    case 'notice':
      return state.notice === action.message ? state : { ...state, notice: action.message };
    case 'searching':
      return state.loading ? state : { ...state, loading: true };
    case 'results': {
      const next: ExploreState = { ...state, response: action.response, facetCounts: action.facetCounts, loading: false, error: null };
      const hits = hitsOf(next).length;
      const rows = currentFacetRows(next).length;
      return { ...next, selectedHit: clamp(next.selectedHit, 0, Math.max(0, hits - 1)), facetCursor: clamp(next.facetCursor, 0, Math.max(0, rows - 1)) };
    }
    case 'failed':
      return { ...state, loading: false, error: errorForFilterBox(action.message, state) };
    case 'quit':
    case 'refresh':
    case 'copy':
      return state;
  }
}
