import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { openEngine } from './helpers.js';
import { getSchema, fieldTokenizer } from '../src/collection/catalog.js';
import { ELEMENT_SHIFT, SegmentBuilder, SegmentReader, sortedTermIds } from '../src/index/segment.js';
import { TermInterner } from '../src/index/interner.js';
import { StringTable } from '../src/termdict/table.js';
import { unionTables } from '../src/termdict/union.js';
import type { Field } from '../src/schema/schema.js';

/**
 * The segment builder interns terms straight from the tokenizer's character scan (no
 * string per token). These tests hold it to a simple reference: the tokenizer's own token
 * list for every value, turned into term -> (document, positions) by hand.
 */

const engine = openEngine();
afterAll(() => engine.close());
await engine.createCollection({
  name: 'docs',
  token_separators: ['-'],
  symbols_to_index: ['+'],
  fields: [
    { name: 'title', type: 'string' },
    { name: 'tags', type: 'string[]' },
    { name: 'body', type: 'string', stem: true },
  ],
});
const schema = getSchema(engine.store, 'docs');
const fields = ['title', 'tags', 'body'].map((n) => schema.field(n)!) as Field[];

/** Words from a small alphabet, so that terms repeat across documents and segments. */
const word = fc.stringMatching(/^[a-cA-C9+.']{1,4}$|^(é|ß|日本|Ω)[ab]?$/);
const text = fc.array(fc.tuple(word, fc.constantFrom(' ', '-', ', ', '  ', '/')), { maxLength: 8 }).map((ws) => ws.map(([w, sep]) => w + sep).join(''));
const doc = fc.record({ title: text, tags: fc.array(text, { maxLength: 3 }), body: text });

/** term -> "ord:pos,pos;ord:pos..." for one field of a built segment. */
function readBack(reader: SegmentReader, field: Field): Map<string, string> {
  const out = new Map<string, string>();
  const ti = reader.text(field.id);
  if (!ti) return out;
  for (let t = 0; t < ti.terms.size; t++) {
    const cur = ti.cursor(t);
    const parts: string[] = [];
    while (cur.next() !== Infinity) parts.push(`${cur.doc}:${cur.positions().join(',')}`);
    out.set(ti.terms.get(t), parts.join(';'));
  }
  return out;
}

/** The same, from the tokenizer's token lists. */
function reference(docs: Array<Record<string, string | string[]>>, field: Field): Map<string, string> {
  const tok = fieldTokenizer(schema, field);
  const postings = new Map<string, Map<number, number[]>>();
  docs.forEach((d, ord) => {
    const v = d[field.name]!;
    const values = Array.isArray(v) ? v : [v];
    values.forEach((s, e) => {
      tok.tokens(s).forEach((term, i) => {
        let per = postings.get(term);
        if (!per) postings.set(term, (per = new Map()));
        let pos = per.get(ord);
        if (!pos) per.set(ord, (pos = []));
        pos.push((Array.isArray(v) ? e * ELEMENT_SHIFT : 0) + i);
      });
    });
  });
  const out = new Map<string, string>();
  for (const term of [...postings.keys()].sort()) {
    out.set(term, [...postings.get(term)!].map(([ord, pos]) => `${ord}:${pos.join(',')}`).join(';'));
  }
  return out;
}

describe('building a segment', () => {
  it('indexes every token of every value exactly as the tokenizer splits it, segment after segment', () => {
    fc.assert(
      fc.property(fc.array(doc, { minLength: 1, maxLength: 12 }), (docs) => {
        const b = new SegmentBuilder();
        docs.forEach((d, i) => b.add(100 + i, fields.map((f) => [f, d[f.name as keyof typeof d]] as [Field, string | string[]])));
        const built = b.build((f) => fieldTokenizer(schema, f));
        const reader = new SegmentReader(1, built.blob, () => undefined);
        for (const f of fields) {
          const got = readBack(reader, f);
          expect([...got.keys()]).toEqual([...got.keys()].sort()); // the dictionary is sorted
          expect(got).toEqual(reference(docs, f));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('counts the tokens of each value, ASCII or not', () => {
    const b = new SegmentBuilder();
    const title = fields[0]!;
    b.add(0, [[title, 'Hello, World-wide WEB']]);
    b.add(1, [[title, 'Ünïcödé wörds here']]);
    const reader = new SegmentReader(1, b.build((f) => fieldTokenizer(schema, f)).blob, () => undefined);
    const lengths = reader.text(title.id)!.lengths;
    expect([...lengths.values]).toEqual([4, 3]);
    expect(readBack(reader, title).get('world')).toBe('0:1');
    expect(readBack(reader, title).get('words')).toBe('1:1');
  });
});

describe('the term interner', () => {
  it('gives each distinct term one id, whether it arrives as a string or as characters', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'é', 'Z', '日'), maxLength: 6 }), { maxLength: 400 }), fc.array(fc.boolean(), { minLength: 400, maxLength: 400 }), (terms, asChars) => {
        const it = new TermInterner();
        const want = new Map<string, number>();
        terms.forEach((t, i) => {
          let id: number;
          if (asChars[i]) {
            const s = t.length > it.scratch.length ? it.growScratch(t.length) : it.scratch;
            for (let k = 0; k < t.length; k++) s[k] = t.charCodeAt(k);
            id = it.idOfScratch(t.length);
          } else id = it.idOf(t);
          if (!want.has(t)) want.set(t, want.size);
          expect(id).toBe(want.get(t));
          expect(it.terms[id]).toBe(t);
        });
        expect(it.size).toBe(want.size);
      }),
      { numRuns: 200 },
    );
  });
});

describe('the term table order', () => {
  it('sorts term ids exactly as sorting their strings does', () => {
    // units that tie on a two-unit prefix, a NUL, surrogate halves and units above 0x7fff
    const unit = fc.constantFrom('a', 'b', 'ab', '\u0000', 'é', '日', '\ud83d', '\ude00', '\uffff', '9');
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit, minLength: 1, maxLength: 7 }), { maxLength: 300 }), (terms) => {
        const ids = sortedTermIds(terms);
        expect([...ids].map((i) => terms[i])).toEqual([...terms].sort());
      }),
      { numRuns: 300 },
    );
    // terms that end where others go on, and code units at both ends of the range
    const edges = ['b', 'a\uffff', 'a\uffff\u0000', 'a', 'ab', 'ab\u0000', '\u0000', '\uffff\uffff', 'a\uffffa', '\uffff', 'b\u0000\u0000', 'ba'];
    for (const [copies, reverse] of [[1, false], [30, false], [1, true], [30, true]] as const) {
      const terms = edges.concat(Array.from({ length: copies }, (_, i) => `a\uffff${i}`));
      if (reverse) terms.reverse();
      expect([...sortedTermIds(terms)].map((i) => terms[i])).toEqual([...terms].sort());
    }
  });

  it('sorts more terms than the packed keys have room for (over 2^19) by comparing strings', () => {
    const terms = Array.from({ length: 2 ** 19 + 100 }, (_, i) => (i * 7919).toString(36));
    const ids = sortedTermIds(terms);
    const want = [...terms].sort();
    let wrong = -1;
    for (let i = 0; i < ids.length && wrong < 0; i++) if (terms[ids[i]!] !== want[i]) wrong = i;
    expect(wrong).toBe(-1);
  });
});

