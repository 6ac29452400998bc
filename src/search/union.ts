/**
 * Union search (`POST /multi_search` with `"union": true`): the searches' hits merged into
 * one ranked list, as the reference defines it.
 *
 *   - Paging is global: `page`, `per_page`, `offset` and `limit` come from the request's
 *     query string (or the body's top level); the searches' own are ignored.
 *   - `limit_hits` bounds the merged list: it reaches no further than the request's
 *     limit_hits nor any search's own (a scoped key's, forced onto every search, is one), so
 *     each search contributes at most that many hits and a page starting beyond it is
 *     refused (422) as a single search's is. `found` still adds up every match.
 *   - Each search ranks by its own sort (`sort_by`, or text match then the default sorting
 *     field); the merged list compares those sort values across searches, so every search
 *     must sort by values of the same kinds, in the same order and directions (a 400 says
 *     which differ). Ties keep the searches' order, then each search's own order.
 *   - A document found by several searches appears once, where it ranks best, unless
 *     `remove_duplicates` is false.
 *   - `found` adds up the searches' `found`; each hit names its `collection` and
 *     `search_index`; facets stay per search (`facet_counts` lists every search's, each
 *     entry with its `search_index` and `collection`); `union_request_params` has one entry
 *     per search.
 *
 * `group_by` is refused in a union (400): merging groups across searches is not built.
 */
import { FathomError } from '../errors.js';
import { SEARCH_DEFAULTS } from '../defaults.js';
import { parseLimitHits, type RawParams } from '../query/params.js';
import { limitHitsMessage } from '../query/plan.js';
import type { SortClause } from '../query/sort.js';
import { Sorter } from './topk.js';
import type { RankedPage, SearchHit, SearchResponse } from './search.js';

/** The pagination parameters a union takes from the request, and ignores in each search (limit_hits is taken from both). */
export const UNION_PAGING = ['page', 'per_page', 'offset', 'limit'] as const;

/** Runs one search of a union: the answer for hits [offset, offset + limit) and their sort keys. */
export type RankedSearch = (collection: string, params: RawParams) => Promise<{ res: SearchResponse; ranked: RankedPage }>;

export interface UnionResponse {
  found: number;
  hits: Array<SearchHit & { collection: string; search_index: number }>;
  facet_counts: Array<Record<string, unknown>>;
  out_of: number;
  page: number;
  search_cutoff: boolean;
  search_time_ms: number;
  union_request_params: Array<Record<string, unknown>>;
}

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

