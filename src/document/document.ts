/**
 * src/document: here is a JSON document, is it valid for this schema, and what do we index?
 *
 * `prepareDocument` checks the `id`, walks the document (flattening nested objects when
 * the collection allows them), resolves each key to its field, coerces values under the
 * request's `dirty_values` mode and returns the document to store plus the values to index.
 * Keys that match no field are stored but not indexed.
 */
import { INPUT_LIMITS, MAX_ID_LENGTH } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject, ownValue } from '../json.js';
import type { Field, FieldDef, FieldType, Schema } from '../schema/schema.js';
import { checkImage, ImageError } from '../embed/image/format.js';
import { coerceGeo } from '../geo/values.js';

export type { DirtyValues } from '../defaults.js';
import type { DirtyValues } from '../defaults.js';

export type Scalar = string | number | bigint | boolean;
export type IndexValue = Scalar | Scalar[] | number[] | number[][];

export interface PreparedDocument {
  id: string;
  /** The document as stored (coerced values in place, dropped fields removed). */
  stored: Record<string, unknown>;
  /** Values to index, one entry per concrete field. */
  values: Array<[Field, IndexValue]>;
  /** Fields discovered in this document (auto / pattern / nested), to be added to the schema. */
  discovered: Array<Omit<FieldDef, 'id'>>;
  /** True when `stored` differs from the input only by a generated `id` added at the end (or not at all). */
  asGiven: boolean;
  /** The id was generated (the input had no `id` key). */
  idGenerated: boolean;
}

function docError(message: string): never {
  throw new FathomError('BAD_DOCUMENT', message);
}

// Characters allowed unencoded in a URL path segment (RFC 3986 pchar without '%').
const ID_RE = /^[A-Za-z0-9\-._~!$&'()*+,;=:@]+$/;

/** Checks a user-supplied id. */
export function validateId(id: unknown): string {
  if (typeof id !== 'string') docError('document `id` must be a string');
  if (id.length === 0) docError('document `id` must not be empty');
  if (id.length > MAX_ID_LENGTH) docError(`document \`id\` must be at most ${MAX_ID_LENGTH} characters`);
  if (!ID_RE.test(id)) {
    if (/\s/.test(id)) docError(`document \`id\` ${JSON.stringify(id)} must not contain whitespace`);
    docError(`document \`id\` ${JSON.stringify(id)} contains characters that need URL encoding (allowed: letters, digits and -._~!$&'()*+,;=:@)`);
  }
  if (UNREACHABLE_IDS.has(id)) docError(UNREACHABLE_IDS.get(id)!);
  return id;
}

/**
 * Ids that no document route could reach: clients resolve `.` and `..` away in URL paths,
 * and `.../documents/search`, `/export` and `/import` are the search, export and import routes. The
 * reference engine stores such documents and then cannot serve them by id; Fathom refuses
 * the id when a document is written (one written earlier can still be exported or deleted).
 */
const UNREACHABLE_IDS = new Map<string, string>([
  ['.', 'document `id` "." cannot be used: URL paths resolve it away, so no route could reach the document'],
  ['..', 'document `id` ".." cannot be used: URL paths resolve it away, so no route could reach the document'],
  ['search', 'document `id` "search" cannot be used: GET /collections/:collection/documents/search is the search route, so the document could not be fetched by id'],
  ['export', 'document `id` "export" cannot be used: GET /collections/:collection/documents/export is the export route, so the document could not be fetched by id'],
  ['import', 'document `id` "import" cannot be used: /collections/:collection/documents/import is the import route, so the document could not be fetched, changed or deleted by id'],
]);

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const NUMERIC_STRING = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
const INTEGER_STRING = /^\s*[-+]?\d+\s*$/;

const FAIL = Symbol('fail');
type Coerced = Scalar | typeof FAIL;

function toInt(v: unknown, coerce: boolean, bits: 32 | 64): Coerced {
  let n: number | bigint;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return FAIL;
    if (!Number.isInteger(v)) {
      if (!coerce) return FAIL;
      v = Math.trunc(v);
    }
    n = v as number;
  } else if (typeof v === 'bigint') {
    n = v;
  } else if (coerce && typeof v === 'string' && NUMERIC_STRING.test(v)) {
    if (INTEGER_STRING.test(v)) {
      const b = BigInt(v.trim());
      n = b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
    } else n = Math.trunc(Number(v));
  } else if (coerce && typeof v === 'boolean') {
    n = v ? 1 : 0;
  } else return FAIL;
  if (bits === 32) {
    if (typeof n === 'bigint' || n < INT32_MIN || n > INT32_MAX) return FAIL;
    return n;
  }
  if (typeof n === 'bigint') {
    if (n < INT64_MIN || n > INT64_MAX) return FAIL;
    return n;
  }
  if (!Number.isSafeInteger(n)) return FAIL; // a float that lost its integer digits cannot be trusted
  return n;
}

