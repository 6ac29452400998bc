/**
 * bench/rules: query latency on the Debian set with 1,000 synonyms and 1,000 curation rules
 * loaded, against the same collection with none (target: p50 within 1.2x).
 *
 *   node bench/run.mjs rules [--dataset PATH] [--queries 1000] [--rounds 5]
 *
 * One data directory holds the Debian packages twice: `plain` (no synonyms, no rules) and
 * `ruled`, which has 500 synonyms of its own and a linked synonym set of 500 more, 500
 * overrides of its own and a linked curation set of 500 more. The synonyms are drawn (seeded)
 * from the content words of the summaries (the 150 most frequent words, "for", "the",
 * "library", ..., left out: nobody defines synonyms for them, and a synonym for "for"
 * makes a query match nine documents in ten), more often the more frequent: multi-way groups
 * of 2-3 words, one-way ones, and phrases for words. The rules match queries exactly (a
 * tenth of them are queries of the benchmark's own set: curated head queries) or by a word
 * they contain, by a section filter or by a tag, and a few have a `{section}` placeholder;
 * they pin and hide packages, filter and carry metadata. The queries are bench/common.ts's
 * (1-3 summary words, half with a typo, a third counting the section facet), the same for
 * both collections. After a warm-up pass over each, the rounds alternate which collection
 * goes first; the table gives p50 / p99 / mean over every query of every round, the ratio
 * of the p50s, and how many queries the synonyms and rules changed. `--only synonyms|rules`
 * loads one kind; `--slowest N` lists the queries they slowed most; `--with-common-words`
 * draws from every word, the most frequent included (the worst case).
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEBIAN_SCHEMA, arg, datasetText, debianDocs, percentile, queryset, rng, table, tmpdir } from '../common.js';
import { Engine } from '../../src/engine.js';

const N_QUERIES = Number(arg('queries', '1000'));
const ROUNDS = Number(arg('rounds', '5'));
/** `synonyms` or `rules`: load only those (to see what each costs). */
const ONLY = arg('only');
/** Draw synonyms and rules from every word, the most frequent ("for", "the") included. */
const COMMON = arg('with-common-words') === 'true';
const QUERY_BY = 'name,summary,description';

