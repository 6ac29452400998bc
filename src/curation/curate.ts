/**
 * src/curation/curate.ts: here is a search, which curation rules apply to it, and what do
 * they change?
 *
 * Runs before the parameters are parsed (Engine.search): rules may replace `q`. The rules
 * are the collection's own overrides and the items of the curation sets it links, compiled
 * once per process and revision (src/rulesets), tried in the order of their ids:
 *
 *   eligible   no override_tags: rules without tags; with tags: rules holding all of them
 *              first, then rules holding any of them; and only while effective (from/to)
 *   matches    rule.query against q's words, `exact` (all of them) or `contains` (a run of
 *              them; placeholders such as `{brand}` match a run that is a value of that
 *              field); rule.filter_by equal to the request's filter_by (as text, or as the
 *              `(request) && (key)` text the reference builds for a scoped key); a rule
 *              with tags only matches whenever it is eligible
 *   applies    includes / excludes collect; the first sort_by and replace_query win;
 *              filter_by clauses are AND-ed; remove_matched_tokens (default: for rules that
 *              filter) takes the matched words out of q; metadata merges (first
 *              wins); stop_processing (default true) ends the walk
 *
 * `pinned_hits` / `hidden_hits` come first (a hidden document is never shown, a pinned one
 * goes where the request put it). The outcome is a Curation: the plan AND-s its filter as a
 * tree (never widening a scoped key's), and the search places pinned documents
 * (src/curation/pins.ts).
 */