function toFloat(v: unknown, coerce: boolean): Coerced {
  if (typeof v === 'number') return Number.isFinite(v) ? v : FAIL;
  if (typeof v === 'bigint') return coerce ? Number(v) : FAIL;
  if (coerce && typeof v === 'string' && NUMERIC_STRING.test(v)) return Number(v);
  if (coerce && typeof v === 'boolean') return v ? 1 : 0;
  return FAIL;
}

function toBool(v: unknown, coerce: boolean): Coerced {
  if (typeof v === 'boolean') return v;
  if (!coerce) return FAIL;
  if (v === 'true' || v === 1) return true;
  if (v === 'false' || v === 0) return false;
  return FAIL;
}

function toStr(v: unknown, coerce: boolean): Coerced {
  if (typeof v === 'string') return v;
  if (!coerce) return FAIL;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return FAIL;
}

function coerceScalar(base: string, v: unknown, coerce: boolean): Coerced {
  switch (base) {
    case 'string':
    case 'image':
      return toStr(v, coerce);
    case 'int32':
      return toInt(v, coerce, 32);
    case 'int64':
      return toInt(v, coerce, 64);
    case 'float':
      return toFloat(v, coerce);
    case 'bool':
      return toBool(v, coerce);
  }
  return FAIL;
}

const TYPE_NOUN: Record<string, string> = {
  string: 'a string',
  int32: 'an int32 (a whole number from -2147483648 to 2147483647)',
  int64: 'an int64 (a whole number from -2^63 to 2^63-1)',
  float: 'a number',
  bool: 'a bool',
  image: 'a Base64 image string',
};

function typeNoun(t: FieldType): string {
  if (t.endsWith('[]')) {
    const base = t.slice(0, -2);
    if (base === 'object') return 'an array of objects';
    return `an array of ${TYPE_NOUN[base]?.replace(/^an? /, '') ?? base}s`.replace(/\(([^)]*)\)s$/, 's ($1)');
  }
  if (t === 'object') return 'an object';
  return TYPE_NOUN[t] ?? t;
}

/**
 * A value of the wrong type, in the reference's words for the types it words alike (clients
 * match these texts, so they are its own, `a array of float` included); the other types keep
 * a message of ours.
 */
function wrongType(name: string, t: FieldType, v: unknown): string {
  const f = `Field \`${name}\``;
  if (t === 'int32' && ((typeof v === 'number' && Number.isInteger(v) && v > INT32_MAX) || (typeof v === 'bigint' && v > INT32_MAX))) {
    return `${f} exceeds maximum value of int32.`;
  }
  const base = t.endsWith('[]') ? t.slice(0, -2) : t;
  if (REFERENCE_NOUNS[base] === undefined) return `field \`${name}\` must be ${typeNoun(t)}, got ${describe(v)}`;
  if (!t.endsWith('[]')) return `${f} must be ${REFERENCE_NOUNS[base]}.`;
  if (!Array.isArray(v)) return `${f} must be an array.`;
  return `${f} must be ${base === 'float' || base === 'bool' ? 'a' : 'an'} array of ${base}.`;
}

const REFERENCE_NOUNS: Record<string, string> = { string: 'a string', int32: 'an int32', int64: 'an int64', float: 'a float', bool: 'a bool' };

/** Infers a field type for `auto` fields. Undefined when the value cannot be typed (null, empty array). */
export function detectType(v: unknown, nested: boolean): FieldType | undefined {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'bigint') return 'int64';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) {
    if (v.length === 0) return undefined;
    const first = v.find((x) => x !== null && x !== undefined);
    if (first === undefined) return undefined;
    if (typeof first === 'string') return 'string[]';
    if (typeof first === 'boolean') return 'bool[]';
    if (typeof first === 'number' || typeof first === 'bigint') {
      return v.every((x) => typeof x === 'bigint' || (typeof x === 'number' && Number.isInteger(x))) ? 'int64[]' : 'float[]';
    }
    if (isPlainObject(first) && nested) return 'object[]';
    return undefined;
  }
  if (isPlainObject(v) && nested) return 'object';
  return undefined;
}

