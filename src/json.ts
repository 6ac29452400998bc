/**
 * JSON that keeps 64-bit integers exact.
 *
 * `JSON.parse` turns 9007199254740993 into 9007199254740992. Documents may carry int64
 * values beyond 2^53, so a line that contains an integer of 16 or more digits is parsed with
 * lossless-json instead, and integers outside the safe range become `bigint`. Every other
 * line takes the fast native path (hot: once per imported line).
 */
import { createRequire } from 'node:module';
import type { LosslessNumber } from 'lossless-json';
import { INPUT_LIMITS } from './defaults.js';
import { FathomError } from './errors.js';
import { referenceParseError } from './io/reference-json.js';

// lossless-json is loaded on first use: most processes never see a 16-digit number, and
// loading it costs a noticeable part of a CLI command's start-up.
let lossless: typeof import('lossless-json') | undefined;
function losslessLib(): typeof import('lossless-json') {
  lossless ??= createRequire(import.meta.url)('lossless-json') as typeof import('lossless-json');
  return lossless;
}
const losslessParse = (text: string) => losslessLib().parse(text);
const isLosslessNumber = (v: unknown): boolean => losslessLib().isLosslessNumber(v);

/**
 * An integer literal of 16 or more digits: a digit run not preceded by a digit or `.` and
 * not followed by a digit, `.` or an exponent. Long fractions (`0.12345678901234567`, as
 * float vectors are often written) stay on the native path: they are floats either way.
 */
const LONG_INTEGER = /(?<![\d.])\d{16,}(?![\d.eE])/;

/**
 * Is there a run of 16 digits anywhere in `text`? Looks at one character in 16 (a run of 16
 * covers every 16th position), and only around a digit it lands on measures the run. Hot:
 * once per imported line, where /\d{16}/ looks at every character.
 *
 *   text   ....a....b....c1234567890123456d....
 *   probe         ^               ^              (every 16th character)
 *   a digit: scan left and right for the run's ends
 */
function hasDigitRun16(text: string): boolean {
  const n = text.length;
  let j = 15;
  while (j < n) {
    let c = text.charCodeAt(j);
    if (c < 48 || c > 57) {
      j += 16;
      continue;
    }
    let lo = j;
    while (lo > 0) {
      c = text.charCodeAt(lo - 1);
      if (c < 48 || c > 57) break;
      lo--;
    }
    let hi = j + 1;
    while (hi < n) {
      c = text.charCodeAt(hi);
      if (c < 48 || c > 57) break;
      hi++;
    }
    if (hi - lo >= 16) return true;
    j = hi + 16; // position hi is not a digit: a run must start after it
  }
  return false;
}

/** Does this JSON text hold an integer literal of 16+ digits? (hot: once per imported line) */
export function hasLongInteger(text: string): boolean {
  // the 16-digit probe is cheap and almost always false
  return hasDigitRun16(text) && LONG_INTEGER.test(text);
}

function reviveNumber(n: LosslessNumber | unknown): unknown {
  if (!isLosslessNumber(n)) return n;
  const s = (n as LosslessNumber).value;
  if (/^-?\d+$/.test(s)) {
    const v = Number(s);
    if (Number.isSafeInteger(v)) return v;
    return BigInt(s);
  }
  return Number(s);
}

function convert(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (isLosslessNumber(v)) return reviveNumber(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = convert(v[i]);
    return v;
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) o[k] = convert(o[k]);
  return o;
}

/**
 * Does `text` nest objects and arrays more than `max` deep? Counting `{` and `[` (native
 * indexOf) settles almost every text, as few hold more opening brackets than `max`; only
 * such a text is scanned, outside strings. Hot: once per imported line.
 */
