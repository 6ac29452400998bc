/**
 * src/schema: here is a collection definition, is it valid, and which field does this key belong to?
 *
 * A schema arrives as JSON from a user. `validateCollectionSchema` checks it against
 * the rules below and returns the normalised record that is stored; `Schema` compiles a
 * stored record for fast lookups (exact names first, then regular-expression names in
 * declaration order).
 */
import { maskSecret } from '../llm/config.js';
import { FIELD_DEFAULTS, HNSW_DEFAULTS, MAX_NAME_LENGTH, TRUNCATE_LEN_DEFAULT, TRUNCATE_LEN_MAX } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject, protoKeyMessage, protoKeyPath } from '../json.js';
import { parseVoiceModel } from '../voice/config.js';
import { namePattern, patternProblem, type NamePattern } from '../pattern.js';
import { MODEL_CONFIG_SECRETS, sealFields } from '../storage/secrets.js';

export const FIELD_TYPES = [
  'string',
  'string[]',
  'string*',
  'int32',
  'int64',
  'int32[]',
  'int64[]',
  'float',
  'float[]',
  'bool',
  'bool[]',
  'geopoint',
  'geopoint[]',
  'image',
  'object',
  'object[]',
  'auto',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface EmbedConfig {
  from: string[];
  model_config: Record<string, unknown> & { model_name: string };
}

/** A field as stored in the collection record and shown to users. */
export interface FieldDef {
  name: string;
  type: FieldType;
  optional: boolean;
  facet: boolean;
  sort: boolean;
  index: boolean;
  store: boolean;
  infix: boolean;
  stem: boolean;
  locale: string;
  num_dim?: number;
  vec_dist?: 'cosine' | 'ip';
  embed?: EmbedConfig;
  hnsw_params?: { M: number; ef_construction: number };
  reference?: string;
  async_reference?: boolean;
  cascade_delete?: boolean;
  range_index?: boolean;
  /** A stemming dictionary (src/stemming) whose roots this text field indexes and searches. */
  stem_dictionary?: string;
  /** Kept as given and shown (TRUNCATE_LEN_DEFAULT when absent); tokens are cut at INPUT_LIMITS.maxTokenLength whatever it says. */
  truncate_len?: number;
  /** Internal, stable id of this field within its collection (keys index data). */
  id: number;
}

export interface CollectionRecord {
  id: number;
  name: string;
  fields: FieldDef[];
  default_sorting_field: string;
  token_separators: string[];
  symbols_to_index: string[];
  enable_nested_fields: boolean;
  /** Speech recogniser for `voice_query` (src/voice/config.ts): model_name, and api_key / url / paths as it needs. */
  voice_query_model?: { model_name: string; [k: string]: string };
  metadata?: Record<string, unknown>;
  /** Synonym sets whose synonyms apply to every search of the collection (src/synonyms). */
  synonym_sets?: string[];
  /** Curation sets whose rules apply to every search of the collection (src/curation). */
  curation_sets?: string[];
  created_at: number;
  /** Incremented on every schema change; compiled schemas are cached by (id, version). */
  version: number;
  next_field_id: number;
}

export type FieldKind = 'text' | 'number' | 'bool' | 'geo' | 'vector' | 'object' | 'image' | 'auto';

/** A compiled field: a FieldDef plus derived facts used on hot paths. */
export interface Field extends FieldDef {
  kind: FieldKind;
  isArray: boolean;
  /** For a field named by a regular expression: the compiled name pattern (src/pattern.ts). */
  pattern?: NamePattern;
  /** int32 / int64 / float for numbers. */
  numType?: 'int32' | 'int64' | 'float';
}

const REGEX_CHARS = /[*?[\](){}|^$\\+]/;

export function isPatternName(name: string): boolean {
  return REGEX_CHARS.test(name);
}

export function fieldKind(type: FieldType, numDim?: number, embed?: unknown): FieldKind {
  switch (type) {
    case 'string':
    case 'string[]':
    case 'string*':
      return 'text';
    case 'int32':
    case 'int64':
    case 'float':
    case 'int32[]':
    case 'int64[]':
      return 'number';
    case 'float[]':
      return numDim !== undefined || embed !== undefined ? 'vector' : 'number';
    case 'bool':
    case 'bool[]':
      return 'bool';
    case 'geopoint':
    case 'geopoint[]':
      return 'geo';
    case 'object':
    case 'object[]':
      return 'object';
    case 'image':
      return 'image';
    case 'auto':
      return 'auto';
  }
}

export function compileField(def: FieldDef): Field {
  const kind = fieldKind(def.type, def.num_dim, def.embed);
  const f: Field = {
    ...def,
    kind,
    isArray: def.type.endsWith('[]'),
  };
  if (kind === 'number') f.numType = def.type.replace('[]', '') as 'int32' | 'int64' | 'float';
  // (a stored name that is no usable pattern, written before the rules of src/pattern.ts, matches nothing)
  if (isPatternName(def.name)) f.pattern = namePattern(def.name, false);
  return f;
}

/** The compiled form of a collection record. */
export class Schema {
  readonly record: CollectionRecord;
  readonly fields: Field[];
  readonly byName = new Map<string, Field>();
  readonly byId = new Map<number, Field>();
  readonly patterns: Field[] = [];
  readonly hasPatterns: boolean;
  /** Fields the write hooks care about, computed once per schema version (hot: every write). */
  readonly vectorFields: Field[];
  readonly referenceFields: Field[];
  /**
   * The stemming dictionaries this schema's fields name, filled by catalog.ts compile from
   * the data directory (a schema built elsewhere, as in the prepare worker, has none, and
   * its batches are applied in the transaction instead: io/prepare.ts).
   */
  readonly stemDictionaries = new Map<string, { key: string; map: ReadonlyMap<string, string> }>();

  constructor(record: CollectionRecord) {
    this.record = record;
    this.fields = record.fields.map(compileField);
    for (const f of this.fields) {
      this.byId.set(f.id, f);
      if (f.pattern) this.patterns.push(f);
      else this.byName.set(f.name, f);
    }
    this.hasPatterns = this.patterns.length > 0;
    this.vectorFields = this.fields.filter((f) => f.kind === 'vector' && f.id > 0);
    this.referenceFields = this.fields.filter((f) => !!f.reference && f.id > 0);
  }

  get name(): string {
    return this.record.name;
  }
  get id(): number {
    return this.record.id;
  }

  /** The declared (or discovered) field for a concrete key, or the first pattern field matching it. */
  resolve(name: string): Field | undefined {
    const f = this.byName.get(name);
    if (f) return f;
    for (const p of this.patterns) if (p.pattern!.test(name)) return p;
    return undefined;
  }

  /** Concrete (non-pattern) field by name. */
  field(name: string): Field | undefined {
    return this.byName.get(name);
  }

  get defaultDirtyValues(): 'coerce_or_reject' | 'reject' {
    return this.hasPatterns ? 'coerce_or_reject' : 'reject';
  }
}

// ---------------------------------------------------------------------------
// Validation of user-supplied schemas
// ---------------------------------------------------------------------------

function bad(message: string): never {
  throw new FathomError('BAD_SCHEMA', message);
}

const NAME_RE = /^[^\s/?#%]+$/;

export function validateCollectionName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) bad('collection `name` must be a non-empty string');
  if (name.length > MAX_NAME_LENGTH) bad(`collection \`name\` must be at most ${MAX_NAME_LENGTH} characters`);
  if (!NAME_RE.test(name)) bad(`collection name \`${name}\` must not contain whitespace, '/', '?', '#' or '%'`);
  return name;
}

