/**
 * src/keys/redact.ts: every key value in a text masked, in whatever encoding it is written.
 *
 * Key values: those a request presented (given by the caller), the bootstrap key, the
 * stored values of search-only keys, the value of any other stored key, found by its
 * prefix and SHA-256 hash (all the data directory keeps of it), and scoped search keys that
 * a stored search-only key signed (found by their parent's prefix and checked by HMAC).
 *
 * Readings: the text is searched as written; as JSON string content when it is a JSON line
 * (`\"`, `\u0041`; a string's own quotes end every match, so a mask never crosses them);
 * and percent-decoded up to MAX_DECODES times (`%XX` in either case, `%uXXXX`), so a value
 * encoded twice or three times is found. A value is found anywhere, inside a longer token
 * too, and the characters of the original text that spell it become `***`.
 *
 * Base64: a value known whole (or presented) is also looked for as base64 (standard and
 * URL-safe, at each of the three byte offsets, so inside a longer token too), as plain
 * text in every reading. Runs of base64 characters long enough to spell a stored key known
 * only by its hash (as many as its value's bytes take; a key of unknown length is taken to
 * be of the generated length), or a scoped key (64), are also decoded, from each of the
 * four offsets: that is where such a key is found base64-encoded, and where a scoped key
 * (itself base64) shows its parent's prefix. Shorter runs are not decoded: decoding every
 * word of every line cost more than the rest of the search. Runs of a decoded reading are
 * decoded once more from MIN_NESTED_RUN characters (a scoped key encoded again).
 *
 * Cost: one pass over each reading, looking up two characters per position in a table of
 * the known values' first two characters; only a hit looks further. A stored key whose
 * length was not recorded (created before `value_length`) is hashed at each length up to
 * the end of its token, within HASH_BUDGET hashes per text; past the budget, the rest of
 * such a token is masked whole.
 */
import { createHash } from 'node:crypto';
import { KEY_LIMITS } from '../defaults.js';
import { digestOf, DIGEST_CHARS } from './scoped.js';

const MASK = '***';
/** Percent-decodings tried on top of the text as written. */
const MAX_DECODES = 3;
/** SHA-256 and HMAC computations one text may cost. */
const HASH_BUDGET = 1024;
/** Shortest run of base64 characters decoded, unless a stored key takes fewer (a scoped key takes 64). */
const MIN_BASE64_RUN = 64;
/** Shortest run decoded a second time (a scoped key, itself base64, encoded again: 86 characters or more). */
const MIN_NESTED_RUN = 86;
/** Longest scoped key parameters looked at, in characters. */
const MAX_SCOPED_JSON = 4096;

/** What is known of the stored keys (and the bootstrap key). */
export interface KnownKeys {
  /** Values known whole: the bootstrap key, stored values of search-only keys. */
  values: readonly string[];
  /** Keys kept as a prefix and a SHA-256 hash (hex), with their length when it was recorded. */
  hashed: readonly { prefix: string; hash: string; length?: number }[];
  /** Values of the stored keys that may sign scoped search keys. */
  parents: readonly string[];
}

interface Candidate {
  value?: string;
  hash?: string;
  length?: number;
  parent?: string;
}

/** A reading of the text: its characters, and the span of the original text any of them spell. */
interface Reading {
  text: string;
  /** The span [start, end) of the original text that characters [a, b) of this reading stand for. */
  span(a: number, b: number): [number, number];
}

