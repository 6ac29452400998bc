/**
 * One search function for the CLI, single search and multi-search: parameters in, the
 * reference's response shape out.
 *
 *   params -> fields, filter, sort, q tokens
 *          -> per segment: filter bytes, exclusions
 *          -> rounds: typo level 0..2 (while found < typo_tokens_threshold), then drop
 *             tokens right to left (while found < drop_tokens_threshold)
 *          -> collectors: top k (or groups), facets
 *          -> hydrate the page: documents, highlights, projection
 */
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import type { Field, Schema } from '../schema/schema.js';
import { fieldTokenizer, getSchema } from '../collection/catalog.js';
import { isDeleted, snapshot, type IndexSnapshot, type LiveSegment } from '../index/manifest.js';
import { parseFilter } from '../query/filter.js';
import { compileFilter, evalFilter, markPhrase, type CompiledFilter, type JoinResolver } from '../query/filter-eval.js';
import { parseSort, type SortClause } from '../query/sort.js';
import { parseQ } from '../query/q.js';
import type { SearchParams } from '../query/params.js';
import { project } from '../io/project.js';
import { allowedTypos } from './expand.js';
import { matchSegment, selectCandidates, type CandidateTable, type DocMatch, type FieldSpec } from './match.js';
import { FacetCounter, Sorter, TopK, fieldSortValue, type FacetResult, type FacetSpec, type Hit } from './collect.js';
import { highlightDocument, type HighlightField } from './highlight.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export interface SearchHit {
  document: Record<string, unknown>;
  highlight: Record<string, unknown>;
  highlights: Record<string, unknown>[];
  text_match?: number;
  text_match_info?: Record<string, unknown>;
  [k: string]: unknown;
}

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

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

/** Extension points used by vector search and joins. */
export interface SearchExtensions {
  joins?: JoinResolver;
  /** Adds joined fields to a hit's document. */
  decorate?: (doc: Record<string, unknown>, seq: number) => Record<string, unknown>;
}

/** Everything a search needs that does not depend on the documents. */
export interface PreparedSearch {
  schema: Schema;
  snap: IndexSnapshot;
  params: SearchParams;
  fields: FieldSpec[];
  filter?: CompiledFilter;
  sortClauses: SortClause[];
  wildcard: boolean;
}

export function resolveQueryFields(schema: Schema, params: SearchParams): FieldSpec[] {
  const n = params.query_by.length;
  return params.query_by.map((name, i) => {
    const field = schema.field(name);
    if (!field) bad(`query_by: no field named \`${name}\` in collection \`${schema.name}\``);
    if (field.kind !== 'text') bad(`query_by: field \`${name}\` is of type ${field.type}; only string fields can be searched with q`);
    if (!field.index) bad(`query_by: field \`${name}\` has \`index: false\``);
    const w = params.query_by_weights ? params.query_by_weights[i]! : Math.max(1, 100 - i);
    return {
      field,
      index: i,
      weight: Math.max(0, Math.min(255, Math.round(w))),
      prefix: params.prefix[i] ?? params.prefix[0] ?? true,
      numTypos: params.num_typos[i] ?? params.num_typos[0] ?? 2,
    };
  });
}

function defaultSort(schema: Schema, wildcard: boolean, user: SortClause[] | undefined): SortClause[] {
  const seq: SortClause = { kind: 'seq', dir: -1 };
  if (user && user.length > 0) {
    const out = [...user];
    if (!wildcard && !out.some((c) => c.kind === 'text_match')) out.push({ kind: 'text_match', dir: -1 });
    if (!out.some((c) => c.kind === 'seq')) out.push(seq);
    return out;
  }
  const out: SortClause[] = [];
  if (!wildcard) out.push({ kind: 'text_match', dir: -1 });
  const dsf = schema.record.default_sorting_field;
  if (dsf) {
    const f = schema.field(dsf);
    if (f) out.push({ kind: 'field', field: f, dir: -1 });
  }
  out.push(seq);
  return out;
}

function facetSpecs(schema: Schema, params: SearchParams): FacetSpec[] {
  let fq: { field: string; text: string } | undefined;
  if (params.facet_query) {
    const colon = params.facet_query.indexOf(':');
    if (colon < 0) bad('facet_query must look like `field:text`');
    fq = { field: params.facet_query.slice(0, colon).trim(), text: params.facet_query.slice(colon + 1).trim() };
    if (!params.facet_by.includes(fq.field)) bad(`facet_query: field \`${fq.field}\` is not in facet_by`);
  }
  return params.facet_by.map((name) => {
    const field = schema.field(name);
    if (!field) bad(`facet_by: no field named \`${name}\` in collection \`${schema.name}\``);
    if (!field.facet) bad(`facet_by: field \`${name}\` is not a facet field (declare it with \`facet: true\`)`);
    const spec: FacetSpec = { field };
    if (fq && fq.field === name) spec.query = fieldTokenizer(schema, { locale: field.locale, stem: false }).tokens(fq.text);
    return spec;
  });
}