const FIELD_KEYS = new Set([
  'name',
  'type',
  'optional',
  'facet',
  'sort',
  'index',
  'store',
  'infix',
  'stem',
  'locale',
  'num_dim',
  'vec_dist',
  'embed',
  'hnsw_params',
  'reference',
  'async_reference',
  'cascade_delete',
  'range_index',
  'stem_dictionary',
  'truncate_len',
  'drop',
]);

function boolAttr(raw: Record<string, unknown>, key: string, field: string, dflt: boolean): boolean {
  const v = raw[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') bad(`field \`${field}\`: \`${key}\` must be true or false`);
  return v;
}

/**
 * Validates one field definition. `allNames` is the set of names in the schema (for `embed.from`).
 */
export function validateField(
  raw: unknown,
  position: number,
  opts: { nested: boolean; declared: Map<string, FieldDef> },
): Omit<FieldDef, 'id'> {
  if (!isPlainObject(raw)) bad(`fields[${position}] must be an object`);
  const name = raw.name;
  if (typeof name !== 'string' || name.length === 0) bad(`fields[${position}]: \`name\` must be a non-empty string`);
  for (const k of Object.keys(raw)) {
    if (!FIELD_KEYS.has(k)) bad(`field \`${name}\`: unknown attribute \`${k}\``);
  }
  const type = raw.type;
  if (typeof type !== 'string') bad(`field \`${name}\`: \`type\` is required`);
  if (!(FIELD_TYPES as readonly string[]).includes(type)) {
    bad(`field \`${name}\`: unknown type \`${type}\` (expected one of ${FIELD_TYPES.join(', ')})`);
  }
  const t = type as FieldType;
  if (name === 'id') {
    bad('field `id` cannot be declared: every document has a string `id` of its own');
  }
  const pattern = isPatternName(name);
  if (pattern) {
    const problem = patternProblem(name, false);
    if (problem?.invalid) bad(`field \`${name}\`: the name is not a valid regular expression (${problem.message})`);
    if (problem) bad(`field \`${name}\`: the name cannot be used as a pattern: ${problem.message} (patterns are matched in linear time, without backtracking)`);
  }
  if ((t === 'object' || t === 'object[]') && !opts.nested) {
    bad(`field \`${name}\`: type \`${t}\` needs \`enable_nested_fields: true\` on the collection`);
  }
  if (!pattern && name.includes('.') && !opts.nested) {
    bad(`field \`${name}\`: dotted names refer to nested fields and need \`enable_nested_fields: true\` on the collection`);
  }
  if (name === '.*' && t !== 'auto' && t !== 'string*') {
    bad('field `.*`: the catch-all field must have type `auto` or `string*`');
  }
  const optional = boolAttr(raw, 'optional', name, pattern ? true : FIELD_DEFAULTS.optional);
  const facet = boolAttr(raw, 'facet', name, FIELD_DEFAULTS.facet);
  const index = boolAttr(raw, 'index', name, FIELD_DEFAULTS.index);
  const store = boolAttr(raw, 'store', name, FIELD_DEFAULTS.store);
  const infix = boolAttr(raw, 'infix', name, FIELD_DEFAULTS.infix);
  const stem = boolAttr(raw, 'stem', name, FIELD_DEFAULTS.stem);
  const numeric = ['int32', 'int64', 'float', 'bool'].includes(t);
  const sort = boolAttr(raw, 'sort', name, numeric);
  const locale = raw.locale === undefined ? FIELD_DEFAULTS.locale : raw.locale;
  if (typeof locale !== 'string') bad(`field \`${name}\`: \`locale\` must be a string such as "en" or "ja"`);
  if (locale !== '') {
    try {
      new Intl.Locale(locale);
    } catch {
      bad(`field \`${name}\`: \`locale\` "${locale}" is not a valid language tag`);
    }
  }
  const out: Omit<FieldDef, 'id'> = { name, type: t, optional, facet, sort, index, store, infix, stem, locale };

  // (an object field with facet: true makes its leaves facets, as they are discovered)
  if (facet && ['image', 'geopoint', 'geopoint[]'].includes(t)) bad(`field \`${name}\`: type \`${t}\` cannot be a facet`);
  if (sort && !['int32', 'int64', 'float', 'bool', 'string', 'auto', 'string*', 'geopoint', 'geopoint[]'].includes(t)) {
    bad(`field \`${name}\`: type \`${t}\` cannot be sorted on (only single-valued numbers, bools and strings)`);
  }
  if (stem && !['string', 'string[]', 'string*', 'auto'].includes(t)) bad(`field \`${name}\`: \`stem\` applies to string fields only`);
  // "" is the reference's way of saying none (every field of its answers carries it)
  if (raw.stem_dictionary !== undefined && raw.stem_dictionary !== '') {
    if (typeof raw.stem_dictionary !== 'string') bad(`field \`${name}\`: \`stem_dictionary\` must be the name of a stemming dictionary`);
    if (!['string', 'string[]', 'string*', 'auto'].includes(t)) bad(`field \`${name}\`: \`stem_dictionary\` applies to string fields only`);
    out.stem_dictionary = raw.stem_dictionary;
  }
  if (!index && !optional && !pattern) {
    bad(`field \`${name}\`: a field with \`index: false\` must also be \`optional: true\``);
  }
  if (!index && (facet || (raw.sort === true))) bad(`field \`${name}\`: a field with \`index: false\` cannot be a facet or sorted on`);
  if (!store && t !== 'image') bad(`field \`${name}\`: \`store: false\` is only allowed on image fields`);
  // (what is never written is left out of a document by its top-level key)
  if (!store && (pattern || name.includes('.'))) bad(`field \`${name}\`: \`store: false\` is only allowed on a top-level image field named in full (not a nested field or a name pattern)`);

  if (raw.truncate_len !== undefined) {
    const n = raw.truncate_len;
    if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > TRUNCATE_LEN_MAX) bad(`field \`${name}\`: \`truncate_len\` must be an integer between 1 and ${TRUNCATE_LEN_MAX}`);
    out.truncate_len = n as number;
  }
  if (raw.num_dim !== undefined) {
    if (t !== 'float[]') bad(`field \`${name}\`: \`num_dim\` is only allowed on \`float[]\` fields`);
    if (!Number.isInteger(raw.num_dim) || (raw.num_dim as number) < 1 || (raw.num_dim as number) > 16384) {
      bad(`field \`${name}\`: \`num_dim\` must be an integer between 1 and 16384`);
    }
    out.num_dim = raw.num_dim as number;
  }
  if (raw.vec_dist !== undefined) {
    if (t !== 'float[]') bad(`field \`${name}\`: \`vec_dist\` is only allowed on vector fields`);
    if (raw.vec_dist !== 'cosine' && raw.vec_dist !== 'ip') bad(`field \`${name}\`: \`vec_dist\` must be "cosine" or "ip"`);
    out.vec_dist = raw.vec_dist;
  }
  if (raw.embed !== undefined) {
    if (t !== 'float[]') bad(`field \`${name}\`: \`embed\` is only allowed on \`float[]\` fields`);
    const e = raw.embed;
    if (!isPlainObject(e)) bad(`field \`${name}\`: \`embed\` must be an object with \`from\` and \`model_config\``);
    if (!Array.isArray(e.from) || e.from.length === 0 || !e.from.every((x) => typeof x === 'string')) {
      bad(`field \`${name}\`: \`embed.from\` must be a non-empty array of field names`);
    }
    for (const src of e.from as string[]) {
      const s = opts.declared.get(src);
      if (!s) bad(`field \`${name}\`: \`embed.from\` names \`${src}\`, which is not declared before it in the schema`);
      if (!['string', 'string[]', 'image'].includes(s.type)) {
        bad(`field \`${name}\`: \`embed.from\` field \`${src}\` must be of type string, string[] or image`);
      }
    }
    const mc = e.model_config;
    if (!isPlainObject(mc) || typeof mc.model_name !== 'string' || mc.model_name.length === 0) {
      bad(`field \`${name}\`: \`embed.model_config.model_name\` is required`);
    }
    out.embed = { from: e.from as string[], model_config: mc as EmbedConfig['model_config'] };
  }
  if (t === 'float[]' && (out.num_dim !== undefined || out.embed !== undefined)) {
    const hp = raw.hnsw_params;
    let M: number = HNSW_DEFAULTS.M;
    let ef: number = HNSW_DEFAULTS.ef_construction;
    if (hp !== undefined) {
      if (!isPlainObject(hp)) bad(`field \`${name}\`: \`hnsw_params\` must be an object`);
      for (const k of Object.keys(hp)) {
        if (k !== 'M' && k !== 'ef_construction') bad(`field \`${name}\`: unknown \`hnsw_params\` key \`${k}\``);
      }
      if (hp.M !== undefined) {
        if (!Number.isInteger(hp.M) || (hp.M as number) < 2 || (hp.M as number) > 100) bad(`field \`${name}\`: \`hnsw_params.M\` must be an integer from 2 to 100`);
        M = hp.M as number;
      }
      if (hp.ef_construction !== undefined) {
        if (!Number.isInteger(hp.ef_construction) || (hp.ef_construction as number) < 10 || (hp.ef_construction as number) > 2000) {
          bad(`field \`${name}\`: \`hnsw_params.ef_construction\` must be an integer from 10 to 2000`);
        }
        ef = hp.ef_construction as number;
      }
    }
    out.hnsw_params = { M, ef_construction: ef };
    if (facet) bad(`field \`${name}\`: a vector field cannot be a facet`);
  } else if (raw.hnsw_params !== undefined) {
    bad(`field \`${name}\`: \`hnsw_params\` is only allowed on vector fields (\`float[]\` with \`num_dim\` or \`embed\`)`);
  }
  if (raw.reference !== undefined) {
    const r = raw.reference;
    if (typeof r !== 'string' || !/^[^.\s]+\.[^\s]+$/.test(r)) {
      bad(`field \`${name}\`: \`reference\` must have the form "<collection>.<field>"`);
    }
    if (!['string', 'int32', 'int64', 'string[]', 'int32[]', 'int64[]'].includes(t)) {
      bad(`field \`${name}\`: a reference field must be of type string, int32, int64 or an array of those`);
    }
    if (name.includes('.')) {
      const parent = opts.declared.get(name.slice(0, name.lastIndexOf('.')));
      if (parent?.type === 'object[]' && !t.endsWith('[]')) {
        bad(`field \`${name}\`: a reference inside an object[] field must have an array type`);
      }
    }
    out.reference = r;
    out.async_reference = boolAttr(raw, 'async_reference', name, false);
    out.cascade_delete = boolAttr(raw, 'cascade_delete', name, true);
  } else if (raw.async_reference !== undefined || raw.cascade_delete !== undefined) {
    bad(`field \`${name}\`: \`async_reference\` and \`cascade_delete\` need \`reference\``);
  }
  if (raw.range_index !== undefined) {
    if (!['int32', 'int64', 'float'].includes(t)) bad(`field \`${name}\`: \`range_index\` applies to numeric fields only`);
    out.range_index = boolAttr(raw, 'range_index', name, false);
  }
  return out;
}