import { SEARCH_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import { nowSeconds } from '../clock.js';
import { fieldTokenizer, getSchema } from '../collection/catalog.js';
import type { Schema } from '../schema/schema.js';
import { snapshot } from '../index/manifest.js';
import type { TextIndex } from '../index/segment.js';
import { parseFilter, type FilterNode } from '../query/filter.js';
import { parseQ } from '../query/q.js';
import type { RawParams } from '../query/params.js';
import { parseFieldList } from '../query/fields.js';
import type { SearchScope } from '../query/scope.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { CompiledCache, findSet, listOwnItems } from '../rulesets/rulesets.js';
import { CURATION, PLACEHOLDER, queryParts, type CurationItem, type QueryPart } from './rules.js';

/** What curation decided for one search. */
export interface Curation {
  /** AND-ed with the request's filter (and a scoped key's). */
  filter?: FilterNode;
  /** Ids of the rules whose filter_by `filter` holds (named when it does not fit the schema). */
  filterRules?: string[];
  /** Replaces the request's sort_by. */
  sortBy?: string;
  /** Id of the rule `sortBy` comes from. */
  sortRule?: string;
  /** Documents placed at positions (1-based), pinned_hits first, then rules' includes. */
  pins: Array<{ id: string; position: number }>;
  /** Documents never shown. */
  hidden: string[];
  /** Merged metadata of the rules that applied (the response's `metadata`). */
  metadata?: Record<string, unknown>;
  /** Pinned documents must also pass the request's own filter. */
  filterCuratedHits: boolean;
  /** Ids of the rules that applied, in order. */
  applied: string[];
}

interface CompiledRule {
  item: CurationItem;
  parts?: QueryPart[];
  /** `*` as the rule's query: matches a wildcard search. */
  wildcard: boolean;
  hasPlaceholders: boolean;
  tags?: Set<string>;
}

/**
 * One unit's rules, indexed so that a search looks up the few that can apply to it (a
 * thousand rules cost a handful of map lookups per search, not a thousand tries).
 */
interface CompiledRules {
  /** Exact rules without placeholders, by their words joined with spaces. */
  exact: Map<string, CompiledRule[]>;
  /** Contains rules without placeholders, and rules with placeholders and a word, by a word they need. */
  byWord: Map<string, CompiledRule[]>;
  /** Rules without a query: by their rule.filter_by text, or (tags only) by tag. */
  byFilter: Map<string, CompiledRule[]>;
  byTag: Map<string, CompiledRule[]>;
  /** Rules whose query is `*` (a wildcard search), or placeholders only: tried on every search. */
  others: CompiledRule[];
  size: number;
}

function bad(message: string): never {
  throw new FathomError('BAD_PARAMETER', message);
}

/** The tokenizer rules and queries are compared with: the collection's separators and symbols. */
function ruleTokenizer(schema: Schema): Tokenizer {
  return fieldTokenizer(schema, { locale: '', stem: false });
}

function compile(items: readonly CurationItem[], schema: Schema): CompiledRules {
  const tok = ruleTokenizer(schema);
  const out: CompiledRules = { exact: new Map(), byWord: new Map(), byFilter: new Map(), byTag: new Map(), others: [], size: items.length };
  const push = (m: Map<string, CompiledRule[]>, k: string, r: CompiledRule) => {
    const l = m.get(k);
    if (l) l.push(r);
    else m.set(k, [r]);
  };
  for (const item of items) {
    const q = item.rule.query;
    const wildcard = q !== undefined && q.trim() === '*';
    const parts = q !== undefined && !wildcard ? queryParts(q, (s) => tok.tokens(s)) : undefined;
    const hasPlaceholders = !!parts?.some((p) => 'field' in p);
    const r: CompiledRule = { item, wildcard, hasPlaceholders, ...(parts ? { parts } : {}), ...(item.rule.tags ? { tags: new Set(item.rule.tags) } : {}) };
    const words = (parts ?? []).flatMap((p) => ('word' in p ? [p.word] : []));
    if (parts && !hasPlaceholders && item.rule.match === 'exact') push(out.exact, words.join(' '), r);
    else if (words.length > 0) push(out.byWord, words[0]!, r);
    else if (q === undefined && item.rule.filter_by !== undefined) push(out.byFilter, item.rule.filter_by.trim(), r);
    else if (q === undefined) for (const t of item.rule.tags ?? []) push(out.byTag, t, r);
    else out.others.push(r);
  }
  return out;
}

const cache = new CompiledCache<CompiledRules | null>();

/** The compiled rules of a collection: its own overrides, then its linked curation sets. */
function rulesFor(store: Store, schema: Schema): CompiledRules[] {
  const rec = schema.record;
  const tk = `${rec.id}\u0000${rec.version}`;
  const units: CompiledRules[] = [];
  const own = cache.get(store, `own\u0000${tk}`, () => compile(listOwnItems(store, CURATION, rec), schema));
  if (own && own.size > 0) units.push(own);
  for (const name of rec.curation_sets ?? []) {
    const u = cache.get(store, `set\u0000${name}\u0000${tk}`, () => {
      const set = findSet(store, CURATION, name);
      return set ? compile(set.items, schema) : null;
    });
    if (u && u.size > 0) units.push(u);
  }
  return units;
}

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

function text(raw: RawParams, k: string): string | undefined {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return undefined;
  if (Array.isArray(v)) return v.map(String).join(',');
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  bad(`parameter \`${k}\` must be a string`);
}

function flag(raw: RawParams, k: string, dflt: boolean): boolean {
  const v = raw[k];
  if (v === undefined || v === null || v === '') return dflt;
  if (v === true || v === 'true' || v === '1' || v === 1) return true;
  if (v === false || v === 'false' || v === '0' || v === 0) return false;
  bad(`parameter \`${k}\` must be true or false, got ${JSON.stringify(v)}`);
}

/** `pinned_hits`: `id:position,...`. */
export function parsePinned(v: string | undefined): Array<{ id: string; position: number }> {
  if (v === undefined) return [];
  const out: Array<{ id: string; position: number }> = [];
  for (const entry of v.split(',')) {
    const e = entry.trim();
    if (e === '') continue;
    const colon = e.lastIndexOf(':');
    const id = colon > 0 ? e.slice(0, colon).trim() : '';
    const pos = colon > 0 ? e.slice(colon + 1).trim() : '';
    if (id === '' || !/^\d+$/.test(pos) || Number(pos) < 1) bad(`pinned_hits: \`${e}\` must look like \`id:position\`, with a position from 1`);
    out.push({ id, position: Number(pos) });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

/** A word of q: its normalised form and where it came from (to rebuild q without it). */
interface QWord {
  word: string;
  part: number;
}

/** The values of a string field, by their normalised words (for placeholders); per segment index, cached. */
const valueMaps = new WeakMap<TextIndex, Map<string, string>>();

function valuesOf(ti: TextIndex, tok: Tokenizer): Map<string, string> {
  let m = valueMaps.get(ti);
  if (!m) {
    m = new Map();
    for (const v of ti.valueStrings()) {
      const key = tok.tokens(v).join(' ');
      if (key !== '' && !m.has(key)) m.set(key, v);
    }
    valueMaps.set(ti, m);
  }
  return m;
}

/**
 * Looks up stored values of fields by their words (placeholders): `lookup(field, words)` is
 * the value as stored, or undefined. The index snapshot is taken once, at the first lookup.
 */
function valueLookup(store: Store, schema: Schema, tok: Tokenizer): (field: string, words: string) => string | undefined {
  let maps: Map<string, Map<string, string>[]> | undefined;
  return (field, words) => {
    maps ??= new Map();
    let list = maps.get(field);
    if (!list) {
      list = [];
      const f = schema.field(field);
      if (f && f.kind === 'text') {
        for (const seg of snapshot(store, schema.id).segments) {
          const ti = seg.reader.text(f.id);
          if (ti && ti.valueIds) list.push(valuesOf(ti, tok));
        }
      }
      maps.set(field, list);
    }
    for (const m of list) {
      const v = m.get(words);
      if (v !== undefined) return v;
    }
    return undefined;
  };
}

interface RuleMatch {
  /** Indexes of the q words the rule matched. */
  words: number[];
  /** Placeholder values, as stored. */
  values: Map<string, string>;
}

/** Matches a rule's parts against q's words from `start` (to the end for `exact`). */
function matchFrom(parts: QueryPart[], q: QWord[], start: number, exact: boolean, lookup: (field: string, words: string) => string | undefined): RuleMatch | undefined {
  const values = new Map<string, string>();
  const go = (pi: number, qi: number): number => {
    if (pi === parts.length) return !exact || qi === q.length ? qi : -1;
    const p = parts[pi]!;
    if ('word' in p) return qi < q.length && q[qi]!.word === p.word ? go(pi + 1, qi + 1) : -1;
    // a placeholder: the longest run of words that is a value of the field, then shorter ones
    for (let end = q.length; end > qi; end--) {
      const v = lookup(p.field, q.slice(qi, end).map((w) => w.word).join(' '));
      if (v === undefined) continue;
      values.set(p.field, v);
      const r = go(pi + 1, end);
      if (r >= 0) return r;
      values.delete(p.field);
    }
    return -1;
  };
  const end = go(0, start);
  if (end < 0) return undefined;
  return { words: Array.from({ length: end - start }, (_, i) => start + i), values };
}

function matchQuery(r: CompiledRule, q: QWord[], wildcardQ: boolean, lookup: (field: string, words: string) => string | undefined): RuleMatch | undefined {
  if (r.wildcard) return wildcardQ ? { words: [], values: new Map() } : undefined;
  const parts = r.parts!;
  if (parts.length === 0 || q.length === 0) return undefined;
  if (r.item.rule.match === 'exact') return matchFrom(parts, q, 0, true, lookup);
  for (let s = 0; s + parts.length <= q.length; s++) {
    const m = matchFrom(parts, q, s, false, lookup);
    if (m) return m;
  }
  return undefined;
}

/** A filter or sort with its placeholders replaced by the matched values (a value quoted where a value goes). */
function substitute(template: string, values: Map<string, string>, quoteValues: boolean): string {
  return template.replace(PLACEHOLDER, (whole, name: string, at: number) => {
    const v = values.get(name);
    if (v === undefined) return whole;
    if (!quoteValues || v.includes('`')) return v;
    const before = template.slice(0, at).trimEnd();
    const valuePosition = /[:=[,<>!]$/.test(before);
    return valuePosition ? `\`${v}\`` : v;
  });
}

/** The request's q without the words at `drop` (phrases and exclusions kept as written). */
function qWithout(q: string, words: QWord[], drop: Set<number>, tok: Tokenizer): string {
  const parsed = parseQ(q);
  const out: string[] = [];
  let wi = 0;
  parsed.parts.forEach((p, pi) => {
    if (p.exclude) {
      out.push(p.phrase ? `-"${p.text}"` : `-${p.text}`);
      return;
    }
    const kept: string[] = [];
    const n = tok.tokens(p.text).length;
    for (let k = 0; k < n; k++, wi++) {
      if (words[wi]?.part !== pi) continue;
      if (!drop.has(wi)) kept.push(words[wi]!.word);
    }
    if (kept.length === 0) return;
    out.push(p.phrase ? `"${kept.join(' ')}"` : kept.join(' '));
  });
  return out.join(' ');
}

/** The words of q that rules are matched against (excluded words left out). */
function qWords(q: string, tok: Tokenizer): QWord[] {
  const out: QWord[] = [];
  parseQ(q).parts.forEach((p, pi) => {
    if (p.exclude) return;
    for (const w of tok.tokens(p.text)) out.push({ word: w, part: pi });
  });
  return out;
}

/**
 * Curates one search: returns the parameters to search with (q replaced or shortened by
 * the rules that say so) and the Curation, or no Curation when nothing applies.
 */
export function curate(store: Store, collection: string, raw: RawParams, scope?: SearchScope): { raw: RawParams; curation?: Curation } {
  const enabled = flag(raw, 'enable_overrides', SEARCH_DEFAULTS.enable_overrides);
  const pinned = parsePinned(text(raw, 'pinned_hits'));
  const hiddenList = parseFieldList(text(raw, 'hidden_hits')) ?? [];
  const schema = getSchema(store, collection);
  const units = enabled ? rulesFor(store, schema) : [];
  if (units.length === 0 && pinned.length === 0 && hiddenList.length === 0) return { raw };

  const cur: Curation = { pins: [], hidden: [], filterCuratedHits: flag(raw, 'filter_curated_hits', SEARCH_DEFAULTS.filter_curated_hits), applied: [] };
  const pinnedIds = new Set<string>();
  const pin = (id: string, position: number) => {
    if (pinnedIds.has(id)) return;
    pinnedIds.add(id);
    cur.pins.push({ id, position });
  };
  const hidden = new Set<string>(hiddenList);
  for (const p of pinned) pin(p.id, p.position);
  let out = raw;

  if (units.length > 0) {
    const tok = ruleTokenizer(schema);
    const q = typeof raw.q === 'string' ? raw.q : raw.q === undefined || raw.q === null ? '*' : String(raw.q);
    const wildcardQ = parseQ(q).wildcard;
    const words = qWords(q, tok);
    const tagList = parseFieldList(text(raw, 'override_tags') ?? text(raw, 'curation_tags')) ?? [];
    const tags = new Set(tagList);
    const reqFilter = text(raw, 'filter_by');
    const filters = new Set<string>();
    if (reqFilter !== undefined) {
      filters.add(reqFilter.trim());
      if (scope?.filter_by) filters.add(`(${reqFilter}) && (${scope.filter_by})`);
    } else if (scope?.filter_by) filters.add(scope.filter_by);

    // the rules that may apply: looked up by q's words, plus every rule that must be tried
    const found = new Set<CompiledRule>();
    const joined = words.map((w) => w.word).join(' ');
    const distinct = new Set(words.map((x) => x.word));
    for (const u of units) {
      for (const r of u.exact.get(joined) ?? []) found.add(r);
      for (const w of distinct) for (const r of u.byWord.get(w) ?? []) found.add(r);
      for (const f of filters) for (const r of u.byFilter.get(f) ?? []) found.add(r);
      for (const t of tags) for (const r of u.byTag.get(t) ?? []) found.add(r);
      for (const r of u.others) found.add(r);
    }
    const now = nowSeconds();
    const group = (r: CompiledRule): number => {
      if (tags.size === 0) return r.tags ? -1 : 0;
      if (!r.tags || ![...tags].some((t) => r.tags!.has(t))) return -1;
      return [...tags].every((t) => r.tags!.has(t)) ? 0 : 1;
    };
    const candidates = [...found]
      .map((r) => ({ r, g: group(r) }))
      .filter(({ r, g }) => g >= 0 && (r.item.effective_from_ts === undefined || now >= r.item.effective_from_ts) && (r.item.effective_to_ts === undefined || now <= r.item.effective_to_ts))
      .sort((a, b) => a.g - b.g || (a.r.item.id < b.r.item.id ? -1 : a.r.item.id > b.r.item.id ? 1 : 0));

    const lookup = valueLookup(store, schema, tok);
    const filterNodes: FilterNode[] = [];
    const filterRules: string[] = [];
    const drop = new Set<number>();
    let replaceQuery: string | undefined;
    for (const { r } of candidates) {
      const item = r.item;
      const rule = item.rule;
      let m: RuleMatch | undefined;
      if (rule.query !== undefined) {
        m = matchQuery(r, words, wildcardQ, lookup);
        if (!m) continue;
      }
      if (rule.filter_by !== undefined && !filters.has(rule.filter_by.trim())) continue;
      // (a rule with tags only applies whenever its tags are asked for)
      const values = m?.values ?? new Map<string, string>();
      cur.applied.push(item.id);
      for (const inc of item.includes ?? []) pin(inc.id, inc.position);
      for (const ex of item.excludes ?? []) hidden.add(ex.id);
      if (item.filter_by !== undefined) {
        const f = substitute(item.filter_by, values, true);
        try {
          filterNodes.push(parseFilter(f));
          filterRules.push(item.id);
        } catch (e) {
          if (e instanceof FathomError) throw new FathomError('BAD_FILTER', `curation rule \`${item.id}\`: ${e.message}`);
          throw e;
        }
      }
      if (item.sort_by !== undefined && cur.sortBy === undefined) {
        cur.sortBy = substitute(item.sort_by, values, false);
        cur.sortRule = item.id;
      }
      if (item.replace_query !== undefined && replaceQuery === undefined) replaceQuery = item.replace_query;
      // (the reference's default: a rule that filters takes out the words it matched)
      const removes = item.remove_matched_tokens ?? item.filter_by !== undefined;
      if (removes && m) for (const w of m.words) drop.add(w);
      if (item.filter_curated_hits === true) cur.filterCuratedHits = true;
      if (item.metadata) cur.metadata = { ...item.metadata, ...(cur.metadata ?? {}) };
      if (item.stop_processing !== false) break;
    }
    if (filterNodes.length > 0) {
      cur.filter = filterNodes.length === 1 ? filterNodes[0]! : { kind: 'and', children: filterNodes };
      cur.filterRules = filterRules;
    }
    if (replaceQuery !== undefined) out = { ...raw, q: replaceQuery };
    else if (drop.size > 0) out = { ...raw, q: qWithout(q, words, drop, tok) };
  }
  cur.hidden = [...hidden];
  // a hidden document is never shown, pinned or not
  cur.pins = cur.pins.filter((p) => !hidden.has(p.id));
  const nothing = cur.pins.length === 0 && cur.hidden.length === 0 && !cur.filter && !cur.sortBy && !cur.metadata && out === raw && cur.applied.length === 0;
  return nothing ? { raw } : { raw: out, curation: cur };
}