/** `fatal`: the value fails its document under every dirty_values mode (an image that is not one). */
type Outcome = { ok: true; value: IndexValue; changed: boolean } | { ok: false; message: string; fatal?: boolean };

/** Coerces `v` to the field's type. */
export function coerceValue(field: Pick<Field, 'name' | 'type' | 'num_dim'>, v: unknown, mode: DirtyValues): Outcome {
  const t = field.type;
  const coerce = mode === 'coerce_or_reject' || mode === 'coerce_or_drop';
  const mismatch = (): Outcome => ({ ok: false, message: wrongType(field.name, t, v) });
  if (t === 'string*') {
    if (Array.isArray(v)) {
      const out: string[] = [];
      for (const x of v) {
        const s = toStr(x, true);
        if (s === FAIL) return mismatch();
        out.push(s as string);
      }
      return { ok: true, value: out, changed: v.some((x) => typeof x !== 'string') };
    }
    const s = toStr(v, true);
    if (s === FAIL) return mismatch();
    return { ok: true, value: s, changed: typeof v !== 'string' };
  }
  if (t === 'float[]' && field.num_dim !== undefined) {
    if (!Array.isArray(v)) return mismatch();
    if (v.length !== field.num_dim) {
      return { ok: false, message: `Field \`${field.name}\` must have ${field.num_dim} dimensions.` };
    }
    const out = new Array<number>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        return { ok: false, message: `field \`${field.name}\` must be an array of ${field.num_dim} numbers; element ${i} is ${describe(x)}` };
      }
      out[i] = x;
    }
    return { ok: true, value: out, changed: false };
  }
  if (t === 'image') {
    // never coerced nor dropped: a document whose image is not one fails (src/embed/image/format.ts)
    try {
      checkImage(v);
    } catch (e) {
      if (!(e instanceof ImageError)) throw e;
      return { ok: false, message: `field \`${field.name}\` ${e.message}`, fatal: true };
    }
    return { ok: true, value: v as string, changed: false };
  }
  if (t === 'geopoint' || t === 'geopoint[]') return coerceGeo(field.name, t, v, coerce);
  if (t === 'object') return isPlainObject(v) ? { ok: true, value: [], changed: false } : mismatch();
  if (t === 'object[]') {
    return Array.isArray(v) && v.every((x) => isPlainObject(x)) ? { ok: true, value: [], changed: false } : mismatch();
  }
  if (t.endsWith('[]')) {
    const base = t.slice(0, -2);
    let arr: unknown[];
    if (Array.isArray(v)) arr = v;
    else if (coerce && v !== null && typeof v !== 'object') arr = [v];
    else return mismatch();
    const out: Scalar[] = new Array(arr.length);
    let changed = arr !== v;
    for (let i = 0; i < arr.length; i++) {
      const c = coerceScalar(base, arr[i], coerce);
      if (c === FAIL) return { ok: false, message: wrongType(field.name, t, arr) };
      if (c !== arr[i]) changed = true;
      out[i] = c;
    }
    return { ok: true, value: out, changed };
  }
  const c = coerceScalar(t, v, coerce);
  if (c === FAIL) return mismatch();
  return { ok: true, value: c, changed: c !== v };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)}`;
  if (typeof v === 'bigint') return `the number ${v}`;
  if (typeof v === 'number' && (v > INT32_MAX || v < INT32_MIN) && Number.isInteger(v)) return `the number ${v} (out of range)`;
  return `${typeof v} ${String(v)}`;
}

/**
 * Visits every leaf of a nested document as (flattened name, value, inObjectArray).
 * Objects are visited too (their own name), so that `object` fields validate.
 */
function flatten(
  obj: Record<string, unknown>,
  prefix: string,
  inArray: boolean,
  out: Map<string, { value: unknown; inArray: boolean }>,
  depth = 1,
): void {
  // JSON text is bounded when it is read (json.ts); a document handed over as an object is bounded here
  if (depth > INPUT_LIMITS.maxJsonDepth) docError(`the document nests objects deeper than ${INPUT_LIMITS.maxJsonDepth} levels`);
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    const name = prefix ? `${prefix}.${k}` : k;
    if (isPlainObject(v)) {
      add(out, name, v, inArray);
      flatten(v, name, inArray, out, depth + 1);
    } else if (Array.isArray(v) && v.length > 0 && v.every((x) => isPlainObject(x))) {
      add(out, name, v, inArray);
      for (const el of v as Record<string, unknown>[]) flatten(el, name, true, out, depth + 1);
    } else add(out, name, v, inArray);
  }
}

function add(out: Map<string, { value: unknown; inArray: boolean }>, name: string, v: unknown, inArray: boolean) {
  if (!inArray) {
    out.set(name, { value: v, inArray });
    return;
  }
  // Inside object[]: gather one array of values per leaf name.
  const cur = out.get(name);
  const vals = Array.isArray(v) && !v.every((x) => isPlainObject(x)) ? v : [v];
  if (cur && cur.inArray && Array.isArray(cur.value)) {
    const into = cur.value as unknown[];
    for (const x of vals) into.push(x); // not push(...vals): an array of 10^5 values would overflow the stack
  }
  else out.set(name, { value: [...vals], inArray: true });
}

/** A parsed import line as a document, or the BAD_DOCUMENT error naming what it is instead. */
export function documentObject(input: unknown): Record<string, unknown> {
  if (!isPlainObject(input)) docError(NOT_A_DOCUMENT);
  return input;
}

/** JSON that is not an object, in the reference's words. */
const NOT_A_DOCUMENT = 'Bad JSON: not a properly formed document.';

export interface PrepareOptions {
  mode: DirtyValues;
  /** Id to use when the document has none. */
  generateId: () => string;
  /**
   * The caller hands the input over (a document it has just parsed): `stored` is then the
   * input itself, changed in place, rather than a copy. Default false.
   */
  owned?: boolean;
  /**
   * The document updates a stored one: a required field with `store: false` may be absent,
   * since it was never stored to be merged back. Default false.
   */
  updatesStored?: boolean;
  /**
   * `store: false` fields whose values were checked and left out of a cluster command
   * (src/cluster/unstored.ts), each with null (a valid value: the field is present) or the
   * message it failed with; the document holds a placeholder where each value was.
   */
  unstored?: Readonly<Record<string, string | null>>;
}

/**
 * Validates and coerces one document. Throws FathomError(BAD_DOCUMENT) with one precise message.
 */
export function prepareDocument(schema: Schema, input: unknown, opts: PrepareOptions): PreparedDocument {
  if (!isPlainObject(input)) docError(NOT_A_DOCUMENT);
  const doc = input;
  let id: string;
  if (doc.id === undefined || doc.id === null) {
    id = opts.generateId();
  } else id = validateId(doc.id);

  const nested = schema.record.enable_nested_fields;
  const mode = opts.mode;
  const idGenerated = !('id' in doc);
  let asGiven = idGenerated || (doc.id !== undefined && doc.id !== null);
  // Hot (every imported document): an import hands over what it parsed, and copying it
  // was half of this function's own time.
  const stored: Record<string, unknown> = opts.owned ? doc : { ...doc };
  if (doc.id === undefined || doc.id === null) stored.id = id;
  const values: Array<[Field, IndexValue]> = [];
  const discovered: Array<Omit<FieldDef, 'id'>> = [];
  const seen = new Set<string>();

  // Hot path (every imported document): without nested fields, walk the keys directly
  // instead of building an entry per key.
  let flat: Map<string, { value: unknown; inArray: boolean }> | undefined;
  if (nested) {
    flat = new Map();
    flatten(doc, '', false, flat);
  }
  const names = flat ? [...flat.keys()] : Object.keys(doc);
  const unstored = opts.unstored;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (name === 'id') continue;
    if (unstored !== undefined && Object.hasOwn(unstored, name)) {
      // its value's check, made where it was, fails the document here as the value would have
      const failed = unstored[name];
      if (failed) docError(failed);
      seen.add(name);
      delete stored[name];
      continue;
    }
    const entry = flat?.get(name);
    const value = entry ? entry.value : doc[name];
    const inArray = entry ? entry.inArray : false;
    let field = schema.resolve(name);
    if (value === null || value === undefined) continue; // null means absent; required check below
    if (!field) {
      if (!nested || !name.includes('.')) continue; // stored, not indexed
      // A child of a declared object field is indexed with a detected type.
      const parent = ancestorObjectField(schema, name);
      if (!parent) continue;
      const t = detectType(value, true);
      if (!t || t === 'object' || t === 'object[]') continue;
      const def = discoveredDef(name, inArray && !t.endsWith('[]') ? (`${t}[]` as FieldType) : t, parent);
      discovered.push(def);
      field = { ...def, id: -1, kind: kindOf(def.type), isArray: def.type.endsWith('[]') } as Field;
    } else if (field.pattern || field.type === 'auto') {
      // Pattern and auto fields become concrete fields of the detected type.
      let t: FieldType | undefined = field.type === 'auto' ? detectType(value, nested) : field.type;
      if (!t) continue;
      if (inArray && !t.endsWith('[]') && t !== 'string*') t = `${t}[]` as FieldType;
      const def = discoveredDef(name, t, field);
      if (field.pattern) {
        discovered.push(def);
        field = { ...def, id: -1, kind: kindOf(def.type), isArray: def.type.endsWith('[]') } as Field;
      } else {
        // a named `auto` field: its type is fixed by the first document
        discovered.push(def);
        field = { ...def, id: field.id, kind: kindOf(def.type), isArray: def.type.endsWith('[]') } as Field;
      }
    }
    seen.add(name);
    if (field.kind === 'object') {
      const r = coerceValue(field, value, 'reject');
      if (!r.ok) docError(r.message);
      continue;
    }
    if (mode === 'drop') {
      const r = coerceValue(field, value, 'reject');
      if (!r.ok && r.fatal) docError(r.message);
      if (r.ok) values.push([field, r.value]);
      else {
        dropField(stored, name, field, r.message);
        asGiven = false;
      }
      continue;
    }
    const r = coerceValue(field, value, mode);
    if (r.ok) {
      if (r.changed && !name.includes('.')) {
        stored[name] = r.value;
        asGiven = false;
      }
      values.push([field, r.value]);
    } else if (mode === 'coerce_or_drop' && !r.fatal) {
      dropField(stored, name, field, r.message);
      asGiven = false;
    } else {
      docError(r.message);
    }
  }

  // Required fields.
  for (const f of schema.fields) {
    if (f.optional || f.pattern || f.embed || f.type === 'auto') continue;
    if (seen.has(f.name)) continue;
    if (opts.updatesStored && f.store === false) continue;
    if (f.kind === 'object' && hasPath(doc, f.name)) continue;
    if (hasPath(doc, f.name) && getPath(doc, f.name) !== null) {
      docError(`field \`${f.name}\` could not be indexed and it is required`);
    }
    docError(`Field \`${f.name}\` has been declared in the schema, but is not found in the document.`);
  }
  return { id, stored, values, discovered, asGiven, idGenerated };
}

