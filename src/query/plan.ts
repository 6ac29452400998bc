/**
 * query/plan.ts: here are a collection and checked parameters, what exactly will the search
 * do? Every parameter is read here, once, against the schema: the fields searched and how
 * (weights, prefix, typo budgets per query word), the words of `q` with their phrases and
 * exclusions, the filter (a scoped key's AND-ed in), the sort, facets, grouping, the page,
 * joins, and the vector side (`vector_query` or an embedding field in `query_by`). The
 * search (src/search) then runs the plan against an index snapshot; nothing there parses.
 *
 * A plan holds no snapshot: a search that first embeds its query (an await) takes its
 * snapshot after that, as late as possible.
 */
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import type { Field, Schema } from '../schema/schema.js';
import { fieldTokenizer, getSchema } from '../collection/catalog.js';
import { parseFilter } from './filter.js';
import { compileFilter, type CompiledFilter } from './filter-eval.js';
import { parseSort, type SortClause } from './sort.js';
import { parseQ } from './q.js';
import type { InfixMode, SearchParams } from './params.js';
import { checkVisible, hiddenBy, joinLists, scopedFilter, type SearchScope } from './scope.js';
import { parseVectorQuery, type VectorQuery } from '../vector/vquery.js';
import { SEARCH_DEFAULTS, SEARCH_LIMITS } from '../defaults.js';
import { checkJoinIncludes, decorateWithJoins, joinResolver, parseJoinIncludes } from '../join/join.js';
import { JoinAccess } from '../join/access.js';
import { expandSynonyms, synonymsFor } from '../synonyms/synonyms.js';
import type { Curation } from '../curation/curate.js';
import { globPattern } from '../pattern.js';
import type { FilterNode } from './filter.js';

function bad(msg: string): never {
  throw new FathomError('BAD_PARAMETER', msg);
}

/** A query_by text field and how it is searched. */
export interface FieldSpec {
  field: Field;
  /** Index of the field in query_by. */
  index: number;
  /** 0..255 (query_by_weights, or 100 - position, at least 1). */
  weight: number;
  prefix: boolean;
  numTypos: number;
  /** infix for this field: its words are also found inside document words (search/candidates.ts infixCandidates). */
  infix: InfixMode;
}

/** A facet_by field, with the facet_query words that narrow its values. */
export interface FacetSpec {
  field: Field;
  /** facet_query tokens for this field (prefix match on the value's tokens). */
  query?: string[];
  /** facet_return_parent: each count carries the object holding the value. */
  returnParent?: boolean;
}

/** The words of `q` after tokenising and stopwords. */
export interface QueryWords {
  /** Normalised tokens (base form), at most max_query_tokens. */
  tokens: string[];
  /** Groups of token indexes that form quoted phrases. */
  phrases: number[][];
  /** Excluded words and phrases (`-word`, `-"a phrase"`). */
  excluded: string[][];
  /** [token][field]: the token as that field's dictionary holds it (stemmed, another locale). */
  forField: string[][];
  /** [token][field]: typos allowed at most (min_len_1typo / min_len_2typo, num_typos; 0 in a phrase). */
  typos: number[][];
  /** [token][field]: matched as a prefix (the last word, unless in a phrase or prefix=false). */
  prefix: boolean[][];
  /** Highest typo budget of any token and field: the typo rounds go up to it. */
  maxTypos: number;
  /** Token indexes that are words of a phrase, or that a synonym put in (never dropped, never typo-expanded). */
  inPhrase: Set<number>;
  /**
   * [token][field]: single words that stand for the token (src/synonyms), in the field's
   * form; each is looked up as written beside the token's own candidates, counting as it.
   */
  synonyms?: string[][][];
}

/** What a search needs embedded before it can run (the engine computes it asynchronously). */
export interface EmbeddingNeed {
  field: Field;
  texts: string[];
  weights?: number[];
}

/** The vector side of a search as parsed; the query vector itself is found when it runs. */
export interface VectorSpec {
  /** The vector field searched. */
  field: Field;
  vq?: VectorQuery;
  /** The embedding field named in query_by, when there is one. */
  semantic?: Field;
}

/** A `_vector_query(...)` sort clause's vector. */
export interface SortVector {
  field: Field;
  q: Float32Array;
}

