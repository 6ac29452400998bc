/**
 * src/pattern.ts: regular expressions that users write (a key's `collections` entries,
 * schema field names such as `.*_facet`, `facet_by` globs such as `*_facet`), matched
 * against a whole name in time linear in the name.
 *
 * Users write JavaScript syntax, and every pattern keeps the meaning JavaScript gives it.
 * JavaScript's engine backtracks, though, and can take exponential time (`(a+)+$` against
 * 75 `a`s and a `!`), so it never runs a user's pattern: `Translator` rewrites the pattern,
 * construct by construct, into RE2 syntax with the same meaning, and re2js (a JavaScript
 * port of RE2: automata, no backtracking) runs it. What keeps the meaning exact:
 *
 * - every character class, `.`, `\s`, `\w` and `\d` becomes an explicit list of code point
 *   ranges computed here (RE2's own `.` and `\s` differ from JavaScript's); `\p{...}` names
 *   RE2's table of the same Unicode property (re2js's tables agree with Node's on every
 *   code point tested, but may lag a newer Unicode version);
 * - `^`, `$`, `\b`, `\B`, groups, alternation and quantifiers mean the same in both
 *   (without the `m` flag, RE2's `$` matches only at the very end, as JavaScript's does);
 * - a pattern without the `u` flag (schema field names) works on UTF-16 code units, where
 *   `.` can match half of an emoji: both the pattern and the name then have each surrogate
 *   unit moved to a code point of its own (U+100000 + unit - 0xD800, where no character of
 *   a name can be once its surrogate pairs are split), so RE2 sees units too;
 * - Annex B's legacy forms without `u` (`\8`, octal `\12`, `\c` without a letter, `a{`,
 *   a lone `]`) are read as JavaScript reads them.
 *
 * What has no linear-time equivalent is refused: backreferences (`\1`, `\k<name>`),
 * lookahead and lookbehind, inline modifiers (`(?i:...)`), Unicode properties RE2 has no
 * table for (`\p{scx=Greek}`); so is what is too large: repetition counts above 1000,
 * patterns longer than PATTERN_LIMITS.maxLength or compiling to more than
 * PATTERN_LIMITS.maxProgramSize instructions. Writers refuse such a pattern with 400
 * (`patternProblem`); one already stored (written before these rules) matches nothing.
 *
 * Work per match is bounded: a name is matched only when its length times the program size
 * is at most PATTERN_LIMITS.maxMatchWork (every accepted pattern still covers names of 256
 * characters, the longest collection name); a longer name does not match. Compiled patterns
 * are cached (PATTERN_LIMITS.cacheSize), and each remembers its recent answers.
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { MAX_NAME_LENGTH, PATTERN_LIMITS } from './defaults.js';

/** A compiled pattern: `test` tells whether it matches a whole name. */
export interface NamePattern {
  /** The pattern as the user wrote it. */
  readonly source: string;
  /** RE2 program size (0 when the pattern is unusable and matches nothing). */
  readonly programSize: number;
  test(name: string): boolean;
}

/** Why a pattern cannot be used: `invalid` when JavaScript itself refuses its syntax. */
export class PatternError extends Error {
  constructor(
    message: string,
    readonly invalid: boolean,
  ) {
    super(message);
  }
}

// re2js is loaded on first use: most commands never match a pattern.
let re2lib: typeof import('re2js') | undefined;
function re2(): typeof import('re2js') {
  re2lib ??= createRequire(import.meta.url)('re2js') as typeof import('re2js');
  return re2lib;
}

/** Characters with a meaning in a JavaScript pattern; a name without any is matched by equality. */
const SYNTAX = /[\\^$.|?*+()[\]{}]/;

/** True when `entry` has no regular-expression syntax: as a pattern it matches exactly itself. */
export function isLiteralPattern(entry: string): boolean {
  return !SYNTAX.test(entry);
}

// ---------------------------------------------------------------------------
// Code point sets
// ---------------------------------------------------------------------------

/** Sorted, disjoint, non-adjacent inclusive ranges [lo0, hi0, lo1, hi1, ...]. */
type Ranges = number[];

const MAX_UNIT = 0xffff;
const MAX_CODE_POINT = 0x10ffff;
/** Where a lone surrogate unit goes in the unit space (see the header). */
const UNIT_SHIFT = 0x100000 - 0xd800;

