/**
 * src/tokenizer: here is some text, give me its tokens.
 *
 * Rules (the same at indexing and at query time):
 *   1. Words are separated by whitespace and by the collection's `token_separators`.
 *   2. Inside a word, characters that are not letters, digits or combining marks are
 *      dropped ("e-mail" -> "email", "C++" -> "c"), unless listed in `symbols_to_index`.
 *   3. Text is NFKC-normalised and lower-cased; Latin diacritics are folded ("Crème" ->
 *      "creme") unless the field has a non-English `locale`.
 *   4. Runs of scripts written without spaces (Han, Kana, Thai, Lao, Khmer, Myanmar) are
 *      split into words with `Intl.Segmenter`.
 *   5. With `stem: true`, each token is reduced by the Snowball stemmer of the field's
 *      language (@orama/stemmers; English when no locale is set).
 *   6. A token glued from pieces by dropped punctuation ("unit-aware" -> "unitaware",
 *      "ripper/encoder" -> "ripperencoder", "Debian's" -> "debians") also has its pieces
 *      as parts (`partsOf`), which the index keeps beside the tokens so that each piece
 *      finds the word.
 *
 * Two entry points share these rules: `tokens()` (hot: every indexed string and every
 * query) and `spans()`, which also returns where each token sits in the original text
 * for highlighting. A property test checks they always agree.
 */
import { createRequire } from 'node:module';
import { grown } from '../arrays.js';
import { INPUT_LIMITS } from '../defaults.js';

export interface TokenizerOptions {
  locale?: string;
  separators?: readonly string[];
  symbols?: readonly string[];
  stem?: boolean;
  /**
   * A stemming dictionary (src/stemming): a word it lists becomes its root, before the
   * Snowball stemmer (which `stem` adds) sees it. `key` names its contents for the cache.
   */
  dictionary?: { key: string; map: ReadonlyMap<string, string> };
}

export interface Span {
  token: string;
  start: number;
  end: number;
}

const NO_SPACE_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
const WORD_CHAR = /[\p{L}\p{N}\p{M}]/u;
const LATIN_ACCENTED = /[\u00C0-\u024F\u1E00-\u1EFF]/g;
const SPECIAL_FOLD: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ı: 'i',
  ħ: 'h',
};

function foldLatin(s: string): string {
  return s.replace(LATIN_ACCENTED, (c) => {
    const special = SPECIAL_FOLD[c];
    if (special) return special;
    return c.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
  });
}

const STEMMER_MODULES: Record<string, string> = {
  ar: 'arabic',
  hy: 'armenian',
  bg: 'bulgarian',
  da: 'danish',
  nl: 'dutch',
  en: 'english',
  fi: 'finnish',
  fr: 'french',
  de: 'german',
  el: 'greek',
  hu: 'hungarian',
  id: 'indonesian',
  ga: 'irish',
  it: 'italian',
  lt: 'lithuanian',
  ne: 'nepali',
  no: 'norwegian',
  nb: 'norwegian',
  pt: 'portuguese',
  ro: 'romanian',
  ru: 'russian',
  sr: 'serbian',
  es: 'spanish',
  sv: 'swedish',
  ta: 'tamil',
  tr: 'turkish',
  uk: 'ukrainian',
};
const stemmers = new Map<string, (w: string) => string>();
const require = createRequire(import.meta.url);

/** The stemmer for a locale (English when none or unknown). Loaded once per language. */
export function stemmerFor(locale: string): (w: string) => string {
  const lang = locale ? locale.toLowerCase().split(/[-_]/)[0]! : 'en';
  const mod = STEMMER_MODULES[lang] ?? 'english';
  let s = stemmers.get(mod);
  if (!s) {
    s = (require(`@orama/stemmers/${mod}`) as { stemmer: (w: string) => string }).stemmer;
    stemmers.set(mod, s);
  }
  return s;
}

const segmenters = new Map<string, Intl.Segmenter>();
function segmenter(locale: string): Intl.Segmenter {
  let s = segmenters.get(locale);
  if (!s) {
    s = new Intl.Segmenter(locale || undefined, { granularity: 'word' });
    segmenters.set(locale, s);
  }
  return s;
}

/**
 * A set of terms to find in text (highlighting), with a quick test that rules most words
 * out before any string is made: `fits[min(length, 63) * 128 + firstChar]` is 1 when some
 * term of that length (63 = 63 or longer) starts with that ASCII character.
 */