function intOf(raw: RawParams, k: string, dflt: number, min: number, max: number): number {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return dflt;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) bad(`union: parameter \`${k}\` must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return n;
}

/** `fn`'s answer; a FathomError it throws is told again with `where` before its message. */
function within<T>(where: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof FathomError) throw new FathomError(e.code, `${where}: ${e.message}`);
    throw e;
  }
}

/** What a sort clause's values are, for checking that searches can be merged. */
function shape(c: SortClause): string {
  const type = c.kind === 'field' && c.field.kind === 'text' ? 'string' : 'number';
  return `${c.kind === 'field' ? type : c.kind}:${c.dir}`;
}

function describeSort(clauses: SortClause[]): string {
  return clauses.map((c) => (c.kind === 'field' ? `${c.field.name} (${c.field.kind === 'text' ? 'string' : 'number'}):${c.dir > 0 ? 'asc' : 'desc'}` : c.kind === 'geo' ? `${c.field.name}(...):${c.dir > 0 ? 'asc' : 'desc'}` : `_${c.kind}:${c.dir > 0 ? 'asc' : 'desc'}`)).join(', ');
}

export async function unionSearch(searches: unknown, paging: RawParams, run: RankedSearch, removeDuplicates = true): Promise<UnionResponse> {
  const t0 = performance.now();
  if (!Array.isArray(searches) || searches.length === 0) throw new FathomError('BAD_REQUEST', 'a union needs a non-empty `searches` array');
  const perPage = intOf(paging, 'per_page', SEARCH_DEFAULTS.per_page, 0, SEARCH_DEFAULTS.max_per_page);
  const limit = paging.limit !== undefined && paging.limit !== '' ? intOf(paging, 'limit', perPage, 0, SEARCH_DEFAULTS.max_per_page) : perPage;
  const page = intOf(paging, 'page', SEARCH_DEFAULTS.page, 1, 1e9);
  const offset = paging.offset !== undefined && paging.offset !== '' ? intOf(paging, 'offset', 0, 0, 1e9) : (page - 1) * limit;
  // the merged list's bound: the request's limit_hits and every search's own, the smallest
  let limitHits = within('union', () => parseLimitHits(paging)) ?? Infinity;
  const owns: Array<{ collection: string; own: RawParams }> = [];
  for (let i = 0; i < searches.length; i++) {
    const s = searches[i] as unknown;
    if (!s || typeof s !== 'object' || Array.isArray(s)) throw new FathomError('BAD_REQUEST', `union: search ${i} must be a JSON object`);
    const own: RawParams = { ...(s as RawParams) };
    for (const k of UNION_PAGING) delete own[k];
    const collection = own.collection;
    if (typeof collection !== 'string' || !collection) throw new FathomError('BAD_REQUEST', `union: search ${i} needs a \`collection\``);
    if (own.group_by !== undefined && own.group_by !== '') bad(`union: search ${i} has \`group_by\`; grouping is not supported in a union search`);
    limitHits = Math.min(limitHits, within(`union: search ${i} (collection \`${collection}\`)`, () => parseLimitHits(own)) ?? Infinity);
    owns.push({ collection, own });
  }
  if (offset >= limitHits) throw new FathomError('UNPROCESSABLE', limitHitsMessage(limitHits));
  // every search's first `want` hits; a duplicate dropped by the merge may leave the page
  // short by as many, as in the reference
  const want = Math.min(offset + limit, limitHits);

  const lists: Array<{ collection: string; res: SearchResponse; hits: SearchHit[]; keys: (number | string)[][]; clauses: SortClause[] }> = [];
  for (let i = 0; i < owns.length; i++) {
    const { collection, own } = owns[i]!;
    const hits: SearchHit[] = [];
    const keys: (number | string)[][] = [];
    let first: { res: SearchResponse; ranked: RankedPage } | undefined;
    // fetched in pages of at most max_per_page (one search even for an empty page: found, facets)
    let from = 0;
    do {
      const n = Math.min(SEARCH_DEFAULTS.max_per_page, want - from);
      let r;
      try {
        r = await run(collection, { ...own, offset: from, limit: n });
      } catch (e) {
        if (e instanceof FathomError) throw new FathomError(e.code, `union: search ${i} (collection \`${collection}\`): ${e.message}`);
        throw e;
      }
      first ??= r;
      for (const h of r.res.hits ?? []) hits.push(h);
      for (const k of r.ranked.keys) keys.push(k);
      from += n;
      if ((r.res.hits ?? []).length < n) break;
    } while (from < want);
    lists.push({ collection, res: first!.res, hits, keys, clauses: first!.ranked.clauses });
  }

  // the searches must rank by values of the same kinds to be merged
  const base = lists[0]!.clauses;
  for (let i = 1; i < lists.length; i++) {
    const c = lists[i]!.clauses;
    if (c.length !== base.length || c.some((x, j) => shape(x) !== shape(base[j]!))) {
      bad(`union: every search must sort by values of the same types, in the same order and directions; search 0 sorts by ${describeSort(base)} and search ${i} by ${describeSort(c)}`);
    }
  }
  const sorter = new Sorter(base);

  // k-way merge, ties to the earlier search
  const at = lists.map(() => 0);
  const merged: UnionResponse['hits'] = [];
  const seen = new Set<string>();
  while (merged.length < want) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      if (at[i]! >= lists[i]!.hits.length) continue;
      if (best < 0 || sorter.compareKeys(lists[i]!.keys[at[i]!]!, lists[best]!.keys[at[best]!]!) < 0) best = i;
    }
    if (best < 0) break;
    const l = lists[best]!;
    const hit = l.hits[at[best]!]!;
    at[best]!++;
    if (removeDuplicates) {
      const key = `${l.collection}\u0000${String(hit.document.id)}`;
      if (seen.has(key)) continue;
      seen.add(key);
    }
    merged.push({ ...hit, collection: l.collection, search_index: best });
  }

  const outOf = new Map<string, number>();
  for (const l of lists) outOf.set(l.collection, l.res.out_of);
  return {
    found: lists.reduce((a, l) => a + l.res.found, 0),
    hits: merged.slice(offset, want),
    facet_counts: lists.flatMap((l, i) => l.res.facet_counts.map((f) => ({ ...f, collection: l.collection, search_index: i }))),
    out_of: [...outOf.values()].reduce((a, b) => a + b, 0),
    page,
    search_cutoff: lists.some((l) => l.res.search_cutoff),
    search_time_ms: Math.round(performance.now() - t0),
    union_request_params: lists.map((l) => ({ ...l.res.request_params, collection: l.collection, found: l.res.found, per_page: limit })),
  };
}