function normalize(pairs: number[]): Ranges {
  const idx: number[] = [];
  for (let i = 0; i < pairs.length; i += 2) idx.push(i);
  idx.sort((a, b) => pairs[a]! - pairs[b]!);
  const out: number[] = [];
  for (const i of idx) {
    const lo = pairs[i]!;
    const hi = pairs[i + 1]!;
    const n = out.length;
    if (n > 0 && lo <= out[n - 1]! + 1) out[n - 1] = Math.max(out[n - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

function negate(r: Ranges, max: number): Ranges {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < r.length; i += 2) {
    if (r[i]! > next) out.push(next, r[i]! - 1);
    next = r[i + 1]! + 1;
  }
  if (next <= max) out.push(next, max);
  return out;
}

const DIGIT: Ranges = [0x30, 0x39];
const WORD: Ranges = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
/** JavaScript's `\s`: WhiteSpace and LineTerminator. */
const SPACE: Ranges = normalize([0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff]);
/** What `.` does not match without the `s` flag. */
const LINE_TERMINATORS: Ranges = [0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029];

function hex(c: number): string {
  return `\\x{${c.toString(16)}}`;
}

/**
 * RE2 syntax for a set (the ranges, and RE2 property classes such as `\\p{L}`), in the space
 * the names are matched in. Only a set with properties is left for RE2 to negate: those
 * come with the `u` flag, whose universe (every code point) is RE2's.
 */
function classText(r: Ranges, unicode: boolean, properties: readonly string[], negated: boolean): string {
  const pairs = unicode ? r : unitRanges(r);
  if (pairs.length === 0 && properties.length === 0) return `[^\\x{0}-\\x{${MAX_CODE_POINT.toString(16)}}]`;
  let s = negated ? '[^' : '[';
  for (let i = 0; i < pairs.length; i += 2) {
    s += pairs[i] === pairs[i + 1] ? hex(pairs[i]!) : `${hex(pairs[i]!)}-${hex(pairs[i + 1]!)}`;
  }
  return `${s}${properties.join('')}]`;
}

/** Unit ranges with the surrogate part moved where names' surrogate units go. */
function unitRanges(r: Ranges): Ranges {
  const out: number[] = [];
  for (let i = 0; i < r.length; i += 2) {
    const lo = r[i]!;
    const hi = r[i + 1]!;
    if (lo < 0xd800) out.push(lo, Math.min(hi, 0xd7ff));
    if (hi >= 0xd800 && lo <= 0xdfff) out.push(Math.max(lo, 0xd800) + UNIT_SHIFT, Math.min(hi, 0xdfff) + UNIT_SHIFT);
    if (hi > 0xdfff) out.push(Math.max(lo, 0xe000), hi);
  }
  return out;
}

function literal(c: number, unicode: boolean): string {
  if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f) return String.fromCharCode(c);
  return hex(!unicode && c >= 0xd800 && c <= 0xdfff ? c + UNIT_SHIFT : c);
}

/** General_Category values by their long names (JavaScript takes both; RE2 the short ones). */
const CATEGORY_ALIASES: Record<string, string> = {
  Other: 'C', Control: 'Cc', cntrl: 'Cc', Format: 'Cf', Unassigned: 'Cn', Private_Use: 'Co', Surrogate: 'Cs',
  Letter: 'L', Cased_Letter: 'LC', Lowercase_Letter: 'Ll', Modifier_Letter: 'Lm', Other_Letter: 'Lo', Titlecase_Letter: 'Lt', Uppercase_Letter: 'Lu',
  Mark: 'M', Combining_Mark: 'M', Spacing_Mark: 'Mc', Enclosing_Mark: 'Me', Nonspacing_Mark: 'Mn',
  Number: 'N', Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl', Other_Number: 'No',
  Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc', Dash_Punctuation: 'Pd', Close_Punctuation: 'Pe', Final_Punctuation: 'Pf',
  Initial_Punctuation: 'Pi', Other_Punctuation: 'Po', Open_Punctuation: 'Ps',
  Symbol: 'S', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk', Math_Symbol: 'Sm', Other_Symbol: 'So',
  Separator: 'Z', Line_Separator: 'Zl', Paragraph_Separator: 'Zp', Space_Separator: 'Zs',
  ASCII: 'Ascii',
};

/**
 * RE2's name for the property of a `\p{body}` JavaScript accepted: General_Category values
 * (short or long), scripts by their full names (`Script=Greek`), `Any`, `ASCII`, `Assigned`
 * and the binary properties RE2 has tables for (`Alphabetic`, `Emoji`, ...). RE2 refuses the
 * rest when it compiles: other binary properties, four-letter script codes (`sc=Grek`).
 * The tables are re2js's, JavaScript's Unicode version may be newer: they can differ on
 * characters assigned in between.
 */
function propertyName(body: string): string {
  const eq = body.indexOf('=');
  const key = eq < 0 ? '' : body.slice(0, eq);
  const value = eq < 0 ? body : body.slice(eq + 1);
  if (key === 'Script_Extensions' || key === 'scx') throw unsupported(`the Unicode property \`\\p{${body}}\` is not supported (Script_Extensions has no linear-time table; \`Script=\` has)`);
  if (key === 'Script' || key === 'sc') return value;
  return CATEGORY_ALIASES[value] ?? value;
}

// ---------------------------------------------------------------------------
// JavaScript syntax -> RE2 syntax
// ---------------------------------------------------------------------------

const unsupported = (what: string) => new PatternError(what, false);

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isOctal = (c: number) => c >= 0x30 && c <= 0x37;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** Capturing groups, and whether any is named (both change what `\1` and `\k` mean). */
function scanGroups(src: string): { count: number; named: boolean } {
  let count = 0;
  let named = false;
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') {
      if (src[i + 1] !== '?') count++;
      else if (src[i + 2] === '<' && src[i + 3] !== '=' && src[i + 3] !== '!') {
        count++;
        named = true;
      }
    }
  }
  return { count, named };
}

