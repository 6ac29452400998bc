/**
 * src/server/params.ts: query-string parameters, checked at the edge.
 *
 * Each helper throws FathomError(BAD_PARAMETER) naming the parameter and the value it
 * got, so a bad request answers 400 with a precise message before the engine is called.
 */
import { FathomError } from '../errors.js';
import { parseFieldList } from '../query/fields.js';
import { DIRTY_VALUES, WRITE_ACTIONS, type DirtyValues, type WriteAction } from '../defaults.js';

export type Query = Record<string, string | string[] | undefined>;

/** Query parameters that carry the API key; never passed on (nor echoed in `request_params`). */
export const KEY_PARAMS = ['x-typesense-api-key', 'x-service-api-key'] as const;

function bad(message: string): never {
  throw new FathomError('BAD_PARAMETER', message);
}

export function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) return v[v.length - 1];
  return v;
}

export function bool(q: Query, name: string, dflt: boolean): boolean {
  const v = one(q, name);
  if (v === undefined || v === '') return dflt;
  const s = v.toLowerCase();
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  bad(`parameter \`${name}\` must be true or false, got "${v}"`);
}

export function int(q: Query, name: string, dflt: number, min: number, max: number): number {
  const v = one(q, name);
  if (v === undefined || v === '') return dflt;
  if (!/^\s*\d+\s*$/.test(v)) bad(`parameter \`${name}\` must be a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) bad(`parameter \`${name}\` must be between ${min} and ${max}, got ${n}`);
  return n;
}

const ACTIONS = WRITE_ACTIONS;
const DIRTY = DIRTY_VALUES;

export function writeAction(q: Query): WriteAction {
  const v = one(q, 'action');
  if (v === undefined || v === '') return 'create';
  if (!(ACTIONS as readonly string[]).includes(v)) bad(`parameter \`action\` must be one of ${ACTIONS.join(', ')}, got "${v}"`);
  return v as WriteAction;
}

export function dirtyValues(q: Query): DirtyValues | undefined {
  const v = one(q, 'dirty_values');
  if (v === undefined || v === '') return undefined;
  if (!(DIRTY as readonly string[]).includes(v)) bad(`parameter \`dirty_values\` must be one of ${DIRTY.join(', ')}, got "${v}"`);
  return v as DirtyValues;
}

export function fieldList(q: Query, name: string): string[] | undefined {
  const v = one(q, name);
  return v === undefined ? undefined : parseFieldList(v);
}

/** The query without API key parameters (search parameters as the engine takes them). */
export function withoutKeys(q: Query): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in q) {
    if (k === KEY_PARAMS[0] || k === KEY_PARAMS[1]) continue;
    out[k] = q[k];
  }
  return out;
}
