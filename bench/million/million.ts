/**
 * bench/million: a generated collection of 1,000,000 documents (Zipf-distributed words
 * from a 50,000-word vocabulary, a category facet, a price). Imports through the CLI, then
 * reports:
 *
 *   - query latency p50/p99 over the mix: 1-3 word queries, half with a typo, each searched
 *     once after 20 of them warm the process up (first use of each word's bitmaps included),
 *     then the same again (every cache warm); each also with the category facet;
 *   - selective queries (two words of Zipf rank 2,000-20,000, no typo) and common ones (one
 *     or two of the 30 most frequent words), p50/p99, for the growth table across sizes;
 *   - the wall-clock time of a cold `fathom search` process;
 *   - with --verify, that every answer of the mix (found, hits, text_match, facets) is the
 *     one the exhaustive path gives (bit matching off, search/match.ts bitMatching);
 *   - the import's peak RSS (GNU time), and sampled from /proc the anonymous and file-backed
 *     (the LMDB map's pages) resident memory of the import process and of its merge process.
 *
 *   node bench/run.mjs million [--n 1000000] [--queries 200] [--keep DIR] [--verify]
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, dirSize, envWithoutCaCerts, mb, median, percentile, rng, runMeasured, table, tmpdir, withTime } from '../common.js';

const N = Number(arg('n', '1000000'));
const NQ = Number(arg('queries', '200'));
const keep = arg('keep');
const r = rng(3);
const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'si', 'po', 'de', 'fa', 'gu', 'ha', 'ji', 'ko', 'lu', 'mo', 'na', 're', 'so', 'ti', 'vo', 'ze'];
const vocab = Array.from({ length: 50000 }, (_, i) => {
  let w = '';
  let x = i + 7;
  for (let k = 0; k < 2 + (i % 3); k++) {
    w += syll[x % syll.length];
    x = Math.floor(x / syll.length) + k * 13;
  }
  return w + (i >= 10648 ? String.fromCharCode(97 + (i % 26)) : '');
});
const uniqueVocab = [...new Set(vocab)];
// Zipf: word rank k has weight 1/k
const cdf: number[] = [];
let acc = 0;
for (let k = 1; k <= uniqueVocab.length; k++) cdf.push((acc += 1 / k));
const zipf = () => {
  const x = r() * acc;
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return uniqueVocab[lo]!;
};

const dir = keep ?? path.join(tmpdir('fathom-bench-million-'), 'data');
const bin = path.join(ROOT, 'bin', 'fathom.js');
if (!fs.existsSync(path.join(dir, 'data.mdb'))) {
  const file = path.join(path.dirname(dir), 'million.jsonl');
  const out = fs.openSync(file, 'w');
  for (let i = 0; i < N; i += 10000) {
    let s = '';
    for (let j = i; j < Math.min(N, i + 10000); j++) {
      const title = Array.from({ length: 3 + Math.floor(r() * 5) }, zipf).join(' ');
      const body = Array.from({ length: 15 + Math.floor(r() * 25) }, zipf).join(' ');
      s += JSON.stringify({ id: String(j), title, body, category: `c${Math.floor(r() * 40)}`, price: Math.floor(r() * 1000) }) + '\n';
    }
    fs.writeSync(out, s);
  }
  fs.closeSync(out);
  await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], {
    input: JSON.stringify({ name: 'docs', fields: [{ name: 'title', type: 'string' }, { name: 'body', type: 'string' }, { name: 'category', type: 'string', facet: true }, { name: 'price', type: 'int32' }] }),
  });
  const [cmd, args] = withTime(process.execPath, [bin, 'import', 'docs', file, '--quiet', '--no-progress', '-d', dir]);
  const parts = sampleRss();
  const imp = await runMeasured(cmd, args);
  parts.stop();
  if (imp.code !== 0) throw new Error(imp.stderr);
  console.error(
    `import: ${(imp.ms / 1000).toFixed(1)} s, ${Math.round(N / (imp.ms / 1000))} docs/s, peak RSS ${mb(imp.maxRssKb * 1024)}; sampled every 100 ms: ` +
      `anonymous up to ${mb(parts.anon)}, file-backed (the LMDB map's pages) up to ${mb(parts.file)}` +
      (parts.mergeAnon > 0 ? `; a merge process ${mb(parts.mergeAnon)} and ${mb(parts.mergeFile)}, the two together up to ${mb(parts.both)}` : ''),
  );
  fs.rmSync(file, { force: true });
}

/**
 * Samples memory from /proc every 100 ms: the largest anonymous and file-backed resident
 * sizes seen, of the import (the node process running `import`) and of its merge process
 * (index/merge-worker.ts run as a child), and the largest sum of the two.
 */
function sampleRss(): { stop: () => void; anon: number; file: number; mergeAnon: number; mergeFile: number; both: number } {
  const out = { anon: 0, file: 0, mergeAnon: 0, mergeFile: 0, both: 0, stop: () => clearInterval(timer) };
  const timer = setInterval(() => {
    let sum = 0;
    for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (cmdline.startsWith('/usr/bin/time')) continue;
        const importing = cmdline.includes('fathom.js\0import');
        const merging = cmdline.includes('merge-worker.js\0' + dir);
        if (!importing && !merging) continue;
        const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
        const anon = kb('RssAnon');
        const file = kb('RssFile');
        sum += anon + file;
        if (importing) {
          out.anon = Math.max(out.anon, anon);
          out.file = Math.max(out.file, file);
        } else {
          out.mergeAnon = Math.max(out.mergeAnon, anon);
          out.mergeFile = Math.max(out.mergeFile, file);
        }
      } catch {
        // (gone)
      }
    }
    out.both = Math.max(out.both, sum);
  }, 100);
  return out;
}