/**
 * One pass over a pattern JavaScript has accepted, writing RE2 syntax with the same meaning
 * and estimating the compiled size on the way (a counted repetition copies its operand, so
 * the estimate refuses `(x{1000}){1000}`-like blow-ups before RE2 compiles them).
 */
class Translator {
  private i = 0;
  private out = '';
  private readonly groups: { count: number; named: boolean };
  /** Size estimate per open group: everything so far, and the last atom (what a quantifier repeats). */
  private readonly sizes: Array<{ sum: number; last: number }> = [{ sum: 0, last: 0 }];

  constructor(
    private readonly src: string,
    private readonly unicode: boolean,
  ) {
    this.groups = scanGroups(src);
  }

  run(): string {
    const s = this.src;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      switch (c) {
        case 0x5c /* \ */:
          this.escape();
          break;
        case 0x28 /* ( */:
          this.openGroup();
          break;
        case 0x29 /* ) */: {
          this.i++;
          this.out += ')';
          const g = this.sizes.pop()!;
          this.atom(g.sum + 1);
          break;
        }
        case 0x7c /* | */:
          this.i++;
          this.out += '|';
          this.top().sum += 1;
          this.top().last = 0;
          break;
        case 0x2a /* * */:
        case 0x2b /* + */:
        case 0x3f /* ? */:
          this.i++;
          this.quantifier(String.fromCharCode(c), 1);
          break;
        case 0x7b /* { */: {
          const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(this.i, this.i + 40));
          if (!m) {
            this.i++;
            this.char(c);
            break;
          }
          this.i += m[0].length;
          const min = Number(m[1]);
          const max = m[2] === undefined ? min : m[3] === '' ? min + 1 : Number(m[3]);
          if (min > 1000 || max > 1000) throw unsupported(`a repetition count above 1000 (\`${m[0]}\`)`);
          this.quantifier(m[2] === undefined ? `{${min}}` : m[3] === '' ? `{${min},}` : `{${min},${max}}`, Math.max(1, max));
          break;
        }
        case 0x5b /* [ */:
          this.charClass();
          break;
        case 0x2e /* . */:
          this.i++;
          this.set(negate(LINE_TERMINATORS, this.max()));
          break;
        case 0x5e /* ^ */:
        case 0x24 /* $ */:
          this.i++;
          this.out += String.fromCharCode(c);
          this.atom(1);
          break;
        default:
          this.char(this.readChar());
      }
    }
    return this.out;
  }

  /** Estimated program size so far. */
  get size(): number {
    return this.sizes[0]!.sum;
  }

  private max(): number {
    return this.unicode ? MAX_CODE_POINT : MAX_UNIT;
  }

  private top(): { sum: number; last: number } {
    return this.sizes[this.sizes.length - 1]!;
  }

  private atom(size: number): void {
    const t = this.top();
    t.sum += size;
    t.last = size;
  }

  private quantifier(text: string, copies: number): void {
    if (this.src[this.i] === '?') {
      this.i++;
      text += '?';
    }
    this.out += text;
    const t = this.top();
    const grown = t.last * copies + 1;
    t.sum += grown - t.last;
    t.last = grown;
    if (t.sum > PATTERN_LIMITS.maxProgramSize * 4) throw tooComplex(t.sum);
  }

  private char(c: number): void {
    this.out += literal(c, this.unicode);
    this.atom(1);
  }

  private set(r: Ranges, properties: readonly string[] = [], negated = false): void {
    this.out += classText(r, this.unicode, properties, negated);
    this.atom(1);
  }

  /** The next source character: a code point with `u`, a UTF-16 unit without. */
  private readChar(): number {
    const c = this.unicode ? this.src.codePointAt(this.i)! : this.src.charCodeAt(this.i);
    this.i += c > 0xffff ? 2 : 1;
    return c;
  }

  private openGroup(): void {
    const s = this.src;
    this.i++;
    if (s[this.i] === '?') {
      const next = s[this.i + 1];
      if (next === ':') {
        this.i += 2;
      } else if (next === '=' || next === '!' || (next === '<' && (s[this.i + 2] === '=' || s[this.i + 2] === '!'))) {
        throw unsupported('lookahead and lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`) are not supported');
      } else if (next === '<') {
        this.i = s.indexOf('>', this.i) + 1;
      } else {
        throw unsupported('inline modifiers (`(?i:...)`) are not supported');
      }
    }
    this.out += '(?:';
    this.sizes.push({ sum: 0, last: 0 });
  }

  /** `\` outside a class. */
  private escape(): void {
    const s = this.src;
    const c = s.charCodeAt(this.i + 1);
    const cls = this.classEscape(this.i + 1);
    if (cls) {
      this.i += cls.length + 1;
      this.set(cls.set, cls.property === undefined ? [] : [cls.property]);
      return;
    }
    if (c === 0x62 /* b */ || c === 0x42 /* B */) {
      this.i += 2;
      this.out += `\\${s[this.i - 1]}`;
      this.atom(1);
      return;
    }
    if (isDigit(c) && c !== 0x30) {
      const n = Number(/^\d+/.exec(s.slice(this.i + 1))![0]);
      if (n <= this.groups.count || this.unicode) throw unsupported('backreferences (`\\1`, `\\k<name>`) are not supported');
    }
    if (c === 0x6b /* k */ && (this.unicode || this.groups.named)) throw unsupported('backreferences (`\\1`, `\\k<name>`) are not supported');
    this.char(this.characterEscape(false));
  }

  /**
   * `\d \D \w \W \s \S` as a set, `\p{..} \P{..}` as RE2 text, at `at` (just after the
   * backslash); undefined for any other escape.
   */
  private classEscape(at: number): { set: Ranges; property?: string; length: number } | undefined {
    const c = this.src[at];
    const max = this.max();
    switch (c) {
      case 'd':
        return { set: DIGIT, length: 1 };
      case 'D':
        return { set: negate(DIGIT, max), length: 1 };
      case 'w':
        return { set: WORD, length: 1 };
      case 'W':
        return { set: negate(WORD, max), length: 1 };
      case 's':
        return { set: SPACE, length: 1 };
      case 'S':
        return { set: negate(SPACE, max), length: 1 };
      case 'p':
      case 'P': {
        if (!this.unicode) return undefined;
        const end = this.src.indexOf('}', at);
        return { set: [], property: `\\${c}{${propertyName(this.src.slice(at + 2, end))}}`, length: end - at + 1 };
      }
    }
    return undefined;
  }

  /**
   * A character escape at `\` (this.i), returning the character and moving past it.
   * `inClass`: `\b` is a backspace and `\c` takes digits and `_` too (Annex B).
   */
  private characterEscape(inClass: boolean): number {
    const s = this.src;
    const at = this.i + 1;
    const c = s.charCodeAt(at);
    const simple: Record<number, number> = { 0x74: 9, 0x6e: 10, 0x76: 11, 0x66: 12, 0x72: 13 };
    if (simple[c] !== undefined) {
      this.i += 2;
      return simple[c];
    }
    if (inClass && c === 0x62 /* b */) {
      this.i += 2;
      return 8;
    }
    if (c === 0x63 /* c */) {
      const l = s.charCodeAt(at + 1);
      if (isAsciiLetter(l) || (inClass && !this.unicode && (isDigit(l) || l === 0x5f))) {
        this.i += 3;
        return l % 32;
      }
      // Annex B: a `\c` that starts no control escape is a backslash; the `c` stays
      this.i += 1;
      return 0x5c;
    }
    if (c === 0x78 /* x */ && isHex(s.charCodeAt(at + 1)) && isHex(s.charCodeAt(at + 2))) {
      this.i += 4;
      return parseInt(s.slice(at + 1, at + 3), 16);
    }
    if (c === 0x75 /* u */) {
      if (this.unicode && s[at + 1] === '{') {
        const end = s.indexOf('}', at);
        this.i = end + 1;
        return parseInt(s.slice(at + 2, end), 16);
      }
      if (/^[0-9a-fA-F]{4}$/.test(s.slice(at + 1, at + 5))) {
        const u = parseInt(s.slice(at + 1, at + 5), 16);
        this.i += 6;
        // with `u`, an escaped surrogate pair is one code point
        if (this.unicode && u >= 0xd800 && u <= 0xdbff && s[this.i] === '\\' && s[this.i + 1] === 'u' && /^[dD][c-fC-F][0-9a-fA-F]{2}$/.test(s.slice(this.i + 2, this.i + 6))) {
          const lo = parseInt(s.slice(this.i + 2, this.i + 6), 16);
          this.i += 6;
          return 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        }
        return u;
      }
    }
    if (c === 0x30 /* 0 */ && !isDigit(s.charCodeAt(at + 1))) {
      this.i += 2;
      return 0;
    }
    if (!this.unicode && isOctal(c)) {
      // Annex B legacy octal: up to three digits while the value stays below 0o400
      let len = 1;
      while (len < (c <= 0x33 ? 3 : 2) && isOctal(s.charCodeAt(at + len))) len++;
      this.i += 1 + len;
      return parseInt(s.slice(at, at + len), 8);
    }
    // an identity escape (`\.`, `\/`; without `u` any other character, `\8` included)
    this.i += 1;
    return this.readChar();
  }

  private charClass(): void {
    const s = this.src;
    this.i++;
    let negated = false;
    if (s[this.i] === '^') {
      negated = true;
      this.i++;
    }
    const pairs: number[] = [];
    const properties: string[] = [];
    while (s[this.i] !== ']') {
      const a = this.classAtom(properties);
      if (s[this.i] === '-' && s[this.i + 1] !== ']' && this.i + 1 < s.length) {
        this.i++;
        const b = this.classAtom(properties);
        if (typeof a === 'number' && typeof b === 'number') {
          pairs.push(a, b);
          continue;
        }
        // Annex B: a class escape at either end makes the `-` a plain character
        pairs.push(0x2d, 0x2d);
        for (const x of [a, b]) {
          if (typeof x === 'number') pairs.push(x, x);
          else pairs.push(...x);
        }
        continue;
      }
      if (typeof a === 'number') pairs.push(a, a);
      else pairs.push(...a);
    }
    this.i++;
    const set = normalize(pairs);
    if (properties.length > 0) this.set(set, properties, negated);
    else this.set(negated ? negate(set, this.max()) : set);
  }

  /** A character, a set, or (added to `properties`) an RE2 property class, which counts as no ranges. */
  private classAtom(properties: string[]): number | Ranges {
    if (this.src[this.i] !== '\\') return this.readChar();
    const cls = this.classEscape(this.i + 1);
    if (cls) {
      this.i += cls.length + 1;
      if (cls.property !== undefined) properties.push(cls.property);
      return cls.set;
    }
    return this.characterEscape(true);
  }
}