describe("a term table's tails index", () => {
  /** The reference: entries longer than `from`, by their units from `from` on, equal tails by index. */
  const byTail = (words: string[], from: number) =>
    words
      .map((w, i) => [w.slice(from), i] as const)
      .filter(([, i]) => words[i]!.length > from)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]))
      .map(([, i]) => i);

  it('orders the entries by what follows their first units, as sorting those tails does', () => {
    // units that tie on a two-unit prefix, a NUL (which must sort after a tail's end), surrogate
    // halves, the top unit; and a two-unit alphabet, so that runs of equal tails are long
    const unit = fc.oneof(fc.constantFrom('a', 'b', 'ab', '\u0000', 'é', '日', '\ud83d', '\uffff', '9'), fc.constantFrom('a', '\u0000'));
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit, maxLength: 7 }), { maxLength: 300 }), fc.integer({ min: 0, max: 4 }), (terms, from) => {
        const words = [...terms].sort();
        const table = StringTable.build(words);
        expect([...table.tails(from)]).toEqual(byTail(words, from));
      }),
      { numRuns: 300 },
    );
    // a long run of tails that differ only by a trailing NUL ("a" before "a\0"), whose heads
    // put them in the other order
    const heads = [...'bcdefghijklmnop'];
    const words = heads.flatMap((h, i) => [`${h}a`, `${heads[heads.length - 1 - i]}a\u0000`]).sort();
    expect([...StringTable.build(words).tails(1)]).toEqual(byTail(words, 1));
  });

  it('orders more entries than the packed keys have room for (over 2^19) by comparing tails', () => {
    const words = Array.from({ length: 2 ** 19 + 100 }, (_, i) => (i * 7919).toString(36)).sort();
    const got = StringTable.build(words).tails(2);
    const want = byTail(words, 2);
    let wrong = got.length === want.length ? -1 : 0;
    for (let i = 0; i < got.length && wrong < 0; i++) if (got[i] !== want[i]) wrong = i;
    expect(wrong).toBe(-1);
  });
});

describe("a term table's reversed table", () => {
  it('spells every entry backwards, in code unit order, each with the index of the entry it reverses', () => {
    const unit = fc.constantFrom('a', 'b', 'ab', '\u0000', 'é', '日', '\ud83d', '\uffff', '9');
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit, maxLength: 7 }), { maxLength: 300 }), (terms) => {
        const words = [...terms].sort();
        const { table, ids } = StringTable.build(words).reversed();
        const back = (w: string) => w.split('').reverse().join('');
        // the reference: the non-empty entries reversed and sorted (equal ones cannot occur)
        const want = words
          .map((w, i) => [back(w), i] as const)
          .filter(([w]) => w.length > 0)
          .sort((a, b) => (a[0] < b[0] ? -1 : 1));
        expect(Array.from({ length: table.size }, (_, r) => table.get(r))).toEqual(want.map(([w]) => w));
        expect([...ids]).toEqual(want.map(([, i]) => i));
      }),
      { numRuns: 300 },
    );
  });
});

describe('a union of term tables', () => {
  it('holds every entry of each table once, in order, and says where each table\'s entries sit', () => {
    const unit = fc.constantFrom('a', 'b', 'ab', '\u0000', 'é', '日', '\ud83d', '\uffff');
    fc.assert(
      fc.property(fc.array(fc.uniqueArray(fc.string({ unit, maxLength: 5 }), { maxLength: 60 }), { minLength: 1, maxLength: 3 }), (lists) => {
        const sorted = lists.map((l) => [...l].sort());
        const { table, pos } = unionTables(sorted.map((l) => StringTable.build(l)));
        const union = [...new Set(sorted.flat())].sort();
        expect(Array.from({ length: table.size }, (_, u) => table.get(u))).toEqual(union);
        sorted.forEach((words, t) => {
          // pos[t][u]: how many of table t's entries sort before union entry u
          expect([...pos[t]!]).toEqual([...union, undefined].map((w) => (w === undefined ? words.length : words.filter((x) => x < w).length)));
        });
      }),
      { numRuns: 300 },
    );
  });
});
