/**
 * src/curation/rules.ts: here is a curation rule (an override, or an item of a curation set),
 * is it well formed?
 *
 *   {id,
 *    rule: {query, match: exact | contains} and/or {filter_by} and/or {tags},
 *    includes: [{id, position}], excludes: [{id}],          pin documents at positions / hide them
 *    filter_by, sort_by,                                     added to / replacing the search's
 *    replace_query, remove_matched_tokens,                   what is searched instead of q
 *    filter_curated_hits, effective_from_ts, effective_to_ts, stop_processing, metadata}
 *
 * `rule.query` may hold placeholders, `{brand}`: a run of query words that is a value of the
 * field `brand` (a facet or sort string field); `filter_by` and `sort_by` may then use
 * `{brand}`, which becomes that value. How rules are matched and applied is curate.ts.
 */
import { RULE_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject, protoKeyMessage, protoKeyPath } from '../json.js';
import type { Store } from '../storage/store.js';
import { Schema, type CollectionRecord } from '../schema/schema.js';
import { parseFilter } from '../query/filter.js';
import { parseSort } from '../query/sort.js';
import { tokenizerFor } from '../tokenizer/tokenizer.js';
import type { KindSpec, RuleItem } from '../rulesets/rulesets.js';

export interface CurationRule {
  query?: string;
  match?: 'exact' | 'contains';
  filter_by?: string;
  tags?: string[];
}

export interface CurationItem extends RuleItem {
  rule: CurationRule;
  includes?: Array<{ id: string; position: number }>;
  excludes?: Array<{ id: string }>;
  filter_by?: string;
  sort_by?: string;
  replace_query?: string;
  remove_matched_tokens?: boolean;
  filter_curated_hits?: boolean;
  effective_from_ts?: number;
  effective_to_ts?: number;
  stop_processing?: boolean;
  metadata?: Record<string, unknown>;
}

const FIELDS = [
  'id',
  'rule',
  'includes',
  'excludes',
  'filter_by',
  'sort_by',
  'replace_query',
  'remove_matched_tokens',
  'filter_curated_hits',
  'effective_from_ts',
  'effective_to_ts',
  'stop_processing',
  'metadata',
];
const RULE_FIELDS = ['query', 'match', 'filter_by', 'tags'];
/** The reference's attributes Fathom does not have, named so that the 400 says so. */
const UNSUPPORTED: Record<string, string> = {
  diversity: '`diversity` (re-ranking for diverse results) is not supported',
};
const UNSUPPORTED_RULE: Record<string, string> = {
  synonyms: '`rule.synonyms` (matching a rule through synonyms) is not supported',
  stem: '`rule.stem` (matching a rule through stemming) is not supported',
  stemming_dictionary: '`rule.stemming_dictionary` is not supported',
};

/** `{name}` in a rule's query, filter_by and sort_by. */
export const PLACEHOLDER = /\{([^{}\s]+)\}/g;

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

function optString(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.trim() === '') bad(`\`${where}\` must be a non-empty string`);
  return v;
}

function optBool(v: unknown, where: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') bad(`\`${where}\` must be true or false`);
  return v;
}

function optTime(v: unknown, where: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) bad(`\`${where}\` must be a Unix time in seconds (a whole number from 0)`);
  return v;
}

function placeholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** The words and placeholders of a rule's query, as curate.ts matches them. */
export type QueryPart = { word: string } | { field: string };

/** Splits a rule query into words (tokenized as queries are) and placeholders. */
export function queryParts(query: string, tokenize: (s: string) => string[]): QueryPart[] {
  const parts: QueryPart[] = [];
  let last = 0;
  for (const m of query.matchAll(PLACEHOLDER)) {
    for (const w of tokenize(query.slice(last, m.index))) parts.push({ word: w });
    parts.push({ field: m[1]! });
    last = m.index! + m[0].length;
  }
  for (const w of tokenize(query.slice(last))) parts.push({ word: w });
  return parts;
}

