/**
 * dashboard/src/search.ts: the search preview, InstantSearch.js over
 * typesense-instantsearch-adapter against this server: the stack users put on their own
 * sites, so the page also shows that stack working against Fathom.
 *
 * What holds:
 *   - the adapter sends the key in the header (`sendApiKeyAsQueryParam: false`; the
 *     Typesense search client's default would put it in every URL) and caches nothing, so
 *     a search after an import sees the new documents;
 *   - the choices the adapter has no widget for (query_by, filter_by, vector_query) live in
 *     `settings`; changing one refreshes the search, keeping the query and refinements;
 *   - vector fields are excluded from hits (hundreds of floats each, and nothing to read);
 *   - the raw JSON shown is the server's answer to the main search, before the adapter
 *     reshapes it, and each hit's own raw hit.
 */
import instantsearch from 'instantsearch.js/es/index.js';
import { hits, pagination, refinementList, searchBox, stats, clearRefinements } from 'instantsearch.js/es/widgets/index.js';
import { connectHitsPerPage, connectRange, connectSortBy } from 'instantsearch.js/es/connectors/index.js';
import TypesenseInstantSearchAdapter from 'typesense-instantsearch-adapter';
import type { Api, AccessCollection, FieldInfo } from './api.js';
import { field, fill, h, pretty, say, statusLine, uid } from './dom.js';

/** Per-page choices; the first is the default. */
const PER_PAGE = [10, 20, 50, 100];
/** Facet values shown before "Show more", and after it. */
const FACET_LIMIT = 8;
const FACET_MORE = 50;
/** Other fields a hit shows beside its title, at most. */
const HIT_FIELDS = 4;

const TEXT = new Set(['string', 'string[]', 'string*']);
const NUMBER = new Set(['int32', 'int64', 'float', 'int32[]', 'int64[]', 'float[]']);
/** A field name that is a pattern (`.*_facet`) names no single field. */
const PATTERN = /[*?[\](){}|^$\\+]/;

const isVector = (f: FieldInfo) => f.type === 'float[]' && (f.num_dim !== undefined || f.embed !== undefined);
const isEmbedding = (f: FieldInfo) => f.type === 'float[]' && f.embed !== undefined;
const concrete = (f: FieldInfo) => !PATTERN.test(f.name);

/** Fields a query can run over: indexed text fields, then embedding fields (semantic search). */
export function queryable(fields: FieldInfo[]): { text: string[]; embedding: string[] } {
  return {
    text: fields.filter((f) => concrete(f) && TEXT.has(f.type) && f.index !== false).map((f) => f.name),
    embedding: fields.filter((f) => concrete(f) && isEmbedding(f)).map((f) => f.name),
  };
}

/** Sort choices from the schema: relevance, then each sortable single-valued field both ways. */
export function sortOptions(collection: string, fields: FieldInfo[]): Array<{ value: string; label: string }> {
  const out = [{ value: collection, label: 'Relevance' }];
  for (const f of fields) {
    if (!concrete(f) || f.sort !== true || f.type.endsWith('[]')) continue;
    out.push({ value: `${collection}/sort/${f.name}:desc`, label: `${f.name}, descending` });
    out.push({ value: `${collection}/sort/${f.name}:asc`, label: `${f.name}, ascending` });
  }
  return out;
}

interface Settings {
  queryBy: string[];
  filterBy: string;
  vectorQuery: string;
}

export interface SearchView {
  el: HTMLElement;
  /** Moves the keyboard to the search box. */
  focus(): void;
  dispose(): void;
}

