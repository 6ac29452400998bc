/**
 * src/keys/scoped.ts: scoped search keys, derived by a client from a search-only key.
 *
 * Format, as the reference's clients make them (`generateScopedSearchKey`):
 *
 *   base64( base64(HMAC-SHA256(parentValue, paramsJson)) + parentValue[0..4) + paramsJson )
 *
 * The server finds the parent by its 4-character prefix, recomputes the HMAC with the
 * parent's value and compares in constant time. The embedded parameters are then forced
 * onto every search made with the key: `filter_by`, `include_fields` and `exclude_fields`
 * bound what it sees (applyEmbedded, src/query/scope.ts), every other embedded parameter
 * replaces the request's. `expires_at` in the
 * parameters ends the scoped key (the parent's expiry still applies), and
 * `limit_multi_searches` caps the searches of one multi_search.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { KEY_LIMITS } from '../defaults.js';
import { isPlainObject, setOwn } from '../json.js';
import type { Store } from '../storage/store.js';
import { canParentScopedKeys, findParentCandidates, type KeyRecord } from './keys.js';
import { SCOPE_PARAMS, scopeOf, type SearchScope } from '../query/scope.js';

/** Length of a base64 SHA-256 digest. */
export const DIGEST_CHARS = 44;

export interface ScopedKey {
  parent: KeyRecord;
  params: Record<string, unknown>;
  /** min(parent expiry, embedded expires_at), Unix seconds. */
  expiresAt: number;
}

/** Parameters that steer the key itself and are never passed to a search. */
const KEY_ONLY_PARAMS = new Set(['expires_at', 'limit_multi_searches']);

export function digestOf(secret: string, paramsJson: string): string {
  return createHmac('sha256', secret).update(paramsJson).digest('base64');
}

/** Makes a scoped search key (what the reference's clients do; used by tests and tools). */
export function generateScopedSearchKey(parentValue: string, params: Record<string, unknown>): string {
  const json = JSON.stringify(params);
  return Buffer.from(digestOf(parentValue, json) + parentValue.slice(0, KEY_LIMITS.prefixLength) + json).toString('base64');
}

/**
 * Verifies a presented value as a scoped search key. Undefined when it is not one, or
 * when no stored search-only key signed it. Expiry is left to the caller.
 */
export function verifyScopedKey(store: Store, presented: string): ScopedKey | undefined {
  if (presented.length < 64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(presented)) return undefined;
  const decoded = Buffer.from(presented, 'base64').toString('utf8');
  if (decoded.length < DIGEST_CHARS + KEY_LIMITS.prefixLength + 2) return undefined;
  const digest = Buffer.from(decoded.slice(0, DIGEST_CHARS));
  const prefix = decoded.slice(DIGEST_CHARS, DIGEST_CHARS + KEY_LIMITS.prefixLength);
  const json = decoded.slice(DIGEST_CHARS + KEY_LIMITS.prefixLength);
  for (const parent of findParentCandidates(store, prefix)) {
    if (parent.value === undefined || !canParentScopedKeys(parent.actions)) continue;
    const expected = Buffer.from(digestOf(parent.value, json));
    if (expected.length !== digest.length || !timingSafeEqual(expected, digest)) continue;
    let params: unknown;
    try {
      params = JSON.parse(json);
    } catch {
      return undefined;
    }
    if (!isPlainObject(params)) return undefined;
    let expiresAt = parent.expires_at;
    if (params.expires_at !== undefined) {
      const e = params.expires_at;
      if (typeof e !== 'number' || !Number.isSafeInteger(e) || e < 0) return undefined;
      expiresAt = Math.min(expiresAt, e);
    }
    return { parent, params, expiresAt };
  }
  return undefined;
}

/**
 * A request's search parameters with a scoped key's embedded ones forced on. Parameters
 * that bound what the key may see (filter_by, include_fields, exclude_fields) are never
 * merged into the request's text: they come back as `scope`, which the search enforces on
 * parsed trees (src/query/scope.ts). Every other embedded parameter replaces the request's.
 */
export function applyEmbedded(request: Record<string, unknown>, embedded: Record<string, unknown>): { params: Record<string, unknown>; scope?: SearchScope } {
  const params: Record<string, unknown> = { ...request };
  for (const [k, v] of Object.entries(embedded)) {
    if (KEY_ONLY_PARAMS.has(k) || (SCOPE_PARAMS as readonly string[]).includes(k)) continue;
    setOwn(params, k, v);
  }
  const scope = scopeOf(embedded);
  return scope ? { params, scope } : { params };
}

/** The cap on searches per multi_search embedded in a scoped key, if any. */
export function multiSearchLimit(embedded: Record<string, unknown>): number | undefined {
  const v = embedded.limit_multi_searches;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/** JSON with object keys sorted, so that equal parameters give equal text whatever their order. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (isPlainObject(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * A fingerprint of a scoped key's embedded parameters (SHA-256, hex): what, with its parent,
 * makes the key who it is (the owner of the conversations it starts). The parameters that
 * steer only the key (`expires_at`, `limit_multi_searches`) are left out, so a key renewed
 * with a later expiry is the same key; the order of the parameters does not count either.
 */
export function paramsFingerprint(params: Record<string, unknown>): string {
  const own: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) if (!KEY_ONLY_PARAMS.has(k)) own[k] = v;
  return createHash('sha256').update(canonicalJson(own)).digest('hex');
}
