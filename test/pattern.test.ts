/**
 * src/pattern.ts: user-written patterns run by RE2 (re2js) mean exactly what JavaScript's
 * RegExp makes of them (checked against RegExp itself, on hand-picked and generated
 * patterns), take time linear in the name, and refuse what has no linear-time equivalent.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { compileNamePattern, globPattern, isLiteralPattern, namePattern, patternProblem, PatternError } from '../src/pattern.js';
import { PATTERN_LIMITS } from '../src/defaults.js';

/** The reference: JavaScript's own reading of the pattern, as the old code ran it. */
const reference = (entry: string, unicode: boolean) => new RegExp(`^(?:${entry})$`, unicode ? 'u' : '');

/** Names that probe what tends to differ: line breaks, Unicode spaces, surrogates, escapes. */
const PROBES = ['', 'a', 'ab', 'aaa', 'A', 'b', '-', '_', ' ', '\n', '\r', '\u2028', '\u00a0', '\ufeff', '\v', 'é', 'ж', 'Ω', '😀', '😀😀', 'a😀', '\ud83d', '\ude00', '\ud83da', '0', '9', '8', 'k', 'u', 'uu', 'c', '\\c', '\\', '{', 'a{', ']', '\x08', '\x11', '\n', '\x00', 'x_y', 'coll_a', 'coll_', 'org_a_books'];

function agree(entry: string, unicode: boolean, names: readonly string[] = PROBES): void {
  const ours = compileNamePattern(entry, unicode);
  const js = reference(entry, unicode);
  const differ = names.filter((n) => ours.test(n) !== js.test(n)).slice(0, 5);
  expect(differ.map((n) => ({ entry, unicode, name: n, ours: ours.test(n) }))).toEqual(differ.map((n) => ({ entry, unicode, name: n, ours: js.test(n) })));
}

