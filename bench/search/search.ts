/**
 * bench/search: Fathom against MiniSearch, Orama and SQLite FTS5 on the Debian dataset, in
 * one run, each engine in its own process (so peak RSS is its own).
 *
 *   node bench/run.mjs search [--dataset PATH] [--queries 300] [--limit N]
 *
 * Every engine indexes name, summary and description (Fathom also the section/priority
 * facets, installed_size and depends) and answers the same 1-3 word queries, half with a
 * typo, a third also counting the `section` facet. Index time is wall clock until the
 * engine can answer; query latency is per query after one warm-up pass over the set.
 * For Fathom it also times cold `fathom search` processes (start to exit, the first 5
 * queries, 3 rounds, median) next to a bare `node -e 0`, so Node's own start-up on the
 * machine is visible. When NODE_EXTRA_CA_CERTS is set (it is on the shared machines), Node
 * reads and parses that certificate file before running any script, which costs every
 * process 50 ms or more; the cold runs are then timed both with it and without it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { DEBIAN_SCHEMA, ROOT, envWithoutCaCerts, arg, dirSize, debianDocs, mb, median, percentile, queryset, table, tmpdir, withTime, runMeasured, type BenchQuery, type DebianPackage } from '../common.js';

interface Result {
  engine: string;
  docs: number;
  indexMs: number;
  peakRssMb: number;
  diskMb: number | null;
  lat: Record<string, { p50: number; p99: number }>;
  foundTypo: number;
  note?: string;
  /** Fathom: wall clock of whole `fathom search` processes, and of `node -e 0` beside them. */
  cold?: ColdTimes;
  /** The same without NODE_EXTRA_CA_CERTS, when it was set. */
  coldNoCaCerts?: ColdTimes;
}

interface ColdTimes {
  searchMs: number;
  nodeMs: number;
  runs: number;
}

const QUERY_FIELDS = ['name', 'summary', 'description'];

/** Times whole `fathom search` processes and bare `node -e 0` ones, interleaved. */
async function coldTimes(bin: string, dir: string, queries: BenchQuery[], env: NodeJS.ProcessEnv): Promise<ColdTimes> {
  const search: number[] = [];
  const bare: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (const q of queries.slice(0, 5)) {
      const c = await runMeasured(process.execPath, [bin, 'search', 'packages', '-q', q.q, '--query-by', QUERY_FIELDS.join(','), '-d', dir], { env });
      if (c.code !== 0) throw new Error(c.stderr);
      search.push(c.ms);
      bare.push((await runMeasured(process.execPath, ['-e', '0'], { env })).ms);
    }
  }
  return { searchMs: median(search), nodeMs: median(bare), runs: search.length };
}

function typosFor(term: string): number {
  return term.length >= 7 ? 2 : term.length >= 4 ? 1 : 0;
}

function measure(queries: BenchQuery[], run: (q: BenchQuery) => number): { lat: Result['lat']; foundTypo: number } {
  for (const q of queries) run(q); // warm-up
  const all: number[] = [];
  const plain: number[] = [];
  const typo: number[] = [];
  const facet: number[] = [];
  let foundTypo = 0;
  for (const q of queries) {
    const t = performance.now();
    const found = run(q);
    const ms = performance.now() - t;
    all.push(ms);
    (q.typo ? typo : plain).push(ms);
    if (q.facet) facet.push(ms);
    if (q.typo && found > 0) foundTypo++;
  }
  const stat = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    return { p50: percentile(xs, 50), p99: percentile(xs, 99) };
  };
  return { lat: { all: stat(all), plain: stat(plain), typo: stat(typo), facet: stat(facet) }, foundTypo };
}