function tooComplex(size: number): PatternError {
  return unsupported(`it is too complex: about ${size} automaton instructions, more than ${PATTERN_LIMITS.maxProgramSize} (a counted repetition such as \`x{100}\` repeats its operand)`);
}

// ---------------------------------------------------------------------------
// Compiling and matching
// ---------------------------------------------------------------------------

class Compiled implements NamePattern {
  /** Recent answers by name (PATTERN_LIMITS.memoSize). */
  private readonly memo = new Map<string, boolean>();

  constructor(
    readonly source: string,
    private readonly re: RE2JS,
    private readonly unicode: boolean,
    readonly programSize: number,
  ) {}

  test(name: string): boolean {
    if (name.length * this.programSize > PATTERN_LIMITS.maxMatchWork) return false;
    const known = this.memo.get(name);
    if (known !== undefined) return known;
    const units = !this.unicode && /[\ud800-\udfff]/.test(name) ? name.replace(/[\ud800-\udfff]/g, (u) => String.fromCodePoint(u.charCodeAt(0) + UNIT_SHIFT)) : name;
    const answer = this.re.test(units);
    if (name.length <= MAX_NAME_LENGTH && PATTERN_LIMITS.memoSize > 0) {
      if (this.memo.size >= PATTERN_LIMITS.memoSize) this.memo.clear();
      this.memo.set(name, answer);
    }
    return answer;
  }
}