describe('patterns mean what JavaScript makes of them', () => {
  const BOTH = [
    'coll_.*',
    '.*_facet',
    'org_[a-z0-9]+_.*',
    '(products|orders)',
    'a)|(b', // the entry is wrapped as JavaScript wrapped it, so this matches `a…` or `…b`
    '(a+)+$',
    '.',
    '.{2}',
    '.*',
    '[^]',
    '[]',
    '[^a]',
    '[a-c]+',
    '[\\w-]+',
    '\\d\\D',
    '\\w+',
    '\\W',
    '\\s+',
    '\\S',
    '\\bab\\b',
    'a\\Bb',
    '^a$',
    'a^',
    '$a',
    '\\n',
    '\\x41',
    '\\u00e9',
    '\\uD83D\\uDE00',
    '\\uD83D',
    '[\\uD800-\\uDBFF]',
    '[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]',
    '[😀]',
    '😀+',
    '\\0',
    '\\cJ',
    '\\/',
    '\\.',
    '\\\\',
    'a{2}',
    'a{1,}',
    'a{0,2}?',
    'a*?b',
    '(?:)*a',
    'a||b',
    '(?<x>a)b',
    '(a)(b)?',
  ];
  it('agrees with RegExp on hand-picked patterns, with the u flag (keys) and without (schemas)', () => {
    for (const entry of BOTH) for (const unicode of [true, false]) agree(entry, unicode);
  });

  it("reads Annex B's legacy forms as JavaScript does without the u flag", () => {
    for (const entry of ['\\12', '\\8', '\\18', '\\k', '\\c', '[\\c1]', '[\\c_]', '[\\b]', '[\\w-a]', '[a-\\d]', 'a{', 'a{1,2', '{', ']', '}', '\\u{2}', '\\x4', '\\p{L}', '\\-', '(a)\\2', '[\\1]', '\\a']) agree(entry, false);
  });

  it('reads Unicode escapes and property classes as JavaScript does with the u flag', () => {
    const props = ['\\p{L}+', '\\P{L}', '\\p{Lu}', '\\p{Letter}', '\\p{gc=Lu}', '\\p{General_Category=Decimal_Number}', '\\p{Script=Greek}+', '\\p{sc=Latin}', '\\p{ASCII}', '\\p{Any}', '\\p{Assigned}', '\\p{Alphabetic}', '\\p{Emoji}', '\\p{White_Space}'];
    for (const entry of ['\\u{1F600}', '[\\p{N}_]+', '[^\\p{L}]', '[^\\p{L}\\d-]', '[\\P{L}a]', '.', ...props]) agree(entry, true);
    // every 17th code point, lone surrogates included
    const sample = Array.from({ length: 0x110000 / 17 }, (_, i) => String.fromCodePoint(i * 17));
    for (const entry of props) agree(entry, true, sample);
  });

  it('refuses Unicode properties RE2 has no table for, naming them', () => {
    for (const entry of ['\\p{scx=Greek}', '\\p{Script_Extensions=Latin}', '\\p{sc=Grek}', '\\p{Ideographic}']) {
      expect(patternProblem(entry, true)?.message).toMatch(/the Unicode property `\\[pP]\{.*\}` is not supported/);
    }
  });

  // the generated patterns: small, so JavaScript's own backtracking stays quick on them
  const CHARS = ['a', 'b', 'A', '-', '_', ' ', 'é', '😀', '\ud83d', '\\n', '\\u2028', '\\.', '\\\\', '\\/', '\\-', '\\k', '\\8', '\\12', '\\0', '\\cJ', '\\c', '\\x61', '\\uD83D', '\\u{61}'];
  const SETS = ['.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\p{L}', '\\P{Ll}'];
  const ASSERTIONS = ['^', '$', '\\b', '\\B'];
  const classItem = fc.oneof(fc.constantFrom(...CHARS, ...SETS.filter((s) => s !== '.'), '\\b', 'a-c', '\\w-a', '-', '\\uD800-\\uDBFF', '\\x00-\\x{7f}', 'Ω'));
  const charClass = fc.tuple(fc.boolean(), fc.array(classItem, { maxLength: 4 })).map(([neg, items]) => `[${neg ? '^' : ''}${items.join('')}]`);
  const quantifier = fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{0,2}', '{1,}', '*?', '{');
  const { expr } = fc.letrec<{ expr: string; term: string; atom: string }>((tie) => ({
    atom: fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...CHARS, ...SETS) },
      { weight: 2, arbitrary: charClass },
      { weight: 1, arbitrary: fc.constantFrom(...ASSERTIONS) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', '(?:'), tie('expr')).map(([open, e]) => `${open}${e})`) },
    ),
    term: fc.array(fc.tuple(tie('atom'), quantifier).map(([a, q]) => a + q), { minLength: 0, maxLength: 3 }).map((t) => t.join('')),
    expr: fc.array(tie('term'), { minLength: 1, maxLength: 2 }).map((ts) => ts.join('|')),
  }));
  const name = fc.array(fc.constantFrom('a', 'b', 'A', '-', '_', ' ', 'é', '😀', '\ud83d', '\ude00', '\n', '\u2028', '.', '\\', 'k', '8', '\n', '\x00', '\x0a', 'Ω', 'J'), { maxLength: 6 }).map((cs) => cs.join(''));

  for (const unicode of [true, false]) {
    it(`agrees with RegExp on generated patterns and names (${unicode ? 'u flag' : 'no flag'})`, () => {
      fc.assert(
        fc.property(expr.filter((e) => e.length < 60), fc.array(name, { minLength: 8, maxLength: 8 }), (entry, names) => {
          let js: RegExp;
          try {
            js = reference(entry, unicode);
          } catch {
            return; // not a pattern: refused as invalid by both
          }
          const problem = patternProblem(entry, unicode);
          expect(problem?.message).toBeUndefined();
          const ours = namePattern(entry, unicode);
          for (const n of [...names, ...PROBES]) if (ours.test(n) !== js.test(n)) expect([entry, n, ours.test(n)]).toEqual([entry, n, js.test(n)]);
        }),
        { numRuns: 1500, seed: 4002 },
      );
    });
  }

  it('matches a name by code units without the u flag, where `.` takes half an emoji', () => {
    expect(namePattern('.{2}', false).test('😀')).toBe(true);
    expect(namePattern('.{2}', true).test('😀')).toBe(false);
    expect(namePattern('.', true).test('😀')).toBe(true);
  });

  it('treats an entry without syntax characters as the name itself', () => {
    expect(isLiteralPattern('books')).toBe(true);
    expect(isLiteralPattern('org_a-b/c')).toBe(true);
    for (const s of ['a.b', 'a*', '(a)', 'a|b', '[a]', 'a{2}', 'a\\b', '^a', 'a$', 'a+', 'a?']) expect(isLiteralPattern(s)).toBe(false);
  });

  it('matches a facet glob like the escaped `.*` pattern it stands for', () => {
    const g = globPattern('*_facet');
    expect(['a_facet', '_facet', 'x.y_facet'].map((n) => g.test(n))).toEqual([true, true, true]);
    expect(['a_facets', 'facet', 'a\n_facet'].map((n) => g.test(n))).toEqual([false, false, false]);
    expect(globPattern('a.(b)*').test('a.(b)zz')).toBe(true);
    expect(globPattern('a.(b)*').test('axbzz')).toBe(false);
  });
});

