import { describe, expect, it } from 'vitest';
import { initialState, reduce, hitsOf, defaultQueryBy, defaultFacetFields, currentFacetRows, type Action, type ExploreState } from '../commands/explore/state.js';
import { searchPlan, userParams, errorForFilterBox } from '../commands/explore/params.js';
import { combineFilters, facetClause, facetRows, mergeFacetCounts, selectionClauses, toggleSelection } from '../commands/explore/facets.js';
import { applyEdit, textValue } from '../commands/explore/text-edit.js';
import { layout } from '../commands/explore/layout.js';
import { documentLines } from '../commands/explore/document-lines.js';
import { hitSubtitle, hitTitle, segments } from '../commands/explore/hit-text.js';
import type { CollectionSchema, SearchResponse } from '../commands/explore/client.js';
import { BOOKS_SCHEMA } from './helpers.js';

const schema = BOOKS_SCHEMA as unknown as CollectionSchema;

function run(state: ExploreState, ...actions: Action[]): ExploreState {
  return actions.reduce(reduce, state);
}

function type(text: string): Action {
  return { type: 'edit', field: 'query', edit: { kind: 'insert', text } };
}

function response(found: number, hits = 10, facets: SearchResponse['facet_counts'] = []): SearchResponse {
  return {
    found,
    out_of: 100,
    page: 1,
    search_time_ms: 1,
    search_cutoff: false,
    request_params: { collection_name: 'books', first_q: '', per_page: 10, q: '' },
    facet_counts: facets,
    hits: Array.from({ length: hits }, (_, i) => ({ document: { id: String(i) }, highlight: {}, highlights: [], text_match: 1 })),
  };
}

const authorFacet = {
  field_name: 'author',
  sampled: false,
  stats: { total_values: 2 },
  counts: [
    { value: 'J. K. Rowling', count: 3, highlighted: 'J. K. Rowling' },
    { value: 'J. R. R. Tolkien', count: 2, highlighted: 'J. R. R. Tolkien' },
  ],
};

describe('defaults from the schema', () => {
  it('searches every string and string[] field, in schema order', () => {
    expect(defaultQueryBy(schema)).toEqual(['title', 'author', 'tags']);
  });

  it('offers every field declared with facet: true in the facet panel', () => {
    expect(defaultFacetFields(schema)).toEqual(['author', 'tags', 'year', 'in_print']);
  });

  it('starts with the query box focused and an empty query that means *', () => {
    const s = initialState(schema);
    expect(s.focus).toBe('query');
    expect(userParams(s)).toMatchObject({ q: '*', query_by: 'title,author,tags', facet_by: 'author,tags,year,in_print' });
  });

  it('takes --query-by, filters and sort from the command line', () => {
    const s = initialState(schema, { queryBy: 'title', weights: '2', filterBy: 'year:>1990', sortBy: 'year:desc', q: 'harry' });
    expect(userParams(s)).toMatchObject({ q: 'harry', query_by: 'title', query_by_weights: '2', filter_by: 'year:>1990', sort_by: 'year:desc' });
  });
});