export function searchView(api: Api, collections: AccessCollection[], initial: string | undefined, onCollection: (name: string) => void): SearchView {
  const searchable = collections.filter((c) => c.actions.includes('documents:search') && c.fields);
  const heading = h('h2', { id: uid('h'), tabindex: -1 }, 'Search');
  const el = h('section', { class: 'view view-search', 'aria-labelledby': heading.id }, heading);
  if (searchable.length === 0) {
    el.append(h('p', null, 'This key may not search any collection.'));
    return { el, focus: () => heading.focus(), dispose() {} };
  }
  let current = searchable.find((c) => c.name === initial) ?? searchable[0]!;

  const select = h('select', { name: 'collection' }, ...searchable.map((c) => h('option', { value: c.name }, c.alias_of ? `${c.name} (alias of ${c.alias_of})` : c.name)));
  select.value = current.name;
  const queryByBox = h('fieldset', { class: 'query-by' });
  const filterInput = h('input', { type: 'text', name: 'filter_by', autocomplete: 'off', spellcheck: 'false' });
  const vectorInput = h('input', { type: 'text', name: 'vector_query', autocomplete: 'off', spellcheck: 'false' });
  const sortBox = h('div', { class: 'field' });
  const perPageBox = h('div', { class: 'field' });
  const searchBoxEl = h('div', { class: 'searchbox' });
  const statsEl = h('div', { class: 'stats', 'aria-live': 'polite' });
  const errorEl = statusLine();
  const facetsEl = h('div', { class: 'facet-list' });
  const clearEl = h('div');
  const filters = h('details', { class: 'facets' }, h('summary', null, 'Refine'), facetsEl, clearEl);
  // open beside the hits on a wide screen; folded above them on a narrow one
  filters.open = window.matchMedia('(min-width: 800px)').matches;
  const hitsEl = h('div', { class: 'hits' });
  const pageEl = h('nav', { class: 'pages', 'aria-label': 'Result pages' });
  const rawPre = h('pre', { class: 'json', tabindex: 0 }, 'No search yet.');
  const raw = h('details', { class: 'raw-response' }, h('summary', null, 'Response JSON'), rawPre);

  el.append(
    h(
      'div',
      { class: 'toolbar' },
      field('Collection', select),
      queryByBox,
      field('Filter (filter_by)', filterInput, 'Applied on Enter; combined with the refinements.'),
      field('Vector query (vector_query)', vectorInput, 'Applied on Enter: a vector, or [] and the id of a document.'),
    ),
    searchBoxEl,
    h('div', { class: 'result-bar' }, statsEl, h('div', { class: 'result-controls' }, sortBox, perPageBox)),
    errorEl,
    h('div', { class: 'results' }, h('aside', { class: 'refine', 'aria-label': 'Refine results' }, filters), h('div', { class: 'results-main' }, hitsEl, pageEl, raw)),
  );

  let settings: Settings = { queryBy: [], filterBy: '', vectorQuery: '' };
  let search: ReturnType<typeof instantsearch> | undefined;
  let adapter: TypesenseInstantSearchAdapter | undefined;
  let lastQuery = '';

  /** The adapter's per-search parameters for the current settings. */
  const params = (c: AccessCollection) => {
    const fields = c.fields ?? [];
    const byName = new Map(fields.map((f) => [f.name, f]));
    const text = settings.queryBy.filter((n) => !isEmbedding(byName.get(n) ?? ({ type: '' } as FieldInfo)));
    const vectors = fields.filter((f) => concrete(f) && isVector(f)).map((f) => f.name);
    return {
      query_by: settings.queryBy.join(','),
      // the title is highlighted whole; other fields show a snippet around the match
      highlight_full_fields: text[0] ?? '',
      ...(vectors.length > 0 ? { exclude_fields: vectors.join(',') } : {}),
      ...(settings.vectorQuery.trim() !== '' ? { vector_query: settings.vectorQuery.trim() } : {}),
    };
  };

  const renderQueryBy = () => {
    const { text, embedding } = queryable(current.fields ?? []);
    const boxes = [...text, ...embedding].map((name) => {
      const box = h('input', { type: 'checkbox', name: 'query_by', value: name, checked: settings.queryBy.includes(name) });
      box.addEventListener('change', () => {
        const chosen = [...queryByBox.querySelectorAll<HTMLInputElement>('input:checked')].map((b) => b.value);
        if (chosen.length === 0) {
          box.checked = true; // a search needs at least one field
          return;
        }
        settings.queryBy = chosen;
        refresh();
      });
      return h('label', { class: 'check' }, box, ' ', name, embedding.includes(name) ? h('span', { class: 'tag' }, 'semantic') : null);
    });
    fill(queryByBox, h('legend', null, 'Search in (query_by)'), boxes.length > 0 ? boxes : h('span', null, 'no searchable fields'));
  };

  /** Applies the settings to the running search and searches again, keeping the query and refinements. */
  const refresh = () => {
    if (!search || !adapter) return;
    // the adapter reads its configuration on every search (not in its typings)
    const extra = (adapter as unknown as { configuration: { additionalSearchParameters: Record<string, unknown> } }).configuration.additionalSearchParameters;
    Object.assign(extra, params(current));
    if (settings.vectorQuery.trim() === '') delete extra.vector_query;
    search.refresh();
  };

  const start = () => {
    search?.dispose();
    const c = current;
    const fields = c.fields ?? [];
    const { text, embedding } = queryable(fields);
    settings = { queryBy: text.length > 0 ? text : embedding.slice(0, 1), filterBy: filterInput.value, vectorQuery: vectorInput.value };
    renderQueryBy();
    // examples from this schema
    const facet = fields.find((f) => concrete(f) && f.facet === true && TEXT.has(f.type));
    const num = fields.find((f) => concrete(f) && NUMBER.has(f.type) && !isVector(f));
    filterInput.placeholder = [facet && `${facet.name}:=value`, num && `${num.name}:>10`].filter(Boolean).join(' && ') || 'field:=value';
    const vec = fields.find((f) => concrete(f) && isVector(f));
    vectorInput.placeholder = vec ? `${vec.name}:([], id: 1, k: 10)` : 'this collection has no vector field';
    fill(facetsEl);
    fill(hitsEl);
    say(errorEl, 'info', '');
    if (settings.queryBy.length === 0) {
      say(errorEl, 'error', `${c.name} has no field to search in.`);
      return;
    }
    const port = location.port !== '' ? Number(location.port) : location.protocol === 'https:' ? 443 : 80;
    adapter = new TypesenseInstantSearchAdapter({
      server: {
        apiKey: api.key,
        nodes: [{ host: location.hostname, port, protocol: location.protocol.replace(':', ''), path: '' }],
        sendApiKeyAsQueryParam: false,
        cacheSearchResultsForSeconds: 0,
        connectionTimeoutSeconds: 30,
        logLevel: 'silent',
      },
      additionalSearchParameters: params(c),
    });
    // keep the server's own answer for "Response JSON"
    const a = adapter as unknown as { _adaptAndPerformTypesenseRequest(r: unknown): Promise<{ results?: unknown[] }> };
    const perform = a._adaptAndPerformTypesenseRequest.bind(a);
    a._adaptAndPerformTypesenseRequest = async (requests: unknown) => {
      const res = await perform(requests);
      rawPre.textContent = pretty(res.results?.[0] ?? res);
      return res;
    };
    const client = adapter.searchClient;
    const searchClient = {
      ...client,
      // filter_by from the box goes in as `filters`, which the adapter ANDs with the refinements
      search: (requests: Array<{ params?: Record<string, unknown> }>) =>
        client.search(requests.map((r) => (settings.filterBy.trim() === '' ? r : { ...r, params: { ...r.params, filters: settings.filterBy.trim() } })) as never),
    };

    const s = instantsearch({ indexName: c.name, searchClient: searchClient as never, insights: false, initialUiState: { [c.name]: { query: lastQuery } } });
    search = s;
    s.on('error', (e: { error?: Error }) => say(errorEl, 'error', cleanError(e.error?.message ?? String(e))));
    s.on('render', () => {
      if (s.status === 'idle' && !s.error && errorEl.classList.contains('status-error')) say(errorEl, 'info', '');
      lastQuery = (s.getUiState()[c.name]?.query as string | undefined) ?? '';
      // the query whose hits are on screen (the benchmark and the tests wait on it)
      const shown = s.helper?.lastResults?.query;
      if (shown !== undefined) hitsEl.dataset.query = shown;
    });

    const title = text[0];
    const others = text.slice(1, 1 + HIT_FIELDS);
    const shown = new Set([title, ...others, 'id']);
    const facetWidgets = [];
    for (const f of fields) {
      if (!concrete(f) || f.facet !== true) continue;
      const box = h('div');
      const headingId = uid('facet');
      facetsEl.append(h('section', { class: 'facet', 'aria-labelledby': headingId }, h('h3', { id: headingId }, f.name), box));
      if (NUMBER.has(f.type)) facetWidgets.push(rangeWidget(box, f.name));
      else facetWidgets.push(refinementList({ container: box, attribute: f.name, limit: FACET_LIMIT, showMore: true, showMoreLimit: FACET_MORE }));
    }
    if (facetWidgets.length === 0) facetsEl.append(h('p', { class: 'muted' }, 'No facet fields in this schema.'));

    s.addWidgets([
      searchBox({
        container: searchBoxEl,
        placeholder: `Search ${c.name}`,
        showLoadingIndicator: false,
        cssClasses: { input: 'search-input' },
      }),
      stats({ container: statsEl }),
      ...facetWidgets,
      clearRefinements({ container: clearEl, templates: { resetLabel: () => 'Clear refinements' } }),
      sortWidget(sortBox, sortOptions(c.name, fields)),
      perPageWidget(perPageBox),
      hits({
        container: hitsEl,
        templates: {
          empty: () => 'No documents match.',
          item: (hit: any, { html, components }: any) => {
            const doc = (hit._rawTypesenseHit?.document ?? {}) as Record<string, unknown>;
            const rest = Object.keys(doc).filter((k) => !shown.has(k) && !fields.some((f) => f.name === k && isVector(f))).slice(0, HIT_FIELDS);
            return html`<article class="hit">
              <h3 class="hit-title">${title && doc[title] !== undefined ? components.Highlight({ hit, attribute: title }) : html`<span class="muted">${String(doc.id ?? '')}</span>`}</h3>
              ${others.filter((f) => doc[f] !== undefined).map((f) => html`<p class="hit-field"><span class="name">${f}</span> ${components.Snippet({ hit, attribute: f })}</p>`)}
              <dl class="hit-meta">
                <dt>id</dt><dd>${String(doc.id ?? '')}</dd>
                ${rest.map((k) => html`<dt>${k}</dt><dd>${short(doc[k])}</dd>`)}
              </dl>
              <details class="raw-hit"><summary>JSON</summary><pre class="json">${pretty(hit._rawTypesenseHit)}</pre></details>
            </article>`;
          },
        },
      }),
      pagination({ container: pageEl, padding: 2 }),
    ]);
    s.start();
  };

  select.addEventListener('change', () => {
    current = searchable.find((c) => c.name === select.value) ?? current;
    onCollection(current.name);
    start();
  });
  const onEnter = (input: HTMLInputElement, key: 'filterBy' | 'vectorQuery') => {
    const apply = () => {
      if (settings[key] === input.value) return;
      settings[key] = input.value;
      refresh();
    };
    input.addEventListener('change', apply);
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') apply();
    });
  };
  onEnter(filterInput, 'filterBy');
  onEnter(vectorInput, 'vectorQuery');

  start();
  return {
    el,
    focus: () => searchBoxEl.querySelector<HTMLInputElement>('input')?.focus(),
    dispose: () => search?.dispose(),
  };
}

