/**
 * Common terms' bitmaps and postings skips (index/termbits.ts): a cursor that jumps by the
 * skips must land where reading every posting lands, with the same frequencies and
 * positions, and the bitmaps must hold exactly the term's documents.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDirPath, openEngine, rng } from './helpers.js';
import type { Engine } from '../src/engine.js';
import { snapshot } from '../src/index/manifest.js';
import type { TextIndex } from '../src/index/segment.js';
import { isCommon, termBits, termBitsKept, termBitsLimits, termSkips } from '../src/index/termbits.js';

const WORDS = ['linux', 'kernel', 'driver', 'data', 'lib', 'tools', 'libre', 'x'];

describe('term bitmaps and skips', () => {
  let e: Engine;
  const saved = { ...termBitsLimits };
  const texts: TextIndex[] = [];

  beforeAll(async () => {
    // (terms count as common from 16 documents on, so that a small collection has some)
    termBitsLimits.min = 16;
    const r = rng(4);
    e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({ name: 'docs', fields: [{ name: 'body', type: 'string' }, { name: 'tags', type: 'string[]' }] });
    const text = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(r() * r() * WORDS.length)]!).join(' ');
    let id = 0;
    for (let batch = 0; batch < 3; batch++) {
      await e.writeBatch(
        'docs',
        Array.from({ length: 700 }, () => ({ kind: 'write' as const, action: 'upsert' as const, doc: { id: String(id++), body: text(1 + Math.floor(r() * 12)), tags: [text(1 + Math.floor(r() * 3)), text(1)] } })),
      );
    }
    const snap = snapshot(e.store, (e.store.collections.get('docs') as { id: number }).id);
    for (const seg of snap.segments) for (const [, meta] of seg.reader.fields) if (meta.kind === 'text' && seg.reader.text(meta.id)) texts.push(seg.reader.text(meta.id)!);
  });

  afterAll(async () => {
    Object.assign(termBitsLimits, saved);
    await e.close();
  });

  it('jumps by the skips to the same documents, frequencies and positions as reading every posting', () => {
    const r = rng(9);
    let checked = 0;
    for (const ti of texts) {
      for (let t = 0; t < ti.terms.size; t++) {
        if (!isCommon(ti, t)) continue;
        const skips = termSkips(ti, t)!;
        const plain = ti.cursor(t);
        const jumping = ti.cursor(t, skips);
        const n = ti.lengths.offsets.length - 1;
        let target = 0;
        let last = -1;
        while (target < n) {
          target += 1 + Math.floor(r() * r() * 200);
          const a = plain.advance(target);
          const b = jumping.advance(target);
          expect(b).toBe(a);
          if (a === Infinity) break;
          expect(jumping.tf).toBe(plain.tf);
          // positions read at some documents only (the others are skipped over lazily), once each
          if (a !== last && r() < 0.5) expect(jumping.positions()).toEqual(plain.positions());
          last = a;
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(200);
  });

  it('sets exactly the documents holding the term, and keeps what it built within its budget', () => {
    let common = 0;
    for (const ti of texts) {
      for (let t = 0; t < ti.terms.size; t++) {
        if (!isCommon(ti, t)) {
          expect(termBits(ti, t)).toBeUndefined();
          continue;
        }
        common++;
        const bits = termBits(ti, t)!;
        const docs: number[] = [];
        const c = ti.cursor(t);
        while (c.next() !== Infinity) docs.push(c.doc);
        const set: number[] = [];
        for (let d = 0; d < bits.length * 32; d++) if (bits[d >>> 5]! & (1 << (d & 31))) set.push(d);
        expect(set).toEqual(docs);
      }
    }
    expect(common).toBeGreaterThan(10);
    expect(termBitsKept().bytes).toBeLessThanOrEqual(termBitsLimits.bytes);
  });
});