describe('the reducer', () => {
  it('types "q" into the query instead of quitting', () => {
    const s = run(initialState(schema), type('q'));
    expect(s.text.query.value).toBe('q');
  });

  it('goes back to page 1 and the first hit when the query changes', () => {
    let s = run(initialState(schema), { type: 'results', response: response(35), facetCounts: [] });
    s = run(s, { type: 'page', by: 1 }, { type: 'moveHit', by: 3 });
    expect([s.page, s.selectedHit]).toEqual([2, 3]);
    s = run(s, type('x'));
    expect([s.page, s.selectedHit]).toEqual([1, 0]);
  });

  it('pages no further than the last page', () => {
    let s = run(initialState(schema), { type: 'results', response: response(25), facetCounts: [] });
    s = run(s, { type: 'page', by: 1 }, { type: 'page', by: 1 }, { type: 'page', by: 1 });
    expect(s.page).toBe(3);
    s = run(s, { type: 'page', by: -5 });
    expect(s.page).toBe(1);
  });

  it('keeps the hit selection inside the hits', () => {
    let s = run(initialState(schema), { type: 'results', response: response(3, 3), facetCounts: [] });
    s = run(s, { type: 'moveHit', by: 10 });
    expect(s.selectedHit).toBe(2);
    s = run(s, { type: 'results', response: response(1, 1), facetCounts: [] });
    expect(s.selectedHit).toBe(0);
    expect(hitsOf(s)).toHaveLength(1);
  });

  it('cycles focus with Tab in a fixed order', () => {
    const order: string[] = [];
    let s = initialState(schema);
    for (let i = 0; i < 7; i++) {
      order.push(s.focus);
      s = run(s, { type: 'focusNext' });
    }
    expect(order).toEqual(['query', 'hits', 'facets', 'filter', 'sort', 'queryBy', 'weights']);
    expect(s.focus).toBe('query');
    expect(run(s, { type: 'focusPrev' }).focus).toBe('weights');
  });

  it('toggles the facet value under the cursor into filter_by, and out again', () => {
    let s = run(initialState(schema), { type: 'results', response: response(5, 5, [authorFacet]), facetCounts: [authorFacet] });
    s = run(s, { type: 'moveFacet', by: 1 }, { type: 'toggleFacet' });
    expect(userParams(s).filter_by).toBe('author:=[`J. R. R. Tolkien`]');
    s = run(s, { type: 'toggleFacet' });
    expect(userParams(s).filter_by).toBeUndefined();
  });

  it('keeps an error inline until a search succeeds, with the last results still there', () => {
    let s = run(initialState(schema), { type: 'results', response: response(5, 5), facetCounts: [] });
    s = run(s, { type: 'failed', message: 'filter_by: expected a value after `year:>` at position 6' });
    expect(s.error).toMatch(/position 6/);
    expect(s.response?.found).toBe(5);
    s = run(s, { type: 'results', response: response(2, 2), facetCounts: [] });
    expect(s.error).toBeNull();
  });

  it('scrolls the document no further than its end', () => {
    let s = run(initialState(schema), { type: 'scrollDetail', by: 8, max: 5 });
    expect(s.detailScroll).toBe(5);
    s = run(s, { type: 'scrollDetail', by: -8, max: 5 });
    expect(s.detailScroll).toBe(0);
  });
});