function charList(raw: unknown, key: string): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) bad(`\`${key}\` must be an array of single characters`);
  for (const c of raw) {
    if (typeof c !== 'string' || [...c].length !== 1) bad(`\`${key}\` must be an array of single characters; got ${JSON.stringify(c)}`);
    if (/\s/.test(c)) bad(`\`${key}\`: whitespace always separates tokens and cannot be listed`);
  }
  return raw as string[];
}

const COLLECTION_KEYS = new Set([
  'name',
  'fields',
  'default_sorting_field',
  'token_separators',
  'symbols_to_index',
  'enable_nested_fields',
  'voice_query_model',
  'metadata',
  'synonym_sets',
  'curation_sets',
]);

/**
 * Attributes a schema may carry that a new collection does not take: what a collection's
 * answer reports (a schema copied from `GET /collections/:c` carries them), and the
 * reference's shard count. Ignored, as the reference ignores them.
 */
const IGNORED_COLLECTION_KEYS = new Set(['num_documents', 'created_at', 'num_memory_shards']);

/** `synonym_sets` / `curation_sets`: names of sets (that they exist is checked against the data directory by the caller). */
export function setNames(v: unknown, key: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x !== '')) bad(`\`${key}\` must be an array of set names`);
  return [...new Set(v as string[])];
}

