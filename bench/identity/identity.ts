/**
 * bench/identity: pins search results. Runs the benchmark queries (bench/search's 300 over
 * name, summary and description, a third with a section facet; bench/http's 5,000 over name
 * and summary), plus variants of the first 300 HTTP queries that reach grouping, sorting,
 * filters, facets, paging, phrases, exclusions and the typo and prefix settings, over the
 * Debian set, and prints one SHA-256 per set of the full JSON answers without
 * `search_time_ms`. Run it before and after a change to the search code: equal hashes mean
 * byte-identical answers.
 *
 *   node bench/run.mjs identity --dataset FILE [--data-dir DIR] [--out answers.txt]
 *
 * `--out` writes one line per query (set, index, hash of its answer) for finding the first
 * difference. The data directory is imported once and reused.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine } from '../../src/engine.js';
import { QUERY_BY, loadDebian, makeQueries, vocabulary } from '../http/debian.js';
import { arg, datasetPath, debianDocs, queryset } from '../common.js';

const dataset = datasetPath();
const dataDir = arg('data-dir', path.join(os.tmpdir(), 'fathom-identity-debian'))!;
const out = arg('out');

await loadDebian(dataDir, dataset);
const engine = Engine.open(dataDir, { merges: 'off', readOnly: true });

type Params = Record<string, string>;
const sets: Array<[string, Params[]]> = [];

const searchQs = queryset(debianDocs(), 300);
sets.push(['bench/search', searchQs.map((q) => ({ q: q.q, query_by: 'name,summary,description', ...(q.facet ? { facet_by: 'section' } : {}) }))]);
const httpQs = makeQueries(await vocabulary(dataset), 5000);
sets.push(['bench/http', httpQs.map((q) => ({ q, query_by: QUERY_BY, per_page: '10' }))]);

const some = httpQs.slice(0, 300);
const variants: Record<string, (q: string, i: number) => Params> = {
  group_by: (q) => ({ q, query_by: QUERY_BY, group_by: 'section', group_limit: '3' }),
  sort_filter: (q) => ({ q, query_by: QUERY_BY, sort_by: 'installed_size:desc', filter_by: 'installed_size:<5000' }),
  facets: (q) => ({ q, query_by: 'name,summary,description', facet_by: 'section,priority,installed_size', max_facet_values: '5' }),
  page2: (q) => ({ q, query_by: QUERY_BY, page: '2', per_page: '7' }),
  no_prefix_1typo: (q) => ({ q, query_by: QUERY_BY, prefix: 'false', num_typos: '1' }),
  weights_exact: (q) => ({ q, query_by: 'summary,name', query_by_weights: '1,3', prioritize_exact_match: 'false' }),
  phrase_exclude: (q, i) => {
    const w = q.split(' ');
    return { q: i % 2 ? `"${w.join(' ')}"` : w.length > 1 ? `${w.slice(1).join(' ')} -${w[0]}` : `-${w[0]}`, query_by: QUERY_BY };
  },
  drop_tokens: (q) => ({ q: `${q} zzqx`, query_by: QUERY_BY, drop_tokens_threshold: '5', typo_tokens_threshold: '3' }),
  highlight: (q) => ({ q, query_by: 'name,summary,description', highlight_full_fields: 'summary', highlight_affix_num_tokens: '2', include_fields: 'name,summary,section' }),
  wildcard: (_q, i) => ({ q: '*', filter_by: `installed_size:>${i * 40}`, sort_by: 'installed_size:asc', facet_by: 'section' }),
  candidates: (q) => ({ q, query_by: QUERY_BY, max_candidates: '2', per_page: '20' }),
};
for (const [name, make] of Object.entries(variants)) sets.push([name, some.map(make)]);

const lines: string[] = [];
let total = 0;
const all = crypto.createHash('sha256');
for (const [name, queries] of sets) {
  const h = crypto.createHash('sha256');
  queries.forEach((p, i) => {
    let text: string;
    try {
      const res = engine.searchSync('packages', p) as Record<string, unknown>;
      delete res.search_time_ms;
      text = JSON.stringify(res);
    } catch (e) {
      text = `error: ${(e as Error).message}`;
    }
    h.update(text).update('\n');
    all.update(text).update('\n');
    if (out) lines.push(`${name} ${i} ${crypto.createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
  });
  total += queries.length;
  console.log(`${name.padEnd(16)} ${String(queries.length).padStart(5)} queries  ${h.digest('hex')}`);
}
console.log(`${'all'.padEnd(16)} ${String(total).padStart(5)} queries  ${all.digest('hex')}`);
if (out) fs.writeFileSync(out, lines.join('\n') + '\n');
await engine.close();
