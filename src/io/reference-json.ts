/**
 * JSON as the reference writes and reads it (it stores, exports and reports documents with
 * the nlohmann::json library), where its clients see the difference:
 *
 *   referenceLine(text)        a document's text as the reference exports it: keys of every
 *                              object sorted (by code point, as std::map orders UTF-8 bytes),
 *                              no spaces, integers as integers, every other number in
 *                              nlohmann's float form (`3.0`, `1e-05`, `1e+16`)
 *   referenceStringify(value)  the same for a parsed document (the number's written form is
 *                              gone: a whole number is written as an integer)
 *   referenceParseError(text)  the reference's message for a line that is not JSON
 *                              (`[json.exception.parse_error.101] parse error at line 1,
 *                              column 2: syntax error while parsing object key - ...`),
 *                              from a scan of its bytes by the reference parser's rules
 *
 * Input is bounded by the callers: documents nest at most INPUT_LIMITS.maxJsonDepth levels
 * (the recursion below goes no deeper), and every scan is linear in the text.
 */

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

/** Orders strings by code point (UTF-16 order differs where surrogates meet U+E000..U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    return unitRank(x) - unitRank(y);
  }
  return a.length - b.length;
}

/** A code unit's place in code point order: surrogates (code points above U+FFFF) after U+FFFF. */
function unitRank(u: number): number {
  if (u >= 0xe000) return u - 0x800;
  if (u >= 0xd800) return u + 0x2000;
  return u;
}

const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;

