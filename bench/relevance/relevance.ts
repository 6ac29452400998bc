/**
 * bench/relevance: does the search find the document the user meant, with default
 * parameters? Two kinds of query, built from the Debian set with a fixed seed:
 *
 *   names    a package name misspelt by 1 edit (names of 5-8 letters) or 2 edits (9+):
 *            success@k when that package is among the first k hits (@1 is the target)
 *   rare     three of the rarest words of a package's summary (rarest across every
 *            summary): success@k when that package is among the first k hits
 *
 * Fathom (`query_by=name,summary,description`, every other parameter its default, in
 * process), MiniSearch and Orama answer the same queries in one run; for Fathom the warm
 * p50 / p99 of those queries too.
 *
 *   node bench/run.mjs relevance [--dataset path] [--queries 300] [--seed 7] [--engine fathom]
 *
 * The schema is the one a user would write for the set (no token_separators): package
 * names such as `evince-common` stay one token, as in the measurements of issue #30.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, debianDocs, percentile, rng, table, tmpdir, runMeasured, type DebianPackage } from '../common.js';

const N = Number(arg('queries', '300'));
const SEED = Number(arg('seed', '7'));
const only = arg('engine');
const QUERY_BY = ['name', 'summary', 'description'];

export const RELEVANCE_SCHEMA = {
  name: 'packages',
  fields: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string', index: false, optional: true },
    { name: 'section', type: 'string', facet: true },
    { name: 'priority', type: 'string', facet: true, optional: true },
    { name: 'installed_size', type: 'int32', optional: true },
    { name: 'maintainer', type: 'string', index: false, optional: true },
    { name: 'depends', type: 'string[]' },
    { name: 'summary', type: 'string' },
    { name: 'description', type: 'string' },
  ],
};

interface Query {
  kind: 'names' | 'rare';
  q: string;
  /** The package that must be found (its name). */
  want: string;
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** One random edit of `w` (substitution, deletion, insertion or transposition) at a letter position. */
function edit(w: string, r: () => number): string {
  const kind = Math.floor(r() * 4);
  const p = Math.floor(r() * w.length);
  const letter = LETTERS[Math.floor(r() * 26)]!;
  if (kind === 0) return w.slice(0, p) + (letter === w[p] ? LETTERS[(LETTERS.indexOf(letter) + 1) % 26] : letter) + w.slice(p + 1);
  if (kind === 1) return w.slice(0, p) + w.slice(p + 1);
  if (kind === 2) return w.slice(0, p) + letter + w.slice(p);
  if (p + 1 >= w.length) return w.slice(0, p - 1) + w[p] + w[p - 1];
  return w.slice(0, p) + w[p + 1] + w[p] + w.slice(p + 2);
}