export interface TermLookup {
  set: Set<string>;
  fits: Uint8Array;
  /** Parts of glued words (rule 6) to find too: a glued word is a term when one of its parts is. */
  parts: Set<string> | null;
}

export function termLookup(set: Set<string>, parts?: Set<string>): TermLookup {
  const fits = new Uint8Array(64 * 128);
  for (const t of set) {
    const c = t.charCodeAt(0);
    if (c < 128) fits[Math.min(t.length, 63) * 128 + c] = 1;
  }
  return { set, fits, parts: parts && parts.size > 0 ? parts : null };
}

/**
 * FNV-1a over UTF-16 code units, the hash of the term interner (index/interner.ts):
 * start from FNV_BASIS, one fnvStep per unit, then `| 0`. termIdsInto hashes each word as
 * it writes it, so the interner does not read it again to hash it.
 */
export const FNV_BASIS = 0x811c9dc5;
export function fnvStep(h: number, unit: number): number {
  return Math.imul(h ^ unit, 0x01000193);
}

/** What termIdsInto needs of a term interner (index/interner.ts). */
export interface TermIds {
  scratch: Uint16Array;
  growScratch(len: number): Uint16Array;
  /** The id of scratch[0..len), whose FNV-1a hash (index/interner.ts) is `h`. */
  idOfHashed(len: number, h: number): number;
}

/** Token offsets of a text and which tokens are terms (see Tokenizer.markTerms); reused between calls. */
export class TokenMarks {
  count = 0;
  starts = new Int32Array(64);
  ends = new Int32Array(64);
  hit = new Uint8Array(64);
  push(start: number, end: number, hit: boolean): void {
    if (this.count === this.starts.length) {
      const grow = <A extends Int32Array | Uint8Array>(a: A): A => {
        const b = new (a.constructor as new (n: number) => A)(a.length * 2);
        b.set(a);
        return b;
      };
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
      this.hit = grow(this.hit);
    }
    this.starts[this.count] = start;
    this.ends[this.count] = end;
    this.hit[this.count] = hit ? 1 : 0;
    this.count++;
  }
}

const MAX_TOKEN = INPUT_LIMITS.maxTokenLength;

/**
 * A token cut to INPUT_LIMITS.maxTokenLength code units (never inside a surrogate pair).
 * Every path that makes tokens, for indexing, queries and highlights alike, cuts the same
 * way, so a long word is found by its own text.
 */
export function cutToken(t: string): string {
  if (t.length <= MAX_TOKEN) return t;
  let end = MAX_TOKEN;
  const c = t.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return t.slice(0, end);
}

export class Tokenizer {
  readonly locale: string;
  readonly fold: boolean;
  private readonly separators: Set<string>;
  private readonly symbols: Set<string>;
  private readonly stem?: (w: string) => string;
  /** ASCII class table for the fast path: 0 drop, 1 keep, 2 split, 3 upper-case letter. */
  private readonly ascii = new Uint8Array(128);