interface QueryTokens {
  /** Normalised tokens (base form). */
  tokens: string[];
  /** Groups of token indexes that form quoted phrases. */
  phrases: number[][];
  excluded: string[][];
}

function queryTokens(q: string, tok: Tokenizer, stop: Set<string> | undefined): QueryTokens {
  const parsed = parseQ(q);
  const tokens: string[] = [];
  const phrases: number[][] = [];
  const excluded: string[][] = [];
  for (const p of parsed.parts) {
    let ts = tok.tokens(p.text);
    if (!p.phrase && stop) ts = ts.filter((t) => !stop.has(t));
    if (ts.length === 0) continue;
    if (p.exclude) {
      excluded.push(ts);
      continue;
    }
    const start = tokens.length;
    for (const t of ts) tokens.push(t);
    if (p.phrase && ts.length > 0) phrases.push(ts.map((_, i) => start + i));
  }
  return { tokens: tokens.slice(0, 32), phrases: phrases.filter((ph) => ph.every((i) => i < 32)), excluded };
}

function loadStopwords(store: Store, name: string | undefined): Set<string> | undefined {
  if (!name) return undefined;
  const set = store.stopwords.get(name) as { stopwords: string[] } | undefined;
  if (!set) throw new FathomError('NOT_FOUND', `stopword set \`${name}\` not found`);
  return new Set(set.stopwords);
}

/** Matching documents' seqs, ascending (for export, update and delete by filter). */
export function filterSeqs(store: Store, collection: string, filterBy: string, joins?: JoinResolver): number[] {
  const schema = getSchema(store, collection);
  const snap = snapshot(store, schema.id);
  const filter = compileFilter(parseFilter(filterBy), schema, store, joins);
  const out: number[] = [];
  for (const seg of snap.segments) {
    const allow = evalFilter(filter, seg);
    for (let o = 0; o < seg.reader.n; o++) if (allow[o] && !isDeleted(seg.deleted, o)) out.push(seg.reader.seqs[o]!);
  }
  return out.sort((a, b) => a - b);
}

