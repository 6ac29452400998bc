/**
 * BERT's WordPiece tokenizer, built from a `vocab.txt` (one token per line, id = line number).
 *
 * Pipeline (BERT's reference tokenizer, and @huggingface/tokenizers' BertNormalizer +
 * BertPreTokenizer + WordPiece, which the tests use as an oracle):
 *   1. drop NUL, U+FFFD and control/format characters (Cc except \t \n \r, Cf, Co, Cs);
 *   2. split on whitespace; every punctuation character (\p{P} and ASCII symbols) and every
 *      CJK ideograph is a word of its own;
 *   3. uncased vocabularies: lower-case, then strip accents (NFD, drop \p{Mn});
 *   4. WordPiece: greedy longest match first, continuations prefixed `##`; a word with no
 *      segmentation or longer than 100 characters becomes `[UNK]`;
 *   5. `[CLS] … [SEP]`, truncated to `maxTokens` (the rest of the text is not even read).
 *
 * Hand-written rather than assembled from @huggingface/tokenizers: the library runs regular
 * expressions per character, which would dominate the cost of small models, and a
 * whole-text pass cannot stop at the truncation point. Words are cached.
 * Special tokens are never recognised in the text: a literal "[SEP]" is ordinary text.
 */
import type { SubwordTokenizer } from './tokenizer.js';

export interface WordPieceOptions {
  /** Longest sequence, [CLS] and [SEP] included. Range 3..; BERT models: 512. */
  maxTokens: number;
  /** Lower-case and strip accents. Default: true when the vocabulary has no upper-case token (an uncased model). */
  lowercase?: boolean;
}

/** Words longer than this many characters become [UNK] (BERT's max_input_chars_per_word). */
const MAX_WORD_CHARS = 100;
/** Distinct words remembered with their pieces; the cache is emptied when full. */
const WORD_CACHE_SIZE = 50_000;

const CONTROL = /^[\p{Cc}\p{Cf}\p{Co}\p{Cs}]$/u;
const WHITESPACE = /^\s$/u;
const PUNCTUATION = /^\p{P}$/u;
const COMBINING = /\p{Mn}/gu;
const NON_ASCII = /[^\u0000-\u007f]/;

// ASCII classes: 1 whitespace, 2 control (dropped), 3 punctuation or symbol, 0 word character.
const ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if (c === 9 || c === 10 || c === 11 || c === 12 || c === 13 || c === 32) ASCII_CLASS[c] = 1;
  else if (c < 32 || c === 127) ASCII_CLASS[c] = 2;
  else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) ASCII_CLASS[c] = 3;
}

