/**
 * bench/adversarial: the slowest searches a client can send, against a plain query's
 * median, on the Debian set, in one run against one `fathom serve` process on loopback.
 *
 *   node bench/run.mjs adversarial [--dataset PATH] [--limit N] [--keep DIR] [--rounds 3]
 *                                  [--cutoff-ms MS] [--only CLASS]
 *
 * Each class holds hand-made worst cases of one kind (the test suite's fast-check
 * generator, test/search-bounds.test.ts, draws random ones of the same kinds and bounds
 * their work): repeated words, many one-letter prefixes, 64-word queries, long words
 * with typos, wildcards under heavy filters, deep joins, facets and groups with high limits,
 * big pages. Every request is timed `--rounds` times (median kept); a class's figure is its
 * slowest request. The plain figure is the median of 300 ordinary 1-3 word queries (half
 * with a typo, a third with a facet). The server runs with its default ceiling
 * (`--search-cutoff-ms`, 5,000 ms) unless `--cutoff-ms` says otherwise; answers that were
 * cut off are counted. The target: every class's worst within 50x the plain median.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { DEBIAN_SCHEMA, ROOT, arg, debianDocs, median, queryset, rng, table, tmpdir, type DebianPackage } from '../common.js';
import { Engine } from '../../src/engine.js';

const KEY = 'adversarial-bench-key';
const QUERY_BY = 'name,summary,description';
const ROUNDS = Number(arg('rounds', '3'));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

interface Request {
  label: string;
  params: Record<string, unknown>;
}

interface Answer {
  status: number;
  ms: number;
  cutoff: boolean;
  found: number;
}

function post(port: number, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/multi_search', method: 'POST', agent, headers: { 'x-typesense-api-key': KEY, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function ask(port: number, params: Record<string, unknown>): Promise<Answer> {
  const body = JSON.stringify({ searches: [{ collection: 'packages', query_by: QUERY_BY, ...params }] });
  const t0 = performance.now();
  const r = await post(port, body);
  const ms = performance.now() - t0;
  let cutoff = false;
  let found = -1;
  let status = r.status;
  try {
    const res = (JSON.parse(r.text) as { results: Array<{ search_cutoff?: boolean; found?: number; code?: number }> }).results[0]!;
    cutoff = res.search_cutoff === true;
    found = res.found ?? -1;
    if (res.code !== undefined) status = res.code;
  } catch {
    // (the status says it)
  }
  return { status, ms, cutoff, found };
}

/** The median of `ROUNDS` runs of one request. */
async function timed(port: number, params: Record<string, unknown>): Promise<Answer> {
  const runs: Answer[] = [];
  for (let i = 0; i < ROUNDS; i++) runs.push(await ask(port, params));
  runs.sort((a, b) => a.ms - b.ms);
  return runs[Math.floor(runs.length / 2)]!;
}

function words(docs: DebianPackage[]): string[] {
  const count = new Map<string, number>();
  for (const d of docs) for (const w of d.summary.toLowerCase().match(/[a-z]{3,}/g) ?? []) count.set(w, (count.get(w) ?? 0) + 1);
  return [...count.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w);
}

function typo(w: string, r: () => number): string {
  const i = Math.floor(r() * w.length);
  return w.slice(0, i) + 'qxz'[Math.floor(r() * 3)] + w.slice(i + 1);
}

