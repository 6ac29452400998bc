import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TokenMarks, Tokenizer, termLookup } from '../src/tokenizer/tokenizer.js';
import { TermInterner } from '../src/index/interner.js';
import { INPUT_LIMITS } from '../src/defaults.js';

describe('tokenizer', () => {
  const t = new Tokenizer();

  it('splits on whitespace, lower-cases and drops punctuation inside words', () => {
    expect(t.tokens('Hello, World! e-mail C++ U.S.A.')).toEqual(['hello', 'world', 'email', 'c', 'usa']);
  });

  it('folds Latin diacritics by default', () => {
    expect(t.tokens('Crème Brûlée à la Straße ŁÓDŹ')).toEqual(['creme', 'brulee', 'a', 'la', 'strasse', 'lodz']);
  });

  it('keeps diacritics for a non-English locale', () => {
    expect(new Tokenizer({ locale: 'fr' }).tokens('Crème Brûlée')).toEqual(['crème', 'brûlée']);
  });

  it('segments scripts written without spaces', () => {
    const toks = new Tokenizer({ locale: 'ja' }).tokens('東京都に住んでいます');
    expect(toks.length).toBeGreaterThan(1);
    expect(toks.join('')).toBe('東京都に住んでいます');
    expect(t.tokens('我喜欢北京')).toContain('北京');
  });

  it('splits on token_separators and keeps symbols_to_index', () => {
    const s = new Tokenizer({ separators: ['-', '.'], symbols: ['+', '#'] });
    expect(s.tokens('libssl-dev python3.11 C++ C# node.js')).toEqual(['libssl', 'dev', 'python3', '11', 'c++', 'c#', 'node', 'js']);
  });

  it('stems with stem: true', () => {
    expect(new Tokenizer({ stem: true }).tokens('running shoes')).toEqual(['run', 'shoe']);
  });

  it('reports the offsets of each token in the original text', () => {
    const text = 'Crème  brûlée, again';
    expect(t.spans(text).map((s) => text.slice(s.start, s.end))).toEqual(['Crème', 'brûlée,', 'again']);
  });

  it('the fast path and the offset path always agree', () => {
    const alphabet = fc.constantFrom(...'aZ9 -.,!é東ß\t\nÅ+#_'.split(''));
    const opts = [new Tokenizer(), new Tokenizer({ separators: ['-'], symbols: ['+'] }), new Tokenizer({ stem: true })];
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 40 }).map((a) => a.join('')), (s) => {
        for (const tok of opts) expect(tok.tokens(s)).toEqual(tok.spans(s).map((x) => x.token));
      }),
      { numRuns: 500 },
    );
  });

  it('marks the same tokens as spans does, and exactly those that are terms or glued from a part that is', () => {
    const alphabet = fc.constantFrom(...'aabbZ9 -.,!é東ß\t\nÅ+#_\''.split(''));
    const text = fc.array(alphabet, { maxLength: 60 }).map((a) => a.join(''));
    const opts = [new Tokenizer(), new Tokenizer({ separators: ['-'], symbols: ['+'] }), new Tokenizer({ stem: true })];
    const marks = new TokenMarks();
    const word = fc.oneof(fc.constantFrom('a', 'ab', 'ba', 'b', 'bb', 'z9', 'é', 'ss', 'a+'), fc.string({ maxLength: 3 }));
    fc.assert(
      fc.property(text, fc.array(word), fc.array(word, { maxLength: 3 }), (s, terms, parts) => {
        const lookup = termLookup(new Set(terms), new Set(parts));
        for (const tok of opts) {
          tok.markTerms(s, lookup, marks);
          const got = Array.from({ length: marks.count }, (_, i) => [marks.starts[i], marks.ends[i], marks.hit[i] === 1]);
          const glued = new Map<number, string[]>();
          tok.partsOf(s, (i, p) => glued.set(i, p));
          expect(got).toEqual(tok.spans(s).map((x, i) => [x.start, x.end, lookup.set.has(x.token) || (glued.get(i) ?? []).some((p) => lookup.parts?.has(p))]));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('gives the parts of words glued by punctuation', () => {
    const parts = (tok: Tokenizer, s: string) => {
      const out: Array<[number, string[]]> = [];
      tok.partsOf(s, (i, p) => out.push([i, p]));
      return out;
    };
    expect(t.tokens('a unit-aware CD ripper/encoder/tagger')).toEqual(['a', 'unitaware', 'cd', 'ripperencodertagger']);
    expect(parts(t, 'a unit-aware CD ripper/encoder/tagger')).toEqual([
      [1, ['unit', 'aware']],
      [3, ['ripper', 'encoder', 'tagger']],
    ]);
    expect(parts(t, "Debian's -x- C++ a--b")).toEqual([
      [0, ['debian', 's']],
      [3, ['a', 'b']],
    ]);
    expect(parts(t, 'Crème-Brûlée l’eau')).toEqual([
      [0, ['creme', 'brulee']],
      [1, ['l', 'eau']],
    ]);
    expect(parts(new Tokenizer({ stem: true }), 'running-shoes')).toEqual([[0, ['run', 'shoe']]]);
    // a separator splits words; a symbol to index is kept inside a piece
    expect(parts(new Tokenizer({ separators: ['-'], symbols: ['+'] }), 'unit-aware c++/java')).toEqual([[2, ['c++', 'java']]]);
  });

  it('finds the same parts on the fast path as in the raw words of the offset path', () => {
    const alphabet = fc.constantFrom(...'aZ9 -./é東ß\t\nÅ+#_\''.split(''));
    const opts = [new Tokenizer(), new Tokenizer({ separators: ['-'], symbols: ['+'] }), new Tokenizer({ stem: true })];
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 40 }).map((a) => a.join('')), (s) => {
        for (const tok of opts) {
          const got: Array<[number, string[]]> = [];
          tok.partsOf(s, (i, p) => got.push([i, p]));
          // the pieces of each token's raw word, split where a character is dropped
          const want: Array<[number, string[]]> = [];
          tok.spans(s).forEach((sp, i) => {
            const raw = s.slice(sp.start, sp.end);
            if (/[東]/.test(raw)) return;
            const pieces = [...raw].reduce<string[]>((acc, ch) => {
              if (tok.normalizeWord(ch) !== '') acc[acc.length - 1] += ch;
              else if (acc[acc.length - 1] !== '') acc.push('');
              return acc;
            }, ['']).map((p) => tok.normalizeWord(p)).filter((p) => p !== '');
            if (pieces.length >= 2) want.push([i, pieces]);
          });
          expect(got, `${JSON.stringify(s)}`).toEqual(want);
        }
      }),
      { numRuns: 1000 },
    );
  });
  it('cuts every token to the length limit the same way on every path, never inside a surrogate pair', () => {
    const max = INPUT_LIMITS.maxTokenLength;
    // words of runs of a few characters, long enough to cross the limit
    const run = fc.tuple(fc.constantFrom('a', 'Z', '9', 'é', '😀', '-', ' ', 'ß'), fc.integer({ min: 1, max: 70 })).map(([c, n]) => c.repeat(n));
    const text = fc.array(run, { maxLength: 6 }).map((a) => a.join(''));
    const opts = [new Tokenizer(), new Tokenizer({ separators: ['-'] }), new Tokenizer({ stem: true })];
    const marks = new TokenMarks();
    const interner = new TermInterner();
    fc.assert(
      fc.property(text, (s) => {
        for (const tok of opts) {
          const tokens = tok.tokens(s);
          expect(tokens).toEqual(tok.spans(s).map((x) => x.token));
          for (const w of tokens) {
            expect(w.length).toBeLessThanOrEqual(max);
            const last = w.charCodeAt(w.length - 1);
            expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
          }
          const ids = { ids: new Int32Array(4) };
          const n = tok.termIdsInto(s, interner, ids);
          if (n >= 0) expect(Array.from(ids.ids.subarray(0, n), (id) => interner.terms[id])).toEqual(tokens);
          const lookup = termLookup(new Set(tokens));
          tok.markTerms(s, lookup, marks);
          expect(marks.count).toBe(tokens.length);
          for (let k = 0; k < marks.count; k++) expect(marks.hit[k]).toBe(1);
        }
      }),
      { numRuns: 500 },
    );
    expect(new Tokenizer().tokens('x'.repeat(100_000))).toEqual(['x'.repeat(max)]);
  });
});