/** A double as nlohmann::json writes it: shortest digits, `.0` on whole numbers, exponents from 1e+16 and below 1e-04. */
export function floatText(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exp] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const k = digits.length;
  const n = Number(exp) + 1; // where the decimal point goes, counted from the first digit
  let body: string;
  if (k <= n && n <= 15) body = digits + '0'.repeat(n - k) + '.0';
  else if (n > 0 && n <= 15) body = `${digits.slice(0, n)}.${digits.slice(n)}`;
  else if (n > -4 && n <= 0) body = `0.${'0'.repeat(-n)}${digits}`;
  else {
    const e = n - 1;
    body = `${k === 1 ? digits : `${digits[0]}.${digits.slice(1)}`}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  return x < 0 ? `-${body}` : body;
}

/** A number literal as the reference writes it back: integers (within 64 bits) exactly, the rest as floats. */
function numberText(literal: string): string {
  if (!/[.eE]/.test(literal)) {
    const v = BigInt(literal);
    if (v >= INT64_MIN && v <= UINT64_MAX) return v.toString();
  }
  return floatText(Number(literal));
}

/** `\uXXXX` as JSON.stringify writes it: lower-case hex, for a control character without a short escape. */
function isCanonicalUnicodeEscape(hex: string): boolean {
  if (!/^00[01][0-9a-f]$/.test(hex)) return false;
  const c = parseInt(hex, 16);
  return c !== 8 && c !== 9 && c !== 10 && c !== 12 && c !== 13;
}

function indexOrEnd(s: string, c: string, from: number): number {
  const i = s.indexOf(c, from);
  return i < 0 ? s.length : i;
}

/** Reads JSON text that is known to be valid and writes it back in the reference's form. */
class Rewriter {
  private i = 0;
  /** The next backslash at or after where a string was last scanned (the text's length: none). */
  private backslash = -1;
  constructor(private readonly s: string) {}

  value(): string {
    this.space();
    const c = this.s.charCodeAt(this.i);
    if (c === 123) return this.object();
    if (c === 91) return this.array();
    if (c === 34) return this.string().text;
    if (c === 116 || c === 110) return this.word(4);
    if (c === 102) return this.word(5);
    return this.number();
  }

  private object(): string {
    this.i++;
    // last value wins for a repeated key, as in the reference
    const members = new Map<string, string>();
    this.space();
    if (this.s.charCodeAt(this.i) === 125) {
      this.i++;
      return '{}';
    }
    for (;;) {
      this.space();
      const key = this.string(true);
      this.space();
      this.i++; // ':'
      members.set(key.value, `${key.text}:${this.value()}`);
      this.space();
      if (this.s.charCodeAt(this.i++) === 125) break; // '}', else ','
    }
    const keys = [...members.keys()].sort(compareCodePoints);
    return `{${keys.map((k) => members.get(k)).join(',')}}`;
  }

  private array(): string {
    this.i++;
    const items: string[] = [];
    this.space();
    if (this.s.charCodeAt(this.i) === 93) {
      this.i++;
      return '[]';
    }
    for (;;) {
      items.push(this.value());
      this.space();
      if (this.s.charCodeAt(this.i++) === 93) break;
    }
    return `[${items.join(',')}]`;
  }

  /**
   * A string token: its text as JSON.stringify (which escapes as nlohmann does) writes it,
   * and for a key its value. Hot (every string of an export): a token whose escapes are
   * already those JSON.stringify writes is kept as it is, not decoded and encoded again.
   */
  private string(key = false): { value: string; text: string } {
    const s = this.s;
    const start = this.i;
    let j = start + 1;
    let escaped = false;
    let canonical = true;
    // the closing quote and the escapes are found with indexOf (native), not char by char
    let quote = s.indexOf('"', j);
    if (this.backslash < j) this.backslash = indexOrEnd(s, '\\', j);
    while (this.backslash < quote) {
      const at = this.backslash;
      escaped = true;
      const e = s.charCodeAt(at + 1);
      if (e === 117) {
        canonical &&= isCanonicalUnicodeEscape(s.slice(at + 2, at + 6));
        j = at + 6;
      } else {
        // \" \\ \b \f \n \r \t are JSON.stringify's; \/ is not
        canonical &&= e === 34 || e === 92 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116;
        j = at + 2;
      }
      if (quote < j) quote = s.indexOf('"', j);
      this.backslash = indexOrEnd(s, '\\', j);
    }
    this.i = quote + 1;
    const raw = s.slice(start, this.i);
    if (!escaped) return { value: raw.slice(1, -1), text: raw };
    if (canonical && !key) return { value: '', text: raw };
    const value = JSON.parse(raw) as string;
    return { value, text: JSON.stringify(value) };
  }

  private word(n: number): string {
    const w = this.s.slice(this.i, this.i + n);
    this.i += n;
    return w;
  }

  private number(): string {
    const start = this.i;
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      // digits, '+', '-', '.', 'e', 'E'
      if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46 || c === 101 || c === 69) this.i++;
      else break;
    }
    return numberText(this.s.slice(start, this.i));
  }

  private space(): void {
    for (;;) {
      const c = this.s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else return;
    }
  }
}

/** A stored document's JSON text (valid JSON) as the reference exports it. */
export function referenceLine(text: string): string {
  return new Rewriter(text).value();
}

/** A parsed value as the reference writes it (a whole number is written as an integer). */
export function referenceStringify(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0) ? String(v) : floatText(v);
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(referenceStringify).join(',')}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort(compareCodePoints);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${referenceStringify(o[k])}`).join(',')}}`;
}

// ---------------------------------------------------------------------------
// The reference parser's error for text that is not JSON
// ---------------------------------------------------------------------------

type Token = 'uninitialized' | 'true' | 'false' | 'null' | 'string' | 'number' | 'float' | '[' | '{' | ']' | '}' | ':' | ',' | 'error' | 'end' | 'literal_or_value';

const TOKEN_NAMES: Record<Token, string> = {
  uninitialized: '<uninitialized>',
  true: 'true literal',
  false: 'false literal',
  null: 'null literal',
  string: 'string literal',
  number: 'number literal',
  float: 'number literal',
  '[': "'['",
  '{': "'{'",
  ']': "']'",
  '}': "'}'",
  ':': "':'",
  ',': "','",
  error: '<parse error>',
  end: 'end of input',
  literal_or_value: "'[', '{', or a literal",
};

const CONTROL_NAMES = 'NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US'.split(' ');
const SHORT_ESCAPES: Record<number, string> = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r' };
const EOF = -1;
const hex4 = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');

/** Thrown inside the scan to stop at the first error, with the reference's full message. */
class Stop {
  constructor(readonly message: string) {}
}

/** The reference's lexer, byte by byte: its positions, its `last read` text, its messages. */
class Lexer {
  private at = 0;
  current = EOF;
  private unread = false;
  charsTotal = 0;
  private charsLine = 0;
  private lines = 0;
  private read: number[] = [];
  error = '';

  constructor(private readonly b: Uint8Array) {}

  get(): number {
    this.charsTotal++;
    this.charsLine++;
    if (this.unread) this.unread = false;
    else this.current = this.at < this.b.length ? this.b[this.at++]! : EOF;
    if (this.current !== EOF) this.read.push(this.current);
    if (this.current === 10) {
      this.lines++;
      this.charsLine = 0;
    }
    return this.current;
  }

  private unget(): void {
    this.unread = true;
    this.charsTotal--;
    if (this.charsLine === 0) {
      if (this.lines > 0) this.lines--;
    } else this.charsLine--;
    if (this.current !== EOF) this.read.pop();
  }

  position(): string {
    return `line ${this.lines + 1}, column ${this.charsLine}`;
  }

  /** What was read of the current token, control characters as <U+XXXX>. */
  lastRead(): string {
    const bytes: number[] = [];
    let out = '';
    const flush = () => {
      out += Buffer.from(bytes).toString('utf8');
      bytes.length = 0;
    };
    for (const c of this.read) {
      if (c <= 0x1f) {
        flush();
        out += `<U+${hex4(c)}>`;
      } else bytes.push(c);
    }
    flush();
    return out;
  }

  scan(): Token {
    if (this.charsTotal === 0 && !this.skipBom()) return this.fail('invalid BOM; must be 0xEF 0xBB 0xBF if given');
    do this.get();
    while (this.current === 32 || this.current === 9 || this.current === 10 || this.current === 13);
    const c = this.current;
    switch (c) {
      case 91:
        return '[';
      case 93:
        return ']';
      case 123:
        return '{';
      case 125:
        return '}';
      case 58:
        return ':';
      case 44:
        return ',';
      case 116:
        return this.literal('true', 'true');
      case 102:
        return this.literal('false', 'false');
      case 110:
        return this.literal('null', 'null');
      case 34:
        return this.string();
      case 0:
      case EOF:
        return 'end';
      default:
        if (c === 45 || (c >= 48 && c <= 57)) return this.number();
        return this.fail('invalid literal');
    }
  }

  private fail(message: string): Token {
    this.error = message;
    return 'error';
  }

  private skipBom(): boolean {
    if (this.get() === 0xef) return this.get() === 0xbb && this.get() === 0xbf;
    this.unget();
    return true;
  }

  private literal(word: string, token: Token): Token {
    for (let i = 1; i < word.length; i++) if (this.get() !== word.charCodeAt(i)) return this.fail('invalid literal');
    return token;
  }

  private reset(): void {
    this.read = [this.current];
  }

  private string(): Token {
    this.reset();
    for (;;) {
      const c = this.get();
      if (c === EOF) return this.fail('invalid string: missing closing quote');
      if (c === 34) return 'string';
      if (c === 92) {
        const e = this.get();
        if (e === 117) {
          const first = this.codepoint();
          if (first < 0) return this.fail("invalid string: '\\u' must be followed by 4 hex digits");
          if (first >= 0xd800 && first <= 0xdbff) {
            if (this.get() === 92 && this.get() === 117) {
              const second = this.codepoint();
              if (second < 0) return this.fail("invalid string: '\\u' must be followed by 4 hex digits");
              if (second < 0xdc00 || second > 0xdfff) return this.fail('invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF');
            } else return this.fail('invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF');
          } else if (first >= 0xdc00 && first <= 0xdfff) return this.fail('invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF');
        } else if (![34, 92, 47, 98, 102, 110, 114, 116].includes(e)) return this.fail('invalid string: forbidden character after backslash');
        continue;
      }
      if (c <= 0x1f) {
        const short = SHORT_ESCAPES[c];
        return this.fail(`invalid string: control character U+${hex4(c)} (${CONTROL_NAMES[c]}) must be escaped to \\u${hex4(c)}${short ? ` or \\${short}` : ''}`);
      }
      if (c <= 0x7f) continue;
      // UTF-8: the ranges of well-formed continuation bytes after each lead byte
      let ranges: number[];
      if (c >= 0xc2 && c <= 0xdf) ranges = [0x80, 0xbf];
      else if (c === 0xe0) ranges = [0xa0, 0xbf, 0x80, 0xbf];
      else if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) ranges = [0x80, 0xbf, 0x80, 0xbf];
      else if (c === 0xed) ranges = [0x80, 0x9f, 0x80, 0xbf];
      else if (c === 0xf0) ranges = [0x90, 0xbf, 0x80, 0xbf, 0x80, 0xbf];
      else if (c >= 0xf1 && c <= 0xf3) ranges = [0x80, 0xbf, 0x80, 0xbf, 0x80, 0xbf];
      else if (c === 0xf4) ranges = [0x80, 0x8f, 0x80, 0xbf, 0x80, 0xbf];
      else return this.fail('invalid string: ill-formed UTF-8 byte');
      for (let r = 0; r < ranges.length; r += 2) {
        const n = this.get();
        if (n < ranges[r]! || n > ranges[r + 1]!) return this.fail('invalid string: ill-formed UTF-8 byte');
      }
    }
  }

  private codepoint(): number {
    let cp = 0;
    for (const shift of [12, 8, 4, 0]) {
      const c = this.get();
      if (c >= 48 && c <= 57) cp += (c - 48) << shift;
      else if (c >= 65 && c <= 70) cp += (c - 55) << shift;
      else if (c >= 97 && c <= 102) cp += (c - 87) << shift;
      else return -1;
    }
    return cp;
  }

  private number(): Token {
    this.reset();
    const digit = (c: number) => c >= 48 && c <= 57;
    let float = false;
    let c = this.current;
    if (c === 45) {
      c = this.get();
      if (!digit(c)) return this.fail("invalid number; expected digit after '-'");
    }
    if (c === 48) c = this.get();
    else while (digit((c = this.get())));
    if (c === 46) {
      float = true;
      if (!digit(this.get())) return this.fail("invalid number; expected digit after '.'");
      while (digit((c = this.get())));
    }
    if (c === 101 || c === 69) {
      float = true;
      c = this.get();
      if (c === 43 || c === 45) {
        if (!digit(this.get())) return this.fail('invalid number; expected digit after exponent sign');
      } else if (!digit(c)) return this.fail("invalid number; expected '+', '-', or digit after exponent");
      while (digit(this.get()));
    }
    this.unget();
    if (float || !integerFits(Buffer.from(this.read).toString('latin1'))) return 'float';
    return 'number';
  }

  /** The current number token, when it overflows a double. */
  overflows(): boolean {
    return !Number.isFinite(Number(Buffer.from(this.read).toString('latin1')));
  }
}

function integerFits(literal: string): boolean {
  const v = BigInt(literal);
  return v >= INT64_MIN && v <= UINT64_MAX;
}

/** The reference parser run over `lex`: throws Stop with its message at the first error. */
function parseAll(lex: Lexer): void {
  let last = 'uninitialized' as Token;
  const next = () => (last = lex.scan());
  const syntax = (expected: Token, context: string): never => {
    let msg = `syntax error while parsing ${context} - `;
    msg += last === 'error' ? `${lex.error}; last read: '${lex.lastRead()}'` : `unexpected ${TOKEN_NAMES[last]}`;
    if (expected !== 'uninitialized') msg += `; expected ${TOKEN_NAMES[expected]}`;
    throw new Stop(`[json.exception.parse_error.101] parse error at ${lex.position()}: ${msg}`);
  };
  const states: boolean[] = []; // true: in an array, false: in an object
  next();
  let evaluate = false;
  for (;;) {
    if (!evaluate) {
      switch (last) {
        case '{': {
          const key = next();
          if (key === '}') break;
          if (key !== 'string') syntax('string', 'object key');
          if (next() !== ':') syntax(':', 'object separator');
          states.push(false);
          next();
          continue;
        }
        case '[':
          if (next() === ']') break;
          states.push(true);
          continue;
        case 'float':
          if (lex.overflows()) throw new Stop(`[json.exception.out_of_range.406] number overflow parsing '${lex.lastRead()}'`);
          break;
        case 'true':
        case 'false':
        case 'null':
        case 'number':
        case 'string':
          break;
        case 'error':
          syntax('uninitialized', 'value');
          break;
        case 'end':
          if (lex.charsTotal === 1) {
            throw new Stop(
              `[json.exception.parse_error.101] parse error at ${lex.position()}: attempting to parse an empty input; check that your input string or stream contains the expected JSON`,
            );
          }
          syntax('literal_or_value', 'value');
          break;
        default:
          syntax('literal_or_value', 'value');
      }
    } else evaluate = false;

    if (states.length === 0) break;
    if (states[states.length - 1]) {
      if (next() === ',') {
        next();
        continue;
      }
      if (last === ']') {
        states.pop();
        evaluate = true;
        continue;
      }
      syntax(']', 'array');
    }
    if (next() === ',') {
      if (next() !== 'string') syntax('string', 'object key');
      if (next() !== ':') syntax(':', 'object separator');
      next();
      continue;
    }
    if (last === '}') {
      states.pop();
      evaluate = true;
      continue;
    }
    syntax('}', 'object');
  }
  if (next() !== 'end') syntax('end', 'value');
}

/**
 * The reference's message for `text` that is not JSON (without its `Bad JSON: ` prefix), or
 * undefined when its parser would take the text (the caller's own reason then stands).
 */
export function referenceParseError(text: string): string | undefined {
  try {
    parseAll(new Lexer(Buffer.from(text, 'utf8')));
    return undefined;
  } catch (e) {
    if (e instanceof Stop) return e.message;
    throw e;
  }
}
