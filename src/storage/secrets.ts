/**
 * src/storage/secrets.ts: provider credentials at rest, encrypted when a secrets key is set.
 *
 * Which values: the `api_key` of LLM models (conversation and natural-language search
 * models), the credentials of an embedding field's `model_config` (`api_key`,
 * `access_token`, `refresh_token`, `client_secret`) and the `api_key` of a collection's
 * `voice_query_model`. Without a secrets key they are stored as given: plain text in
 * `data.mdb`, in every snapshot and in a cluster's stream (the directory is owner-only).
 *
 * With one (`--secrets-key`, or FATHOM_SECRETS_KEY in the environment; the option sets the
 * variable, so worker threads and server processes inherit it), each such value is stored
 * as an envelope, one string:
 *
 *   fathom-secret:v1:<base64url of salt (16 bytes) | iv (12) | ciphertext | tag (16)>
 *
 * AES-256-GCM, with the version prefix as additional data; the 256-bit key is
 * scrypt(secrets key, salt, N = 2^15, r = 8, p = 1). Each process draws one random salt
 * for what it seals (so scrypt runs once per process, not per value) and a random IV per
 * value; derived keys are kept in memory per salt. A value is sealed before the command
 * that stores it is made, so a cluster's stream carries the envelope too, and every node
 * needs the same secrets key.
 *
 * Values stored before the key was set stay plain and keep working; they are sealed when
 * rewritten. Reading an envelope without the key, or with another key, fails when the
 * value is used (a call to the provider), with SECRETS_KEY (503) saying so, never at
 * start-up; listings show a mask either way.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { SECRETS } from '../defaults.js';
import { FathomError } from '../errors.js';

export const SECRETS_ENV = 'FATHOM_SECRETS_KEY';
/** Credentials an embedding field's `model_config` may hold. */
export const MODEL_CONFIG_SECRETS = ['api_key', 'access_token', 'refresh_token', 'client_secret'] as const;
const PREFIX = 'fathom-secret:v1:';
const AAD = Buffer.from(PREFIX);
const SALT = 16;
const IV = 12;
const TAG = 16;

/** Is this a stored envelope (rather than a plain value)? */
export function isSealed(v: unknown): v is string {
  return typeof v === 'string' && v.startsWith(PREFIX);
}

/** The secrets key in force: FATHOM_SECRETS_KEY, or undefined (an empty variable counts as none). */
export function secretsKey(): string | undefined {
  const k = process.env[SECRETS_ENV];
  return k === undefined || k === '' ? undefined : k;
}

/** Why a secrets key cannot be used (too short), or undefined when it can. */
export function checkSecretsKey(k: string): string | undefined {
  return k.length < SECRETS.minKeyLength ? `a secrets key must be at least ${SECRETS.minKeyLength} characters long` : undefined;
}

/** Derived keys by secrets key and salt (a few: one salt per process that sealed values). */
const derived = new Map<string, Buffer>();
let ownSalt: Buffer | undefined;

function keyFor(secret: string, salt: Buffer): Buffer {
  const id = `${salt.toString('base64')}\u0000${secret}`;
  let k = derived.get(id);
  if (!k) {
    if (derived.size >= SECRETS.derivedKeysKept) derived.delete(derived.keys().next().value!);
    k = scryptSync(secret, salt, 32, { N: SECRETS.scryptN, r: 8, p: 1, maxmem: 2 * 128 * SECRETS.scryptN * 8 });
    derived.set(id, k);
  }
  return k;
}

/** `plain` as it is stored: an envelope when a secrets key is set, else as it is. An envelope is kept as it is. */
export function sealSecret(plain: string): string {
  const secret = secretsKey();
  if (secret === undefined || isSealed(plain)) return plain;
  const problem = checkSecretsKey(secret);
  if (problem) throw new FathomError('SECRETS_KEY', `${SECRETS_ENV}: ${problem}`);
  ownSalt ??= randomBytes(SALT);
  const iv = randomBytes(IV);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, ownSalt), iv);
  cipher.setAAD(AAD);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([ownSalt, iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** A stored value as it can be used: an envelope opened with the secrets key, a plain value as it is. */
export function openSecret(stored: string, what: string): string {
  if (!isSealed(stored)) return stored;
  const secret = secretsKey();
  if (secret === undefined) {
    throw new FathomError('SECRETS_KEY', `${what} is stored encrypted: start Fathom with the secrets key it was stored with (--secrets-key or ${SECRETS_ENV})`);
  }
  const raw = Buffer.from(stored.slice(PREFIX.length), 'base64url');
  if (raw.length < SALT + IV + TAG) throw new FathomError('SECRETS_KEY', `${what} is stored encrypted but its envelope is damaged`);
  const salt = raw.subarray(0, SALT);
  const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, salt), raw.subarray(SALT, SALT + IV));
  decipher.setAAD(AAD);
  decipher.setAuthTag(raw.subarray(raw.length - TAG));
  try {
    return Buffer.concat([decipher.update(raw.subarray(SALT + IV, raw.length - TAG)), decipher.final()]).toString('utf8');
  } catch {
    throw new FathomError('SECRETS_KEY', `${what} is stored encrypted with another secrets key than the one given (--secrets-key or ${SECRETS_ENV})`);
  }
}

/** A stored value to show masked: the plain value when it can be had (opened), else undefined. */
export function plainOrUndefined(stored: string): string | undefined {
  try {
    return openSecret(stored, 'a value');
  } catch {
    return undefined;
  }
}

/** A copy of `rec` with the string values of `fields` sealed (sealSecret). */
export function sealFields<T extends Record<string, unknown>>(rec: T, fields: readonly string[]): T {
  let out = rec;
  for (const f of fields) {
    const v = rec[f];
    if (typeof v !== 'string') continue;
    const s = sealSecret(v);
    if (s !== v) out = { ...out, [f]: s };
  }
  return out;
}

/** A copy of `rec` with the values of `fields` opened (openSecret); `what` names the record in messages. */
export function openFields<T extends Record<string, unknown>>(rec: T, fields: readonly string[], what: string): T {
  let out = rec;
  for (const f of fields) {
    const v = rec[f];
    if (isSealed(v)) out = { ...out, [f]: openSecret(v, `\`${f}\` of ${what}`) };
  }
  return out;
}