export interface SearchPlan {
  store: Store;
  schema: Schema;
  params: SearchParams;
  scope?: SearchScope;
  fields: FieldSpec[];
  words: QueryWords;
  /** Some word survives stopwords and there is a field to match it in. */
  textual: boolean;
  /** Every document matches (`*`, only exclusions, or no fields): no text scoring. */
  wildcard: boolean;
  /** Every word of `q` was a stopword: nothing matches. */
  emptyAfterStopwords: boolean;
  filter?: CompiledFilter;
  /** A scoped key's filter alone (also inside `filter`): `out_of` counts what it lets through, pinned hits must pass it. */
  keyFilter?: CompiledFilter;
  /** The collections joins may reach and the key's bounds on them (src/join/access.ts), when the key limits either. */
  joins?: JoinAccess;
  /** sort_by as given, or undefined. */
  userSort?: SortClause[];
  /** Per user sort clause, its vector when it is `_vector_query(...)`. */
  sortVectors: (SortVector | undefined)[];
  facets: FacetSpec[];
  groupFields: Field[];
  /** The page: hits [offset, offset + limit) of the ranking. */
  offset: number;
  limit: number;
  vector?: VectorSpec;
  embed?: EmbeddingNeed;
  /** Adds joined fields (`$c(...)` in include_fields) to a hit's document. */
  decorate?: (doc: Record<string, unknown>, seq: number) => Record<string, unknown>;
  /**
   * The query's synonym variants (src/synonyms), when synonyms apply to it: each variant's
   * words, and the tokens its matches count extra (the words replaced minus the words put in).
   */
  variants?: SynonymWords[];
  /** What curation rules and pinned_hits / hidden_hits decided (src/curation), when anything. */
  curation?: Curation;
}

/** A synonym variant of the query's words (see SearchPlan.variants). */
export interface SynonymWords {
  words: QueryWords;
  extra: number;
}

/** Typos allowed for a token of this length under the min_len rules. */
export function allowedTypos(token: string, numTypos: number, minLen1: number, minLen2: number): number {
  const len = [...token].length;
  if (len >= minLen2) return Math.min(2, numTypos);
  if (len >= minLen1) return Math.min(1, numTypos);
  return 0;
}

/**
 * Reads every parameter of a search against the collection's schema. `curation`: what the
 * collection's curation rules decided for this search (src/curation/curate.ts): its filter is
 * AND-ed with the request's (and a scoped key's), its sort replaces the request's.
 */
