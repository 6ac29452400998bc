/**
 * src/presets/presets.ts: named search parameters.
 *
 * A preset's `value` is a set of search parameters, or a multi_search body (`{searches:
 * [...]}`). `preset=<name>` in a search (or a multi_search search, or the multi_search query
 * string) starts from the preset's parameters; every parameter the request gives itself
 * wins, and a scoped key's embedded parameters win over both (they are applied after,
 * src/server/routes/search.ts); a preset the key embeds counts as the key's own parameters
 * (src/keys/auth.ts), so no request parameter replaces them. A preset's value may name
 * another preset, whose parameters come below its own; a chain that comes back to a preset
 * it passed is refused (400), as is a preset that does not exist. A multi_search whose
 * query string names a multi_search preset, with an empty `searches` array, runs the
 * preset's searches.
 *
 * Stored in `aux` under ['preset', name]; writes are replicated commands (preset.put,
 * preset.delete).
 */
import { commit } from '../cluster/command.js';
import { RULE_LIMITS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject, protoKeyMessage, protoKeyPath, setOwn } from '../json.js';
import { write, type Store } from '../storage/store.js';
import { checkName } from '../rulesets/rulesets.js';

export interface Preset {
  name: string;
  value: Record<string, unknown>;
}

const AREA = 'preset';

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

export function validatePreset(name: string, body: unknown): Preset {
  checkName(name, 'a preset name');
  if (!isPlainObject(body)) bad('a preset must be a JSON object with `value`');
  for (const k of Object.keys(body)) if (k !== 'value' && k !== 'name') bad(`unknown preset attribute \`${k}\`; a preset has \`value\``);
  if (body.name !== undefined && body.name !== name) bad(`the preset's \`name\` (${JSON.stringify(body.name)}) differs from the name in the path (${JSON.stringify(name)})`);
  const value = body.value;
  if (!isPlainObject(value)) bad('a preset needs `value`: an object of search parameters, or a multi_search body `{"searches": [...]}`');
  const proto = protoKeyPath(value, 'value');
  if (proto) bad(protoKeyMessage(proto));
  if (value.searches !== undefined) {
    const searches = value.searches;
    if (!Array.isArray(searches) || !searches.every((s) => isPlainObject(s))) bad('`value.searches` must be an array of searches (objects of search parameters)');
    for (const k of Object.keys(value)) if (k !== 'searches') bad(`a multi_search preset holds only \`searches\`, not \`${k}\``);
    searches.forEach((s, i) => {
      if ((s as Record<string, unknown>).preset === name) bad(`value.searches[${i}] names the preset itself (\`${name}\`)`);
    });
  } else if (value.preset !== undefined) {
    if (typeof value.preset !== 'string' || value.preset === '') bad('`value.preset` must be the name of another preset');
    if (value.preset === name) bad(`the preset names itself (\`preset: ${JSON.stringify(name)}\`)`);
  }
  return { name, value };
}

export async function putPreset(store: Store, name: string, body: unknown): Promise<Preset> {
  validatePreset(name, body);
  return commit(store, { op: 'preset.put', name, body }, () =>
    write(store, () => {
      const p = validatePreset(name, body);
      store.aux.put([AREA, name], p);
      return p;
    }),
  );
}

export function findPreset(store: Store, name: string): Preset | undefined {
  return store.aux.get([AREA, name]) as Preset | undefined;
}

export function getPreset(store: Store, name: string): Preset {
  const p = findPreset(store, name);
  if (!p) throw new FathomError('NOT_FOUND', `preset \`${name}\` not found`);
  return p;
}

export function listPresets(store: Store): Preset[] {
  const out: Preset[] = [];
  for (const { key, value } of store.aux.getRange({ start: [AREA, ''] })) {
    if (!Array.isArray(key) || key[0] !== AREA) break;
    out.push(value as Preset);
  }
  return out;
}

export async function deletePreset(store: Store, name: string): Promise<{ name: string }> {
  getPreset(store, name);
  return commit(store, { op: 'preset.delete', name }, () =>
    write(store, () => {
      getPreset(store, name);
      store.aux.remove([AREA, name]);
      return { name };
    }),
  );
}

function presetName(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new FathomError('BAD_PARAMETER', 'parameter `preset` must be the name of a preset');
  return v;
}

/**
 * A search's parameters with its preset's (and the presets that one names) laid under them.
 * No `preset` parameter: the parameters as they are. The result holds no `preset`.
 */
export function withPreset(store: Store, raw: Record<string, unknown>): Record<string, unknown> {
  let name = presetName(raw.preset);
  if (name === undefined) {
    if (!('preset' in raw)) return raw;
    const { preset: _p, ...rest } = raw;
    return rest;
  }
  const { preset: _p, ...out } = raw;
  const seen: string[] = [];
  while (name !== undefined) {
    if (seen.includes(name)) {
      throw new FathomError('BAD_PARAMETER', seen.length === 1 ? `preset \`${name}\` names itself` : `presets name each other in a loop: ${[...seen, name].map((n) => `\`${n}\``).join(' -> ')}`);
    }
    if (seen.length >= RULE_LIMITS.maxPresetDepth) throw new FathomError('BAD_PARAMETER', `presets lead through more than ${RULE_LIMITS.maxPresetDepth} presets`);
    seen.push(name);
    const p = findPreset(store, name);
    if (!p) throw new FathomError('BAD_PARAMETER', `preset \`${name}\` not found`);
    if (p.value.searches !== undefined) {
      throw new FathomError('BAD_PARAMETER', `preset \`${name}\` holds a multi_search body (\`searches\`): name it in the query string of a POST /multi_search with an empty \`searches\` array`);
    }
    for (const [k, v] of Object.entries(p.value)) if (k !== 'preset' && !Object.hasOwn(out, k)) setOwn(out, k, v);
    name = presetName(p.value.preset);
  }
  return out;
}

/** The searches of a multi_search preset named by `name`, or undefined when it holds search parameters. */
export function presetSearches(store: Store, name: string): Record<string, unknown>[] | undefined {
  const p = findPreset(store, name);
  if (!p) throw new FathomError('BAD_PARAMETER', `preset \`${name}\` not found`);
  const s = p.value.searches;
  return Array.isArray(s) ? (s as Record<string, unknown>[]) : undefined;
}
