/**
 * src/analytics/rules.ts: here is an analytics rule, is it valid, and which rules does a
 * search or an event feed?
 *
 * Rules are configuration, so they live in the data directory (not in the analytics
 * directory): one record in `aux` under the string key `analytics:rules` holding every
 * rule and the next internal rule id. `fathom analytics rules ...` can then manage them
 * without a server, and a server sees a change from any process at its next request
 * (`ruleIndex` re-reads the record when its stored bytes change, Store.readShared).
 *
 * The rules are a list, each carrying its name, looked up through a Map: any text names a
 * rule, `__proto__` and `constructor` included. (msgpack renames a `__proto__` key when it
 * decodes one, so a record keyed by name, as earlier versions wrote, is read by the names
 * inside its rules.)
 *
 * A rule is Typesense's "analytics v1" shape:
 *
 *   {name, type: popular_queries | nohits_queries | counter,
 *    params: {source: {collections, events?: [{type, weight, name}]},
 *             destination: {collection, counter_field?}, limit?, expand_query?}}
 *
 * A rule written in Typesense 30's shape is stored in this one too, with what v1 has no
 * place for beside it (shapes.ts converts both ways).
 *
 * Each rule also has an internal numeric id, never reused, that keys its pending state
 * (src/analytics/pending.ts): what a deleted rule left pending is dropped, and a rule
 * re-created under the same name starts afresh. Replacing a rule (PUT) keeps its id, so
 * what it has pending is still applied, under its new parameters.
 */
import { commit } from '../cluster/command.js';
import { ANALYTICS_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';
import type { CollectionRecord, FieldDef } from '../schema/schema.js';
import { isV30Body, v30ToV1, type V30Extras } from './shapes.js';

export const RULE_TYPES = ['popular_queries', 'nohits_queries', 'counter'] as const;
export type RuleType = (typeof RULE_TYPES)[number];
export const EVENT_TYPES = ['click', 'conversion', 'visit'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface RuleEvent {
  type: EventType;
  weight: number;
  name: string;
}

/** A rule in the v1 shape (as v1 users send it; answered through shapes.ts), with the v30 extras when written in v30's. */
export interface AnalyticsRule extends Partial<V30Extras> {
  name: string;
  type: RuleType;
  params: {
    source: { collections: string[]; events?: RuleEvent[] };
    destination: { collection: string; counter_field?: string };
    limit?: number;
    expand_query?: boolean;
  };
}

/** A stored rule: the public rule plus its internal id. */
export interface StoredRule extends AnalyticsRule {
  id: number;
}

/** The stored record: a list of rules (earlier versions wrote an object keyed by name). */
interface RulesRecord {
  next_id: number;
  rules: StoredRule[] | Record<string, StoredRule>;
}

/** The `aux` key of the rules record (a string key: Store.readShared takes string keys). */
export const RULES_KEY = 'analytics:rules';

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

/** The rules of a stored record (either form), by name. */
function rulesByName(rec: Pick<RulesRecord, 'rules'> | undefined): Map<string, StoredRule> {
  const list = rec === undefined ? [] : Array.isArray(rec.rules) ? rec.rules : Object.values(rec.rules);
  return new Map(list.map((r) => [r.name, r]));
}

function readRecord(store: Store): { next_id: number; rules: Map<string, StoredRule> } {
  const rec = store.aux.get(RULES_KEY) as RulesRecord | undefined;
  return { next_id: rec?.next_id ?? 1, rules: rulesByName(rec) };
}

/** Every stored rule, by name (read in the caller's transaction). */
export function storedRules(store: Store): Map<string, StoredRule> {
  return readRecord(store).rules;
}

function writeRecord(store: Store, nextId: number, rules: Map<string, StoredRule>): void {
  store.aux.put(RULES_KEY, { next_id: nextId, rules: [...rules.values()] } satisfies RulesRecord);
}

/** The rule as users see it (without the internal id). */
export function publicRule(r: StoredRule): AnalyticsRule {
  const { id: _id, ...rest } = r;
  return rest;
}

export function isQueryRule(r: Pick<AnalyticsRule, 'type'>): boolean {
  return r.type === 'popular_queries' || r.type === 'nohits_queries';
}

/** Throws BAD_REQUEST unless `name` can name a rule. */
export function checkRuleName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') bad('an analytics rule needs a `name` (a non-empty string)');
  if (name.length > ANALYTICS_DEFAULTS.maxNameLength) bad(`an analytics rule name must be at most ${ANALYTICS_DEFAULTS.maxNameLength} characters`);
  if (/[\u0000-\u001f\u007f]/.test(name)) bad('an analytics rule name must not contain control characters');
  return name;
}

function stringList(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || v.length === 0) bad(`\`${what}\` must be a non-empty array of collection names`);
  const out: string[] = [];
  for (const c of v) {
    if (typeof c !== 'string' || c.trim() === '') bad(`\`${what}\` must hold collection names (non-empty strings), got ${JSON.stringify(c)}`);
    if (!out.includes(c)) out.push(c);
  }
  return out;
}

