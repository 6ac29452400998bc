/**
 * src/keys/keys.ts: API key records in the data directory.
 *
 * Both faces use this module: `fathom keys ...` on the data directory and `/keys` over
 * HTTP. A key value is a secret and is shown once, in the answer to its creation.
 *
 * Storage (LMDB, the data directory is owner-only):
 *
 *   keys  id -> KeyRecord            description, scope, expiry, `value_prefix`,
 *                                    `value_hash` (SHA-256 of the value), and the value
 *                                    itself only for search-only keys (see below)
 *   aux   ['key-hash', sha256hex] -> id          finds a key from a presented value
 *   aux   ['key-prefix', prefix, id] -> 1        parents of scoped search keys
 *
 * Why the value of a search-only key is kept: a scoped search key is an HMAC made with the
 * parent key's value as the secret, so checking one needs that value. Only keys whose
 * actions are exactly `["documents:search"]` can be such parents (as in the reference),
 * so only their values are stored; every other key is stored as a hash and cannot be
 * recovered from the data directory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { KEY_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { nextCounter, write, type Store } from '../storage/store.js';
import { checkActionPattern, checkCollectionPattern } from './scope.js';
import { nowSeconds } from '../clock.js';
import { commit } from '../cluster/command.js';
import { KeyFinder, type KnownKeys } from './redact.js';

export const SEARCH_ACTION = 'documents:search';

export interface KeyRecord {
  id: number;
  description: string;
  actions: string[];
  collections: string[];
  /** Unix seconds; the key is refused after this moment. */
  expires_at: number;
  autodelete: boolean;
  value_prefix: string;
  value_hash: string;
  /** Characters in the value (absent on keys created before it was kept): finds the value in a log line by one hash. */
  value_length?: number;
  /** Present only for keys that can parent scoped search keys. */
  value?: string;
  created_at: number;
}

/** A key as listed: everything but the value (and its hash). */
export type KeyView = Pick<KeyRecord, 'id' | 'description' | 'actions' | 'collections' | 'expires_at' | 'autodelete' | 'value_prefix'>;

/** The answer to a creation: the only place the value appears. */
export interface CreatedKey extends KeyView {
  value: string;
}

const HASH_AREA = 'key-hash';
/** `meta` counter of key ids: moves with every key created. */
const KEY_COUNTER = 'next_key_id';
const PREFIX_AREA = 'key-prefix';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** SHA-256 of a key value, hex. Hot: once per authenticated request. */
export function hashValue(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** A random key value of letters and digits (rejection sampling, so unbiased). */
export function generateValue(length: number = KEY_LIMITS.generatedLength): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** True when a key of these actions may sign scoped search keys. */
export function canParentScopedKeys(actions: readonly string[]): boolean {
  return actions.length === 1 && actions[0] === SEARCH_ACTION;
}

export function viewOf(r: KeyRecord): KeyView {
  return {
    id: r.id,
    description: r.description,
    actions: r.actions,
    collections: r.collections,
    expires_at: r.expires_at,
    autodelete: r.autodelete,
    value_prefix: r.value_prefix,
  };
}

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

function stringList(body: Record<string, unknown>, name: 'actions' | 'collections'): string[] {
  const v = body[name];
  if (v === undefined) bad(`the key needs \`${name}\`, an array of strings`);
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => typeof x !== 'string' || x === '')) {
    bad(`\`${name}\` must be a non-empty array of non-empty strings`);
  }
  return [...new Set(v as string[])];
}

interface ValidKey {
  description: string;
  actions: string[];
  collections: string[];
  value?: string;
  expires_at: number;
  autodelete: boolean;
}

