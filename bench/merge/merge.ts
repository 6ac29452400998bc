/**
 * bench/merge: segment merges of a bulk import, alone. The Debian packages are imported
 * with merges off (64 segments of 1,000 documents), then merged the way the tiered policy
 * does it, in memory and without writing: eight 8-way merges of the 1,000-document
 * segments (level 1), then one 8-way merge of their results (level 2). Reports the median
 * of several rounds, and a hash of every merged segment (equal hashes: equal bytes, for
 * comparing two builds).
 *
 *   node bench/run.mjs merge [--dataset PATH] [--rounds 5]
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { DEBIAN_SCHEMA, arg, datasetText, median, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';
import { openStore } from '../../src/storage/store.js';
import { snapshot } from '../../src/index/manifest.js';
import { mergeSegments } from '../../src/index/merge.js';
import { SegmentReader } from '../../src/index/segment.js';

const rounds = Number(arg('rounds', '5'));
const work = tmpdir('fathom-bench-merge-');
const dir = path.join(work, 'data');
const e = Engine.open(dir, { merges: 'off' });
await e.createCollection(DEBIAN_SCHEMA);
await e.import('packages', [Buffer.from(datasetText())], { batchSize: 1000 }, () => {});
await e.close();

const store = openStore(dir, { readOnly: true });
const collId = store.readShared<{ id: number }>(store.collections, 'packages')!.id;
const sources = snapshot(store, collId).segments.map((s) => ({ reader: s.reader, deleted: s.deleted }));
const level1: number[] = [];
const level2: number[] = [];
let digest = '';
for (let r = 0; r < rounds; r++) {
  const h = createHash('sha1');
  let t = performance.now();
  const merged: SegmentReader[] = [];
  for (let g = 0; g < sources.length; g += 8) {
    const m = mergeSegments(sources.slice(g, g + 8), () => true);
    h.update(m.built.blob);
    // a format-2 segment holds its fields in its one blob: nothing else to load
    merged.push(new SegmentReader(g, m.built.blob, () => undefined));
  }
  level1.push(performance.now() - t);
  t = performance.now();
  h.update(mergeSegments(merged.map((reader) => ({ reader, deleted: null })), () => true).built.blob);
  level2.push(performance.now() - t);
  digest = h.digest('hex').slice(0, 16);
}
console.log(`\n${sources.length} segments of the Debian packages, median of ${rounds} rounds\n`);
console.log(
  table(
    ['merge', 'time'],
    [
      [`level 1: ${Math.ceil(sources.length / 8)} merges of up to 8 segments`, median(level1).toFixed(0) + ' ms'],
      ['level 2: one merge of their results', median(level2).toFixed(0) + ' ms'],
      ['both', (median(level1) + median(level2)).toFixed(0) + ' ms'],
    ],
  ),
);
console.log(`\nmerged segments' hash: ${digest}`);
await store.close();
fs.rmSync(work, { recursive: true, force: true });