const hex = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
function hexAt(t: string, i: number, n: number): number {
  if (i + n > t.length) return -1;
  let v = 0;
  for (let k = 0; k < n; k++) {
    const h = hex(t.charCodeAt(i + k));
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/** A decoding step at position i: the characters it consumes (0: none, the character stays), the code in `stepped.code`. */
type Step = (t: string, i: number) => number;
const stepped = { code: 0 };

const percentStep: Step = (t, i) => {
  if (t.charCodeAt(i) !== 37) return 0; // %
  const v = hexAt(t, i + 1, 2);
  if (v >= 0) {
    stepped.code = v;
    return 3;
  }
  const u = t.charCodeAt(i + 1);
  if (u === 117 || u === 85) {
    const w = hexAt(t, i + 2, 4);
    if (w >= 0) {
      stepped.code = w;
      return 6;
    }
  }
  return 0;
};

const JSON_ESCAPES: Record<string, number> = { '"': 34, '\\': 92, '/': 47, b: 8, f: 12, n: 10, r: 13, t: 9 };
/** JSON string content: escapes decoded; a bare quote (a string's own) becomes NUL, which no key holds. */
const jsonStep: Step = (t, i) => {
  const c = t.charCodeAt(i);
  if (c === 34) {
    stepped.code = 0;
    return 1;
  }
  if (c !== 92) return 0;
  const e = t[i + 1];
  if (e === 'u') {
    const w = hexAt(t, i + 2, 4);
    if (w < 0) return 0;
    stepped.code = w;
    return 6;
  }
  const v = e === undefined ? undefined : JSON_ESCAPES[e];
  if (v === undefined) return 0;
  stepped.code = v;
  return 2;
};

/** The reading `step` makes of `r`, or undefined when it changes nothing. */
function derive(r: Reading, step: Step): Reading | undefined {
  const t = r.text;
  const n = t.length;
  const codes = new Uint16Array(n);
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  let k = 0;
  let changed = false;
  for (let i = 0; i < n; k++) {
    const used = step(t, i);
    from[k] = i;
    if (used > 0) {
      changed = true;
      codes[k] = stepped.code;
      i += used;
    } else codes[k] = t.charCodeAt(i++);
    to[k] = i;
  }
  if (!changed) return undefined;
  return { text: Buffer.from(codes.buffer, 0, k * 2).toString('utf16le'), span: (a, b) => r.span(from[a]!, to[b - 1]!) };
}

/** Base64 digit values (standard and URL-safe alphabets); -1 for other characters. */
const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;
B64[45] = 62; // -
B64[95] = 63; // _
const b64 = (c: number): number => (c < 128 ? B64[c]! : -1);
/** Decoded bytes of base64Readings, reused (it is turned into a string before the next use). */
let scratch = new Uint8Array(1024);

/**
 * The four base64 readings of r: its runs of at least `minRun` base64 characters decoded
 * (as Latin-1 characters) from each offset, one run after another with a NUL between.
 */
function base64Readings(r: Reading, minRun = MIN_BASE64_RUN): Reading[] {
  const t = r.text;
  const runs: number[] = [];
  for (let i = 0; i < t.length; ) {
    if (b64(t.charCodeAt(i)) < 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < t.length && b64(t.charCodeAt(j)) >= 0) j++;
    if (j - i >= minRun) runs.push(i, j);
    i = j;
  }
  if (runs.length === 0) return [];
  const out: Reading[] = [];
  if (scratch.length < t.length + runs.length) scratch = new Uint8Array(2 * (t.length + runs.length));
  const bytes = scratch;
  for (let a = 0; a < 4; a++) {
    /** Per decoded run: where it starts in the reading, where its first group starts in r, where the run ends in r. */
    const segs: number[] = [];
    let k = 0;
    for (let x = 0; x < runs.length; x += 2) {
      const rs = runs[x]! + a;
      const re = runs[x + 1]!;
      if (re - rs < minRun) continue;
      segs.push(k, rs, re);
      // (every character of a run is a base64 digit: B64 has no -1 to meet here)
      for (let g = rs; g + 1 < re; g += 4) {
        const v0 = B64[t.charCodeAt(g)]!;
        const v1 = B64[t.charCodeAt(g + 1)]!;
        bytes[k++] = (v0 << 2) | (v1 >> 4);
        if (g + 2 >= re) break;
        const v2 = B64[t.charCodeAt(g + 2)]!;
        bytes[k++] = ((v1 & 15) << 4) | (v2 >> 2);
        if (g + 3 >= re) break;
        bytes[k++] = ((v2 & 3) << 6) | B64[t.charCodeAt(g + 3)]!;
      }
      bytes[k++] = 0;
    }
    if (segs.length === 0) continue;
    const span = (p: number, q: number): [number, number] => {
      let s = 0;
      while (s + 3 < segs.length && segs[s + 3]! <= p) s += 3;
      const [dec, rs, re] = [segs[s]!, segs[s + 1]!, segs[s + 2]!];
      return r.span(rs + 4 * Math.floor((p - dec) / 3), Math.min(re, rs + 4 * Math.floor((q - 1 - dec) / 3) + 4));
    };
    out.push({ text: Buffer.from(bytes.buffer, 0, k).toString('latin1'), span });
  }
  return out;
}

/** The text as written (or as JSON string content) and percent-decoded, up to MAX_DECODES times. */
function plainReadings(text: string, json: boolean): Reading[] {
  const written: Reading = { text, span: (a, b) => [a, b] };
  // a JSON line with no escape reads as written, with NUL for its quotes (as jsonStep reads them)
  const base = !json ? written : text.includes('\\') ? (derive(written, jsonStep) ?? written) : { text: text.replaceAll('"', '\u0000'), span: written.span };
  const plain: Reading[] = [base];
  for (let r = base, n = 0; n < MAX_DECODES && r.text.includes('%'); n++) {
    const next = derive(r, percentStep);
    if (!next) break;
    plain.push(next);
    r = next;
  }
  return plain;
}

/** Every reading of a text (see the module comment). */
function readings(text: string, json: boolean, minRun: number): Reading[] {
  const plain = plainReadings(text, json);
  const decoded = plain.flatMap((r) => base64Readings(r, minRun));
  return [...plain, ...decoded, ...decoded.flatMap((r) => base64Readings(r, MIN_NESTED_RUN))];
}

/** `text` with `***` over the characters that spell `spans` (original coordinates), overlapping ones joined. */
function applySpans(text: string, spans: [number, number][]): string {
  if (spans.length === 0) return text;
  spans.sort((x, y) => x[0] - y[0] || y[1] - x[1]);
  let out = '';
  let at = 0;
  for (const [s, e] of spans) {
    if (e <= at) continue;
    if (s >= at) out += text.slice(at, s) + MASK;
    at = e;
  }
  return out + text.slice(at);
}

/**
 * `text` with `***` for what the first group of `pattern` (flags `dg`) matches in the text or
 * in any percent-decoding of it: a key-named `name=value` however its name is encoded.
 */
export function maskPattern(text: string, pattern: RegExp): string {
  if (!text.includes('%') && text.search(pattern) < 0) return text;
  const spans: [number, number][] = [];
  for (const r of plainReadings(text, false)) {
    for (const m of r.text.matchAll(pattern)) {
      const at = m.indices?.[1];
      if (at && at[1] > at[0]) spans.push(r.span(at[0], at[1]));
    }
  }
  return applySpans(text, spans);
}

/**
 * A value and the base64 characters that spell it wherever it starts in the bytes encoded
 * (at byte offset 0, 1 or 2 of a 3-byte group: the characters that depend on its bytes
 * alone), in both alphabets; forms shorter than a value's prefix are left out.
 */
function withBase64(value: string): string[] {
  const out = [value];
  for (let o = 0; o < 3; o++) {
    const full = Buffer.concat([Buffer.alloc(o), Buffer.from(value, 'latin1')]).toString('base64');
    const form = full.slice([0, 2, 3][o], Math.floor(((o + value.length) * 8) / 6));
    if (form.length < 2 * KEY_LIMITS.prefixLength) continue;
    out.push(form);
    const safe = form.replace(/\+/g, '-').replace(/\//g, '_');
    if (safe !== form) out.push(safe);
  }
  return out;
}

/** Can character c be part of a key value? */
const inKey = (c: number): boolean => c >= 0x21 && c <= 0x7e;
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Finds and masks key values; one is made per set of known keys. */
export class KeyFinder {
  private readonly byPrefix = new Map<string, Candidate[]>();
  /** First two characters of every candidate's prefix (128 x 128 flags). */
  private readonly pairs = new Uint8Array(128 * 128);
  /** Known values shorter than a prefix (a bootstrap key may be): looked for like presented ones. */
  private readonly short: string[] = [];
  /** Shortest run of base64 characters decoded: one that could spell a key known by hash, or a scoped key. */
  private minRun = MIN_BASE64_RUN;

  constructor(known: KnownKeys = { values: [], hashed: [], parents: [] }) {
    for (const value of known.values) for (const form of withBase64(value)) this.add(form, { value: form });
    for (const h of known.hashed) {
      this.add(h.prefix, { hash: h.hash, ...(h.length !== undefined ? { length: h.length } : {}) });
      this.minRun = Math.min(this.minRun, Math.floor(((h.length ?? KEY_LIMITS.generatedLength) * 8) / 6));
    }
    for (const parent of known.parents) this.add(parent, { parent });
  }

  private add(value: string, c: Candidate): void {
    if (value.length < KEY_LIMITS.prefixLength) {
      if (c.value !== undefined && c.value !== '') this.short.push(c.value);
      return;
    }
    const prefix = value.slice(0, KEY_LIMITS.prefixLength);
    const c0 = prefix.charCodeAt(0);
    const c1 = prefix.charCodeAt(1);
    if (c0 < 128 && c1 < 128) this.pairs[c0 * 128 + c1] = 1;
    const list = this.byPrefix.get(prefix);
    if (list) list.push(c);
    else this.byPrefix.set(prefix, [c]);
  }

  /**
   * `text` with `***` for every key value in it: known ones and those in `presented`.
   * `json`: the text is a JSON line (its strings' escapes are read, and a mask never takes
   * in a quote that ends a string, so the line stays valid JSON).
   */
  mask(text: string, opts: { presented?: readonly string[]; json?: boolean } = {}): string {
    const presented = [...this.short];
    for (const p of opts.presented ?? []) {
      if (p === '') continue;
      presented.push(...withBase64(p));
      // a value sent in a query string with `+` for its spaces
      if (p.includes(' ')) presented.push(p.replace(/ /g, '+'));
    }
    if (this.byPrefix.size === 0 && presented.length === 0) return text;
    const spans: [number, number][] = [];
    const budget = { left: HASH_BUDGET };
    for (const r of readings(text, opts.json ?? false, this.minRun)) this.scan(r, presented, spans, budget);
    return applySpans(text, spans);
  }

  private scan(r: Reading, presented: readonly string[], spans: [number, number][], budget: { left: number }): void {
    const t = r.text;
    const add = (s: number, e: number) => spans.push(r.span(s, e));
    for (const p of presented) for (let i = t.indexOf(p); i >= 0; i = t.indexOf(p, i + 1)) add(i, i + p.length);
    if (this.byPrefix.size === 0) return;
    const last = t.length - KEY_LIMITS.prefixLength;
    for (let i = 0; i <= last; i++) {
      const c0 = t.charCodeAt(i);
      const c1 = t.charCodeAt(i + 1);
      if (c0 >= 128 || c1 >= 128 || this.pairs[c0 * 128 + c1] === 0) continue;
      const list = this.byPrefix.get(t.substr(i, KEY_LIMITS.prefixLength));
      if (!list) continue;
      for (const c of list) {
        if (c.value !== undefined) {
          if (t.startsWith(c.value, i)) add(i, i + c.value.length);
        } else if (c.hash !== undefined) {
          this.hashed(r, i, c, budget, add);
        } else if (c.parent !== undefined) {
          this.scoped(t, i, c.parent, budget, add);
        }
      }
    }
  }

  /** A stored key known by hash, starting at i: tried at its length, or at each length to the end of the token. */
  private hashed(r: Reading, i: number, c: Candidate, budget: { left: number }, add: (s: number, e: number) => void): void {
    const t = r.text;
    let runEnd = i;
    while (runEnd < t.length && runEnd - i < KEY_LIMITS.maxValueLength && inKey(t.charCodeAt(runEnd))) runEnd++;
    if (c.length !== undefined) {
      if (i + c.length > runEnd) return;
      if (budget.left-- <= 0) return add(i, i + c.length);
      if (sha256(t.substr(i, c.length)) === c.hash) add(i, i + c.length);
      return;
    }
    for (let e = i + KEY_LIMITS.prefixLength; e <= runEnd; e++) {
      if (budget.left-- <= 0) return add(i, runEnd);
      if (sha256(t.slice(i, e)) === c.hash) return add(i, e);
    }
  }

  /**
   * A scoped search key whose decoded form has `parent`'s prefix at i: a base64 HMAC digest
   * before it, the parameters' JSON after it, the digest checked with the parent's value.
   */
  private scoped(t: string, i: number, parent: string, budget: { left: number }, add: (s: number, e: number) => void): void {
    const s = i - DIGEST_CHARS;
    if (s < 0 || t.charCodeAt(i - 1) !== 61) return; // '=' ends a base64 SHA-256 digest
    for (let k = s; k < i - 1; k++) if (b64(t.charCodeAt(k)) < 0) return;
    const digest = t.slice(s, i);
    const from = i + KEY_LIMITS.prefixLength;
    const until = Math.min(t.length, from + MAX_SCOPED_JSON);
    for (let e = from + 2; e <= until; e++) {
      if (t.charCodeAt(e - 1) !== 125) continue; // '}'
      if (budget.left-- <= 0) return add(s, until);
      if (digestOf(parent, t.slice(from, e)) === digest) return add(s, e);
    }
  }
}