/** A stored pattern that can no longer be used: it matches nothing. */
class Unusable implements NamePattern {
  readonly programSize = 0;
  constructor(
    readonly source: string,
    readonly error: PatternError,
  ) {}

  test(): boolean {
    return false;
  }
}

/**
 * Compiles `entry` as a whole-name pattern, `^(?:entry)$` as JavaScript reads it (with the
 * `u` flag when `unicode`). Throws PatternError when it cannot be used.
 */
export function compileNamePattern(entry: string, unicode: boolean): NamePattern {
  if (entry.length > PATTERN_LIMITS.maxLength) throw unsupported(`it is longer than ${PATTERN_LIMITS.maxLength} characters`);
  const source = `^(?:${entry})$`;
  try {
    new RegExp(source, unicode ? 'u' : '');
  } catch (e) {
    throw new PatternError((e as Error).message, true);
  }
  const t = new Translator(source, unicode);
  const text = t.run();
  if (t.size > PATTERN_LIMITS.maxProgramSize * 4) throw tooComplex(t.size);
  let re: RE2JS;
  try {
    re = re2().RE2JS.compile(text);
  } catch (e) {
    const message = String((e as Error).message).replace(/^error parsing regexp: /, '');
    const property = /invalid character class range: `(\\[pP]\{[^}]*\})`/.exec(message);
    throw unsupported(property ? `the Unicode property \`${property[1]}\` is not supported (it has no linear-time table: use a General_Category, a script's full name or a common binary property)` : message);
  }
  const size = re.programSize();
  if (size > PATTERN_LIMITS.maxProgramSize) throw tooComplex(size);
  return new Compiled(entry, re, unicode, size);
}