/** The classes of hostile requests, hand-made worst cases of each kind. */
function classes(docs: DebianPackage[]): Record<string, Request[]> {
  const r = rng(7);
  const vocab = words(docs);
  const rep = (w: string, n: number) => Array.from({ length: n }, () => w).join(' ');
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const sections = [...new Set(docs.map((d) => d.section))];
  const names = docs.map((d) => d.name);
  const req = (label: string, params: Record<string, unknown>): Request => ({ label, params });
  return {
    'repeated words': [
      ...[2, 4, 8, 12, 16, 32, 64].map((n) => req(`a x${n}`, { q: rep('a', n) })),
      req('the x16', { q: rep('the', 16) }),
      req('lib x16', { q: rep('lib', 16) }),
      req('l x32', { q: rep('l', 32) }),
      req('(a b) x16', { q: rep('a b', 16) }),
      req('linux x32', { q: rep('linux', 32) }),
      req('a x12, drop all', { q: rep('a', 12) + ' zzzzqqq', drop_tokens_threshold: 1e9 }),
    ],
    'one-letter prefixes': [
      req('a..z', { q: letters.split('').join(' ') }),
      req('64 letters', { q: Array.from({ length: 64 }, () => letters[Math.floor(r() * 26)]).join(' ') }),
      req('a..z, drop all', { q: letters.split('').join(' '), drop_tokens_threshold: 1e9 }),
      req('x y z, 10k candidates', { q: 'x y z', max_candidates: 10000 }),
    ],
    '64-word queries': [
      req('64 common words', { q: vocab.slice(0, 64).join(' ') }),
      req('64 random words', { q: Array.from({ length: 64 }, () => vocab[Math.floor(r() * Math.min(5000, vocab.length))]).join(' ') }),
      req('64 words with typos, drop all', { q: Array.from({ length: 64 }, () => typo(vocab[Math.floor(r() * 2000)]!, r)).join(' '), drop_tokens_threshold: 1e9 }),
      req('64 words, exhaustive', { q: vocab.slice(100, 164).join(' '), exhaustive_search: true }),
    ],
    'long words with typos': [
      req('5 x 100 chars', { q: Array.from({ length: 5 }, (_, i) => typo(letters.repeat(4).slice(i, i + 100), r)).join(' ') }),
      req('32 x 30 chars, 2 typos', { q: Array.from({ length: 32 }, () => typo(typo(vocab[Math.floor(r() * 500)]!.repeat(4).slice(0, 30), r), r)).join(' '), num_typos: 2, min_len_1typo: 1, min_len_2typo: 2 }),
      req('16 typo words, exhaustive', { q: Array.from({ length: 16 }, () => typo(vocab[Math.floor(r() * 300)]!, r)).join(' '), exhaustive_search: true, min_len_1typo: 1, min_len_2typo: 2 }),
      req('prefix typo, 10k candidates', { q: 'progrqm libraxy develpment', max_candidates: 10000, min_len_1typo: 1, min_len_2typo: 2 }),
    ],
    'wildcards with heavy filters': [
      req('50 OR clauses (99 operations, the most allowed)', { q: '*', filter_by: Array.from({ length: 50 }, (_, i) => `installed_size:=${i * 7}`).join(' || ') }),
      req('1000 ranges', { q: '*', filter_by: `installed_size:[${Array.from({ length: 1000 }, (_, i) => `${i * 50}..${i * 50 + 10}`).join(',')}]` }),
      req('5000 names', { q: '*', filter_by: `name:=[${names.slice(0, 5000).map((n) => '`' + n + '`').join(',')}]` }),
      req('60 nested parentheses', { q: '*', filter_by: '('.repeat(60) + 'section:=games' + ')'.repeat(60) }),
      req('not-equal x50', { q: '*', filter_by: sections.slice(0, 50).map((s) => `section:!=${s}`).join(' && ') }),
      req('text filter x50 words', { q: '*', filter_by: vocab.slice(0, 50).map((w) => `description:${w}`).join(' || '), sort_by: 'installed_size:desc' }),
    ],
    'deep joins': [
      req('$notes($tags(*))', { q: '*', filter_by: '$notes($tags(id:*))', include_fields: '$notes(*, $tags(*))' }),
      req('left join x50', { q: 'a', filter_by: Array.from({ length: 50 }, (_, i) => `$notes(text:w${i} || $tags(name:t${i}))`).join(' || ') }),
      req('join sort', { q: '*', filter_by: '$notes(id:*)', sort_by: '$notes(rank:desc)', per_page: 250, include_fields: '$notes(*)' }),
      req('nested x30', { q: '*', filter_by: '$notes('.repeat(1) + '('.repeat(30) + '$tags(id:*)' + ')'.repeat(30) + ')' }),
    ],
    'facets and groups': [
      req('facet depends, 1M values', { q: '*', facet_by: 'depends,section,priority', max_facet_values: 1_000_000 }),
      req('facet_query lib', { q: 'a', facet_by: 'depends', facet_query: 'depends:lib', max_facet_values: 1_000_000 }),
      req('group_by section, 250 x 99', { q: 'a', group_by: 'section', group_limit: 99, per_page: 250 }),
      req('group_by depends', { q: '*', group_by: 'depends', group_limit: 99, per_page: 250 }),
    ],
    'big pages': [
      req('q=a, 250 per page, full highlight', { q: 'a', per_page: 250, highlight_full_fields: 'description', highlight_affix_num_tokens: 1000, snippet_threshold: 1_000_000 }),
      req('wildcard page 100000', { q: '*', per_page: 250, page: 100_000 }),
      req('q=lib page 200', { q: 'lib', per_page: 250, page: 200 }),
      req('a x8, 250 per page', { q: rep('a', 8), per_page: 250 }),
    ],
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitHealthy(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: '/health' }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      }).on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the server did not start');
}

