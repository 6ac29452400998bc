/**
 * src/analytics/query.ts: here is a search and its answer, what query does it record, for
 * which user?
 */
import { createHash } from 'node:crypto';
import { ANALYTICS_DEFAULTS } from '../defaults.js';

/**
 * The query as aggregated: trimmed, lower case, runs of white space as one space. `*` (match
 * all), empty queries and queries longer than ANALYTICS_DEFAULTS.maxQueryBytes in UTF-8 are
 * not recorded (undefined).
 */
export function normalizeQuery(q: unknown): string | undefined {
  if (Array.isArray(q)) q = q[q.length - 1];
  if (typeof q !== 'string') return undefined;
  const s = q.trim().replace(/\s+/g, ' ').toLowerCase();
  if (s === '' || s === '*') return undefined;
  if (s.length > ANALYTICS_DEFAULTS.maxQueryBytes || Buffer.byteLength(s) > ANALYTICS_DEFAULTS.maxQueryBytes) return undefined;
  return s;
}

/** Analytics is off for one search sent with `enable_analytics=false`. */
export function analyticsDisabled(params: Record<string, unknown>): boolean {
  let v = params.enable_analytics;
  if (Array.isArray(v)) v = v[v.length - 1];
  return v === false || v === 'false' || v === '0';
}

/**
 * `found` of a search answer, given as the object or as the JSON text the server sends.
 * In the text the first `"found":` is the top-level one: only `facet_counts`, whose keys are
 * fixed names, comes before it, and inside a JSON string every `"` is escaped, so a
 * document value can never read `"found":`.
 */
export function foundOf(answer: string | { found?: unknown }): number {
  if (typeof answer !== 'string') return typeof answer.found === 'number' ? answer.found : -1;
  const i = answer.indexOf('"found":');
  if (i < 0) return -1;
  let n = 0;
  let j = i + 8;
  let digits = 0;
  for (; j < answer.length; j++) {
    const c = answer.charCodeAt(j);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
    digits++;
  }
  return digits > 0 ? n : -1;
}

type Hit = { highlights?: Array<{ matched_tokens?: unknown }> };

/**
 * With `expand_query`, the query with its last word replaced by the word it completed to in
 * the top hit (the first matched token of the top hit's highlights that starts with it): the
 * user who typed `gar` and got `Garden` first records `garden`. Unchanged when there is no
 * hit, when the top hit matched the word itself, or when no matched token extends it.
 */
export function expandQuery(q: string, answer: string | { hits?: unknown; grouped_hits?: unknown }): string {
  let obj: { hits?: unknown; grouped_hits?: unknown };
  if (typeof answer === 'string') {
    try {
      obj = JSON.parse(answer) as typeof obj;
    } catch {
      return q;
    }
  } else obj = answer;
  let top: Hit | undefined;
  if (Array.isArray(obj.hits)) top = obj.hits[0] as Hit | undefined;
  else if (Array.isArray(obj.grouped_hits)) top = (obj.grouped_hits[0] as { hits?: Hit[] } | undefined)?.hits?.[0];
  if (!top || !Array.isArray(top.highlights)) return q;
  const space = q.lastIndexOf(' ');
  const last = q.slice(space + 1);
  const tokens = top.highlights.flatMap((h) => flatten(h.matched_tokens)).map((t) => t.toLowerCase());
  if (tokens.includes(last)) return q; // the word was typed whole
  const completed = tokens.find((w) => w.length > last.length && w.startsWith(last));
  return completed === undefined ? q : q.slice(0, space + 1) + completed;
}

function flatten(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (!Array.isArray(v)) return [];
  return v.flatMap(flatten);
}

/**
 * The key a user's searches are grouped by: the user id the client sent, or else the
 * client's address. Long ids are replaced by a hash (they are part of a database key).
 */
export function userKey(id: string | undefined, ip: string): string {
  if (id === undefined || id === '') return `ip:${ip}`;
  if (id.length > ANALYTICS_DEFAULTS.maxUserIdLength || Buffer.byteLength(id) > ANALYTICS_DEFAULTS.maxUserIdLength) {
    return `h:${createHash('sha256').update(id).digest('base64url')}`;
  }
  return `u:${id}`;
}

/** The id of the destination document that holds a query's count (stable across processes and restarts). */
export function queryDocId(q: string): string {
  return createHash('sha256').update(q).digest('hex').slice(0, 24);
}