describe('facet selections', () => {
  it('ORs values of one field and ANDs fields with the free filter', () => {
    let sel = toggleSelection({}, 'author', 'A');
    sel = toggleSelection(sel, 'author', 'B');
    sel = toggleSelection(sel, 'year', '1997');
    let s = initialState(schema, { filterBy: 'rating:>4 || in_print:false' });
    s = { ...s, selections: sel };
    expect(userParams(s).filter_by).toBe('(rating:>4 || in_print:false) && author:=[`A`,`B`] && year:=[1997]');
  });

  it('quotes string values in backquotes and leaves numbers and booleans bare', () => {
    expect(facetClause('tags', ['science fiction'], 'string[]')).toBe('tags:=[`science fiction`]');
    expect(facetClause('year', ['1997', '1998'], 'int32')).toBe('year:=[1997,1998]');
    expect(facetClause('in_print', ['true'], 'bool')).toBe('in_print:=[true]');
  });

  it('is empty when there is neither a free filter nor a selection', () => {
    expect(combineFilters('  ', [])).toBe('');
  });

  it('asks for each selected field counted without its own clause (disjunctive counts)', () => {
    let s = initialState(schema, { filterBy: 'year:>1900' });
    s = { ...s, selections: { author: ['A'], tags: ['magic'] } };
    const plan = searchPlan(s);
    expect(plan.main.filter_by).toBe('(year:>1900) && author:=[`A`] && tags:=[`magic`]');
    expect(plan.facetQueries).toEqual([
      { field: 'author', params: expect.objectContaining({ facet_by: 'author', per_page: '0', filter_by: '(year:>1900) && tags:=[`magic`]' }) },
      { field: 'tags', params: expect.objectContaining({ facet_by: 'tags', per_page: '0', filter_by: '(year:>1900) && author:=[`A`]' }) },
    ]);
  });

  it('swaps each selected field’s own counts into the panel and keeps selected values that have no count', () => {
    const own = { ...authorFacet, counts: [{ value: 'Frank Herbert', count: 1, highlighted: 'Frank Herbert' }] };
    const merged = mergeFacetCounts([authorFacet], [own]);
    expect(merged[0]!.counts.map((c) => c.value)).toEqual(['Frank Herbert']);
    const rows = facetRows(['author'], merged, { author: ['J. K. Rowling'] });
    expect(rows).toEqual([
      { field: 'author', value: 'Frank Herbert', count: 1, selected: false },
      { field: 'author', value: 'J. K. Rowling', count: 0, selected: true },
    ]);
  });

  it('selects values of a facet field named like an Object.prototype member as of any other field', () => {
    for (const n of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString']) {
      const counts = [{ field_name: n, sampled: false, counts: [{ value: 'a', count: 1, highlighted: 'a' }], stats: { total_values: 1 } }];
      expect(facetRows([n], counts, {})).toEqual([{ field: n, value: 'a', count: 1, selected: false }]);
      expect(selectionClauses([n], {}, {})).toEqual([]);
      const sel = toggleSelection({}, n, 'a');
      expect(Object.keys(sel)).toEqual([n]);
      expect(facetRows([n], counts, sel)).toEqual([{ field: n, value: 'a', count: 1, selected: true }]);
      expect(selectionClauses([n], sel, {})).toEqual([facetClause(n, ['a'], 'string')]);
      expect(toggleSelection(sel, n, 'a')).toEqual({});
    }
  });

  it('lists facet rows in facet field order', () => {
    const s = run(initialState(schema), { type: 'results', response: response(5, 5, [authorFacet]), facetCounts: [authorFacet] });
    expect(currentFacetRows(s).map((r) => r.value)).toEqual(['J. K. Rowling', 'J. R. R. Tolkien']);
  });
});

describe('filter errors', () => {
  it('count positions from the start of the filter_by box, not the combined filter', () => {
    let s = initialState(schema, { filterBy: '  year:>' });
    s = { ...s, selections: { author: ['A'] } };
    // effective filter: "(year:>) && author:=[`A`]"; the parser stops at 7, the ")".
    expect(errorForFilterBox('filter_by: expected a value after `year:>` at position 7', s)).toBe('filter_by: expected a value after `year:>` at position 8');
  });

  it('are left alone when they lie in a facet clause', () => {
    let s = initialState(schema, { filterBy: 'a:1' });
    s = { ...s, selections: { author: ['A'] } };
    expect(errorForFilterBox('filter_by: bad at position 12', s)).toBe('filter_by: bad at position 12');
  });
});

describe('text editing', () => {
  it('inserts at the cursor and deletes the code point before it', () => {
    let t = applyEdit(textValue('hary'), { kind: 'left' });
    t = applyEdit(t, { kind: 'left' });
    t = applyEdit(t, { kind: 'insert', text: 'r' });
    expect(t).toEqual({ value: 'harry', cursor: 3 });
    expect(applyEdit(textValue('a😀'), { kind: 'backspace' })).toEqual({ value: 'a', cursor: 1 });
  });

  it('deletes a word, to the start and to the end like readline', () => {
    expect(applyEdit(textValue('harry potter'), { kind: 'deleteWord' }).value).toBe('harry ');
    const mid = { value: 'harry potter', cursor: 5 };
    expect(applyEdit(mid, { kind: 'killToStart' })).toEqual({ value: ' potter', cursor: 0 });
    expect(applyEdit(mid, { kind: 'killToEnd' })).toEqual({ value: 'harry', cursor: 5 });
  });

  it('turns pasted newlines into spaces and drops other control characters', () => {
    expect(applyEdit(textValue(), { kind: 'insert', text: 'a\nb\u0007c' }).value).toBe('a bc');
  });
});