async function runFathom(docs: DebianPackage[], queries: BenchQuery[]): Promise<Result> {
  const work = tmpdir('fathom-bench-search-');
  const file = path.join(work, 'docs.jsonl');
  fs.writeFileSync(file, docs.map((d) => JSON.stringify(d)).join('\n'));
  const dir = path.join(work, 'data');
  const bin = path.join(ROOT, 'bin', 'fathom.js');
  await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], { input: JSON.stringify(DEBIAN_SCHEMA) });
  const [cmd, args] = withTime(process.execPath, [bin, 'import', 'packages', file, '--quiet', '--no-progress', '-d', dir]);
  const imp = await runMeasured(cmd, args);
  if (imp.code !== 0) throw new Error(imp.stderr);
  const { Engine } = await import('../../src/engine.js');
  const e = Engine.open(dir, { readOnly: true, merges: 'off' });
  const m = measure(queries, (q) =>
    e.searchSync('packages', { q: q.q, query_by: QUERY_FIELDS.join(','), ...(q.facet ? { facet_by: 'section' } : {}) }).found,
  );
  const rss = process.resourceUsage().maxRSS / 1024;
  const disk = dirSize(dir);
  await e.close();
  const cold = await coldTimes(bin, dir, queries, process.env);
  const coldNoCaCerts = envWithoutCaCerts && (await coldTimes(bin, dir, queries, envWithoutCaCerts));
  fs.rmSync(work, { recursive: true, force: true });
  return { engine: 'fathom', docs: docs.length, indexMs: imp.ms, peakRssMb: Math.max(rss, imp.maxRssKb / 1024), diskMb: disk / 1024 / 1024, ...m, cold, coldNoCaCerts, note: 'CLI import (default batch 1000, durable commits), then queries in-process' };
}

async function runMiniSearch(docs: DebianPackage[], queries: BenchQuery[]): Promise<Result> {
  const { default: MiniSearch } = await import('minisearch');
  const t = performance.now();
  const ms = new MiniSearch({ fields: QUERY_FIELDS, storeFields: ['section'], idField: 'name' });
  ms.addAll(docs);
  const indexMs = performance.now() - t;
  const m = measure(queries, (q) => {
    const res = ms.search(q.q, { prefix: true, fuzzy: (term) => typosFor(term), boost: { name: 3, summary: 2 }, combineWith: 'AND' });
    if (q.facet) {
      const counts = new Map<string, number>();
      for (const r of res) counts.set(r.section as string, (counts.get(r.section as string) ?? 0) + 1);
    }
    return res.length;
  });
  return { engine: 'minisearch', docs: docs.length, indexMs, peakRssMb: process.resourceUsage().maxRSS / 1024, diskMb: null, ...m, note: 'in memory; facets counted over all results' };
}

async function runOrama(docs: DebianPackage[], queries: BenchQuery[]): Promise<Result> {
  const { create, insertMultiple, search } = await import('@orama/orama');
  const t = performance.now();
  const db = create({ schema: { name: 'string', summary: 'string', description: 'string', section: 'string' } as const });
  await insertMultiple(db, docs.map((d) => ({ name: d.name, summary: d.summary, description: d.description, section: d.section })), 1000);
  const indexMs = performance.now() - t;
  const m = measure(queries, (q) => {
    const res = search(db, { term: q.q, properties: QUERY_FIELDS as ('name' | 'summary' | 'description')[], tolerance: 1, limit: 10, ...(q.facet ? { facets: { section: {} } } : {}) }) as { count: number };
    return res.count;
  });
  return { engine: 'orama', docs: docs.length, indexMs, peakRssMb: process.resourceUsage().maxRSS / 1024, diskMb: null, ...m, note: 'in memory; tolerance 1' };
}

async function runSqlite(docs: DebianPackage[], queries: BenchQuery[]): Promise<Result> {
  const { default: Database } = await import('better-sqlite3');
  const work = tmpdir('fathom-bench-fts5-');
  const file = path.join(work, 'fts.db');
  const t = performance.now();
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE VIRTUAL TABLE docs USING fts5(name, summary, description, section UNINDEXED)');
  const ins = db.prepare('INSERT INTO docs (name, summary, description, section) VALUES (?, ?, ?, ?)');
  const tx = db.transaction((batch: DebianPackage[]) => {
    for (const d of batch) ins.run(d.name, d.summary, d.description, d.section);
  });
  for (let i = 0; i < docs.length; i += 40) tx(docs.slice(i, i + 40));
  const indexMs = performance.now() - t;
  const top = db.prepare('SELECT name FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10');
  const count = db.prepare('SELECT count(*) AS n FROM docs WHERE docs MATCH ?');
  const facet = db.prepare('SELECT section, count(*) AS n FROM docs WHERE docs MATCH ? GROUP BY section ORDER BY n DESC LIMIT 10');
  const m = measure(queries, (q) => {
    const words = q.q.split(/\s+/).filter(Boolean);
    const match = words.map((w, i) => `"${w.replace(/"/g, '')}"${i === words.length - 1 ? '*' : ''}`).join(' AND ');
    top.all(match);
    if (q.facet) facet.all(match);
    return (count.get(match) as { n: number }).n;
  });
  db.close();
  const disk = dirSize(work);
  fs.rmSync(work, { recursive: true, force: true });
  return { engine: 'sqlite-fts5', docs: docs.length, indexMs, peakRssMb: process.resourceUsage().maxRSS / 1024, diskMb: disk / 1024 / 1024, ...m, note: 'prefix on the last word, no typo tolerance' };
}