/** A value in one short line. */
function short(v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** The Typesense client's error text, less its wrapping ("Request failed with HTTP code 400 | Server said: ..."). */
function cleanError(m: string): string {
  const said = m.indexOf('Server said: ');
  return said >= 0 ? m.slice(said + 'Server said: '.length) : m;
}

/** Sort choices as a labelled select. */
function sortWidget(box: HTMLElement, options: Array<{ value: string; label: string }>) {
  const select = h('select', { name: 'sort_by', id: uid('sort') }, ...options.map((o) => h('option', { value: o.value }, o.label)));
  box.replaceChildren(h('label', { for: select.id }, 'Sort'), select);
  let refine: (v: string) => void = () => {};
  select.addEventListener('change', () => refine(select.value));
  return connectSortBy((state: any) => {
    refine = state.refine;
    select.value = state.currentRefinement;
  })({ items: options });
}

/** Per-page choices as a labelled select. */
function perPageWidget(box: HTMLElement) {
  const select = h('select', { name: 'per_page', id: uid('pp') });
  box.replaceChildren(h('label', { for: select.id }, 'Per page'), select);
  let refine: (v: number) => void = () => {};
  select.addEventListener('change', () => refine(Number(select.value)));
  const make = connectHitsPerPage((state: any, first: boolean) => {
    if (first) fill(select, ...state.items.map((i: { value: number; label: string }) => h('option', { value: i.value }, i.label)));
    refine = state.refine;
    const on = state.items.find((i: { isRefined: boolean }) => i.isRefined);
    if (on) select.value = String(on.value);
  });
  return make({ items: PER_PAGE.map((n, i) => ({ value: n, label: String(n), ...(i === 0 ? { default: true } : {}) })) as never });
}

/** A numeric facet as two labelled number boxes (the facet's min and max as placeholders). */
function rangeWidget(box: HTMLElement, attribute: string) {
  const min = h('input', { type: 'number', inputmode: 'decimal', name: `${attribute}-min`, step: 'any' });
  const max = h('input', { type: 'number', inputmode: 'decimal', name: `${attribute}-max`, step: 'any' });
  const go = h('button', { type: 'submit', class: 'secondary' }, 'Apply');
  const form = h('form', { class: 'range' }, field('Min', min), field('Max', max), go);
  box.replaceChildren(form);
  let refine: (r: [number | undefined, number | undefined]) => void = () => {};
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const num = (i: HTMLInputElement) => (i.value.trim() === '' ? undefined : Number(i.value));
    refine([num(min), num(max)]);
  });
  return connectRange((state: any) => {
    refine = state.refine;
    const [from, to] = state.start as [number, number];
    min.placeholder = state.range.min === undefined ? '' : String(state.range.min);
    max.placeholder = state.range.max === undefined ? '' : String(state.range.max);
    if (document.activeElement !== min) min.value = Number.isFinite(from) ? String(from) : '';
    if (document.activeElement !== max) max.value = Number.isFinite(to) ? String(to) : '';
    go.disabled = !state.canRefine;
  })({ attribute });
}