function checkRule(raw: unknown): CurationRule {
  if (!isPlainObject(raw)) bad('a curation rule needs `rule`: an object with `query` and `match`, `filter_by`, or `tags`');
  for (const k of Object.keys(raw)) {
    if (Object.hasOwn(UNSUPPORTED_RULE, k)) bad(UNSUPPORTED_RULE[k]!);
    if (!RULE_FIELDS.includes(k)) bad(`unknown attribute \`rule.${k}\`; a rule has ${RULE_FIELDS.map((f) => `\`${f}\``).join(', ')}`);
  }
  const rule: CurationRule = {};
  const query = raw.query === undefined || raw.query === null ? undefined : raw.query;
  if (query !== undefined) {
    if (typeof query !== 'string' || query.trim() === '') bad('`rule.query` must be a non-empty string');
    if (raw.match !== 'exact' && raw.match !== 'contains') bad(`\`rule.match\` must be \`exact\` or \`contains\` (how \`rule.query\` is compared with the search's q), got ${JSON.stringify(raw.match ?? null)}`);
    const names = placeholders(query);
    if (new Set(names).size !== names.length) bad('`rule.query` names the same placeholder twice');
    const words = queryParts(query, (s) => tokenizerFor({}).tokens(s));
    if (words.length === 0 && query.trim() !== '*') bad(`\`rule.query\` (${JSON.stringify(query)}) has no word that can be searched`);
    rule.query = query;
    rule.match = raw.match;
  } else if (raw.match !== undefined) bad('`rule.match` needs a `rule.query` to compare');
  const filter = optString(raw.filter_by, 'rule.filter_by');
  if (filter !== undefined) {
    // compared as text with the request's filter_by, so one that cannot parse could never match
    checkFilterSyntax(filter, 'rule.filter_by');
    rule.filter_by = filter;
  }
  if (raw.tags !== undefined) {
    if (!Array.isArray(raw.tags) || raw.tags.length === 0 || !raw.tags.every((t) => typeof t === 'string' && t.trim() !== '')) bad('`rule.tags` must be a non-empty array of tag names');
    rule.tags = [...new Set(raw.tags as string[])];
  }
  if (rule.query === undefined && rule.filter_by === undefined && rule.tags === undefined) {
    bad('a curation rule needs `rule.query` (with `rule.match`), `rule.filter_by` or `rule.tags`: when it applies');
  }
  return rule;
}

function idList(v: unknown, where: string, positions: boolean): Array<{ id: string; position?: number }> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) bad(`\`${where}\` must be an array of ${positions ? '{id, position}' : '{id}'} objects`);
  if (v.length > RULE_LIMITS.maxCuratedIds) bad(`\`${where}\` holds at most ${RULE_LIMITS.maxCuratedIds} documents, got ${v.length}`);
  const seen = new Set<string>();
  const taken = new Set<number>();
  return v.map((e, i) => {
    const at = `${where}[${i}]`;
    if (!isPlainObject(e)) bad(`\`${at}\` must be an object with \`id\`${positions ? ' and `position`' : ''}`);
    for (const k of Object.keys(e)) if (k !== 'id' && !(positions && k === 'position')) bad(`unknown attribute \`${at}.${k}\``);
    if (typeof e.id !== 'string' || e.id === '') bad(`\`${at}.id\` must be a document id (a non-empty string)`);
    if (seen.has(e.id)) bad(`\`${where}\` lists document \`${e.id}\` twice`);
    seen.add(e.id);
    if (!positions) return { id: e.id };
    const p = e.position;
    if (typeof p !== 'number' || !Number.isSafeInteger(p) || p < 1) bad(`\`${at}.position\` must be a whole number from 1 (the first hit), got ${JSON.stringify(p ?? null)}`);
    if (taken.has(p)) bad(`\`${where}\` pins two documents at position ${p}`);
    taken.add(p);
    return { id: e.id, position: p };
  });
}

/** A filter with its placeholders standing for plain values, checked for syntax. */
function checkFilterSyntax(text: string, where: string): void {
  try {
    parseFilter(text.replace(PLACEHOLDER, 'x'));
  } catch (e) {
    if (e instanceof FathomError) bad(`\`${where}\`: ${e.message}`);
    throw e;
  }
}

/**
 * Checks a curation rule. With `collection` (an override of that collection), placeholders
 * must name its facet fields and `sort_by` without placeholders must fit its schema; a
 * set's rules are checked when a search uses them. As in the reference, `includes` may name
 * documents that do not exist yet and `filter_by` is kept as written: a search the rule
 * applies to pins what exists and reports a `filter_by` that does not parse.
 */