/**
 * Checks the shape of a rule body, in either generation's shape (everything that does not
 * depend on other records), and returns the rule as it will be stored. `name` comes from
 * the path (PUT) or the body (POST); `existing` is the rule of that name, if any (a v30
 * PUT may change only part of it).
 */
export function parseRule(name: string, body: unknown, existing?: AnalyticsRule): AnalyticsRule {
  checkRuleName(name);
  if (isPlainObject(body) && isV30Body(body)) {
    const { v1, extras } = v30ToV1(name, body, existing);
    return { ...parseV1Rule(name, v1), ...extras };
  }
  return parseV1Rule(name, body);
}

function parseV1Rule(name: string, body: unknown): AnalyticsRule {
  if (!isPlainObject(body)) bad('an analytics rule must be a JSON object with `type` and `params`');
  if (body.name !== undefined && body.name !== name) bad(`the rule's \`name\` (${JSON.stringify(body.name)}) differs from the name in the path (${JSON.stringify(name)})`);
  const type = body.type;
  if (typeof type !== 'string' || !(RULE_TYPES as readonly string[]).includes(type)) {
    bad(`\`type\` must be one of ${RULE_TYPES.join(', ')}, got ${JSON.stringify(type ?? null)}`);
  }
  const params = body.params;
  if (!isPlainObject(params)) bad('an analytics rule needs `params` (an object with `source` and `destination`)');
  const source = params.source;
  if (!isPlainObject(source)) bad('`params.source` must be an object with `collections`');
  const collections = stringList(source.collections, 'params.source.collections');
  const destination = params.destination;
  if (!isPlainObject(destination)) bad('`params.destination` is required: an object naming the `collection` that receives the aggregates');
  if (typeof destination.collection !== 'string' || destination.collection.trim() === '') {
    bad('`params.destination.collection` is required: the name of the collection that receives the aggregates');
  }
  const rule: AnalyticsRule = {
    name,
    type: type as RuleType,
    params: { source: { collections }, destination: { collection: destination.collection } },
  };

  if (type === 'counter') {
    if (typeof destination.counter_field !== 'string' || destination.counter_field === '') {
      bad('a counter rule needs `params.destination.counter_field`: the numeric field its events increment');
    }
    rule.params.destination.counter_field = destination.counter_field;
    if (!Array.isArray(source.events) || source.events.length === 0) {
      bad('a counter rule needs `params.source.events`: a non-empty array of {type, weight, name}');
    }
    const events: RuleEvent[] = [];
    for (const e of source.events) {
      if (!isPlainObject(e)) bad('each entry of `params.source.events` must be an object {type, weight, name}');
      if (typeof e.type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(e.type)) {
        bad(`an event's \`type\` must be one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(e.type ?? null)}`);
      }
      if (typeof e.name !== 'string' || e.name.trim() === '') bad('each event needs a `name` (a non-empty string): the name clients send');
      if (e.name.length > ANALYTICS_DEFAULTS.maxNameLength) bad(`an event name must be at most ${ANALYTICS_DEFAULTS.maxNameLength} characters`);
      const w = e.weight;
      const max = ANALYTICS_DEFAULTS.maxWeight;
      if (typeof w !== 'number' || !Number.isInteger(w) || w === 0 || Math.abs(w) > max) {
        bad(`event \`${e.name}\`: \`weight\` must be a non-zero whole number between -${max} and ${max}, got ${JSON.stringify(w ?? null)}`);
      }
      if (events.some((x) => x.name === e.name)) bad(`event name \`${e.name}\` appears twice in this rule`);
      events.push({ type: e.type as EventType, weight: w, name: e.name });
    }
    rule.params.source.events = events;
  } else {
    if (source.events !== undefined) bad(`\`params.source.events\` belongs to counter rules; a ${type} rule records searches`);
    if (destination.counter_field !== undefined) bad(`\`params.destination.counter_field\` belongs to counter rules, not to ${type}`);
    const max = ANALYTICS_DEFAULTS.maxLimit;
    if (params.limit !== undefined) {
      const l = params.limit;
      if (typeof l !== 'number' || !Number.isInteger(l) || l < 1 || l > max) bad(`\`params.limit\` must be a whole number between 1 and ${max}, got ${JSON.stringify(l)}`);
      rule.params.limit = l;
    }
    if (params.expand_query !== undefined) {
      if (typeof params.expand_query !== 'boolean') bad(`\`params.expand_query\` must be true or false, got ${JSON.stringify(params.expand_query)}`);
      rule.params.expand_query = params.expand_query;
    }
  }
  return rule;
}