/** The packages, and two collections that join them: notes (one per package, some) and tags (a few per note). */
async function load(dir: string, docs: DebianPackage[]): Promise<void> {
  const e = Engine.open(dir, { merges: 'inline' });
  try {
    if (e.listCollections().some((c) => c.name === 'packages')) return;
    // (depends as a facet too: the package with the most values per document)
    await e.createCollection({ ...DEBIAN_SCHEMA, fields: DEBIAN_SCHEMA.fields.map((f) => (f.name === 'depends' ? { ...f, facet: true } : f)) });
    const lines = docs.map((d, i) => JSON.stringify({ id: String(i), ...d })).join('\n');
    await e.import('packages', lines, { batchSize: 1000 }, () => {});
    await e.createCollection({ name: 'notes', fields: [{ name: 'package_ref', type: 'string', reference: 'packages.id' }, { name: 'text', type: 'string' }, { name: 'rank', type: 'int32' }] });
    const notes = docs.slice(0, Math.min(docs.length, 20_000)).map((_, i) => JSON.stringify({ id: `n${i}`, package_ref: String(i), text: `note w${i % 97} about package ${i}`, rank: i % 1000 }));
    await e.import('notes', notes.join('\n'), { batchSize: 1000 }, () => {});
    await e.createCollection({ name: 'tags', fields: [{ name: 'note_ref', type: 'string', reference: 'notes.id' }, { name: 'name', type: 'string' }] });
    const tags: string[] = [];
    for (let i = 0; i < notes.length; i++) for (let j = 0; j < 3; j++) tags.push(JSON.stringify({ id: `t${i}-${j}`, note_ref: `n${i}`, name: `t${(i + j) % 50}` }));
    await e.import('tags', tags.join('\n'), { batchSize: 1000 }, () => {});
    await e.idle();
  } finally {
    await e.close();
  }
}

async function main(): Promise<void> {
  const limit = arg('limit') ? Number(arg('limit')) : Infinity;
  const docs = debianDocs(limit);
  const keep = arg('keep');
  const dir = keep ?? tmpdir('fathom-adversarial-');
  fs.mkdirSync(dir, { recursive: true });
  console.log(`loading ${docs.length} packages into ${dir}`);
  await load(dir, docs);
  const port = await freePort();
  const cutoff = arg('cutoff-ms');
  const args = [path.join(ROOT, 'bin', 'fathom.js'), 'serve', '-d', dir, '--api-key', KEY, '--api-port', String(port), '--api-address', '127.0.0.1', '--processes', '1', '--log-level', 'warn', ...(cutoff ? ['--search-cutoff-ms', cutoff] : [])];
  const server: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  try {
    await waitHealthy(port);
    // the plain queries: one pass to warm, one timed
    const plain = queryset(docs, 300).map((q) => ({ q: q.q, ...(q.facet ? { facet_by: 'section' } : {}) }));
    for (const p of plain) await ask(port, p);
    const plainMs: number[] = [];
    for (const p of plain) plainMs.push((await ask(port, p)).ms);
    const p50 = median(plainMs);
    console.log(`plain queries: ${plain.length}, p50 ${p50.toFixed(2)} ms`);
    const only = arg('only');
    const rows: (string | number)[][] = [];
    let worstRatio = 0;
    for (const [name, reqs] of Object.entries(classes(docs))) {
      if (only && !name.includes(only)) continue;
      let worst: { label: string; a: Answer } | undefined;
      let cut = 0;
      let bad = 0;
      for (const r of reqs) {
        const a = await timed(port, r.params);
        if (arg('verbose')) console.log(`  ${name} / ${r.label}: ${a.ms.toFixed(1)} ms, status ${a.status}, found ${a.found}${a.cutoff ? ', cut off' : ''}`);
        if (a.cutoff) cut++;
        if (a.status >= 500) bad++;
        if (!worst || a.ms > worst.a.ms) worst = { label: r.label, a };
      }
      const ratio = worst!.a.ms / p50;
      worstRatio = Math.max(worstRatio, ratio);
      rows.push([name, reqs.length, worst!.a.ms.toFixed(1), worst!.label, ratio.toFixed(1) + 'x', cut, bad]);
    }
    console.log(table(['class', 'requests', 'worst ms', 'worst request', 'worst / plain p50', 'cut off', '5xx'], rows));
    console.log(`plain p50 ${p50.toFixed(2)} ms; worst class ${worstRatio.toFixed(1)}x (target <= 50x): ${worstRatio <= 50 ? 'met' : 'MISSED'}`);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