export function planSearch(store: Store, collection: string, params: SearchParams, scope?: SearchScope, curation?: Curation): SearchPlan {
  const schema = getSchema(store, collection);
  // the vector side first: what must be embedded is known before anything else is checked
  const vq = params.vector_query ? parseVectorQuery(params.vector_query) : undefined;
  const vfield = vq ? vectorField(schema, vq.field) : undefined;
  if (vq?.queries && !vfield!.embed) bad(`vector_query: \`queries\` needs an embedding field; \`${vfield!.name}\` has no \`embed\``);
  const semantic = embeddingQueryField(schema, params);
  const embed = embeddingNeed(params, vq, vfield, semantic);

  const fields = resolveQueryFields(schema, params);
  const ownFilter = params.filter_by ? parseFilter(params.filter_by) : undefined;
  const joins = JoinAccess.of(store, scope);
  // the key's filter and the rest are compiled apart (and AND-ed), so out_of can count the key's alone
  const keyTree = scopedFilter(undefined, scope);
  const keyFilter = keyTree ? compileFilter(keyTree, schema, store, joinResolver(store, schema, joins)) : undefined;
  const requestTree = andFilters(ownFilter, curation?.filter);
  const requestFilter = requestTree ? compileFilterNamingRules(requestTree, ownFilter, schema, store, joins, curation) : undefined;
  const filter = requestFilter && keyFilter ? { root: { kind: 'and' as const, children: [requestFilter.root, keyFilter.root] } } : (requestFilter ?? keyFilter);
  const joinSpec = joinLists(params, scope);
  const joinIncludes = parseJoinIncludes(joinSpec.include, joinSpec.exclude);
  checkJoinIncludes(joinIncludes, joins);
  const decorate = joinIncludes.length > 0 ? (doc: Record<string, unknown>, seq: number) => decorateWithJoins(store, schema, joinIncludes, doc, seq, joins) : undefined;
  const ownSort = params.sort_by ? parseSort(params.sort_by, schema) : undefined;
  // (a curation rule's sort replaces the request's; the key's bounds judge the request's own)
  const userSort = curation?.sortBy ? ruleSort(curation.sortBy, curation.sortRule, schema) : ownSort;
  for (const c of userSort ?? []) if (c.kind === 'join') joins?.check(c.collection, 'sort_by');
  checkVisible(scope, schema, params, ownFilter, ownSort);
  const facets = facetSpecs(schema, params, scope);
  const groupFields = (params.group_by ?? []).map((name) => {
    const f = schema.field(name);
    if (!f) bad(`group_by: no field named \`${name}\``);
    if (!f.facet) bad(`group_by: field \`${name}\` must be a facet field`);
    return f;
  });
  const stop = loadStopwords(store, params.stopwords);
  const parsed = parseQ(params.q);
  let words = queryWords(schema, params, fields, parsed.parts, stop);
  const textual = words.tokens.length > 0 && fields.length > 0;
  const onlyExclusions = parsed.parts.every((p) => p.exclude);
  const wildcard = !textual && (parsed.wildcard || onlyExclusions || fields.length === 0);
  const emptyAfterStopwords = words.tokens.length === 0 && !parsed.wildcard && !onlyExclusions && fields.length > 0;
  const sortVectors = (userSort ?? []).map((c) => (c.kind === 'vector_query' ? sortVector(schema, c.expr) : undefined));
  let variants: SynonymWords[] | undefined;
  if (textual && params.enable_synonyms) ({ words, variants } = synonymWords(store, schema, params, fields, words));

  const offset = params.offset ?? (params.page - 1) * params.per_page;
  const limit = pageWithinLimitHits(offset, params.limit ?? params.per_page, params.limit_hits);
  const vector = vq || semantic ? { field: vfield ?? semantic!, ...(vq ? { vq } : {}), ...(semantic ? { semantic } : {}) } : undefined;
  return {
    store,
    schema,
    params,
    ...(scope ? { scope } : {}),
    fields,
    words,
    textual,
    wildcard,
    emptyAfterStopwords,
    ...(filter ? { filter } : {}),
    ...(keyFilter ? { keyFilter } : {}),
    ...(joins ? { joins } : {}),
    ...(userSort ? { userSort } : {}),
    sortVectors,
    facets,
    groupFields,
    offset,
    limit,
    ...(vector ? { vector } : {}),
    ...(embed ? { embed } : {}),
    ...(decorate ? { decorate } : {}),
    ...(variants && variants.length > 0 ? { variants } : {}),
    ...(curation ? { curation } : {}),
  };
}

/**
 * limit_hits: no hit ranked beyond it is ever returned, so the page [offset, offset + limit)
 * is cut at it, and a page starting beyond it is refused with the reference's 422 and
 * message. Positions count what the page counts: hits, or groups under group_by. `found`
 * is left alone. The limit returned is what the page may hold.
 */
function pageWithinLimitHits(offset: number, limit: number, limitHits: number | undefined): number {
  if (limitHits === undefined) return limit;
  if (offset >= limitHits) throw new FathomError('UNPROCESSABLE', limitHitsMessage(limitHits));
  return Math.min(limit, limitHits - offset);
}

/** The reference's message for a page beyond limit_hits (union.ts says it too). */
export function limitHitsMessage(limitHits: number): string {
  return `Only upto ${limitHits} hits can be fetched. Ensure that \`page\` and \`per_page\` parameters are within this range.`;
}

/**
 * Compiles the request's filter with the curation rules'. When it does not fit the schema and
 * the request's own filter does, a curation rule's filter_by is what does not: the 400 names it
 * (a curation set's rules are checked against a collection only when a search uses them).
 */
function compileFilterNamingRules(tree: FilterNode, own: FilterNode | undefined, schema: Schema, store: Store, joins: JoinAccess | undefined, curation: Curation | undefined): CompiledFilter {
  try {
    return compileFilter(tree, schema, store, joinResolver(store, schema, joins));
  } catch (e) {
    if (!(e instanceof FathomError) || !curation?.filterRules) throw e;
    try {
      if (own) compileFilter(own, schema, store, joinResolver(store, schema, joins));
    } catch {
      throw e;
    }
    const rules = curation.filterRules.map((id) => `\`${id}\``).join(', ');
    throw new FathomError(e.code, `the filter_by of curation rule ${rules}: ${e.message}`);
  }
}

