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
import { allowedTypos } from '../termdict/walk.js';
import { matchInfo, matchSegment, selectCandidatesShared, type Candidate, type CandidateTable, type FieldSpec } from './match.js';
import { FacetCounter, Sorter, TopK, fieldSortValue, type FacetResult, type FacetSpec, type Hit } from './collect.js';
import { highlightDocument, type HighlightField } from './highlight.js';
import { termLookup, type Tokenizer } from '../tokenizer/tokenizer.js';
import { locate } from '../index/manifest.js';
import { parseVectorQuery, type VectorQuery } from '../vector/vquery.js';
import { knn, distance as vecDistance, norm, type VectorHit } from '../vector/vsearch.js';
import { getVector } from '../vector/vecstore.js';
import { VECTOR_DEFAULTS } from '../defaults.js';
import { loadDocument, projectionWants } from '../document/stored.js';
import { decorateWithJoins, joinResolver, joinSortValue, parseJoinIncludes } from '../join/join.js';
import { boundDocument, checkVisible, joinLists, keyProjection, scopedFilter, type SearchScope } from './scope.js';

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

/** Extension points used by vector search, auto-embedding and joins. */
export interface SearchExtensions {
  joins?: JoinResolver;
  /** Adds joined fields to a hit's document. */
  decorate?: (doc: Record<string, unknown>, seq: number) => Record<string, unknown>;
  /** Query vector computed by an embedding model (for `q` on an embedding field, or `queries`). */
  queryVector?: Float32Array;
  /** What a scoped search key lets this search see (src/search/scope.ts). */
  scope?: SearchScope;
}