export function search(store: Store, collection: string, params: SearchParams, ext: SearchExtensions = {}): SearchResponse {
  const t0 = performance.now();
  const schema = getSchema(store, collection);
  const snap = snapshot(store, schema.id);
  const segs = snap.segments;
  const fields = resolveQueryFields(schema, params);
  const filter = params.filter_by ? compileFilter(parseFilter(params.filter_by), schema, store, ext.joins) : undefined;
  const userSort = params.sort_by ? parseSort(params.sort_by, schema) : undefined;
  const facets = new FacetCounter(facetSpecs(schema, params));
  const groupFields = (params.group_by ?? []).map((name) => {
    const f = schema.field(name);
    if (!f) bad(`group_by: no field named \`${name}\``);
    if (!f.facet) bad(`group_by: field \`${name}\` must be a facet field`);
    return f;
  });
  const stop = loadStopwords(store, params.stopwords);
  const baseTok = fields.length ? fieldTokenizer(schema, { locale: fields[0]!.field.locale, stem: false }) : fieldTokenizer(schema, { locale: '', stem: false });
  const qt = queryTokens(params.q, baseTok, stop);
  const parsed = parseQ(params.q);
  const wildcard = qt.tokens.length === 0 && (parsed.wildcard || parsed.parts.every((p) => p.exclude));
  const emptyAfterStopwords = qt.tokens.length === 0 && !wildcard;
  const sortClauses = defaultSort(schema, wildcard, userSort);
  const sorter = new Sorter(sortClauses);

  const perPage = params.per_page;
  const offset = params.offset ?? (params.page - 1) * perPage;
  const limit = params.limit ?? perPage;
  const grouping = groupFields.length > 0;
  const k = grouping ? 0 : offset + limit;
  const top = new TopK(k, sorter);
  const groups = new Map<string, { key: unknown[]; top: TopK; found: number; best?: Hit }>();
  let found = 0;
  let cutoff = false;
  const cutoffMs = params.search_cutoff_ms;
  const shouldStop = () => {
    if (cutoffMs > 0 && performance.now() - t0 > cutoffMs) cutoff = true;
    return cutoff;
  };

  const collect = (segIndex: number, ord: number, score: number, info?: DocMatch) => {
    const seg = segs[segIndex]!;
    const seq = seg.reader.seqs[ord]!;
    found++;
    if (!facets.empty) facets.add(segIndex, seg, ord);
    const hit: Hit = { seg: segIndex, ord, seq, score, keys: sorter.keys(segs, segIndex, ord, seq, score), info };
    if (!grouping) {
      top.add(hit);
      return;
    }
    const key = groupFields.map((f) => groupValue(seg, f, ord));
    const ks = JSON.stringify(key);
    let g = groups.get(ks);
    if (!g) {
      g = { key, top: new TopK(params.group_limit, sorter), found: 0 };
      groups.set(ks, g);
    }
    g.found++;
    g.top.add(hit);
    if (!g.best || sorter.compare(hit, g.best) < 0) g.best = hit;
  };

  // per-segment filter and exclusion bytes
  const allow = segs.map((seg) => (filter ? evalFilter(filter, seg) : null));
  const exclude = segs.map((seg) => exclusionBytes(seg, fields, qt.excluded, schema));

  let candidatesUsed: CandidateTable | undefined;
  if (emptyAfterStopwords) {
    // every word was a stopword: nothing to match
  } else if (wildcard) {
    for (let s = 0; s < segs.length && !cutoff; s++) {
      const seg = segs[s]!;
      const a = allow[s];
      const ex = exclude[s];
      for (let o = 0; o < seg.reader.n; o++) {
        if ((a && !a[o]) || (ex && ex[o]) || isDeleted(seg.deleted, o)) continue;
        collect(s, o, 0);
        if ((o & 4095) === 4095 && shouldStop()) break;
      }
    }
  } else {
    candidatesUsed = runRounds(segs, fields, qt, params, schema, allow, exclude, collect, shouldStop, () => found);
  }

  // the page
  let hits: SearchHit[] | undefined;
  let grouped: SearchResponse['grouped_hits'];
  const hfields = highlightFields(schema, params, fields, candidatesUsed, qt);
  const hydrate = (h: Hit): SearchHit => hitOf(store, snap, h, params, hfields, wildcard, ext);
  if (grouping) {
    const all = [...groups.values()].sort((a, b) => sorter.compare(a.best!, b.best!));
    grouped = all.slice(offset, offset + limit).map((g) => ({ group_key: g.key, hits: g.top.sorted().map(hydrate), found: g.found }));
  } else {
    hits = top.sorted().slice(offset, offset + limit).map(hydrate);
  }
  const res: SearchResponse = {
    facet_counts: facets.results(segs, params.max_facet_values, params.highlight_start_tag, params.highlight_end_tag),
    found: grouping ? groups.size : found,
    ...(grouping ? { found_docs: found } : {}),
    ...(grouping ? { grouped_hits: grouped } : { hits }),
    out_of: snap.state.count,
    page: params.page,
    request_params: { collection_name: schema.name, first_q: params.q, per_page: perPage, q: params.q },
    search_cutoff: cutoff,
    search_time_ms: Math.round(performance.now() - t0),
  };
  return res;
}

function groupValue(seg: LiveSegment, f: Field, ord: number): unknown {
  if (f.kind === 'text') {
    const ti = seg.reader.text(f.id);
    if (!ti || !ti.valueIds) return null;
    const strs = ti.valueStrings();
    const a = ti.valueIds.offsets[ord]!;
    const b = ti.valueIds.offsets[ord + 1]!;
    if (f.isArray || f.type === 'string*') {
      const out: string[] = [];
      for (let k = a; k < b; k++) out.push(strs[ti.valueIds.values[k]!]!);
      return out;
    }
    return a < b ? strs[ti.valueIds.values[a]!]! : null;
  }
  const v = fieldSortValue(seg, f, ord);
  if (f.kind === 'bool') return v === 1;
  return typeof v === 'number' && Number.isNaN(v) ? null : v;
}

function exclusionBytes(seg: LiveSegment, fields: FieldSpec[], excluded: string[][], schema: Schema): Uint8Array | null {
  if (excluded.length === 0) return null;
  const out = new Uint8Array(seg.reader.n);
  for (const f of fields) {
    const ti = seg.reader.text(f.field.id);
    if (!ti) continue;
    const tok = fieldTokenizer(schema, f.field);
    for (const words of excluded) markPhrase(ti, f.field.stem ? words.map((w) => tok.normalizeWord(w)) : words, false, out);
  }
  return out;
}