/** A curation rule's sort_by, read against the schema; a 400 names the rule. */
function ruleSort(sortBy: string, rule: string | undefined, schema: Schema): SortClause[] {
  try {
    return parseSort(sortBy, schema);
  } catch (e) {
    if (e instanceof FathomError && rule !== undefined) throw new FathomError(e.code, `the sort_by of curation rule \`${rule}\`: ${e.message}`);
    throw e;
  }
}

/** Two filters as one AND node (either may be absent). */
function andFilters(a: FilterNode | undefined, b: FilterNode | undefined): FilterNode | undefined {
  return a && b ? { kind: 'and', children: [a, b] } : (a ?? b);
}

/**
 * The synonym variants of the query's words (src/synonyms): the collection's own synonyms,
 * its linked sets and the request's `synonym_sets`, in the locale of the first query_by field.
 */
function synonymWords(store: Store, schema: Schema, params: SearchParams, fields: FieldSpec[], words: QueryWords): { words: QueryWords; variants?: SynonymWords[] } {
  const locale = fields[0]!.field.locale ?? '';
  const units = synonymsFor(store, schema.record, locale, params.synonym_sets);
  if (units.length === 0) return { words };
  const { alternatives, variants } = expandSynonyms(words.tokens, (i) => words.inPhrase.has(i), units, {
    prefix: params.synonym_prefix,
    typos: (w) => allowedTypos(w, params.synonym_num_typos, params.min_len_1typo, params.min_len_2typo),
  });
  const withAlternatives = (w: QueryWords, alts: string[][]): QueryWords => (alts.some((a) => a.length > 0) ? { ...w, synonyms: synonymForms(schema, fields, alts) } : w);
  return {
    words: withAlternatives(words, alternatives),
    variants: variants.map((v) => {
      // a phrase's words are never replaced, but move with the words before them
      const phrases = words.phrases.map((ph) => ph.map((i) => v.origin.indexOf(i)));
      const vw = wordsOf(schema, params, fields, v.tokens, phrases, words.excluded, v.replaced);
      return { words: withAlternatives(vw, v.origin.map((o) => (o >= 0 ? alternatives[o]! : []))), extra: v.extra };
    }),
  };
}

/** [token][field]: the alternatives of each token in each field's form (stemmed, another locale). */
function synonymForms(schema: Schema, fields: FieldSpec[], alternatives: string[][]): string[][][] {
  const toks = fields.map((f) => fieldTokenizer(schema, f.field));
  return alternatives.map((alts) => fields.map((f, fi) => alts.map((w) => (f.field.stem || f.field.locale !== fields[0]!.field.locale ? toks[fi]!.normalizeWord(w) || w : w))));
}

/** The text fields of query_by (embedding fields are handled by the vector side). */
function resolveQueryFields(schema: Schema, params: SearchParams): FieldSpec[] {
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
      infix: infixFor(field, params.infix[i] ?? params.infix[0] ?? 'off'),
    });
  });
  return out;
}

/** A field's infix mode, refused when the field keeps no infix index (`infix: true`), as the reference refuses it. */
function infixFor(field: Field, mode: InfixMode): InfixMode {
  if (mode !== 'off' && !field.infix) bad(`parameter \`infix\`: field \`${field.name}\` was not created with \`infix: true\`; add it to the field to search inside its words`);
  return mode;
}

/** The embedding field named in query_by, if any (semantic / hybrid search on `q`). */
function embeddingQueryField(schema: Schema, params: SearchParams): Field | undefined {
  for (const name of params.query_by) {
    const f = schema.field(name);
    if (f && f.kind === 'vector' && f.embed) return f;
  }
  return undefined;
}

export function vectorField(schema: Schema, name: string): Field {
  const f = schema.field(name);
  if (!f) bad(`vector_query: no field named \`${name}\` in collection \`${schema.name}\``);
  if (f.kind !== 'vector') bad(`vector_query: field \`${name}\` is not a vector field (a \`float[]\` with \`num_dim\` or \`embed\`)`);
  return f;
}

/** Texts to embed before the search can run: `queries` of vector_query, or q on an embedding field. */
function embeddingNeed(params: SearchParams, vq: VectorQuery | undefined, vfield: Field | undefined, semantic: Field | undefined): EmbeddingNeed | undefined {
  if (vq) {
    if (vq.queries) return { field: vfield!, texts: vq.queries, ...(vq.queryWeights ? { weights: vq.queryWeights } : {}) };
    if (vq.vector.length > 0 || vq.id !== undefined) return undefined;
  }
  const q = params.q.trim();
  if (semantic && q !== '' && q !== '*') return { field: semantic, texts: [params.q] };
  return undefined;
}