/** Checks a creation body (HTTP or CLI); throws BAD_REQUEST naming the first problem. */
export function validateKeyBody(raw: unknown): ValidKey {
  if (!isPlainObject(raw)) bad('the key must be a JSON object with `actions`, `collections` and `description`');
  const description = raw.description;
  if (description === undefined) bad('the key needs a `description`');
  if (typeof description !== 'string') bad('`description` must be a string');
  if (description.length > KEY_LIMITS.maxDescriptionLength) bad(`\`description\` is longer than ${KEY_LIMITS.maxDescriptionLength} characters`);
  const actions = stringList(raw, 'actions');
  const collections = stringList(raw, 'collections');
  actions.forEach(checkActionPattern);
  collections.forEach(checkCollectionPattern);
  let value: string | undefined;
  if (raw.value !== undefined && raw.value !== null) {
    if (typeof raw.value !== 'string') bad('`value` must be a string');
    value = raw.value;
    if (value.length < KEY_LIMITS.prefixLength || value.length > KEY_LIMITS.maxValueLength) {
      bad(`\`value\` must be ${KEY_LIMITS.prefixLength} to ${KEY_LIMITS.maxValueLength} characters long`);
    }
    if (!/^[\x21-\x7e]+$/.test(value)) bad('`value` may contain visible ASCII characters only (no spaces), since it travels in an HTTP header');
  }
  let expires = KEY_LIMITS.neverExpires as number;
  if (raw.expires_at !== undefined && raw.expires_at !== null) {
    const e = raw.expires_at;
    if (typeof e !== 'number' || !Number.isSafeInteger(e) || e < 0) bad('`expires_at` must be a Unix timestamp in seconds (a whole number >= 0)');
    expires = e;
  }
  let autodelete = false;
  if (raw.autodelete !== undefined && raw.autodelete !== null) {
    if (typeof raw.autodelete !== 'boolean') bad('`autodelete` must be true or false');
    autodelete = raw.autodelete;
  }
  return { description, actions, collections, value, expires_at: expires, autodelete };
}

/** Creates a key; the result carries the value, which is never shown again. */
export async function createKey(store: Store, body: unknown): Promise<CreatedKey> {
  const valid = validateKeyBody(body);
  // Generated once, by the node that received the request. What replicates is what is
  // stored: the hash and prefix, and the value itself only for keys that keep it (the
  // parents of scoped search keys); the value is revealed to this caller alone.
  const value = valid.value ?? generateValue();
  const secret: KeySecret = { hash: hashValue(value), prefix: value.slice(0, KEY_LIMITS.prefixLength), length: value.length, ...(canParentScopedKeys(valid.actions) ? { value } : {}) };
  const { value: _sent, ...fields } = valid;
  const created = await commit(store, { op: 'key.create', body: { ...fields, ...secret } }, () => storeKey(store, valid, secret));
  return { ...created, value };
}

/** What a key's record keeps of its value. */
interface KeySecret {
  hash: string;
  prefix: string;
  length?: number;
  /** Kept only for the parents of scoped search keys. */
  value?: string;
}

/** Stores a key created elsewhere in the cluster (src/cluster/apply.ts): its fields as validated there, and its secret. */
export function storeReplicatedKey(store: Store, body: Record<string, unknown>): Promise<KeyView> {
  const { hash, prefix, length, value, ...fields } = body as unknown as ReturnType<typeof validateKeyBody> & KeySecret;
  return storeKey(store, fields, { hash, prefix, ...(typeof length === 'number' ? { length } : {}), ...(value !== undefined ? { value } : {}) });
}

async function storeKey(store: Store, valid: Omit<ReturnType<typeof validateKeyBody>, 'value'>, secret: KeySecret): Promise<KeyView> {
  const { hash, prefix, length, value } = secret;
  const record = await write(store, () => {
    if (store.aux.get([HASH_AREA, hash]) !== undefined) throw new FathomError('CONFLICT', 'a key with this value already exists');
    const id = nextCounter(store, KEY_COUNTER);
    const rec: KeyRecord = {
      id,
      description: valid.description,
      actions: valid.actions,
      collections: valid.collections,
      expires_at: valid.expires_at,
      autodelete: valid.autodelete,
      value_prefix: prefix,
      value_hash: hash,
      ...(length !== undefined ? { value_length: length } : {}),
      ...(value !== undefined && canParentScopedKeys(valid.actions) ? { value } : {}),
      created_at: nowSeconds(),
    };
    store.keys.put(id, rec);
    store.aux.put([HASH_AREA, hash], id);
    if (rec.value !== undefined) store.aux.put([PREFIX_AREA, prefix, id], 1);
    return rec;
  });
  return viewOf(record);
}

export function listKeys(store: Store): KeyView[] {
  const out: KeyView[] = [];
  for (const { value } of store.keys.getRange({})) out.push(viewOf(value as KeyRecord));
  return out;
}

function parseId(id: string | number): number {
  const n = typeof id === 'number' ? id : /^\d{1,15}$/.test(id) ? Number(id) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw new FathomError('KEY_NOT_FOUND', `key \`${id}\` not found (key ids are whole numbers)`);
  return n;
}

export function getKey(store: Store, id: string | number): KeyView {
  const rec = store.keys.get(parseId(id)) as KeyRecord | undefined;
  if (!rec) throw new FathomError('KEY_NOT_FOUND', `key \`${id}\` not found`);
  return viewOf(rec);
}