describe('patterns are matched in linear time', () => {
  it('runs `(a+)+$` as an RE2 program and answers at once on 75 `a`s and a `!`', () => {
    const p = namePattern('(a+)+$', true);
    expect(p.programSize).toBeGreaterThan(0);
    expect(p.programSize).toBeLessThan(20);
    const t0 = performance.now();
    expect(p.test('a'.repeat(75) + '!')).toBe(false);
    expect(p.test('a'.repeat(10_000) + '!')).toBe(false);
    expect(p.test('a'.repeat(75))).toBe(true);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('answers at once for a facet glob of many stars, which backtracking takes seconds on', () => {
    const g = globPattern('*a'.repeat(12) + '*b');
    const t0 = performance.now();
    expect(g.test('a'.repeat(60))).toBe(false);
    expect(g.test('a'.repeat(60) + 'b')).toBe(true);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('matches no name that would take more steps than the work bound', () => {
    const p = namePattern('.*', true);
    const longest = Math.floor(PATTERN_LIMITS.maxMatchWork / p.programSize);
    expect(p.test('x'.repeat(longest))).toBe(true);
    expect(p.test('x'.repeat(longest + 1))).toBe(false);
  });

  it('lets the largest accepted pattern match names of 256 characters, the longest collection name', () => {
    expect(PATTERN_LIMITS.maxMatchWork).toBeGreaterThanOrEqual(PATTERN_LIMITS.maxProgramSize * 256);
    const p = compileNamePattern('[a-z0-9]{1,200}_.*', true);
    expect(p.programSize).toBeGreaterThan(PATTERN_LIMITS.maxProgramSize * 0.8);
    expect(p.test('a'.repeat(200) + '_' + 'b'.repeat(55))).toBe(true);
    expect(p.test('a'.repeat(201) + '_')).toBe(false);
  });

  it('is the same engine re2js documents: linear, no backreferences', () => {
    expect(() => RE2JS.compile('(a)\\1')).toThrow();
  });
});

describe('patterns without a linear-time equivalent', () => {
  const refused = (entry: string, unicode: boolean) => {
    const e = patternProblem(entry, unicode);
    expect(e).toBeInstanceOf(PatternError);
    return e!;
  };

  it('refuses backreferences, numbered and named', () => {
    for (const u of [true, false]) {
      expect(refused('(a)\\1', u).message).toMatch(/backreferences/);
      expect(refused('(?<x>a)\\k<x>', u).message).toMatch(/backreferences/);
    }
  });

  it('refuses lookahead and lookbehind', () => {
    for (const entry of ['(?=a)a', '(?!a).', '(?<=a)b', 'a(?<!b)']) expect(refused(entry, true).message).toMatch(/lookahead and lookbehind/);
  });

  it('refuses inline modifiers (a syntax error before Node 23)', () => {
    const e = refused('(?i:a)', true);
    expect(e.message).toMatch(e.invalid ? /Invalid regular expression/ : /inline modifiers/);
  });

  it('refuses repetition counts above 1000, alone or nested', () => {
    expect(refused('a{1001}', true).message).toMatch(/repetition count above 1000/);
    expect(refused('(a{100}){100}', true).message).toMatch(/too complex|repetition/);
  });

  it('refuses a pattern too long or compiling too large, before the compile takes long', () => {
    expect(refused('a'.repeat(PATTERN_LIMITS.maxLength + 1) + '.*', true).message).toMatch(/longer than/);
    const t0 = performance.now();
    expect(refused('a{1000}'.repeat(100), true).message).toMatch(/too complex/);
    expect(refused('[a-z]{500}[a-z]{500}', true).message).toMatch(/too complex/);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('says a pattern JavaScript refuses is invalid, with its message', () => {
    const e = refused('(unclosed', true);
    expect(e.invalid).toBe(true);
    expect(e.message).toMatch(/Invalid regular expression/);
  });

  it('compiles a refused pattern met in stored data to one that matches nothing, without throwing', () => {
    for (const entry of ['(a)\\1', '(?=a)a', 'a{5000}', '(unclosed']) {
      const p = namePattern(entry, true);
      expect(p.programSize).toBe(0);
      expect(p.test('aa')).toBe(false);
      expect(p.test('a')).toBe(false);
    }
  });
});
