import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseFilter } from '../src/query/filter.js';
import { openEngine, rng } from './helpers.js';

describe('filter_by parser', () => {
  it('parses every operator', () => {
    expect(parseFilter('a:=1 && (b:>2 || c:[x, `y z`]) && d:!=[1..5, 9] && e:* && f:<=3')).toMatchObject({
      kind: 'and',
      children: [
        { kind: 'cond', field: 'a', op: 'eq' },
        { kind: 'or', children: [{ op: 'gt' }, { op: 'match', values: [{ value: 'x' }, { value: 'y z' }] }] },
        { kind: 'cond', field: 'd', op: 'eq', negated: true, values: [{ lo: '1', hi: '5' }, { value: '9' }] },
        { op: 'exists' },
        { op: 'lte' },
      ],
    });
    expect(parseFilter('tags:![a,b]')).toMatchObject({ op: 'eq', negated: true });
    expect(parseFilter('$orders(qty:>1)')).toMatchObject({ kind: 'join', collection: 'orders' });
  });

  it.each([
    ['a:', /expected a value after `a:` at position 2/],
    ['a:1 &&', /expected a condition but the expression ended at position 6/],
    ['(a:1', /expected `\)` to close the `\(` at position 0/],
    ['a:1)', /unexpected `\)` without a matching `\(` at position 3/],
    ['a 1', /expected `:` after field `a 1`/],
    ['a:[1,', /expected a value in the list/],
    ['a:[]', /empty list/],
    ['a:`x', /unclosed backquote/],
    ['', /the expression is empty/],
  ])('names the position of a syntax error in %j', (src, re) => expect(() => parseFilter(src)).toThrow(re));
});

interface Doc {
  id: string;
  title: string;
  tags: string[];
  n: number;
  f?: number;
  b: boolean;
}

function makeDocs(count: number, seed: number): Doc[] {
  const r = rng(seed);
  const words = ['red', 'green', 'blue', 'big', 'small', 'fast', 'slow', 'old', 'new'];
  const pick = () => words[Math.floor(r() * words.length)]!;
  return Array.from({ length: count }, (_, i) => ({
    id: `d${i}`,
    title: `${pick()} ${pick()} ${pick()}`,
    tags: Array.from({ length: Math.floor(r() * 3) }, pick),
    n: Math.floor(r() * 100) - 20,
    ...(r() < 0.8 ? { f: Math.round(r() * 1000) / 10 } : {}),
    b: r() < 0.5,
  }));
}

describe('filter_by against a brute-force scan', () => {
  it('matches exactly the documents a direct evaluation picks, for random filters', async () => {
    const e = openEngine();
    await e.createCollection({
      name: 'c',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'tags', type: 'string[]', facet: true },
        { name: 'n', type: 'int32' },
        { name: 'f', type: 'float', optional: true },
        { name: 'b', type: 'bool' },
      ],
    });
    const docs = makeDocs(600, 42);
    // several imports and a few deletes so that several segments and deletion bitmaps are involved
    for (let i = 0; i < docs.length; i += 150) {
      await e.import('c', [Buffer.from(docs.slice(i, i + 150).map((d) => JSON.stringify(d)).join('\n'))], { batchSize: 37 }, () => {});
    }
    const deleted = new Set(['d3', 'd77', 'd300', 'd599']);
    for (const id of deleted) await e.deleteDocument('c', id);
    const live = docs.filter((d) => !deleted.has(d.id));
    const words = ['red', 'green', 'blue', 'big', 'nope'];

    type Cond = { src: string; test: (d: Doc) => boolean };
    const cond = fc.oneof(
      fc.tuple(fc.constantFrom('>', '>=', '<', '<=', '=', '!='), fc.integer({ min: -25, max: 85 })).map(([op, v]): Cond => ({
        src: `n:${op}${v}`,
        test: (d) => (op === '>' ? d.n > v : op === '>=' ? d.n >= v : op === '<' ? d.n < v : op === '<=' ? d.n <= v : op === '=' ? d.n === v : d.n !== v),
      })),
      fc.tuple(fc.integer({ min: -20, max: 80 }), fc.integer({ min: 0, max: 40 })).map(([lo, w]): Cond => ({ src: `n:[${lo}..${lo + w}]`, test: (d) => d.n >= lo && d.n <= lo + w })),
      fc.constantFrom(...words).map((w): Cond => ({ src: `title:${w}`, test: (d) => d.title.split(' ').includes(w) })),
      fc.constantFrom(...words).map((w): Cond => ({ src: `tags:=${w}`, test: (d) => d.tags.includes(w) })),
      fc.tuple(fc.constantFrom(...words), fc.constantFrom(...words)).map(([a, b]): Cond => ({ src: `tags:![${a}, ${b}]`, test: (d) => !d.tags.includes(a) && !d.tags.includes(b) })),
      fc.boolean().map((v): Cond => ({ src: `b:${v}`, test: (d) => d.b === v })),
      fc.constant<Cond>({ src: 'f:*', test: (d) => d.f !== undefined }),
      fc.float({ min: 0, max: 100, noNaN: true }).map((v): Cond => ({ src: `f:<${v}`, test: (d) => d.f !== undefined && d.f < v })),
    );
    const expr: fc.Arbitrary<Cond> = fc.letrec<{ e: Cond }>((tie) => ({
      e: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        cond,
        fc.tuple(tie('e'), tie('e')).map(([a, b]): Cond => ({ src: `(${a.src} && ${b.src})`, test: (d) => a.test(d) && b.test(d) })),
        fc.tuple(tie('e'), tie('e')).map(([a, b]): Cond => ({ src: `(${a.src} || ${b.src})`, test: (d) => a.test(d) || b.test(d) })),
      ),
    })).e;
    await fc.assert(
      fc.asyncProperty(expr, async (c) => {
        const res = await e.search('c', { q: '*', filter_by: c.src, per_page: 250 });
        const want = live.filter(c.test).map((d) => d.id).sort();
        expect({ src: c.src, found: res.found }).toEqual({ src: c.src, found: want.length });
        if (want.length <= 250) expect(res.hits!.map((h) => h.document.id as string).sort()).toEqual(want);
      }),
      { numRuns: 150 },
    );
    await e.close();
  });

  it('filters by id lists and names unknown or unfilterable fields', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'c', fields: [{ name: 't', type: 'string' }, { name: 'x', type: 'string', index: false, optional: true }] });
    for (let i = 0; i < 5; i++) await e.writeDocument('c', { id: `k${i}`, t: 'x' });
    expect((await e.search('c', { q: '*', filter_by: 'id:[k1, k3]' })).hits!.map((h) => h.document.id).sort()).toEqual(['k1', 'k3']);
    expect((await e.search('c', { q: '*', filter_by: 'id:!=k1' })).found).toBe(4);
    await expect(e.search('c', { q: '*', filter_by: 'nope:=1' })).rejects.toThrow(/no field named `nope`/);
    await expect(e.search('c', { q: '*', filter_by: 'x:=1' })).rejects.toThrow(/`x` has `index: false`/);
    await expect(e.search('c', { q: '*', filter_by: 't:>1' })).rejects.toThrow(/comparisons like > and < need a numeric field/);
    await e.close();
  });
});