/** CJK ideographs as BERT defines them (including the astral extension blocks). */
export function isCjk(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b820 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** Parses vocab.txt: one token per line; the id is the 0-based line number. A trailing empty line is ignored. */
export function parseVocabTxt(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** True when no ordinary token has an upper-case letter (bracketed special tokens aside): an uncased vocabulary. */
export function looksUncased(vocab: readonly string[]): boolean {
  for (const t of vocab) {
    if (t.startsWith('[') && t.endsWith(']')) continue;
    if (t !== t.toLowerCase()) return false;
  }
  return true;
}

export class WordPieceTokenizer implements SubwordTokenizer {
  readonly padId: number;
  readonly maxTokens: number;
  readonly lowercase: boolean;
  private readonly clsId: number;
  private readonly sepId: number;
  private readonly unkId: number;
  private readonly ids = new Map<string, number>();
  /** Longest token in code points: no longer substring needs looking up. */
  private readonly longest: number;
  private readonly cache = new Map<string, number[]>();
  private readonly vocab: readonly string[];

  constructor(vocab: readonly string[], opts: WordPieceOptions) {
    this.vocab = vocab;
    if (opts.maxTokens < 3) throw new Error(`a BERT model needs room for at least 3 tokens, got ${opts.maxTokens}`);
    this.maxTokens = opts.maxTokens;
    let longest = 1;
    vocab.forEach((t, i) => {
      if (!this.ids.has(t)) this.ids.set(t, i);
      if (t.length > longest) longest = t.length; // UTF-16 length >= code points: a safe bound
    });
    this.longest = longest;
    const need = (t: string): number => {
      const id = this.ids.get(t);
      if (id === undefined) throw new Error(`the vocabulary has no \`${t}\` token`);
      return id;
    };
    this.clsId = need('[CLS]');
    this.sepId = need('[SEP]');
    this.unkId = need('[UNK]');
    this.padId = this.ids.get('[PAD]') ?? 0;
    this.lowercase = opts.lowercase ?? looksUncased(vocab);
  }

  /** Hot path. */
  encode(text: string): number[] {
    const out = [this.clsId];
    const limit = this.maxTokens - 1;
    let start = -1; // start of the current word in `text`, or -1
    let word = ''; // the current word when it had characters dropped from its middle
    let dirty = false;
    const flush = (end: number) => {
      if (start >= 0) this.pushWord(dirty ? word : text.slice(start, end), out, limit);
      start = -1;
      word = '';
      dirty = false;
    };
    const add = (i: number, ch: string) => {
      if (start < 0) start = i;
      if (dirty) word += ch;
    };
    for (let i = 0; i < text.length && out.length < limit; i++) {
      const c = text.charCodeAt(i);
      if (c < 128) {
        const cls = ASCII_CLASS[c];
        if (cls === 0) add(i, text[i]!);
        else if (cls === 1) flush(i);
        else if (cls === 3) {
          flush(i);
          this.pushWord(text[i]!, out, limit);
        } else if (start >= 0 && !dirty) {
          word = text.slice(start, i); // a dropped character inside a word
          dirty = true;
        }
        continue;
      }
      let ch = text[i]!;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) ch = text.slice(i, i + 2);
      }
      const cp = ch.codePointAt(0)!;
      const next = i + ch.length - 1;
      if (cp === 0xfffd || CONTROL.test(ch)) {
        if (start >= 0 && !dirty) {
          word = text.slice(start, i);
          dirty = true;
        }
      } else if (WHITESPACE.test(ch)) {
        flush(i);
      } else if (isCjk(cp) || PUNCTUATION.test(ch)) {
        flush(i);
        this.pushWord(ch, out, limit);
      } else {
        add(i, ch);
      }
      i = next;
    }
    flush(text.length);
    out.push(this.sepId);
    return out;
  }

  /** The token strings of `text`, special tokens left out (for tests and diagnostics). */
  tokenize(text: string): string[] {
    return this.encode(text)
      .slice(1, -1)
      .map((id) => this.vocab[id]!);
  }

  /** Appends the pieces of one word (raw, before case folding) while there is room. */
  private pushWord(raw: string, out: number[], limit: number): void {
    if (out.length >= limit) return;
    let w = raw;
    if (this.lowercase) {
      w = w.toLowerCase();
      if (NON_ASCII.test(w)) w = w.normalize('NFD').replace(COMBINING, '');
      if (w.length === 0) return;
    }
    let pieces = this.cache.get(w);
    if (!pieces) {
      pieces = this.wordPieces(w);
      if (this.cache.size >= WORD_CACHE_SIZE) this.cache.clear();
      this.cache.set(w, pieces);
    }
    for (const id of pieces) {
      if (out.length >= limit) return;
      out.push(id);
    }
  }

  /** Greedy longest-match-first segmentation of one normalised word. */
  private wordPieces(w: string): number[] {
    const chars = NON_ASCII.test(w) ? Array.from(w) : undefined;
    const n = chars ? chars.length : w.length;
    if (n > MAX_WORD_CHARS) return [this.unkId];
    const pieces: number[] = [];
    let start = 0;
    while (start < n) {
      let end = Math.min(n, start + this.longest);
      let found = -1;
      while (start < end) {
        const sub = chars ? chars.slice(start, end).join('') : w.slice(start, end);
        const id = this.ids.get(start > 0 ? `##${sub}` : sub);
        if (id !== undefined) {
          found = id;
          break;
        }
        end--;
      }
      if (found < 0) return [this.unkId];
      pieces.push(found);
      start = end;
    }
    return pieces;
  }
}
