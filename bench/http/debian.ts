/**
 * The Debian packages data set for the HTTP benchmark: schema, loader and queries.
 *
 * The data set (63,666 packages, JSON Lines, gzip) is read from
 * ../shared/datasets/debian-packages.jsonl.gz beside the project unless a path is given;
 * the schema is the other benchmarks' (bench/common.ts).
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import { Engine } from '../../src/engine.js';
import { DEBIAN_SCHEMA, DEFAULT_DATASET, rng } from '../common.js';

/** The fields searches run over. */
export const QUERY_BY = 'name,summary';

/** A stream of the data set's raw bytes (gunzipped when the file ends in .gz). */
export function datasetStream(file = DEFAULT_DATASET): NodeJS.ReadableStream & AsyncIterable<Buffer> {
  if (!fs.existsSync(file)) throw new Error(`data set not found: ${file} (give its path as an argument)`);
  const raw = fs.createReadStream(file, { highWaterMark: 1 << 20 });
  return (file.endsWith('.gz') ? raw.pipe(zlib.createGunzip()) : raw) as unknown as NodeJS.ReadableStream & AsyncIterable<Buffer>;
}

/** Creates `packages` in a data directory and imports the data set through the engine. */
export async function loadDebian(dataDir: string, file = DEFAULT_DATASET): Promise<number> {
  const engine = Engine.open(dataDir, { merges: 'worker' });
  try {
    if (engine.listCollections().some((c) => c.name === DEBIAN_SCHEMA.name)) return engine.liveCount(DEBIAN_SCHEMA.name);
    await engine.createCollection(DEBIAN_SCHEMA);
    const summary = await engine.import(DEBIAN_SCHEMA.name, datasetStream(file), { batchSize: 1000 }, () => {});
    await engine.idle();
    return summary.succeeded;
  } finally {
    await engine.close();
  }
}

/** Words of the package summaries, for queries (lower case, 4+ letters). */
export async function vocabulary(file = DEFAULT_DATASET, max = 20_000): Promise<string[]> {
  const words = new Map<string, number>();
  let rest = '';
  for await (const chunk of datasetStream(file)) {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) {
      if (!l) continue;
      const d = JSON.parse(l) as { summary?: string; name?: string };
      for (const w of `${d.summary ?? ''} ${d.name ?? ''}`.toLowerCase().split(/[^a-z0-9]+/)) {
        if (w.length >= 4 && !/^\d+$/.test(w)) words.set(w, (words.get(w) ?? 0) + 1);
      }
    }
  }
  return [...words.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, max)
    .map(([w]) => w);
}

/** One typo: a substitution, deletion, insertion or transposition. */
function typo(w: string, r: () => number): string {
  const i = Math.floor(r() * w.length);
  const c = String.fromCharCode(97 + Math.floor(r() * 26));
  switch (Math.floor(r() * 4)) {
    case 0:
      return w.slice(0, i) + c + w.slice(i + 1);
    case 1:
      return w.slice(0, i) + w.slice(i + 1);
    case 2:
      return w.slice(0, i) + c + w.slice(i);
    default:
      return i + 1 < w.length ? w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2) : w;
  }
}

/** `n` queries of 1-3 words, about half of the words with one typo. */
export function makeQueries(vocab: string[], n: number, seed = 42): string[] {
  const r = rng(seed);
  const out: string[] = [];
  // Favour common words the way real traffic does: square the uniform draw.
  const pick = () => vocab[Math.floor(r() * r() * vocab.length)]!;
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(r() * 3);
    const words: string[] = [];
    for (let j = 0; j < k; j++) {
      const w = pick();
      words.push(r() < 0.5 ? typo(w, r) : w);
    }
    out.push(words.join(' '));
  }
  return out;
}