  constructor(opts: TokenizerOptions = {}) {
    this.locale = opts.locale ?? '';
    this.fold = this.locale === '' || this.locale.toLowerCase().startsWith('en');
    this.separators = new Set(opts.separators ?? []);
    this.symbols = new Set(opts.symbols ?? []);
    if (opts.stem) this.stem = stemmerFor(this.locale);
    if (opts.dictionary) {
      const map = opts.dictionary.map;
      const snowball = this.stem;
      this.stem = snowball ? (w) => map.get(w) ?? snowball(w) : (w) => map.get(w) ?? w;
    }
    for (let c = 0; c < 128; c++) {
      const ch = String.fromCharCode(c);
      let cls = 0;
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) cls = 1;
      else if (c >= 65 && c <= 90) cls = 3;
      else if (c <= 32 || c === 127) cls = 2;
      if (this.separators.has(ch)) cls = 2;
      else if (this.symbols.has(ch)) cls = 1;
      this.ascii[c] = cls;
    }
  }

  /** Tokens of `text` in order. Hot path. */
  tokens(text: string): string[] {
    const out: string[] = [];
    this.tokensInto(text, out);
    return out;
  }

  /** Appends the tokens of `text` to `out`. */
  tokensInto(text: string, out: string[]): void {
    const n = text.length;
    const table = this.ascii;
    const mark = out.length;
    // Fast path: pure ASCII text, one pass over char codes.
    let start = -1; // start of the current clean run
    let word = ''; // pieces of the current word when characters were dropped
    let dirty = false;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 128) {
        this.slowInto(text, out, mark);
        return;
      }
      const cls = table[c]!;
      if (cls === 1 || cls === 3) {
        if (start < 0) start = i;
        if (cls === 3) dirty = true;
      } else if (cls === 0) {
        if (start >= 0) {
          word += text.slice(start, i);
          start = -1;
        }
        dirty = true;
      } else {
        if (start >= 0) word += text.slice(start, i);
        if (word.length > 0) this.emit(dirty ? word.toLowerCase() : word, out);
        word = '';
        start = -1;
        dirty = false;
      }
    }
    if (start >= 0) word += text.slice(start, n);
    if (word.length > 0) this.emit(dirty ? word.toLowerCase() : word, out);
  }

  /**
   * The term ids of `text`'s tokens (exactly the tokens `tokensInto` gives), from `interner`,
   * written to `out.ids`; returns how many, or -1 when this path does not apply (text that
   * is not ASCII, or a stemming tokenizer): then use `tokensInto`. Hot: every indexed value
   * of an import. A word's characters go straight into the interner's scratch buffer, so a
   * token that is not a new term costs no string.
   */
  termIdsInto(text: string, interner: TermIds, out: { ids: Int32Array }): number {
    if (this.stem) return -1;
    const n = text.length;
    const table = this.ascii;
    let scratch = interner.scratch;
    let ids = out.ids;
    let count = 0;
    let len = 0;
    let h = FNV_BASIS; // of the word so far, as written (lower-cased)
    for (let i = 0; i <= n; i++) {
      const c = i < n ? text.charCodeAt(i) : 32;
      if (c >= 128) return -1;
      const cls = table[c]!;
      if (cls === 1 || cls === 3) {
        if (len === MAX_TOKEN) continue; // the rest of a long word is not part of its token
        if (len === scratch.length) scratch = interner.growScratch(len + 1);
        const unit = cls === 3 ? c + 32 : c; // A-Z to a-z
        scratch[len++] = unit;
        h = fnvStep(h, unit);
      } else if (cls === 2 && len > 0) {
        if (count === ids.length) ids = out.ids = grown(ids, ids.length * 2);
        ids[count++] = interner.idOfHashed(len, h | 0);
        len = 0;
        h = FNV_BASIS;
      }
    }
    return count;
  }

  /**
   * The parts of `text`'s glued tokens (rule 6): `emit(i, parts)` for each token i (as
   * `tokens` numbers them) made of two or more pieces. Hot: every indexed value; a word
   * without dropped punctuation between kept characters costs a few comparisons.
   */
  partsOf(text: string, emit: (token: number, parts: string[]) => void): void {
    const n = text.length;
    const table = this.ascii;
    let token = 0;
    let start = -1;
    let kept = false; // a kept character in this word so far
    let split = false; // a splitting character after a kept one
    let glued = false; // a kept character after such a split
    let found: Array<[number, string[]]> | null = null; // (emitted at the end: the text may turn out not to be ASCII)
    for (let i = 0; i <= n; i++) {
      const c = i < n ? text.charCodeAt(i) : 32;
      if (c >= 128) {
        this.partsSlow(text, emit);
        return;
      }
      const cls = table[c]!;
      if (cls === 2) {
        if (kept) {
          if (glued) {
            const parts = this.partsOfPieces(this.asciiPieces(text, start, i));
            if (parts) (found ??= []).push([token, parts]);
          }
          token++;
        }
        start = -1;
        kept = split = glued = false;
        continue;
      }
      if (start < 0) start = i;
      if (cls === 0) {
        if (kept) split = true;
      } else {
        if (split) glued = true;
        kept = true;
      }
    }
    if (found) for (const [i, parts] of found) emit(i, parts);
  }

  /** The pieces of the ASCII word text[start, end): kept characters (lower-cased) between splitting ones. */
  private asciiPieces(text: string, start: number, end: number): string[] {
    const table = this.ascii;
    const out: string[] = [];
    let piece = '';
    for (let k = start; k < end; k++) {
      const c = text.charCodeAt(k);
      const cls = table[c]!;
      if (cls === 1) piece += text[k];
      else if (cls === 3) piece += String.fromCharCode(c + 32);
      else if (piece) {
        out.push(piece);
        piece = '';
      }
    }
    if (piece) out.push(piece);
    return out;
  }

  /** The parts of a word of two or more ASCII pieces (stemmed, cut), or null. */
  private partsOfPieces(pieces: string[]): string[] | null {
    if (pieces.length < 2) return null;
    return this.stem ? pieces.map((p) => cutToken(this.stem!(p))) : pieces.map(cutToken);
  }

  /** partsOf for text beyond ASCII: the pieces of each token's raw word, normalised as words are. */
  private partsSlow(text: string, emit: (token: number, parts: string[]) => void): void {
    const spans = this.spans(text);
    for (let k = 0; k < spans.length; k++) {
      const parts = this.rawParts(text.slice(spans[k]!.start, spans[k]!.end));
      if (parts.length > 0) emit(k, parts);
    }
  }

  /** The parts of one raw word (a span's text): its normalised pieces, when there are two or more. */
  private rawParts(raw: string): string[] {
    if (NO_SPACE_SCRIPT.test(raw)) return []; // (split into words by the segmenter already)
    const pieces: string[] = [];
    let piece = '';
    for (const ch of raw) {
      const c = ch.charCodeAt(0);
      const keep = c < 128 ? this.ascii[c] === 1 || this.ascii[c] === 3 : this.symbols.has(ch) || WORD_CHAR.test(ch);
      if (keep) piece += ch;
      else if (piece) {
        pieces.push(piece);
        piece = '';
      }
    }
    if (piece) pieces.push(piece);
    if (pieces.length < 2) return [];
    const parts = pieces.map((p) => this.normalizeWord(p)).filter((p) => p.length > 0);
    return parts.length >= 2 ? parts : [];
  }

  /** Is the raw word (a span's text) a term of `terms`, or glued from a part of `terms.parts`? */
  private isTerm(raw: string, token: string, terms: TermLookup): boolean {
    return terms.set.has(token) || this.gluedFromPart(raw, terms);
  }

  private gluedFromPart(raw: string, terms: TermLookup): boolean {
    if (terms.parts === null) return false;
    for (const p of this.rawParts(raw)) if (terms.parts.has(p)) return true;
    return false;
  }

  private emit(tok: string, out: string[]) {
    out.push(cutToken(this.stem ? this.stem(tok) : tok));
  }

  /** Undo whatever the fast path pushed for this text and redo it with full Unicode rules. */
  private slowInto(text: string, out: string[], mark: number): void {
    out.length = mark; // drop what the fast path already pushed for this text
    for (const s of this.spans(text)) out.push(s.token);
  }

  /** Normalises one raw word (no separators inside) into zero or more tokens. */
  private wordTokens(raw: string, base: number, out: Span[]): void {
    if (NO_SPACE_SCRIPT.test(raw)) {
      for (const seg of segmenter(this.locale).segment(raw)) {
        if (!seg.isWordLike) continue;
        const t = this.normalizeWord(seg.segment);
        if (t) out.push({ token: t, start: base + seg.index, end: base + seg.index + seg.segment.length });
      }
      return;
    }
    const t = this.normalizeWord(raw);
    if (t) out.push({ token: t, start: base, end: base + raw.length });
  }

  /** Lower-cases, folds and strips one word; empty when nothing indexable is left. */
  normalizeWord(raw: string): string {
    let s = raw;
    let ascii = true;
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) >= 128) {
        ascii = false;
        break;
      }
    }
    if (!ascii) {
      s = s.normalize('NFKC');
      s = this.locale ? s.toLocaleLowerCase(this.locale) : s.toLowerCase();
      if (this.fold) s = foldLatin(s);
    } else s = s.toLowerCase();
    let out = '';
    for (const ch of s) {
      const c = ch.charCodeAt(0);
      if (c < 128) {
        const cls = this.ascii[c];
        if (cls === 1 || cls === 3) out += ch;
      } else if (this.symbols.has(ch) || WORD_CHAR.test(ch)) out += ch;
    }
    if (!out) return '';
    return cutToken(this.stem ? this.stem(out) : out);
  }

  /** Tokens with their [start, end) offsets in `text`. Hot: every highlighted field of a page. */
  spans(text: string): Span[] {
    const fast = this.asciiSpans(text);
    if (fast) return fast;
    const out: Span[] = [];
    let i = 0;
    const n = text.length;
    while (i < n) {
      // skip separators
      while (i < n && this.isSeparatorAt(text, i)) i += text.codePointAt(i)! > 0xffff ? 2 : 1;
      if (i >= n) break;
      const start = i;
      while (i < n && !this.isSeparatorAt(text, i)) i += text.codePointAt(i)! > 0xffff ? 2 : 1;
      this.wordTokens(text.slice(start, i), start, out);
    }
    return out;
  }

  /**
   * The tokens of `text` (exactly those `spans` gives) as offsets into `out`, each marked
   * when it is one of `terms`. Hot: every highlighted field of every hit on a page. On ASCII
   * text without stemming, a word of kept characters only (the usual case) is a term only if
   * its length and first character fit one (`terms.fits`), so most words are never sliced
   * or looked up.
   */
  markTerms(text: string, terms: TermLookup, out: TokenMarks): void {
    out.count = 0;
    const n = text.length;
    const table = this.ascii;
    const fits = terms.fits;
    const stem = this.stem;
    let start = -1;
    let clean = true;
    // the word's token so far: its length and first character (upper case lowered)
    let kept = 0;
    let first = 0;
    for (let i = 0; i <= n; i++) {
      const c = i < n ? text.charCodeAt(i) : 32;
      if (c >= 128) {
        out.count = 0;
        for (const s of this.spans(text)) out.push(s.start, s.end, this.isTerm(text.slice(s.start, s.end), s.token, terms));
        return;
      }
      const cls = table[c]!;
      if (cls !== 2) {
        if (start < 0) {
          start = i;
          clean = true;
          kept = 0;
        }
        if (cls !== 1) clean = false;
        if (cls === 1 || cls === 3) {
          if (kept === 0) first = cls === 3 ? c + 32 : c;
          kept++;
        }
        continue;
      }
      if (start < 0) continue;
      if (stem === undefined) {
        // a token is a term only if its length and first character fit one: most words
        // are never sliced (nor, with capitals or dropped characters, rebuilt)
        if (kept > 0) {
          let hit = fits[(kept < 63 ? kept : 63) * 128 + first] === 1 && terms.set.has(cutToken(clean ? text.slice(start, i) : this.asciiWord(text.slice(start, i))));
          // (a word with dropped characters may be glued from a part that matched)
          if (!hit && !clean && terms.parts !== null) hit = this.gluedFromPart(text.slice(start, i), terms);
          out.push(start, i, hit);
        }
      } else {
        const raw = text.slice(start, i);
        const tok = clean ? raw : this.asciiWord(raw);
        if (tok.length > 0) out.push(start, i, this.isTerm(raw, cutToken(stem(tok)), terms));
      }
      start = -1;
    }
  }

  /** An ASCII word with dropped characters removed and upper case lowered (its token before stemming). */
  private asciiWord(raw: string): string {
    const table = this.ascii;
    let tok = '';
    for (let k = 0; k < raw.length; k++) {
      const cc = raw.charCodeAt(k);
      const cl = table[cc]!;
      if (cl === 1) tok += raw[k];
      else if (cl === 3) tok += String.fromCharCode(cc + 32);
    }
    return tok;
  }

  /** `spans` for pure ASCII text in one pass over char codes; undefined when the text is not ASCII. */
  private asciiSpans(text: string): Span[] | undefined {
    const n = text.length;
    const table = this.ascii;
    const out: Span[] = [];
    let start = -1;
    let clean = true; // the word so far has only kept characters (no drops, no upper case)
    for (let i = 0; i <= n; i++) {
      const c = i < n ? text.charCodeAt(i) : 32;
      if (c >= 128) return undefined;
      const cls = table[c]!;
      if (cls === 2) {
        if (start >= 0) {
          const raw = text.slice(start, i);
          const tok = clean ? raw : this.asciiWord(raw);
          if (tok.length > 0) out.push({ token: cutToken(this.stem ? this.stem(tok) : tok), start, end: i });
          start = -1;
        }
        continue;
      }
      if (start < 0) {
        start = i;
        clean = true;
      }
      if (cls !== 1) clean = false;
    }
    return out;
  }

  private isSeparatorAt(text: string, i: number): boolean {
    const c = text.charCodeAt(i);
    if (c < 128) return this.ascii[c] === 2;
    const cp = text.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    if (this.separators.has(ch)) return true;
    return /\s/u.test(ch);
  }
}

const shared = new Map<string, Tokenizer>();

/** A cached tokenizer for a set of options (tokenizers are immutable). */
export function tokenizerFor(opts: TokenizerOptions): Tokenizer {
  const key = `${opts.locale ?? ''}\u0000${(opts.separators ?? []).join('')}\u0000${(opts.symbols ?? []).join('')}\u0000${opts.stem ? 1 : 0}\u0000${opts.dictionary?.key ?? ''}`;
  let t = shared.get(key);
  if (!t) {
    t = new Tokenizer(opts);
    shared.set(key, t);
  }
  return t;
}