export function validateCuration(store: Store, id: string, body: unknown, collection?: CollectionRecord): CurationItem {
  if (!isPlainObject(body)) bad('a curation rule must be a JSON object with `rule`');
  for (const k of Object.keys(body)) {
    if (Object.hasOwn(UNSUPPORTED, k)) bad(UNSUPPORTED[k]!);
    if (!FIELDS.includes(k)) bad(`unknown curation attribute \`${k}\`; a rule has ${FIELDS.map((f) => `\`${f}\``).join(', ')}`);
  }
  const rule = checkRule(body.rule);
  const item: CurationItem = { id, rule };
  const includes = idList(body.includes, 'includes', true) as CurationItem['includes'];
  const excludes = idList(body.excludes, 'excludes', false) as CurationItem['excludes'];
  if (includes) item.includes = includes;
  if (excludes) item.excludes = excludes;
  for (const inc of includes ?? []) if (excludes?.some((e) => e.id === inc.id)) bad(`document \`${inc.id}\` is both in \`includes\` and in \`excludes\``);
  const named = new Set(rule.query ? placeholders(rule.query) : []);
  for (const key of ['filter_by', 'sort_by', 'replace_query'] as const) {
    const v = optString(body[key], key);
    if (v === undefined) continue;
    if (key !== 'replace_query') {
      for (const p of placeholders(v)) if (!named.has(p)) bad(`\`${key}\` uses the placeholder \`{${p}}\`, which \`rule.query\` does not have`);
    }
    item[key] = v;
  }
  for (const key of ['remove_matched_tokens', 'filter_curated_hits', 'stop_processing'] as const) {
    const v = optBool(body[key], key);
    if (v !== undefined) item[key] = v;
  }
  // the reference refuses the pair: the query is either replaced or shortened, not both
  if (item.replace_query !== undefined && item.remove_matched_tokens === true) bad('give `replace_query` or `remove_matched_tokens: true`, not both: the query is replaced, or the matched words leave it');
  const from = optTime(body.effective_from_ts, 'effective_from_ts');
  const to = optTime(body.effective_to_ts, 'effective_to_ts');
  if (from !== undefined && to !== undefined && from > to) bad('`effective_from_ts` is after `effective_to_ts`: the rule would never apply');
  if (from !== undefined) item.effective_from_ts = from;
  if (to !== undefined) item.effective_to_ts = to;
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isPlainObject(body.metadata)) bad('`metadata` must be a JSON object (it is returned as the response\'s `metadata` when the rule applies)');
    const proto = protoKeyPath(body.metadata, 'metadata');
    if (proto) bad(protoKeyMessage(proto));
    item.metadata = body.metadata;
  }
  const acts = item.includes || item.excludes || item.filter_by || item.sort_by || item.replace_query !== undefined || item.metadata || item.remove_matched_tokens === true;
  if (!acts) bad('a curation rule must do something: `includes`, `excludes`, `filter_by`, `sort_by`, `replace_query`, `remove_matched_tokens` or `metadata`');
  if (collection) checkAgainst(store, item, collection);
  return item;
}

/**
 * A rule as answered, with the reference's defaults shown: `remove_matched_tokens` (true
 * when the rule filters), `filter_curated_hits` (false), `stop_processing` (true), as
 * curate.ts applies them.
 */
export function shownCuration(item: CurationItem): CurationItem {
  return {
    ...item,
    remove_matched_tokens: item.remove_matched_tokens ?? item.filter_by !== undefined,
    filter_curated_hits: item.filter_curated_hits ?? false,
    stop_processing: item.stop_processing ?? true,
  };
}

/** The checks that need the collection: its documents and schema. */
function checkAgainst(store: Store, item: CurationItem, record: CollectionRecord): void {
  const schema = new Schema(record);
  // (a pinned document need not exist yet, as in the reference: the pin applies once it does)
  for (const name of item.rule.query ? placeholders(item.rule.query) : []) {
    const f = schema.field(name);
    if (!f) bad(`\`rule.query\`: the placeholder \`{${name}}\` names no field of collection \`${record.name}\``);
    if (f.kind !== 'text' || (!f.facet && !f.sort)) bad(`\`rule.query\`: the placeholder \`{${name}}\` needs a string field with \`facet: true\` (or \`sort: true\`), whose values it matches`);
  }
  // (`filter_by` is kept as written, as the reference keeps it: a search the rule applies to reports what is wrong with it)
  if (item.sort_by !== undefined && placeholders(item.sort_by).length === 0) {
    try {
      parseSort(item.sort_by, schema);
    } catch (e) {
      if (e instanceof FathomError) bad(`\`sort_by\`: ${e.message}`);
      throw e;
    }
  }
}

export const CURATION: KindSpec<CurationItem> = {
  kind: 'curation',
  ownArea: 'overrides',
  setArea: 'curation_sets',
  noun: 'override',
  setNoun: 'curation set',
  setFields: ['description'],
  validate: validateCuration,
  shown: shownCuration,
};