function removeRecord(store: Store, rec: KeyRecord): void {
  store.keys.remove(rec.id);
  store.aux.remove([HASH_AREA, rec.value_hash]);
  store.aux.remove([PREFIX_AREA, rec.value_prefix, rec.id]);
}

/** Deletes a key; answers `{id}` as the reference does. */
export async function deleteKey(store: Store, id: string | number): Promise<{ id: number }> {
  const n = parseId(id);
  return commit(store, { op: 'key.delete', id: String(n) }, () => removeKey(store, n, id));
}

function removeKey(store: Store, n: number, id: string | number): Promise<{ id: number }> {
  return write(store, () => {
    const rec = store.keys.get(n) as KeyRecord | undefined;
    if (!rec) throw new FathomError('KEY_NOT_FOUND', `key \`${id}\` not found`);
    removeRecord(store, rec);
    return { id: n };
  });
}

/** Deletes expired keys that have `autodelete`; returns their ids. */
export async function purgeExpiredKeys(store: Store, now?: number): Promise<number[]> {
  const dueAt = (t: number) => [...store.keys.getRange({})].map(({ value }) => value as KeyRecord).filter((r) => r.autodelete && r.expires_at < t);
  // nothing to do is not worth a command
  if (dueAt(now ?? nowSeconds()).length === 0) return [];
  return commit(store, { op: 'keys.purge' }, () => purgeKeysNow(store, dueAt(now ?? nowSeconds())));
}

function purgeKeysNow(store: Store, due: KeyRecord[]): Promise<number[]> {
  if (due.length === 0) return Promise.resolve([]);
  return write(store, () => {
    const ids: number[] = [];
    for (const r of due) {
      const cur = store.keys.get(r.id) as KeyRecord | undefined;
      if (cur) {
        removeRecord(store, cur);
        ids.push(cur.id);
      }
    }
    return ids;
  });
}

/** What the data directory knows of every key's value, for finding values in logs (redact.ts). */
export function knownKeys(store: Store, bootstrapKey?: string): KnownKeys {
  const values: string[] = bootstrapKey ? [bootstrapKey] : [];
  const hashed: KnownKeys['hashed'][number][] = [];
  const parents: string[] = [];
  for (const { value } of store.keys.getRange({})) {
    const r = value as KeyRecord;
    if (r.value !== undefined) {
      values.push(r.value);
      if (canParentScopedKeys(r.actions)) parents.push(r.value);
    } else hashed.push({ prefix: r.value_prefix, hash: r.value_hash, ...(r.value_length !== undefined ? { length: r.value_length } : {}) });
  }
  return { values, hashed, parents };
}

/**
 * A KeyFinder for a data directory's keys, made again when a key was created since (the key
 * id counter moved, in any process). A key deleted since stays in it until then: masking a
 * value no longer valid costs nothing. Read failures (the environment closed for a moment
 * by compaction) keep the last finder.
 */
export function keyFinder(store: Store, bootstrapKey?: string): () => KeyFinder {
  let made: { counter: unknown; finder: KeyFinder } | undefined;
  return () => {
    try {
      const counter = store.meta.get(KEY_COUNTER);
      if (made?.counter !== counter || !made) made = { counter, finder: new KeyFinder(knownKeys(store, bootstrapKey)) };
    } catch {
      made ??= { counter: undefined, finder: new KeyFinder({ values: bootstrapKey ? [bootstrapKey] : [], hashed: [], parents: [] }) };
    }
    return made.finder;
  };
}

/** The key with this value, or undefined. Hot: every authenticated request. */
export function findKeyByValue(store: Store, value: string): KeyRecord | undefined {
  const id = store.aux.get([HASH_AREA, hashValue(value)]) as number | undefined;
  if (id === undefined) return undefined;
  return store.keys.get(id) as KeyRecord | undefined;
}

/** Keys with a stored value whose value starts with `prefix` (parents of scoped keys). */
export function findParentCandidates(store: Store, prefix: string): KeyRecord[] {
  const out: KeyRecord[] = [];
  for (const key of store.aux.getKeys({ start: [PREFIX_AREA, prefix], end: [PREFIX_AREA, prefix, Number.MAX_SAFE_INTEGER] })) {
    const id = (key as [string, string, number])[2];
    const rec = store.keys.get(id) as KeyRecord | undefined;
    if (rec?.value !== undefined) out.push(rec);
  }
  return out;
}