/** What a search needs embedded before it can run (the engine computes it asynchronously). */
export interface EmbeddingNeed {
  field: Field;
  texts: string[];
  weights?: number[];
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

/** The text fields of query_by (embedding fields are handled by the vector side). */
export function resolveQueryFields(schema: Schema, params: SearchParams): FieldSpec[] {
  const out: FieldSpec[] = [];
  params.query_by.forEach((name, i) => {
    const field = schema.field(name);
    if (!field) bad(`query_by: no field named \`${name}\` in collection \`${schema.name}\``);
    if (field.kind === 'vector') {
      if (!field.embed) bad(`query_by: field \`${name}\` is a vector field without \`embed\`; search it with \`vector_query\``);
      return;
    }
    if (field.kind !== 'text') bad(`query_by: field \`${name}\` is of type ${field.type}; only string fields can be searched with q`);
    if (!field.index) bad(`query_by: field \`${name}\` has \`index: false\``);
    const w = params.query_by_weights ? params.query_by_weights[i]! : Math.max(1, 100 - i);
    out.push({
      field,
      index: i,
      weight: Math.max(0, Math.min(255, Math.round(w))),
      prefix: params.prefix[i] ?? params.prefix[0] ?? true,
      numTypos: params.num_typos[i] ?? params.num_typos[0] ?? 2,
    });
  });
  return out;
}

/** The embedding field named in query_by, if any (semantic / hybrid search on `q`). */
export function embeddingQueryField(schema: Schema, params: SearchParams): Field | undefined {
  for (const name of params.query_by) {
    const f = schema.field(name);
    if (f && f.kind === 'vector' && f.embed) return f;
  }
  return undefined;
}

function vectorField(schema: Schema, name: string): Field {
  const f = schema.field(name);
  if (!f) bad(`vector_query: no field named \`${name}\` in collection \`${schema.name}\``);
  if (f.kind !== 'vector') bad(`vector_query: field \`${name}\` is not a vector field (a \`float[]\` with \`num_dim\` or \`embed\`)`);
  return f;
}

/** Texts the engine must embed before `search` can run (q on an embedding field, vector_query queries). */
export function embeddingNeeds(store: Store, collection: string, params: SearchParams): EmbeddingNeed | undefined {
  const schema = getSchema(store, collection);
  if (params.vector_query) {
    const vq = parseVectorQuery(params.vector_query);
    const f = vectorField(schema, vq.field);
    if (vq.queries) {
      if (!f.embed) bad(`vector_query: \`queries\` needs an embedding field; \`${f.name}\` has no \`embed\``);
      return { field: f, texts: vq.queries, weights: vq.queryWeights };
    }
    if (vq.vector.length > 0 || vq.id !== undefined) return undefined;
  }
  const ef = embeddingQueryField(schema, params);
  const q = params.q.trim();
  if (ef && q !== '' && q !== '*') return { field: ef, texts: [params.q] };
  return undefined;
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
  const filter = compileFilter(parseFilter(filterBy), schema, store, joins ?? joinResolver(store, schema));
  const out: number[] = [];
  for (const seg of snap.segments) {
    const allow = evalFilter(filter, seg);
    for (let o = 0; o < seg.reader.n; o++) if (allow[o] && !isDeleted(seg.deleted, o)) out.push(seg.reader.seqs[o]!);
  }
  return out.sort((a, b) => a - b);
}

interface VectorPlan {
  field: Field;
  query: Float32Array;
  vq?: VectorQuery;
  k: number;
  ef: number;
  alpha: number;
  excludeSeq?: number;
}

/** Works out the vector side of a search, if it has one. */
function planVector(store: Store, schema: Schema, params: SearchParams, ext: SearchExtensions, kMin: number): VectorPlan | undefined {
  const vq = params.vector_query ? parseVectorQuery(params.vector_query) : undefined;
  const semantic = embeddingQueryField(schema, params);
  if (!vq && !semantic) return undefined;
  const field = vq ? vectorField(schema, vq.field) : semantic!;
  const dims = field.num_dim;
  let query: Float32Array | undefined;
  let excludeSeq: number | undefined;
  if (vq && vq.vector.length > 0) {
    if (dims !== undefined && vq.vector.length !== dims) {
      bad(`vector_query: field \`${field.name}\` has ${dims} dimensions but the query vector has ${vq.vector.length}`);
    }
    query = Float32Array.from(vq.vector);
  } else if (vq && vq.id !== undefined) {
    const seq = store.ids.get([schema.id, vq.id]);
    if (seq === undefined) throw new FathomError('NOT_FOUND', `vector_query: document \`${vq.id}\` not found`);
    query = getVector(store, schema.id, field.id, seq);
    if (!query) bad(`vector_query: document \`${vq.id}\` has no value in \`${field.name}\``);
    excludeSeq = seq;
  } else if (ext.queryVector) {
    query = ext.queryVector;
  } else if (vq && !semantic) {
    bad('vector_query: give a vector, an `id`, or `queries` (or search an embedding field with `q`)');
  } else return undefined; // q is `*` on an embedding field: nothing to embed
  const k = Math.max(vq?.k ?? 0, kMin);
  const alpha = vq?.alpha ?? params.alpha ?? VECTOR_DEFAULTS.alpha;
  return { field, query, vq, k, ef: vq?.ef ?? VECTOR_DEFAULTS.ef, alpha, excludeSeq };
}

interface Extra {
  vectorDistance?: number;
  fusion?: number;
  /** Keyword score (text_match) of a hybrid hit. */
  keyword?: number;
}

const NO_EXTRA: Extra = {};

export function search(store: Store, collection: string, params: SearchParams, ext: SearchExtensions = {}): SearchResponse {
  const t0 = performance.now();
  const schema = getSchema(store, collection);
  const snap = snapshot(store, schema.id);
  const segs = snap.segments;
  const fields = resolveQueryFields(schema, params);
  const ownFilter = params.filter_by ? parseFilter(params.filter_by) : undefined;
  const filterTree = scopedFilter(ownFilter, ext.scope);
  const filter = filterTree ? compileFilter(filterTree, schema, store, ext.joins ?? joinResolver(store, schema)) : undefined;
  const joinSpec = joinLists(params, ext.scope);
  const joinIncludes = parseJoinIncludes(joinSpec.include, joinSpec.exclude);
  if (joinIncludes.length > 0 && !ext.decorate) ext = { ...ext, decorate: (doc, seq) => decorateWithJoins(store, schema, joinIncludes, doc, seq) };
  const userSort = params.sort_by ? parseSort(params.sort_by, schema) : undefined;
  checkVisible(ext.scope, schema, params, ownFilter, userSort);
  const facets = new FacetCounter(facetSpecs(schema, params));
  const groupFields = (params.group_by ?? []).map((name) => {
    const f = schema.field(name);
    if (!f) bad(`group_by: no field named \`${name}\``);
    if (!f.facet) bad(`group_by: field \`${name}\` must be a facet field`);
    return f;
  });
  const stop = loadStopwords(store, params.stopwords);
  const baseTok = fieldTokenizer(schema, { locale: fields[0]?.field.locale ?? '', stem: false });
  const qt = queryTokens(params.q, baseTok, stop);
  const parsed = parseQ(params.q);
  const textual = qt.tokens.length > 0 && fields.length > 0;
  const wildcard = !textual && (parsed.wildcard || parsed.parts.every((p) => p.exclude) || fields.length === 0);
  const emptyAfterStopwords = qt.tokens.length === 0 && !parsed.wildcard && !parsed.parts.every((p) => p.exclude) && fields.length > 0;

  const perPage = params.per_page;
  const offset = params.offset ?? (params.page - 1) * perPage;
  const limit = params.limit ?? perPage;
  const vplan = planVector(store, schema, params, ext, offset + limit);
  const mode: 'keyword' | 'vector' | 'hybrid' = vplan ? (textual ? 'hybrid' : 'vector') : 'keyword';

  // sort clauses: _text_match means the fused score in hybrid search
  let sortClauses: SortClause[];
  if (mode === 'vector' && !userSort) sortClauses = [{ kind: 'vector_distance', dir: 1 }, { kind: 'seq', dir: -1 }];
  else if (mode === 'hybrid' && !userSort) sortClauses = [{ kind: 'text_match', dir: -1 }, { kind: 'seq', dir: -1 }];
  else sortClauses = defaultSort(schema, mode === 'keyword' ? wildcard : false, userSort);
  const clauseValue = clauseValues(store, schema, sortClauses);
  const sorter = new Sorter(sortClauses);

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

  /** The final collector: facets, groups and the page's top k. Hot: once per matching document. */
  const scratch: (number | string)[] = new Array(sortClauses.length);
  const byScore = !grouping && sortClauses[0]!.kind === 'text_match' && sortClauses[0]!.dir === -1;
  const collect = (segIndex: number, ord: number, score: number, extra: Extra = NO_EXTRA) => {
    const seg = segs[segIndex]!;
    found++;
    if (!facets.empty) facets.add(segIndex, seg, ord);
    if (byScore && score < top.worstFirstKey) return; // cannot reach the page: no sort keys needed
    const seq = seg.reader.seqs[ord]!;
    if (!grouping) {
      sorter.keysInto(scratch, segs, segIndex, ord, seq, score, { vectorDistance: extra.vectorDistance, clauseValue });
      if (top.accepts(scratch)) top.add({ seg: segIndex, ord, seq, score, keys: scratch.slice(), info: extra });
      return;
    }
    const hit: Hit = {
      seg: segIndex,
      ord,
      seq,
      score,
      keys: sorter.keys(segs, segIndex, ord, seq, score, { vectorDistance: extra.vectorDistance, clauseValue }),
      info: extra,
    };
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
  } else if (mode === 'keyword' && wildcard) {
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
  } else if (mode === 'keyword') {
    // documents that cannot beat the k-th hit skip proximity scoring (sorting by text match only)
    candidatesUsed = runRounds(segs, fields, qt, params, schema, allow, exclude, collect, shouldStop, () => found, byScore ? () => top.worstFirstKey : undefined);
  } else {
    const allowed = filter || qt.excluded.length ? allowedSeqs(segs, allow, exclude, snap.state.nextSeq) : undefined;
    const vhits = knn(store, schema.id, vplan!.field, vplan!.query, {
      k: vplan!.k,
      ef: vplan!.ef,
      allowed,
      flatSearchCutoff: vplan!.vq?.flatSearchCutoff,
      distanceThreshold: vplan!.vq?.distanceThreshold,
      excludeSeq: vplan!.excludeSeq,
    });
    if (mode === 'vector') {
      for (const h of vhits) {
        const at = locate(snap, h.seq);
        if (at) collect(segs.indexOf(at.seg), at.ord, 0, { vectorDistance: h.distance });
      }
    } else {
      // hybrid: keyword ranks and vector ranks fused (reference: 0.7/keyword_rank + 0.3/vector_rank)
      const kwTop = new TopK(Math.max(vplan!.k, offset + limit, 100), new Sorter([{ kind: 'text_match', dir: -1 }, { kind: 'seq', dir: -1 }]));
      candidatesUsed = runRounds(
        segs,
        fields,
        qt,
        params,
        schema,
        allow,
        exclude,
        (s, o, score) => {
          const seq = segs[s]!.reader.seqs[o]!;
          kwTop.add({ seg: s, ord: o, seq, score, keys: [score, seq] });
        },
        shouldStop,
        () => kwTop.size,
        () => kwTop.worstFirstKey,
      );
      fuse(store, schema, snap, vplan!, kwTop.sorted(), vhits, (s, o, score, extra) => collect(s, o, score, extra));
    }
  }

  // the page
  let hits: SearchHit[] | undefined;
  let grouped: SearchResponse['grouped_hits'];
  const hfields = highlightFields(schema, params, fields, candidatesUsed, qt);
  const hydrate = (h: Hit): SearchHit => hitOf(store, schema, snap, h, params, hfields, !textual, ext, qt.tokens.length);
  if (grouping) {
    const all = [...groups.values()].sort((a, b) => sorter.compare(a.best!, b.best!));
    grouped = all.slice(offset, offset + limit).map((g) => ({ group_key: g.key, hits: g.top.sorted().map(hydrate), found: g.found }));
  } else {
    hits = top.sorted().slice(offset, offset + limit).map(hydrate);
  }
  return {
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
}

/** Live documents passing filter_by (and not excluded), as a seq-indexed byte map for the vector side. */
function allowedSeqs(segs: LiveSegment[], allow: (Uint8Array | null)[], exclude: (Uint8Array | null)[], nextSeq: number) {
  const map = new Uint8Array(nextSeq);
  let count = 0;
  segs.forEach((seg, s) => {
    const a = allow[s];
    const ex = exclude[s];
    const seqs = seg.reader.seqs;
    for (let o = 0; o < seg.reader.n; o++) {
      if ((a && !a[o]) || (ex && ex[o]) || isDeleted(seg.deleted, o)) continue;
      map[seqs[o]!] = 1;
      count++;
    }
  });
  return {
    has: (seq: number) => map[seq] === 1,
    list: () => {
      const out: number[] = [];
      for (let i = 0; i < map.length; i++) if (map[i]) out.push(i);
      return out;
    },
    count,
  };
}

/** Reciprocal-rank fusion of keyword and vector results; calls `collect` once per document of the union. */
function fuse(
  store: Store,
  schema: Schema,
  snap: IndexSnapshot,
  plan: VectorPlan,
  kw: Hit[],
  vec: VectorHit[],
  collect: (segIndex: number, ord: number, score: number, extra: Extra) => void,
): void {
  const alpha = plan.alpha;
  const bySeq = new Map<number, { k?: number; v?: number; dist?: number; score?: number }>();
  kw.forEach((h, i) => bySeq.set(h.seq, { k: i + 1, score: h.score }));
  vec.forEach((h, i) => {
    const e = bySeq.get(h.seq) ?? {};
    e.v = i + 1;
    e.dist = h.distance;
    bySeq.set(h.seq, e);
  });
  const space = plan.field.vec_dist === 'ip' ? 'ip' : 'cosine';
  const qn = norm(plan.query);
  const threshold = plan.vq?.distanceThreshold;
  for (const [seq, e] of bySeq) {
    const at = locate(snap, seq);
    if (!at) continue;
    const score = (e.k ? (1 - alpha) / e.k : 0) + (e.v ? alpha / e.v : 0);
    let dist = e.dist;
    if (dist === undefined) {
      const v = getVector(store, schema.id, plan.field.id, seq);
      if (v) dist = vecDistance(space, plan.query, qn, v);
    }
    if (threshold !== undefined && dist !== undefined && dist > threshold) continue;
    collect(snap.segments.indexOf(at.seg), at.ord, score, { vectorDistance: dist, fusion: score, keyword: e.score });
  }
}

/** Values of computed sort clauses: `_vector_query(...)` distances (re-ranking) and `$coll(field)` joined values. */
function clauseValues(store: Store, schema: Schema, clauses: SortClause[]): ((clause: number, seq: number) => number | string) | undefined {
  const joins = clauses.map((c) => (c.kind === 'join' ? joinSortValue(store, schema, c.collection, c.field) : undefined));
  const plans = clauses.map((c) => {
    if (c.kind !== 'vector_query') return undefined;
    const vq = parseVectorQuery(c.expr);
    const field = vectorField(schema, vq.field);
    if (vq.vector.length === 0) bad('sort_by: `_vector_query(...)` needs a vector');
    if (field.num_dim !== undefined && vq.vector.length !== field.num_dim) bad(`sort_by: field \`${field.name}\` has ${field.num_dim} dimensions but the vector has ${vq.vector.length}`);
    const q = Float32Array.from(vq.vector);
    return { field, q, qn: norm(q), space: (field.vec_dist === 'ip' ? 'ip' : 'cosine') as 'ip' | 'cosine' };
  });
  if (!plans.some(Boolean) && !joins.some(Boolean)) return undefined;
  return (clause, seq) => {
    const j = joins[clause];
    if (j) return j(seq);
    const p = plans[clause]!;
    const v = getVector(store, schema.id, p.field.id, seq);
    return v ? vecDistance(p.space, p.q, p.qn, v) : Infinity;
  };
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
  collect: (segIndex: number, ord: number, score: number) => void,
  shouldStop: () => boolean,
  found: () => number,
  threshold?: () => number,
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
  const tableAt = new Map<string, CandidateTable>();
  const expanded = new Map<number, CandidateTable[number][number]>();
  const allowedFor = (t: number, f: FieldSpec, level: number) => (inPhrase.has(t) ? 0 : Math.min(level, allowedTypos(qt.tokens[t]!, f.numTypos, params.min_len_1typo, params.min_len_2typo)));
  /**
   * Candidates at a typo level. In 'missing' mode only tokens without an exact (or prefix)
   * match anywhere get typo expansions; in 'all' mode every token does. Each token and
   * field is expanded once per level (the trie walk is the costly part of typo queries).
   */
  const candidatesAt = (level: number, mode: 'missing' | 'all'): CandidateTable => {
    const key = `${level}:${mode}`;
    let table = tableAt.get(key);
    if (table) return table;
    const base = level === 0 ? undefined : candidatesAt(0, 'all');
    table = qt.tokens.map((_tok, t) => {
      const exact = base?.[t]!.some((perField) => perField.length > 0);
      // the same token, field and typo budget in another round: the same candidates
      const memoKey = (fi: number, allowed: number) => (t * fields.length + fi) * 4 + allowed;
      const prefixFor = (f: FieldSpec) => t === T - 1 && f.prefix && !inPhrase.has(t);
      const reused = (fi: number): Candidate[] | undefined => {
        if (base && mode === 'missing' && exact) return base[t]![fi]!;
        const allowed = allowedFor(t, fields[fi]!, level);
        if (base && allowed === 0) return base[t]![fi]!;
        return expanded.get(memoKey(fi, allowed));
      };
      // Fields still to expand that look up the same word with the same budget and prefix
      // rule share one typo walk (selectCandidatesShared).
      const groups = new Map<string, { word: string; allowed: number; prefix: boolean; members: number[] }>();
      fields.forEach((f, fi) => {
        if (reused(fi) !== undefined) return;
        const word = fieldToken(t, fi);
        const allowed = allowedFor(t, f, level);
        const prefix = prefixFor(f);
        const key = `${allowed}${prefix ? 'p' : 'w'}${word}`;
        const g = groups.get(key);
        if (g) g.members.push(fi);
        else groups.set(key, { word, allowed, prefix, members: [fi] });
      });
      for (const { word, allowed, prefix, members } of groups.values()) {
        const lists = selectCandidatesShared(segs, members.map((g) => fields[g]!.field), word, allowed, prefix, params.max_candidates);
        members.forEach((g, k) => expanded.set(memoKey(g, allowed), lists[k]!));
      }
      return fields.map((_f, fi) => reused(fi)!);
    });
    tableAt.set(key, table);
    return table;
  };
  // typo rounds: level 0, then typos for the tokens that found nothing, then for all
  const rounds: Array<[number, 'missing' | 'all']> = [[0, 'all']];
  for (let l = 1; l <= maxLevel; l++) rounds.push([l, 'missing']);
  for (let l = 1; l <= maxLevel; l++) rounds.push([l, 'all']);
  let first: CandidateTable | undefined;
  // tokens are dropped right to left; words of a quoted phrase are never dropped
  const droppable = qt.tokens.map((_, t) => t).filter((t) => !inPhrase.has(t));
  for (let drop = 0; drop <= droppable.length && drop < T; drop++) {
    const gone = new Set(droppable.slice(droppable.length - drop));
    const active = qt.tokens.map((_, t) => t).filter((t) => !gone.has(t));
    if (active.length === 0) break;
    let previous: CandidateTable | undefined;
    for (const [level, mode] of rounds) {
      // (prefix applies to the query's last token only, so not after it has been dropped)
      const candidates = candidatesAt(level, mode);
      if (candidates === previous || sameCandidates(candidates, previous)) continue;
      previous = candidates;
      if (!first) first = candidates;
      for (let s = 0; s < segs.length; s++) {
        const segSeen = seen[s]!;
        const ok = matchSegment(
          segs[s]!,
          { fields, tokens: active, totalTokens: T, candidates, phrases: qt.phrases, prioritizeExact: params.prioritize_exact_match, dropped: drop },
          { allow: allow[s]!, exclude: exclude[s]!, seen: segSeen },
          (ord, score) => {
            segSeen[ord] = 1;
            collect(s, ord, score);
          },
          shouldStop,
          threshold,
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

/** Do two candidate tables list the same terms? (a round that adds nothing is skipped) */
function sameCandidates(a: CandidateTable, b: CandidateTable | undefined): boolean {
  if (!b) return false;
  for (let t = 0; t < a.length; t++) {
    for (let f = 0; f < a[t]!.length; f++) {
      const x = a[t]![f]!;
      const y = b[t]![f]!;
      if (x === y) continue;
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) if (x[i]!.term !== y[i]!.term) return false;
    }
  }
  return true;
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
    out.push({ name, tokenizer: fieldTokenizer(schema, field), terms: termLookup(terms), full: full.has(name), isArray: field.isArray });
  }
  return out;
}

function hitOf(
  store: Store,
  schema: Schema,
  snap: IndexSnapshot,
  h: Hit,
  params: SearchParams,
  hfields: HighlightField[],
  wildcard: boolean,
  ext: SearchExtensions,
  totalTokens: number,
): SearchHit {
  const bound = keyProjection(ext.scope);
  const loaded = loadDocument(store, schema, h.seq, projectionWants(params.include_fields, params.exclude_fields)) ?? {};
  // a field the key hides is gone before highlighting, so no snippet can show it
  const doc = boundDocument(loaded, bound);
  const { highlight, highlights } = wildcard
    ? { highlight: {}, highlights: [] }
    : highlightDocument(doc, hfields, {
        startTag: params.highlight_start_tag,
        endTag: params.highlight_end_tag,
        affix: params.highlight_affix_num_tokens,
        snippetThreshold: params.snippet_threshold,
      });
  let projected = project(doc, { include: params.include_fields, exclude: params.exclude_fields });
  if (ext.decorate) projected = ext.decorate(projected, h.seq);
  const out: SearchHit = {
    document: projected,
    highlight,
    highlights,
  };
  const extra = (h.info ?? NO_EXTRA) as Extra;
  if (extra.vectorDistance !== undefined) out.vector_distance = extra.vectorDistance;
  if (extra.fusion !== undefined) out.hybrid_search_info = { rank_fusion_score: extra.fusion };
  const keywordScore = extra.fusion !== undefined ? extra.keyword : wildcard ? undefined : h.score;
  if (keywordScore !== undefined && keywordScore > 0) {
    const m = matchInfo(keywordScore, totalTokens);
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
  }
  return out;
}