export function nestsDeeper(text: string, max: number): boolean {
  let opens = 0;
  for (let i = text.indexOf('{'); i >= 0 && opens <= max; i = text.indexOf('{', i + 1)) opens++;
  for (let i = text.indexOf('['); i >= 0 && opens <= max; i = text.indexOf('[', i + 1)) opens++;
  if (opens <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/** Refuses JSON text nested deeper than INPUT_LIMITS.maxJsonDepth (its readers and writers recurse). */
function checkDepth(text: string): void {
  if (nestsDeeper(text, INPUT_LIMITS.maxJsonDepth)) {
    throw new FathomError('BAD_JSON', `JSON nests objects and arrays deeper than ${INPUT_LIMITS.maxJsonDepth} levels`);
  }
}

/**
 * Parses one JSON line and says whether it needed the lossless parser (it holds a run of
 * integer of 16+ digits, so possibly beyond 2^53). Hot: once per imported line.
 */
export function parseJsonLine(text: string): { value: unknown; lossless: boolean } {
  checkDepth(text);
  const lossless = hasLongInteger(text);
  try {
    return { value: lossless ? convert(losslessParse(text)) : JSON.parse(text), lossless };
  } catch (e) {
    // a document line's error is the reference's, whose clients may match its text
    const reference = referenceParseError(text);
    throw new FathomError('BAD_JSON', reference ? `Bad JSON: ${reference}` : `malformed JSON: ${(e as Error).message}`);
  }
}

/** Parses JSON text; throws FathomError(BAD_JSON) with the parser's reason. */
export function parseJson(text: string): unknown {
  checkDepth(text);
  try {
    if (!hasLongInteger(text)) return JSON.parse(text);
    return convert(losslessParse(text));
  } catch (e) {
    throw new FathomError('BAD_JSON', `malformed JSON: ${(e as Error).message}`);
  }
}

function stringifySlow(v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v);
    return s === undefined ? 'null' : s;
  }
  if (Array.isArray(v)) return '[' + v.map((x) => (x === undefined ? 'null' : stringifySlow(x))).join(',') + ']';
  const parts: string[] = [];
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (x === undefined || typeof x === 'function') continue;
    parts.push(JSON.stringify(k) + ':' + stringifySlow(x));
  }
  return '{' + parts.join(',') + '}';
}

/** JSON.stringify that writes bigint values as plain integers. */
export function stringifyJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch (e) {
    if (e instanceof TypeError && /BigInt/i.test(e.message)) return stringifySlow(v);
    throw e;
  }
}

/** Is the code unit (or byte) JSON whitespace: space, tab, line feed or carriage return? */
export function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// Keys of documents and of request bodies are user text: `constructor` or `__proto__` name a
// field like any other word. `obj[key]` would read Object.prototype's member for a key the
// object lacks, and `obj[key] = v` with `__proto__` would set the object's prototype (and,
// on an object reached that way, Object.prototype's own members) instead of a field.

/** The value `obj` itself holds under `key` (never an inherited member). */
export function ownValue(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Sets `key` as an own property of `obj`, `__proto__` included. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/**
 * Where a value holds an object key named `__proto__` (`what.a.__proto__`), or undefined.
 * Records in the data directory are msgpack, whose decoder renames such a key, so free-form
 * objects kept there (metadata, a preset's parameters) are refused one rather than changed.
 */
export function protoKeyPath(v: unknown, what: string): string | undefined {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = protoKeyPath(v[i], `${what}[${i}]`);
      if (p) return p;
    }
  } else if (v !== null && typeof v === 'object') {
    for (const k of Object.keys(v)) {
      if (k === '__proto__') return `${what}.__proto__`;
      const p = protoKeyPath((v as Record<string, unknown>)[k], `${what}.${k}`);
      if (p) return p;
    }
  }
  return undefined;
}

/** The message refusing what protoKeyPath found. */
export function protoKeyMessage(path: string): string {
  return `\`${path}\`: an object key named \`__proto__\` cannot be stored; use another name`;
}

const BIG_MARK = /"\\u0000big:(-?\d+)"/g;

/** Indented JSON for people, with bigint values written as plain integers. */
export function stringifyPretty(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2);
  } catch (e) {
    if (!(e instanceof TypeError && /BigInt/i.test(e.message))) throw e;
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `\u0000big:${x}` : x), 2).replace(BIG_MARK, '$1');
  }
}