/** Checks a user's collection schema; returns the record to store (without numeric ids). */
export function validateCollectionSchema(raw: unknown): Omit<CollectionRecord, 'id' | 'created_at' | 'version'> {
  if (!isPlainObject(raw)) bad('the collection schema must be a JSON object');
  for (const k of Object.keys(raw)) {
    if (!COLLECTION_KEYS.has(k) && !IGNORED_COLLECTION_KEYS.has(k)) bad(`unknown collection attribute \`${k}\``);
  }
  const name = validateCollectionName(raw.name);
  if (!Array.isArray(raw.fields)) bad('`fields` must be an array of field definitions');
  const nested = raw.enable_nested_fields === undefined ? false : raw.enable_nested_fields;
  if (typeof nested !== 'boolean') bad('`enable_nested_fields` must be true or false');
  const declared = new Map<string, FieldDef>();
  const fields: FieldDef[] = [];
  let nextId = 1;
  raw.fields.forEach((f, i) => {
    const def = validateField(f, i, { nested, declared });
    if (declared.has(def.name)) bad(`field \`${def.name}\` is declared more than once`);
    const full: FieldDef = { ...def, id: nextId++ };
    declared.set(def.name, full);
    fields.push(full);
  });
  let dsf = '';
  if (raw.default_sorting_field !== undefined && raw.default_sorting_field !== '') {
    if (typeof raw.default_sorting_field !== 'string') bad('`default_sorting_field` must be a field name');
    const f = declared.get(raw.default_sorting_field);
    if (!f) bad(`\`default_sorting_field\` names \`${raw.default_sorting_field}\`, which is not a field of the schema`);
    if (!['int32', 'int64', 'float'].includes(f.type)) {
      bad(`\`default_sorting_field\` \`${f.name}\` must be a numeric field (int32, int64 or float), not ${f.type}`);
    }
    if (f.optional) bad(`\`default_sorting_field\` \`${f.name}\` cannot be optional`);
    dsf = f.name;
  }
  let vqm: CollectionRecord['voice_query_model'];
  if (raw.voice_query_model !== undefined) {
    parseVoiceModel(raw.voice_query_model); // the name and attributes; availability is checked at creation
    vqm = { ...(raw.voice_query_model as { model_name: string; [k: string]: string }) };
  }
  if (raw.metadata !== undefined && !isPlainObject(raw.metadata)) bad('`metadata` must be an object');
  const proto = protoKeyPath(raw.metadata, 'metadata');
  if (proto) bad(protoKeyMessage(proto));
  const synonymSets = setNames(raw.synonym_sets, 'synonym_sets');
  const curationSets = setNames(raw.curation_sets, 'curation_sets');
  return {
    name,
    fields,
    default_sorting_field: dsf,
    token_separators: charList(raw.token_separators, 'token_separators'),
    symbols_to_index: charList(raw.symbols_to_index, 'symbols_to_index'),
    enable_nested_fields: nested,
    ...(vqm ? { voice_query_model: vqm } : {}),
    ...(raw.metadata ? { metadata: raw.metadata as Record<string, unknown> } : {}),
    ...(synonymSets ? { synonym_sets: synonymSets } : {}),
    ...(curationSets ? { curation_sets: curationSets } : {}),
    next_field_id: nextId,
  };
}