// queries: 1-3 Zipf words, half with a typo in a word of 5+ letters
const queries: string[] = [];
while (queries.length < NQ) {
  const ws = Array.from({ length: 1 + Math.floor(r() * 3) }, zipf);
  if (queries.length % 2) {
    const i = ws.findIndex((w) => w.length >= 5);
    if (i < 0) continue;
    const w = ws[i]!;
    ws[i] = w.slice(0, 2) + w[3] + w[2] + w.slice(4);
  }
  queries.push(ws.join(' '));
}
// selective queries: two words of Zipf rank 2,000-20,000; common ones: one or two of the 30 most frequent
const pick = (lo: number, hi: number) => uniqueVocab[lo + Math.floor(r() * (hi - lo))]!;
const selective = Array.from({ length: 100 }, () => `${pick(2000, 20000)} ${pick(2000, 20000)}`);
const common = Array.from({ length: 100 }, () => (r() < 0.5 ? pick(0, 30) : `${pick(0, 30)} ${pick(0, 30)}`));

const { Engine } = await import('../../src/engine.js');
const { bitMatching } = await import('../../src/search/match.js');
const e = Engine.open(dir, { readOnly: true, merges: 'off' });
for (const q of queries.slice(0, 20)) e.searchSync('docs', { q, query_by: 'title,body' });
/** Each query once, and once with the facet; latencies sorted. */
function pass(qs: string[]): { lat: number[]; facetLat: number[] } {
  const lat: number[] = [];
  const facetLat: number[] = [];
  for (const q of qs) {
    let t = performance.now();
    e.searchSync('docs', { q, query_by: 'title,body' });
    lat.push(performance.now() - t);
    t = performance.now();
    e.searchSync('docs', { q, query_by: 'title,body', facet_by: 'category' });
    facetLat.push(performance.now() - t);
  }
  return { lat: lat.sort((a, b) => a - b), facetLat: facetLat.sort((a, b) => a - b) };
}
const { lat, facetLat } = pass(queries);
const again = pass(queries);
const sel = pass(selective);
const com = pass(common);
let verified = '';
if (arg('verify') !== undefined || process.argv.includes('--verify')) {
  const answer = (res: any) => JSON.stringify([res.found, res.hits.map((h: any) => [h.document.id, h.text_match]), res.facet_counts]);
  let differing = 0;
  for (const q of queries) {
    for (const p of [{ q, query_by: 'title,body' }, { q, query_by: 'title,body', facet_by: 'category' }]) {
      bitMatching.enabled = false;
      const exhaustive = answer(e.searchSync('docs', p));
      bitMatching.enabled = true;
      if (answer(e.searchSync('docs', p)) !== exhaustive) differing++;
    }
  }
  verified = `${differing} of ${queries.length * 2}`;
}
await e.close();

// cold `fathom search`: a new process each time (file cache warm, as after any earlier use);
// also without NODE_EXTRA_CA_CERTS when it is set (Node parses that file before any script)
async function coldSearches(env: NodeJS.ProcessEnv): Promise<number[]> {
  const ms: number[] = [];
  for (const q of queries.slice(0, 5)) {
    const res = await runMeasured(process.execPath, [bin, 'search', 'docs', '-q', q, '--query-by', 'title,body', '--json', '-d', dir], { env });
    if (res.code !== 0) throw new Error(res.stderr);
    ms.push(res.ms);
  }
  return ms;
}
const cold = await coldSearches(process.env);
const coldPlain = envWithoutCaCerts && (await coldSearches(envWithoutCaCerts));
console.log(`\n${N.toLocaleString('en')} documents, data directory ${mb(dirSize(dir))}\n`);
console.log(
  table(
    ['measure', 'value'],
    [
      ['query p50 (title,body, half with a typo)', percentile(lat, 50).toFixed(2) + ' ms'],
      ['query p99', percentile(lat, 99).toFixed(2) + ' ms'],
      ['query with category facet p50', percentile(facetLat, 50).toFixed(2) + ' ms'],
      ['query with category facet p99', percentile(facetLat, 99).toFixed(2) + ' ms'],
      ['the same queries again: p50 / p99', `${percentile(again.lat, 50).toFixed(2)} / ${percentile(again.lat, 99).toFixed(2)} ms`],
      ['again with the facet: p50 / p99', `${percentile(again.facetLat, 50).toFixed(2)} / ${percentile(again.facetLat, 99).toFixed(2)} ms`],
      ['selective (two rare words): p50 / p99', `${percentile(sel.lat, 50).toFixed(2)} / ${percentile(sel.lat, 99).toFixed(2)} ms`],
      ['common (one or two of the top 30 words): p50 / p99', `${percentile(com.lat, 50).toFixed(2)} / ${percentile(com.lat, 99).toFixed(2)} ms`],
      ...(verified ? [['answers differing from the exhaustive path (--verify)', verified]] : []),
      ['cold `fathom search` process, median of 5', median(cold).toFixed(0) + ' ms'],
      ...(coldPlain ? [['the same without NODE_EXTRA_CA_CERTS', median(coldPlain).toFixed(0) + ' ms']] : []),
    ],
  ),
);
if (!keep) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