function sortVector(schema: Schema, expr: string): SortVector {
  const vq = parseVectorQuery(expr);
  const field = vectorField(schema, vq.field);
  if (vq.vector.length === 0) bad('sort_by: `_vector_query(...)` needs a vector');
  if (field.num_dim !== undefined && vq.vector.length !== field.num_dim) bad(`sort_by: field \`${field.name}\` has ${field.num_dim} dimensions but the vector has ${vq.vector.length}`);
  return { field, q: Float32Array.from(vq.vector) };
}

function facetSpecs(schema: Schema, params: SearchParams, scope: SearchScope | undefined): FacetSpec[] {
  const names = expandFacetFields(schema, params.facet_by, hiddenBy(scope));
  let fq: { field: string; text: string } | undefined;
  if (params.facet_query) {
    const colon = params.facet_query.indexOf(':');
    if (colon < 0) bad('facet_query must look like `field:text`');
    fq = { field: params.facet_query.slice(0, colon).trim(), text: params.facet_query.slice(colon + 1).trim() };
    if (!names.includes(fq.field)) bad(`facet_query: field \`${fq.field}\` is not in facet_by`);
  }
  for (const name of params.facet_return_parent) {
    if (!names.includes(name)) bad(`parameter \`facet_return_parent\`: field \`${name}\` is not in facet_by`);
  }
  return names.map((name) => {
    const field = schema.field(name);
    if (!field) bad(`facet_by: no field named \`${name}\` in collection \`${schema.name}\``);
    if (!field.facet) bad(`facet_by: field \`${name}\` is not a facet field (declare it with \`facet: true\`)`);
    if (field.kind === 'object') bad(`facet_by: \`${name}\` is an object field; facet on its leaves, e.g. \`${name}.<key>\``);
    const spec: FacetSpec = { field };
    if (fq && fq.field === name) spec.query = fieldTokenizer(schema, { locale: field.locale, stem: false }).tokens(fq.text);
    if (params.facet_return_parent.includes(name)) spec.returnParent = true;
    return spec;
  });
}

/**
 * facet_by names, with `*` standing for any characters: `*` is every facetable field (as
 * InstantSearch's dynamic widgets ask), `*_facet` those ending so. A name without `*` is
 * kept as given (and refused below when it is no facet field); a pattern takes only the
 * concrete facetable fields it matches, and may match none.
 */
function expandFacetFields(schema: Schema, names: string[], hidden: ((name: string) => boolean) | undefined): string[] {
  const out: string[] = [];
  for (const name of names) {
    if (!name.includes('*')) {
      if (!out.includes(name)) out.push(name);
      continue;
    }
    const re = globPattern(name);
    for (const f of schema.fields) {
      // (a field a scoped key hides is no facet of a pattern: its values would show)
      if (f.pattern || !f.facet || f.id <= 0 || !['text', 'number', 'bool'].includes(f.kind) || hidden?.(f.name)) continue;
      if (re.test(f.name) && !out.includes(f.name)) out.push(f.name);
    }
  }
  return out;
}

function loadStopwords(store: Store, name: string | undefined): Set<string> | undefined {
  if (!name) return undefined;
  const set = store.stopwords.get(name) as { stopwords: string[] } | undefined;
  if (!set) throw new FathomError('NOT_FOUND', `stopword set \`${name}\` not found`);
  return new Set(set.stopwords);
}

function queryWords(schema: Schema, params: SearchParams, fields: FieldSpec[], parts: ReturnType<typeof parseQ>['parts'], stop: Set<string> | undefined): QueryWords {
  const tok = fieldTokenizer(schema, { locale: fields[0]?.field.locale ?? '', stem: false });
  const all: string[] = [];
  const phrases: number[][] = [];
  const excluded: string[][] = [];
  for (const p of parts) {
    let ts = tok.tokens(p.text);
    if (!p.phrase && stop) ts = ts.filter((t) => !stop.has(t));
    if (ts.length === 0) continue;
    if (p.exclude) {
      excluded.push(ts);
      continue;
    }
    const start = all.length;
    for (const t of ts) all.push(t);
    if (p.phrase) phrases.push(ts.map((_, i) => start + i));
  }
  return wordsOf(schema, params, fields, all, phrases, excluded);
}