/** The record as users see it (GET /collections/:name), without internal ids. */
/** Credentials an embedding field's `model_config` may hold: never shown whole. */
const SECRET_CONFIG = MODEL_CONFIG_SECRETS;

/**
 * A collection definition as stored: the credentials of its embedding fields' model_config
 * and of its voice_query_model sealed when a secrets key is set (src/storage/secrets.ts).
 * Anything not shaped as expected is left for validation to refuse.
 */
export function sealSchemaSecrets(raw: unknown): unknown {
  if (!isPlainObject(raw)) return raw;
  let out: Record<string, unknown> = raw;
  if (Array.isArray(raw.fields)) {
    const fields = raw.fields.map((f: unknown) => {
      if (!isPlainObject(f) || !isPlainObject(f.embed) || !isPlainObject(f.embed.model_config)) return f;
      const mc = sealFields(f.embed.model_config, SECRET_CONFIG);
      return mc === f.embed.model_config ? f : { ...f, embed: { ...f.embed, model_config: mc } };
    });
    if (fields.some((f, i) => f !== (raw.fields as unknown[])[i])) out = { ...out, fields };
  }
  if (isPlainObject(raw.voice_query_model)) {
    const vqm = sealFields(raw.voice_query_model, ['api_key']);
    if (vqm !== raw.voice_query_model) out = { ...out, voice_query_model: vqm };
  }
  return out;
}