function fieldOf(rec: CollectionRecord, name: string): FieldDef | undefined {
  return rec.fields.find((f) => f.name === name);
}

/** Checks a rule against the data directory: its destination, and event names other rules use. Runs inside the writing transaction. */
function checkAgainstStore(store: Store, rule: AnalyticsRule, others: StoredRule[]): void {
  const dest = rule.params.destination.collection;
  const real = store.aliases.get(dest) ?? dest;
  const rec = store.collections.get(real) as CollectionRecord | undefined;
  if (!rec) bad(`destination collection \`${dest}\` does not exist; create it first`);
  if (isQueryRule(rule)) {
    const q = fieldOf(rec, 'q');
    const count = fieldOf(rec, 'count');
    if (!q || q.type !== 'string') bad(`destination collection \`${dest}\` needs a field \`q\` of type string for a ${rule.type} rule`);
    if (!count || (count.type !== 'int32' && count.type !== 'int64')) {
      bad(`destination collection \`${dest}\` needs a field \`count\` of type int32 for a ${rule.type} rule`);
    }
  } else {
    const name = rule.params.destination.counter_field!;
    const f = fieldOf(rec, name);
    if (!f) bad(`counter field \`${name}\` is not a field of collection \`${dest}\`; add it as {"name": "${name}", "type": "int32", "optional": true}`);
    if (f.type !== 'int32' && f.type !== 'int64' && f.type !== 'float') bad(`counter field \`${name}\` must be numeric (int32, int64 or float), not ${f.type}`);
    // a required counter field is accepted, as the reference accepts it: documents then hold a count from the start
    for (const e of rule.params.source.events ?? []) {
      const owner = others.find((o) => o.params.source.events?.some((x) => x.name === e.name));
      if (owner) bad(`event name \`${e.name}\` is already used by rule \`${owner.name}\`; each event name belongs to one rule`);
    }
  }
}

/**
 * Creates or replaces a rule. With `create`, an existing name is a conflict (POST); without,
 * it is replaced and keeps its internal id (PUT). Returns the rule as stored.
 */