/**
 * The words of a query as the search looks them up: each token's form per field, typo
 * budget and prefix rule. `exact`: indexes of tokens matched as written, as a phrase's
 * words are (no typos, no prefix, never dropped): the words a synonym put in (synonyms).
 * A word repeated more than SEARCH_LIMITS.maxWordRepeats times outside quotes is kept that
 * many times (its first occurrences); then tokens beyond max_query_tokens are left out, with
 * the phrases that reach them.
 */
export function wordsOf(
  schema: Schema,
  params: SearchParams,
  fields: FieldSpec[],
  all: string[],
  phrases: number[][],
  excluded: string[][],
  exact?: ReadonlySet<number>,
): QueryWords {
  ({ all, phrases, exact } = withoutRepeats(all, phrases, exact));
  const max = SEARCH_DEFAULTS.max_query_tokens;
  const tokens = all.slice(0, max);
  const kept = phrases.filter((ph) => ph.every((i) => i < max));
  return tokenWords(schema, params, fields, tokens, kept, excluded, exact);
}

/**
 * The query's tokens with no word (outside quotes and synonyms' own words) more than
 * SEARCH_LIMITS.maxWordRepeats times: each copy of a word is one more token to match, score
 * and place in every document holding it, for nothing a person typing it means. Phrases
 * and the synonym words (`exact`) keep their places, renumbered.
 */
function withoutRepeats(all: string[], phrases: number[][], exact: ReadonlySet<number> | undefined): { all: string[]; phrases: number[][]; exact: ReadonlySet<number> | undefined } {
  const fixed = new Set(phrases.flat());
  if (exact) for (const i of exact) fixed.add(i);
  const seen = new Map<string, number>();
  const at = new Int32Array(all.length).fill(-1);
  const out: string[] = [];
  for (let i = 0; i < all.length; i++) {
    const t = all[i]!;
    if (!fixed.has(i)) {
      const n = (seen.get(t) ?? 0) + 1;
      seen.set(t, n);
      if (n > SEARCH_LIMITS.maxWordRepeats) continue;
    }
    at[i] = out.length;
    out.push(t);
  }
  if (out.length === all.length) return { all, phrases, exact };
  return {
    all: out,
    phrases: phrases.map((ph) => ph.map((i) => at[i]!)),
    exact: exact ? new Set([...exact].map((i) => at[i]!)) : undefined,
  };
}

/**
 * The query words of a search for other tokens than its `q` (the query's words joined or
 * split by split_join_tokens, search/keyword.ts), with the search's typo and prefix rules.
 */
export function queryWordsFor(plan: SearchPlan, tokens: string[]): QueryWords {
  return tokenWords(plan.schema, plan.params, plan.fields, tokens.slice(0, SEARCH_DEFAULTS.max_query_tokens), [], plan.words.excluded);
}

function tokenWords(
  schema: Schema,
  params: SearchParams,
  fields: FieldSpec[],
  tokens: string[],
  kept: number[][],
  excluded: string[][],
  exact?: ReadonlySet<number>,
): QueryWords {
  const inPhrase = new Set(kept.flat());
  if (exact) for (const i of exact) if (i < tokens.length) inPhrase.add(i);
  const T = tokens.length;
  const fieldToks = fields.map((f) => fieldTokenizer(schema, f.field));
  const forField = tokens.map((t) =>
    fields.map((f, fi) => (f.field.stem || f.field.stem_dictionary || f.field.locale !== fields[0]!.field.locale ? fieldToks[fi]!.normalizeWord(t) || t : t)),
  );
  // (only the first SEARCH_LIMITS.maxTypoWords words are looked up with typos: each is a walk of every field's dictionary)
  const typos = tokens.map((t, ti) => fields.map((f) => (inPhrase.has(ti) || ti >= SEARCH_LIMITS.maxTypoWords ? 0 : allowedTypos(t, f.numTypos, params.min_len_1typo, params.min_len_2typo))));
  const prefix = tokens.map((_t, ti) => fields.map((f) => ti === T - 1 && f.prefix && !inPhrase.has(ti)));
  const maxTypos = Math.max(0, ...typos.flat());
  return { tokens, phrases: kept, excluded, forField, typos, prefix, maxTypos, inPhrase };
}