/** Typo escalation and token dropping; returns the candidate table of the first round (for highlighting). */
function runRounds(
  segs: LiveSegment[],
  fields: FieldSpec[],
  qt: QueryTokens,
  params: SearchParams,
  schema: Schema,
  allow: (Uint8Array | null)[],
  exclude: (Uint8Array | null)[],
  collect: (segIndex: number, ord: number, score: number, info?: DocMatch) => void,
  shouldStop: () => boolean,
  found: () => number,
): CandidateTable {
  const T = qt.tokens.length;
  const inPhrase = new Set(qt.phrases.flat());
  const fieldToks = fields.map((f) => fieldTokenizer(schema, f.field));
  const fieldToken = (t: number, f: number) => {
    const tok = qt.tokens[t]!;
    const spec = fields[f]!.field;
    return spec.stem || spec.locale !== fields[0]!.field.locale ? fieldToks[f]!.normalizeWord(tok) || tok : tok;
  };
  const maxLevel = Math.max(
    0,
    ...qt.tokens.map((tok, t) => (inPhrase.has(t) ? 0 : Math.max(...fields.map((f) => allowedTypos(tok, f.numTypos, params.min_len_1typo, params.min_len_2typo))))),
  );
  const seen = segs.map((s) => new Uint8Array(s.reader.n));
  const tableAt = new Map<number, CandidateTable>();
  const candidatesAt = (level: number, lastIndex: number): CandidateTable => {
    const key = level * 64 + lastIndex;
    let table = tableAt.get(key);
    if (table) return table;
    table = qt.tokens.map((tok, t) =>
      fields.map((f, fi) => {
        const ft = fieldToken(t, fi);
        const allowed = inPhrase.has(t) ? 0 : Math.min(level, allowedTypos(tok, f.numTypos, params.min_len_1typo, params.min_len_2typo));
        const prefix = t === lastIndex && f.prefix && !inPhrase.has(t);
        return selectCandidates(segs, f.field, ft, allowed, prefix, params.max_candidates);
      }),
    );
    tableAt.set(key, table);
    return table;
  };
  let first: CandidateTable | undefined;
  const onMatch = (m: DocMatch) => {
    seen[m.seg]![m.ord] = 1;
    collect(m.seg, m.ord, m.score, m);
  };
  for (let drop = 0; drop < T; drop++) {
    const active = Array.from({ length: T - drop }, (_, i) => i);
    for (let level = 0; level <= maxLevel; level++) {
      // prefix applies to the query's last token only, so not after it has been dropped
      const candidates = candidatesAt(level, T - 1);
      if (!first) first = candidates;
      for (let s = 0; s < segs.length; s++) {
        const ok = matchSegment(
          s,
          segs[s]!,
          { fields, tokens: active, totalTokens: T, candidates, phrases: qt.phrases, prioritizeExact: params.prioritize_exact_match, dropped: drop },
          { allow: allow[s]!, exclude: exclude[s]!, seen: seen[s]! },
          onMatch,
          shouldStop,
        );
        if (!ok) return first;
      }
      first = candidates;
      if (found() >= params.typo_tokens_threshold) break;
    }
    if (found() >= params.drop_tokens_threshold) break;
  }
  return first!;
}

function highlightFields(schema: Schema, params: SearchParams, fields: FieldSpec[], candidates: CandidateTable | undefined, qt: QueryTokens): HighlightField[] {
  if (!candidates) return [];
  const names = params.highlight_fields ?? fields.map((f) => f.field.name);
  const full = new Set(params.highlight_full_fields ?? []);
  const out: HighlightField[] = [];
  for (const name of names) {
    const fi = fields.findIndex((f) => f.field.name === name);
    const field = fi >= 0 ? fields[fi]!.field : schema.field(name);
    if (!field || field.kind !== 'text') continue;
    const terms = new Set<string>();
    if (fi >= 0) for (const perField of candidates) for (const c of perField[fi]!) terms.add(c.term);
    else for (const t of qt.tokens) terms.add(t);
    out.push({ name, tokenizer: fieldTokenizer(schema, field), terms, full: full.has(name), isArray: field.isArray });
  }
  return out;
}

function hitOf(
  store: Store,
  snap: IndexSnapshot,
  h: Hit,
  params: SearchParams,
  hfields: HighlightField[],
  wildcard: boolean,
  ext: SearchExtensions,
): SearchHit {
  let doc = (store.docs.get([snap.collId, h.seq]) as Record<string, unknown> | undefined) ?? {};
  const { highlight, highlights } = wildcard
    ? { highlight: {}, highlights: [] }
    : highlightDocument(doc, hfields, {
        startTag: params.highlight_start_tag,
        endTag: params.highlight_end_tag,
        affix: params.highlight_affix_num_tokens,
        snippetThreshold: params.snippet_threshold,
      });
  if (ext.decorate) doc = ext.decorate(doc, h.seq);
  const out: SearchHit = {
    document: project(doc, { include: params.include_fields, exclude: params.exclude_fields }),
    highlight,
    highlights,
  };
  const m = h.info as DocMatch | undefined;
  if (m) {
    out.text_match = m.score;
    out.text_match_info = {
      best_field_score: String(m.bestFieldScore),
      best_field_weight: m.bestFieldWeight,
      fields_matched: m.fieldsMatched,
      num_tokens_dropped: m.dropped,
      score: String(m.score),
      tokens_matched: m.tokensMatched,
      typo_prefix_score: m.typoCost,
    };
  } else if (!wildcard) {
    out.text_match = h.score;
  }
  return out;
}
