/**
 * The process-wide cache of opened segments (index/manifest.ts) follows the manifest: a
 * segment merged away by another process (a cluster's serving processes never merge, their
 * primary does) leaves the cache at the next search or write, with the copy of its blob it
 * held (an import thread only writes). Runs the real binary (npm run build) as the other
 * process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cachedSegments, readState } from '../src/index/manifest.js';
import type { Engine } from '../src/engine.js';
import { BOOKS_SCHEMA, cli, dataDirPath, openEngine } from './helpers.js';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

const liveSegments = (e: Engine) => readState(e.store, e.schema('books').id).segments.length;

describe('the segment cache of a process that does not merge', () => {
  it('drops the segments another process merged away, at the next search', async () => {
    const dir = dataDirPath();
    engine = openEngine(dir, { merges: 'off' });
    await engine.createCollection(BOOKS_SCHEMA);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 12; i++) {
        await engine.writeDocument('books', { id: `b${i}`, title: `book ${i} edition ${round}`, author: 'a', year: 1900 + i }, { action: 'upsert' });
        await engine.search('books', { q: 'book', query_by: 'title' });
      }
      expect(cachedSegments()).toBe(liveSegments(engine));
      // the other process: one more document, then a full merge
      const r = await cli(['import', 'books', '--optimize', '--data-dir', dir], { input: JSON.stringify({ id: `x${round}`, title: 'another book', author: 'b', year: 2000 }) + '\n' });
      expect(r.code, r.stderr).toBe(0);
      const found = await engine.search('books', { q: 'book', query_by: 'title' });
      expect(found.found).toBe(13 + round);
      expect(liveSegments(engine)).toBe(1);
      expect(cachedSegments()).toBe(1);
    }
  });

  it('drops them at the next write too, in a process that only writes', async () => {
    const dir = dataDirPath();
    engine = openEngine(dir, { merges: 'off' });
    await engine.createCollection(BOOKS_SCHEMA);
    for (let i = 0; i < 12; i++) await engine.writeDocument('books', { id: `b${i}`, title: `book ${i}`, author: 'a', year: 1900 + i });
    for (let round = 0; round < 3; round++) {
      // each upsert of an existing document opens the segment holding its old version
      for (let i = 0; i < 12; i++) await engine.writeDocument('books', { id: `b${i}`, title: `book ${i} edition ${round}`, author: 'a', year: 1900 + i }, { action: 'upsert' });
      const r = await cli(['import', 'books', '--optimize', '--data-dir', dir], { input: JSON.stringify({ id: `x${round}`, title: 'another book', author: 'b', year: 2000 }) + '\n' });
      expect(r.code, r.stderr).toBe(0);
      await engine.writeDocument('books', { id: 'b0', title: 'book 0 again', author: 'a', year: 1900 }, { action: 'upsert' });
      // the merged segment and the one just written
      expect(liveSegments(engine)).toBe(2);
      expect(cachedSegments()).toBeLessThanOrEqual(2);
    }
  });
});