describe('the layout', () => {
  it('fits an 80x24 terminal with the last row left free', () => {
    const L = layout(80, 24);
    expect(L.height).toBe(23);
    expect(L.mode).toBe('narrow');
    expect(L.hits.height + L.facets.height).toBe(L.body);
    expect(L.hits.width + 1 + L.detail.width).toBe(80);
    expect(L.hits.height).toBeGreaterThanOrEqual(5);
  });

  it('puts facets, hits and the document side by side on a wide terminal', () => {
    const L = layout(160, 50);
    expect(L.mode).toBe('wide');
    expect(L.facets.width + 1 + L.hits.width + 1 + L.detail.width).toBe(160);
  });

  it('never gives a pane a negative size on a tiny terminal', () => {
    const L = layout(10, 5);
    for (const p of [L.hits, L.facets, L.detail]) {
      expect(p.width).toBeGreaterThan(0);
      expect(p.height).toBeGreaterThan(0);
    }
  });
});

describe('hit text', () => {
  const hit = {
    document: { id: '8', title: 'Harry Potter and the Prisoner of Azkaban', author: 'J. K. Rowling', tags: ['magic', 'school'] },
    highlight: { title: { snippet: 'Harry \u0001Potter\u0002 and the Prisoner', matched_tokens: ['Potter'] }, tags: [{ snippet: 'magic', matched_tokens: [] }, { snippet: '\u0001school\u0002', matched_tokens: ['school'] }] },
    highlights: [],
    text_match: 578730123365711993n as unknown as number,
  };

  it('splits highlight markers into plain and matched segments', () => {
    expect(segments('Harry \u0001Potter\u0002 and')).toEqual([
      { text: 'Harry ', match: false },
      { text: 'Potter', match: true },
      { text: ' and', match: false },
    ]);
  });

  it('titles a hit with its first query_by field, highlighted', () => {
    expect(hitTitle(hit, ['title', 'author', 'tags'])).toBe('Harry \u0001Potter\u0002 and the Prisoner');
  });

  it('shows the id, text_match and another field where tokens matched', () => {
    expect(hitSubtitle(hit, ['title', 'author', 'tags'])).toBe('id 8 · text_match 578730123365711993 · tags: \u0001school\u0002');
  });

  it('shows nothing for a field named like an Object.prototype member that the hit lacks', () => {
    for (const n of ['constructor', 'toString', '__proto__']) {
      expect(hitTitle(hit, [n])).toBe(hitTitle(hit, ['nope']));
      expect(hitSubtitle(hit, ['title', n])).toBe(hitSubtitle(hit, ['title', 'nope']));
    }
  });

  it('shows vector_distance for vector hits', () => {
    expect(hitSubtitle({ ...hit, text_match: undefined, vector_distance: 0.123456 }, ['title'])).toBe('id 8 · vector_distance 0.1235');
  });
});

describe('the document pane', () => {
  it('pretty-prints the document and wraps long values at a space, indented', () => {
    const lines = documentLines({ id: '1', title: 'the quick brown fox jumps over the lazy dog' }, 24).map((l) => l.text);
    expect(lines[0]).toBe('{');
    expect(lines[1]).toBe('  "id": "1",');
    expect(lines.every((l) => l.length <= 24)).toBe(true);
    expect(lines.slice(2, -1).join('').replace(/\s+/g, ' ')).toContain('the quick brown fox jumps over the lazy dog');
  });

  it('keeps arrays of scalars on one line and prints big integers exactly', () => {
    const text = documentLines({ tags: ['a', 'b'], big: 9007199254740993n, nested: [{ x: 1 }] }, 80).map((l) => l.text);
    expect(text).toContain('  "tags": ["a", "b"],');
    expect(text).toContain('  "big": 9007199254740993,');
    expect(text).toContain('      "x": 1');
  });

  it('marks the key part of each line for colouring', () => {
    const [, id] = documentLines({ id: '1' }, 40);
    expect(id!.text.slice(0, id!.keyLength)).toBe('  "id": ');
  });
});

describe('numbers in the status line', () => {
  it('writes counts with thousands separators, like 63,666', async () => {
    const { thousands } = await import('../commands/search-render.js');
    expect(thousands(0)).toBe('0');
    expect(thousands(999)).toBe('999');
    expect(thousands(63666)).toBe('63,666');
    expect(thousands(1234567)).toBe('1,234,567');
  });
});