/** A collection's fields as shown to users: no internal ids, embedding credentials masked. */
export function publicFields(fields: FieldDef[]): Record<string, unknown>[] {
  return fields.map(({ id: _id, ...rest }) => {
    const shown = withShownDefaults(rest);
    const cfg = (rest.embed as { model_config?: Record<string, unknown> } | undefined)?.model_config;
    if (!cfg || !SECRET_CONFIG.some((k) => typeof cfg[k] === 'string')) return shown;
    const masked: Record<string, unknown> = { ...cfg };
    for (const k of SECRET_CONFIG) if (typeof masked[k] === 'string') masked[k] = maskSecret(masked[k] as string);
    return { ...shown, embed: { ...(rest.embed as object), model_config: masked } };
  });
}

/** A field with the attributes the reference shows on every field even when unset (`truncate_len`, `stem_dictionary: ""`). */
export function withShownDefaults(f: Omit<FieldDef, 'id'>): Record<string, unknown> {
  return { ...f, stem_dictionary: f.stem_dictionary ?? '', truncate_len: f.truncate_len ?? TRUNCATE_LEN_DEFAULT };
}

/** A deep copy of a collection record (records are plain JSON data). */
export function copyRecord(r: CollectionRecord): CollectionRecord {
  return JSON.parse(JSON.stringify(r)) as CollectionRecord;
}
