/**
 * src/analytics/shapes.ts: an analytics rule in either of the reference's API generations.
 *
 * Rules are stored in the v1 shape (rules.ts). Typesense 30 writes them flat, one source
 * collection and one event type per rule, the rule's name being the event name clients send:
 *
 *   v1:  {name, type, params: {source: {collections, events?: [{type, weight, name}]},
 *                              destination: {collection, counter_field?}, limit?, expand_query?}}
 *   v30: {name, type, collection, event_type, rule_tag?,
 *         params: {destination_collection, limit?, expand_query?, capture_search_requests?,
 *                  counter_field?, weight?}}
 *
 * A v30 body becomes a v1 body plus what v1 has no place for (`rule_tag`,
 * `capture_search_requests`), kept beside it; a rule is answered in the shape it was written
 * in (`GET /analytics/rules/:name`), and listed in the v30 shape (`GET /analytics/rules`,
 * where a v1 rule with several sources or events shows its first).
 */
import { ANALYTICS_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import type { AnalyticsRule } from './rules.js';

/** What a v30 rule carries beyond the v1 shape. */
export interface V30Extras {
  /** The rule was written in the v30 shape, and is read back in it. */
  form: 'v30';
  rule_tag?: string;
  /** Query rules: false counts only the query events sent to /analytics/events, not searches. */
  capture_search_requests?: boolean;
}

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

/** Is this a rule body in the v30 shape (a top-level `collection` or `event_type`, or v30 params)? */
export function isV30Body(body: unknown): boolean {
  if (!isPlainObject(body)) return false;
  if (body.collection !== undefined || body.event_type !== undefined || body.rule_tag !== undefined) return true;
  const p = body.params;
  return isPlainObject(p) && p.source === undefined && p.destination === undefined;
}

/** v30 params v1 has no counterpart for, refused rather than ignored. */
const UNSUPPORTED_PARAMS: Record<string, string> = {
  meta_fields: 'storing a query\'s `filter_by` or `analytics_tag` beside it in the destination is not implemented',
};

/**
 * A v30 body as the v1 body rules.ts checks, and the v30 extras. A PUT of a v30 rule that
 * exists in the v30 shape may give only what changes (`rule_tag`, `params`): the rest is
 * taken from `existing`.
 */
export function v30ToV1(name: string, body: Record<string, unknown>, existing?: AnalyticsRule & Partial<V30Extras>): { v1: Record<string, unknown>; extras: V30Extras } {
  let b = body;
  if (existing?.form === 'v30') {
    const was = toV30(existing);
    b = { ...was, ...body, params: { ...(was.params as object), ...(isPlainObject(body.params) ? body.params : {}) } };
  }
  if (b.name !== undefined && b.name !== name) bad(`the rule's \`name\` (${JSON.stringify(b.name)}) differs from the name in the path (${JSON.stringify(name)})`);
  const type = b.type;
  if (type === 'log') bad('`log` rules (raw event logs for personalization models) are not implemented; popular_queries, nohits_queries and counter rules are');
  if (typeof b.collection !== 'string' || b.collection.trim() === '') bad('`collection` is required: the collection whose searches or events the rule counts');
  const params = b.params === undefined ? {} : b.params;
  if (!isPlainObject(params)) bad('`params` must be an object');
  for (const k of Object.keys(params)) {
    const why = UNSUPPORTED_PARAMS[k];
    if (why && !(Array.isArray(params[k]) && (params[k] as unknown[]).length === 0)) bad(`\`params.${k}\`: ${why}`);
  }
  if (typeof params.destination_collection !== 'string' || params.destination_collection.trim() === '') {
    bad('`params.destination_collection` is required: the collection that receives the aggregates');
  }
  if (b.rule_tag !== undefined && (typeof b.rule_tag !== 'string' || b.rule_tag.length > ANALYTICS_DEFAULTS.maxNameLength)) {
    bad(`\`rule_tag\` must be a string of at most ${ANALYTICS_DEFAULTS.maxNameLength} characters`);
  }
  const extras: V30Extras = { form: 'v30', ...(typeof b.rule_tag === 'string' ? { rule_tag: b.rule_tag } : {}) };
  const destination: Record<string, unknown> = { collection: params.destination_collection };
  const v1: Record<string, unknown> = { name, type, params: { source: { collections: [b.collection] }, destination } };
  const p = v1.params as Record<string, unknown>;
  if (type === 'counter') {
    if (b.event_type === undefined) bad('a counter rule needs `event_type`: click, conversion or visit');
    for (const k of ['limit', 'expand_query', 'capture_search_requests']) if (params[k] !== undefined) bad(`\`params.${k}\` belongs to popular_queries and nohits_queries rules, not to counter rules`);
    if (typeof params.counter_field !== 'string' || params.counter_field === '') bad('a counter rule needs `params.counter_field`: the numeric field its events increment');
    destination.counter_field = params.counter_field;
    // the rule's name is the event name clients send (v30)
    (p.source as Record<string, unknown>).events = [{ type: b.event_type, weight: params.weight ?? 1, name }];
  } else {
    if (b.event_type !== undefined && b.event_type !== 'query') bad(`a ${String(type)} rule counts \`query\` events, not ${JSON.stringify(b.event_type)}`);
    for (const k of ['counter_field', 'weight']) if (params[k] !== undefined) bad(`\`params.${k}\` belongs to counter rules, not to ${String(type)}`);
    if (params.limit !== undefined) p.limit = params.limit;
    if (params.expand_query !== undefined) p.expand_query = params.expand_query;
    if (params.capture_search_requests !== undefined) {
      if (typeof params.capture_search_requests !== 'boolean') bad('`params.capture_search_requests` must be true or false');
      extras.capture_search_requests = params.capture_search_requests;
    }
  }
  return { v1, extras };
}

/** A rule in the v1 shape, as answered: `limit` shown on query rules even when not given. */
export function toV1(rule: AnalyticsRule): AnalyticsRule {
  const { name, type, params } = rule;
  const out: AnalyticsRule = { name, type, params: { ...params } };
  if (type !== 'counter') out.params.limit = params.limit ?? ANALYTICS_DEFAULTS.limit;
  return out;
}

/** A rule in the v30 shape (a v1 rule with several source collections or events shows its first). */
export function toV30(rule: AnalyticsRule & Partial<V30Extras>): Record<string, unknown> {
  const { params } = rule;
  const event = params.source.events?.[0];
  const out: Record<string, unknown> = {
    name: rule.name,
    type: rule.type,
    collection: params.source.collections[0],
    event_type: rule.type === 'counter' ? event?.type : 'query',
  };
  if (rule.rule_tag !== undefined) out.rule_tag = rule.rule_tag;
  out.params =
    rule.type === 'counter'
      ? { destination_collection: params.destination.collection, counter_field: params.destination.counter_field, weight: event?.weight ?? 1 }
      : {
          destination_collection: params.destination.collection,
          limit: params.limit ?? ANALYTICS_DEFAULTS.limit,
          expand_query: params.expand_query ?? false,
          capture_search_requests: rule.capture_search_requests ?? true,
        };
  return out;
}

/** A rule answered in the shape it was written in. */
export function shown(rule: AnalyticsRule & Partial<V30Extras>): Record<string, unknown> | AnalyticsRule {
  return rule.form === 'v30' ? toV30(rule) : toV1(rule);
}