export async function putRule(store: Store, name: string, body: unknown, opts: { create?: boolean } = {}): Promise<AnalyticsRule> {
  const existing = readRecord(store).rules.get(name);
  const rule = parseRule(name, body, existing && publicRule(existing));
  return commit(store, { op: 'analytics.rule.put', name, body, create: opts.create === true }, () => storeRule(store, name, rule, opts));
}

function storeRule(store: Store, name: string, rule: AnalyticsRule, opts: { create?: boolean }): Promise<AnalyticsRule> {
  return write(store, () => {
    const rec = readRecord(store);
    const existing = rec.rules.get(name);
    if (existing && opts.create) throw new FathomError('CONFLICT', `an analytics rule named \`${name}\` already exists; PUT /analytics/rules/${name} replaces it`);
    checkAgainstStore(store, rule, [...rec.rules.values()].filter((r) => r.name !== name));
    const id = existing?.id ?? rec.next_id;
    rec.rules.set(name, { ...rule, id });
    writeRecord(store, existing ? rec.next_id : rec.next_id + 1, rec.rules);
    return rule;
  });
}

export function listRules(store: Store): AnalyticsRule[] {
  return [...readRecord(store).rules.values()]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map(publicRule);
}

export function getRule(store: Store, name: string): AnalyticsRule {
  const r = readRecord(store).rules.get(name);
  if (!r) throw new FathomError('NOT_FOUND', `analytics rule \`${name}\` not found`);
  return publicRule(r);
}

/** Deletes a rule; what it already wrote stays in its destination, what it had pending is dropped. */
export async function deleteRule(store: Store, name: string): Promise<{ name: string }> {
  return commit(store, { op: 'analytics.rule.delete', name }, () => removeRule(store, name));
}

function removeRule(store: Store, name: string): Promise<{ name: string }> {
  return write(store, () => {
    const rec = readRecord(store);
    if (!rec.rules.delete(name)) throw new FathomError('NOT_FOUND', `analytics rule \`${name}\` not found`);
    writeRecord(store, rec.next_id, rec.rules);
    return { name };
  });
}

/** The rules arranged for the hot paths. */
export interface RuleIndex {
  /** Query rules by source collection name (as written in the rule). */
  bySource: Map<string, StoredRule[]>;
  /** Query rules by name (v30 query events name their rule). */
  queryByName: Map<string, StoredRule>;
  /** Counter rules by event name. */
  byEvent: Map<string, { rule: StoredRule; event: RuleEvent }>;
  byId: Map<number, StoredRule>;
}

const EMPTY: RuleIndex = { bySource: new Map(), queryByName: new Map(), byEvent: new Map(), byId: new Map() };
const indexes = new WeakMap<object, RuleIndex>();

/**
 * The current rules, indexed. Hot (every search on a served directory with analytics on):
 * one shared read that compares the stored bytes, and a map lookup; the index is rebuilt
 * only when the record changed.
 */
export function ruleIndex(store: Store): RuleIndex {
  const rec = store.readShared<RulesRecord>(store.aux, RULES_KEY);
  if (!rec) return EMPTY;
  let idx = indexes.get(rec);
  if (!idx) {
    idx = { bySource: new Map(), queryByName: new Map(), byEvent: new Map(), byId: new Map() };
    for (const r of rulesByName(rec).values()) {
      idx.byId.set(r.id, r);
      if (isQueryRule(r)) {
        idx.queryByName.set(r.name, r);
        for (const c of r.params.source.collections) {
          const list = idx.bySource.get(c) ?? [];
          list.push(r);
          idx.bySource.set(c, list);
        }
      } else for (const e of r.params.source.events ?? []) idx.byEvent.set(e.name, { rule: r, event: e });
    }
    indexes.set(rec, idx);
  }
  return idx;
}

/** The collections a rule touches (for key scopes). */
export function ruleCollections(r: AnalyticsRule): string[] {
  const out = [...r.params.source.collections];
  if (!out.includes(r.params.destination.collection)) out.push(r.params.destination.collection);
  return out;
}