const work = tmpdir('fathom-bench-rules-');
const engine = Engine.open(path.join(work, 'data'), { merges: 'inline' });
try {
  const text = datasetText();
  const docs = debianDocs();
  for (const name of ['plain', 'ruled']) {
    await engine.createCollection({ ...DEBIAN_SCHEMA, name });
    const t0 = performance.now();
    await engine.import(name, [Buffer.from(text)], { batchSize: 1000, failedOnly: true }, () => {});
    await engine.idle();
    await engine.optimize(name);
    console.log(`imported ${engine.liveCount(name)} packages into ${name} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const ids = [...engine.exportDocuments('ruled', { include: ['id'] })].map((d) => String(d.id));
  const sections = [...new Set(docs.map((d) => d.section))];

  // words of the summaries, by frequency
  const freq = new Map<string, number>();
  for (const d of docs) for (const w of d.summary.toLowerCase().match(/[a-z]{3,}/g) ?? []) freq.set(w, (freq.get(w) ?? 0) + 1);
  const vocab = [...freq.entries()]
    .filter(([, n]) => n >= 3)
    .sort((a, b) => b[1] - a[1])
    .map(([w]) => w)
    .slice(COMMON ? 0 : 150);
  const r = rng(7);
  // (a content word, drawn with weight for its rank: frequent words more often, rare ones too)
  const word = () => vocab[Math.floor(vocab.length * r() ** 2)]!;
  const queries = queryset(docs, N_QUERIES);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;

  const synonyms: Record<string, unknown>[] = [];
  for (let i = 0; i < 1000; i++) {
    const kind = i % 10;
    if (kind < 6) synonyms.push({ id: `s${i}`, synonyms: Array.from({ length: 2 + Math.floor(r() * 2) }, word) });
    else if (kind < 9) synonyms.push({ id: `s${i}`, root: word(), synonyms: Array.from({ length: 1 + Math.floor(r() * 2) }, word) });
    else synonyms.push({ id: `s${i}`, synonyms: [`${word()} ${word()}`, word()] });
  }
  const rules: Record<string, unknown>[] = [];
  for (let i = 0; i < 1000; i++) {
    const kind = i % 20;
    const id = `r${String(i).padStart(4, '0')}`;
    const includes = Array.from({ length: 1 + Math.floor(r() * 2) }, (_, k) => ({ id: pick(ids), position: k + 1 }));
    const actions: Record<string, unknown> = { metadata: { rule: id } };
    if (r() < 0.7) actions.includes = includes.filter((x, k) => includes.findIndex((y) => y.id === x.id) === k);
    if (r() < 0.3) actions.excludes = [{ id: pick(ids) }];
    if (r() < 0.2) {
      // a static filter narrows the query (its words stay: removing them would make it a browse)
      actions.filter_by = 'installed_size:>10';
      actions.remove_matched_tokens = false;
    }
    if (kind < 2) rules.push({ id, rule: { query: pick(queries).q, match: 'exact' }, ...actions });
    else if (kind < 8) rules.push({ id, rule: { query: r() < 0.5 ? word() : `${word()} ${word()}`, match: 'exact' }, ...actions });
    else if (kind < 16) rules.push({ id, rule: { query: word(), match: 'contains' }, ...actions });
    else if (kind < 18) rules.push({ id, rule: { filter_by: `section:=${pick(sections)}` }, ...actions });
    else if (kind < 19) rules.push({ id, rule: { query: word(), match: 'contains', tags: ['promo'] }, ...actions });
    else rules.push({ id, rule: { query: `{section} ${word()}`, match: 'contains' }, filter_by: 'section:={section}', metadata: { rule: id } });
  }
  const t1 = performance.now();
  if (ONLY !== 'rules') {
    for (const s of synonyms.slice(0, 500)) await engine.synonyms().put('ruled', s.id as string, s);
    await engine.synonyms().putSet('bench', { items: synonyms.slice(500) });
    await engine.updateCollection('ruled', { synonym_sets: ['bench'] });
  }
  if (ONLY !== 'synonyms') {
    for (const o of rules.slice(0, 500)) await engine.curation().put('ruled', o.id as string, o);
    await engine.curation().putSet('bench', { items: rules.slice(500) });
    await engine.updateCollection('ruled', { curation_sets: ['bench'] });
  }
  console.log(`loaded 1000 synonyms and 1000 rules in ${((performance.now() - t1) / 1000).toFixed(1)} s`);

  const params = (q: (typeof queries)[number]) => ({ q: q.q, query_by: QUERY_BY, ...(q.facet ? { facet_by: 'section' } : {}) });
  const run = (c: string) => queries.map((q) => engine.searchSync(c, params(q)));
  // warm-up, and what the synonyms and rules changed
  const before = run('plain');
  const after = run('ruled');
  const hitIds = (x: (typeof before)[number]) => (x.hits ?? []).map((h) => h.document.id).join(',');
  let changed = 0;
  let ruled = 0;
  let moreFound = 0;
  for (let i = 0; i < queries.length; i++) {
    if (hitIds(before[i]!) !== hitIds(after[i]!)) changed++;
    if (after[i]!.metadata) ruled++;
    if (after[i]!.found > before[i]!.found) moreFound++;
  }

  const lat: Record<string, number[]> = { plain: [], ruled: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['plain', 'ruled'] : ['ruled', 'plain'];
    for (const c of order) {
      for (const q of queries) {
        const t = performance.now();
        engine.searchSync(c, params(q));
        lat[c]!.push(performance.now() - t);
      }
    }
  }
  const slowest = Number(arg('slowest', '0'));
  if (slowest > 0) {
    // the queries the synonyms and rules slow down most (last round's times)
    const last = (c: string) => lat[c]!.slice(-queries.length);
    const rows = queries.map((q, i) => ({ q: q.q, plain: last('plain')[i]!, ruled: last('ruled')[i]!, found: after[i]!.found, was: before[i]!.found }));
    rows.sort((a, b) => b.ruled - b.plain - (a.ruled - a.plain));
    console.log(table(['query', 'plain ms', 'ruled ms', 'found', 'found before'], rows.slice(0, slowest).map((r) => [r.q, r.plain.toFixed(2), r.ruled.toFixed(2), r.found, r.was])));
  }
  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { p50: percentile(s, 50), p99: percentile(s, 99), mean: s.reduce((a, b) => a + b, 0) / s.length };
  };
  const p = stat(lat.plain!);
  const q = stat(lat.ruled!);
  console.log(`\n${queries.length} queries x ${ROUNDS} rounds, query_by ${QUERY_BY}`);
  console.log(
    table(
      ['collection', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        ['no synonyms, no rules', p.p50.toFixed(3), p.p99.toFixed(3), p.mean.toFixed(3)],
        ['1,000 synonyms + 1,000 rules', q.p50.toFixed(3), q.p99.toFixed(3), q.mean.toFixed(3)],
      ],
    ),
  );
  console.log(`p50 ratio ${(q.p50 / p.p50).toFixed(3)} (target <= 1.2), p99 ratio ${(q.p99 / p.p99).toFixed(3)}, mean ratio ${(q.mean / p.mean).toFixed(3)}`);
  console.log(`queries whose first page changed: ${changed} of ${queries.length}; a rule applied: ${ruled}; found more documents: ${moreFound}`);
} finally {
  await engine.close();
  fs.rmSync(work, { recursive: true, force: true });
}