const engines: Record<string, (d: DebianPackage[], q: BenchQuery[]) => Promise<Result>> = {
  fathom: runFathom,
  minisearch: runMiniSearch,
  orama: runOrama,
  'sqlite-fts5': runSqlite,
};

const limit = Number(arg('limit', 'Infinity'));
const nq = Number(arg('queries', '300'));
const only = arg('engine');

if (only) {
  // child: one engine
  const docs = debianDocs(limit);
  const qs = queryset(docs, nq);
  const r = await engines[only]!(docs, qs);
  process.stdout.write(JSON.stringify(r) + '\n');
} else {
  const self = process.argv[1]!;
  const results: Result[] = [];
  for (const name of Object.keys(engines)) {
    console.error(`running ${name} ...`);
    const p = spawnSync(process.execPath, ['--max-old-space-size=8192', self, '--engine', name, ...process.argv.slice(2)], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    if (p.status !== 0) {
      console.error(`${name} failed`);
      continue;
    }
    results.push(JSON.parse(p.stdout.trim().split('\n').pop()!));
  }
  const f = results.find((r) => r.engine === 'fathom');
  const ratio = (x: number, y: number) => (y > 0 ? (x / y).toFixed(2) + 'x' : '-');
  const fmt = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
  console.log(`\n${results[0]?.docs ?? 0} documents, ${nq} queries (half with one typo, a third with a section facet)\n`);
  console.log(
    table(
      ['engine', 'index time', 'docs/s', 'p50 all', 'p99 all', 'p50 typo', 'p99 typo', 'p50 facet', 'p99 facet', 'typo queries answered', 'peak RSS', 'on disk'],
      results.map((r) => [
        r.engine,
        (r.indexMs / 1000).toFixed(2) + ' s',
        Math.round(r.docs / (r.indexMs / 1000)).toLocaleString('en'),
        fmt(r.lat.all!.p50) + ' ms',
        fmt(r.lat.all!.p99) + ' ms',
        fmt(r.lat.typo!.p50) + ' ms',
        fmt(r.lat.typo!.p99) + ' ms',
        fmt(r.lat.facet!.p50) + ' ms',
        fmt(r.lat.facet!.p99) + ' ms',
        `${r.foundTypo}/${Math.floor(nq / 2)}`,
        mb(r.peakRssMb * 1024 * 1024),
        r.diskMb === null ? 'in memory' : mb(r.diskMb * 1024 * 1024),
      ]),
    ),
  );
  if (f) {
    console.log('\nratios (peer / fathom; above 1 means fathom is faster or smaller):\n');
    console.log(
      table(
        ['peer', 'index time', 'p50 all', 'p99 all', 'p50 typo', 'peak RSS'],
        results
          .filter((r) => r !== f)
          .map((r) => [r.engine, ratio(r.indexMs, f.indexMs), ratio(r.lat.all!.p50, f.lat.all!.p50), ratio(r.lat.all!.p99, f.lat.all!.p99), ratio(r.lat.typo!.p50, f.lat.typo!.p50), ratio(r.peakRssMb, f.peakRssMb)]),
      ),
    );
  }
  for (const r of results) if (r.note) console.log(`- ${r.engine}: ${r.note}`);
  if (f?.cold) {
    console.log(`\ncold \`fathom search\` process, start to exit: median ${f.cold.searchMs.toFixed(0)} ms over ${f.cold.runs} runs (a bare \`node -e 0\` on this machine: ${f.cold.nodeMs.toFixed(0)} ms)`);
    const n = f.coldNoCaCerts;
    if (n) console.log(`  the same without NODE_EXTRA_CA_CERTS (set here; Node parses that file before any script): ${n.searchMs.toFixed(0)} ms (\`node -e 0\`: ${n.nodeMs.toFixed(0)} ms)`);
  }
}
