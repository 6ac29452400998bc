/**
 * src/runtime-config.ts: the reference's runtime settings (`POST /config`).
 *
 * Settings are kept in the data directory (`meta`, RUNTIME_CONFIG_KEY), written through a
 * replicated command, so that every server process and cluster node reads the same
 * settings (the reference keeps them per node). A body is checked here, with the
 * reference's messages for a value of the wrong type; keys it does not know are accepted
 * and ignored, as the reference ignores them. RUNTIME_CONFIG_DEFAULTS says what each does.
 */
import { RUNTIME_CONFIG_DEFAULTS } from './defaults.js';
import { FathomError } from './errors.js';
import { isPlainObject } from './json.js';
import type { Store } from './storage/store.js';

export type RuntimeConfig = { -readonly [K in keyof typeof RUNTIME_CONFIG_DEFAULTS]: (typeof RUNTIME_CONFIG_DEFAULTS)[K] extends boolean ? boolean : number };

/** The `meta` key of the stored settings (those changed from their defaults). */
export const RUNTIME_CONFIG_KEY = 'runtime_config';

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

/** The settings a `POST /config` body changes, checked (unknown keys left out). */
export function parseRuntimeConfig(body: unknown): Partial<RuntimeConfig> {
  if (!isPlainObject(body)) bad('the configuration must be a JSON object, e.g. {"log-slow-requests-time-ms": 2000}');
  const out: Partial<RuntimeConfig> = {};
  const slow = body['log-slow-requests-time-ms'];
  if (slow !== undefined) {
    if (!Number.isSafeInteger(slow)) bad('Configuration `log-slow-requests-time-ms` must be an integer.');
    out['log-slow-requests-time-ms'] = slow as number;
  }
  for (const k of ['healthy-read-lag', 'healthy-write-lag'] as const) {
    const v = body[k];
    if (v === undefined) continue;
    if (!Number.isSafeInteger(v) || (v as number) <= 0) bad(`Configuration \`${k}\` must be a positive integer.`);
    out[k] = v as number;
  }
  const skip = body['skip-writes'];
  if (skip !== undefined) {
    if (typeof skip !== 'boolean') bad('Configuration `skip-writes` must be a boolean.');
    out['skip-writes'] = skip;
  }
  return out;
}

/** The settings in force. */
export function readRuntimeConfig(store: Store): RuntimeConfig {
  const stored = store.readShared<Partial<RuntimeConfig>>(store.meta, RUNTIME_CONFIG_KEY);
  return { ...RUNTIME_CONFIG_DEFAULTS, ...stored };
}

/** Stores `changes` over the settings in force; call inside a write transaction. */
export function storeRuntimeConfig(store: Store, changes: Partial<RuntimeConfig>): RuntimeConfig {
  const next = { ...readRuntimeConfig(store), ...changes };
  store.meta.put(RUNTIME_CONFIG_KEY, next);
  return next;
}