function words(s: string): string[] {
  return s.toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

export function querySets(docs: DebianPackage[], n = N, seed = SEED): Query[] {
  const r = rng(seed);
  const names = new Set(docs.map((d) => d.name));
  const out: Query[] = [];
  // misspelt names
  let guard = 0;
  while (out.length < n && guard++ < n * 100) {
    const d = docs[Math.floor(r() * docs.length)]!;
    const name = d.name;
    if (name.length < 5 || !/^[a-z]/.test(name)) continue;
    let q = edit(name, r);
    if (name.length >= 9) q = edit(q, r);
    if (q === name || names.has(q) || q.length < 3) continue;
    out.push({ kind: 'names', q, want: name });
  }
  // three rarest summary words
  const df = new Map<string, number>();
  for (const d of docs) for (const w of new Set(words(d.summary))) df.set(w, (df.get(w) ?? 0) + 1);
  const start = out.length;
  guard = 0;
  while (out.length < start + n && guard++ < n * 100) {
    const d = docs[Math.floor(r() * docs.length)]!;
    const ws = [...new Set(words(d.summary))].filter((w) => w.length >= 3);
    if (ws.length < 3) continue;
    const rarest = ws.sort((a, b) => df.get(a)! - df.get(b)! || (a < b ? -1 : 1)).slice(0, 3);
    out.push({ kind: 'rare', q: rarest.join(' '), want: d.name });
  }
  return out;
}

interface Outcome {
  engine: string;
  /** [kind] -> [hits@1, hits@10, queries] */
  success: Record<string, [number, number, number]>;
  p50?: number;
  p99?: number;
}

function score(engine: string, queries: Query[], run: (q: Query) => string[]): Outcome {
  const success: Outcome['success'] = {};
  for (const q of queries) {
    const top = run(q);
    const s = (success[q.kind] ??= [0, 0, 0]);
    const at = top.indexOf(q.want);
    if (at === 0) s[0]++;
    if (at >= 0 && at < 10) s[1]++;
    s[2]++;
  }
  return { engine, success };
}

async function runFathom(docs: DebianPackage[], queries: Query[]): Promise<Outcome> {
  const work = tmpdir('fathom-bench-relevance-');
  const file = path.join(work, 'docs.jsonl');
  fs.writeFileSync(file, docs.map((d) => JSON.stringify(d)).join('\n'));
  const dir = path.join(work, 'data');
  const bin = path.join(ROOT, 'bin', 'fathom.js');
  await runMeasured(process.execPath, [bin, 'collections', 'create', '-', '-d', dir], { input: JSON.stringify(RELEVANCE_SCHEMA) });
  const imp = await runMeasured(process.execPath, [bin, 'import', 'packages', file, '--quiet', '--no-progress', '-d', dir]);
  if (imp.code !== 0) throw new Error(imp.stderr);
  const { Engine } = await import('../../src/engine.js');
  const e = Engine.open(dir, { readOnly: true, merges: 'off' });
  const ask = (q: Query) => e.searchSync('packages', { q: q.q, query_by: QUERY_BY.join(','), per_page: 10, include_fields: 'name' }).hits!.map((h) => h.document.name as string);
  for (const q of queries) ask(q); // warm
  const times: number[] = [];
  const o = score('fathom', queries, (q) => {
    const t = performance.now();
    const r = ask(q);
    times.push(performance.now() - t);
    return r;
  });
  times.sort((a, b) => a - b);
  await e.close();
  fs.rmSync(work, { recursive: true, force: true });
  return { ...o, p50: percentile(times, 50), p99: percentile(times, 99) };
}

function typosFor(term: string): number {
  return term.length >= 7 ? 2 : term.length >= 4 ? 1 : 0;
}

async function runMiniSearch(docs: DebianPackage[], queries: Query[]): Promise<Outcome> {
  const { default: MiniSearch } = await import('minisearch');
  const ms = new MiniSearch({ fields: QUERY_BY, storeFields: ['name'], idField: 'name' });
  ms.addAll(docs);
  // MiniSearch's defaults plus the typo and prefix policy Fathom has by default
  return score('minisearch', queries, (q) => ms.search(q.q, { prefix: true, fuzzy: (t) => typosFor(t) }).slice(0, 10).map((r) => r.id as string));
}

async function runOrama(docs: DebianPackage[], queries: Query[]): Promise<Outcome> {
  const { create, insertMultiple, search } = await import('@orama/orama');
  const db = create({ schema: { name: 'string', summary: 'string', description: 'string' } as const });
  await insertMultiple(db, docs.map((d) => ({ name: d.name, summary: d.summary, description: d.description })), 1000);
  return score('orama', queries, (q) => {
    const res = search(db, { term: q.q, properties: QUERY_BY as ('name' | 'summary' | 'description')[], tolerance: 1, limit: 10 }) as { hits: Array<{ document: { name: string } }> };
    return res.hits.map((h) => h.document.name);
  });
}

const engines: Record<string, (d: DebianPackage[], q: Query[]) => Promise<Outcome>> = { fathom: runFathom, minisearch: runMiniSearch, orama: runOrama };

if (only) {
  const docs = debianDocs();
  const r = await engines[only]!(docs, querySets(docs));
  process.stdout.write(JSON.stringify(r) + '\n');
} else if (path.basename(process.argv[1] ?? '').startsWith('relevance')) {
  const { spawnSync } = await import('node:child_process');
  const results: Outcome[] = [];
  for (const name of Object.keys(engines)) {
    console.error(`running ${name} ...`);
    const p = spawnSync(process.execPath, ['--max-old-space-size=8192', process.argv[1]!, '--engine', name, ...process.argv.slice(2)], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    if (p.status !== 0) {
      console.error(`${name} failed`);
      continue;
    }
    results.push(JSON.parse(p.stdout.trim().split('\n').pop()!));
  }
  const cell = (o: Outcome, kind: string) => {
    const s = o.success[kind];
    return s ? `${(s[0] / s[2]).toFixed(3)} / ${(s[1] / s[2]).toFixed(3)}` : '-';
  };
  console.log(`\n${N} queries of each kind, seed ${SEED}; success@1 / success@10\n`);
  console.log(
    table(
      ['engine', 'misspelt names (target >= 0.95 / 0.99)', 'three rarest summary words (target >= 0.72 / 0.99)'],
      results.map((o) => [o.engine, cell(o, 'names'), cell(o, 'rare')]),
    ),
  );
  const f = results.find((o) => o.engine === 'fathom');
  if (f) console.log(`\nFathom warm latency over these queries: p50 ${f.p50!.toFixed(2)} ms, p99 ${f.p99!.toFixed(2)} ms (target <= 1 / <= 10 ms)`);
}