function dropField(stored: Record<string, unknown>, name: string, field: Field, message: string) {
  if (!field.optional && !field.pattern) docError(`${message} (the field is required, so it cannot be dropped)`);
  if (!name.includes('.')) delete stored[name];
}

function kindOf(t: FieldType) {
  switch (t) {
    case 'string':
    case 'string[]':
    case 'string*':
      return 'text';
    case 'bool':
    case 'bool[]':
      return 'bool';
    case 'object':
    case 'object[]':
      return 'object';
    case 'image':
      return 'image';
    case 'geopoint':
    case 'geopoint[]':
      return 'geo';
    default:
      return 'number';
  }
}

function discoveredDef(name: string, type: FieldType, from: Pick<FieldDef, 'facet' | 'index' | 'locale' | 'stem' | 'infix' | 'sort' | 'optional'>): Omit<FieldDef, 'id'> {
  const numeric = ['int32', 'int64', 'float', 'bool'].includes(type);
  return {
    name,
    type,
    optional: true,
    facet: from.facet,
    sort: numeric ? true : from.sort && !type.endsWith('[]'),
    index: from.index,
    store: true,
    infix: from.infix,
    stem: from.stem,
    locale: from.locale,
  };
}

function ancestorObjectField(schema: Schema, name: string): Field | undefined {
  let i = name.lastIndexOf('.');
  while (i > 0) {
    const f = schema.resolve(name.slice(0, i));
    if (f && (f.type === 'object' || f.type === 'object[]')) return f;
    i = name.lastIndexOf('.', i - 1);
  }
  return undefined;
}

function hasPath(doc: Record<string, unknown>, name: string): boolean {
  if (Object.hasOwn(doc, name)) return true;
  return getPath(doc, name) !== undefined;
}

/** Value at a dotted path (arrays of objects collect their members' values); own keys only. */
export function getPath(doc: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(doc, name)) return doc[name];
  const parts = name.split('.');
  let cur: unknown = doc;
  for (const p of parts) {
    if (Array.isArray(cur)) {
      const vals: unknown[] = [];
      for (const el of cur) {
        const v = isPlainObject(el) ? ownValue(el, p) : undefined;
        if (v !== undefined) {
          if (Array.isArray(v)) {
            for (const x of v) vals.push(x);
          } else vals.push(v);
        }
      }
      cur = vals.length ? vals : undefined;
    } else if (isPlainObject(cur)) {
      cur = ownValue(cur, p);
    } else return undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}