/** A failure to compile as a PatternError: a stored pattern must never make loading or matching throw. */
function asPatternError(e: unknown): PatternError {
  return e instanceof PatternError ? e : unsupported(`it could not be compiled (${(e as Error).message})`);
}

// Compiled patterns by (flag, entry): the oldest goes first when the map is full.
const cache = new Map<string, NamePattern>();

/**
 * The compiled whole-name pattern for `entry`, from the cache. Never throws: a pattern that
 * cannot be used (one stored before the rules above) matches nothing.
 */
export function namePattern(entry: string, unicode: boolean): NamePattern {
  const k = (unicode ? 'u' : '-') + entry;
  let p = cache.get(k);
  if (!p) {
    try {
      p = compileNamePattern(entry, unicode);
    } catch (e) {
      p = new Unusable(entry, asPatternError(e));
    }
    if (cache.size >= PATTERN_LIMITS.cacheSize) cache.delete(cache.keys().next().value!);
    cache.set(k, p);
  }
  return p;
}

/** Why `entry` cannot be used as a whole-name pattern, or undefined when it can. */
export function patternProblem(entry: string, unicode: boolean): PatternError | undefined {
  const p = namePattern(entry, unicode);
  return p instanceof Unusable ? p.error : undefined;
}

/**
 * A glob (`*_facet`: `*` stands for any characters but line breaks) as a whole-name
 * pattern, compiled each time: globs come with requests and would crowd stored patterns
 * out of the cache. An unusable glob (too long) matches nothing.
 */
export function globPattern(glob: string): NamePattern {
  const entry = glob
    .split('*')
    .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  try {
    return compileNamePattern(entry, false);
  } catch (e) {
    return new Unusable(glob, asPatternError(e));
  }
}
