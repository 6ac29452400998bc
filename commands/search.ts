/**
 * `fathom search <collection> -q <text> --query-by <fields> [...]`: one search on the data
 * directory. Every search parameter has a --kebab-case flag (and --param name=value takes
 * any other). Output for people by default; --json prints the API's response object,
 * --jsonl one hit document per line.
 */
import fs from 'node:fs';
import { Command, Option } from 'commander';
import { out, printJson, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';

/** Search parameters exposed as flags: [flag name, parameter name, description]. */
export const SEARCH_FLAGS: Array<[string, string]> = [
  ['query-by', 'comma-separated fields to search'],
  ['query-by-weights', 'one weight per query-by field'],
  ['filter-by', 'filter expression, e.g. "section:=games && installed_size:>1000"'],
  ['sort-by', 'up to three clauses, e.g. "installed_size:desc"'],
  ['facet-by', 'comma-separated facet fields'],
  ['facet-query', 'field:prefix, to search inside facet values'],
  ['max-facet-values', 'facet values per field (default 10)'],
  ['prefix', 'match the last token as a prefix (true/false, or one per field)'],
  ['num-typos', 'typos allowed per token, 0-2 (or one per field)'],
  ['min-len-1typo', 'shortest token allowed one typo (default 4)'],
  ['min-len-2typo', 'shortest token allowed two typos (default 7)'],
  ['typo-tokens-threshold', 'look for typo matches while fewer results (default 1)'],
  ['drop-tokens-threshold', 'drop tokens right to left while fewer results (default 1)'],
  ['prioritize-exact-match', 'rank exact field matches first (default true)'],
  ['max-candidates', 'terms considered per token for prefix/typo expansion (default 4)'],
  ['page', 'page number, from 1'],
  ['per-page', 'hits per page, 0-250 (default 10)'],
  ['offset', 'hits to skip (instead of page)'],
  ['limit', 'hits to return (instead of per-page)'],
  ['include-fields', 'fields to return'],
  ['exclude-fields', 'fields to leave out'],
  ['highlight-fields', 'fields to highlight (default: query-by)'],
  ['highlight-full-fields', 'fields to return fully highlighted'],
  ['highlight-affix-num-tokens', 'tokens around a match in snippets (default 4)'],
  ['highlight-start-tag', 'default <mark>'],
  ['highlight-end-tag', 'default </mark>'],
  ['snippet-threshold', 'fields shorter than this many tokens are highlighted whole (default 30)'],
  ['group-by', 'facet fields to group hits by'],
  ['group-limit', 'hits per group (default 3)'],
  ['search-cutoff-ms', 'stop matching after this long'],
  ['stopwords', 'name of a stopword set to apply'],
  ['vector-query', 'e.g. "embedding:([0.1, 0.2], k: 10)"'],
  ['alpha', 'weight of vector rank in hybrid search (default 0.3)'],
];

interface Opts {
  dataDir: string;
  q?: string;
  json?: boolean;
  jsonl?: boolean;
  param?: string[];
  [k: string]: unknown;
}

function camel(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

export function collectParams(opts: Opts): Record<string, string> {
  const params: Record<string, string> = {};
  if (opts.q !== undefined) params.q = opts.q;
  for (const [flag] of SEARCH_FLAGS) {
    const v = opts[camel(flag)];
    if (typeof v === 'string') params[flag.replace(/-/g, '_')] = v;
  }
  for (const p of opts.param ?? []) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`--param must look like name=value, got "${p}"`);
    params[p.slice(0, eq).trim()] = p.slice(eq + 1);
  }
  return params;
}

export function searchCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('search')
    .description('search a collection (prints hits for people; --json for the API response)')
    .argument('<collection>')
    .option('-q, --q <text>', 'query text; * matches every document', '*');
  for (const [flag, desc] of SEARCH_FLAGS) cmd.addOption(new Option(`--${flag} <value>`, desc));
  cmd
    .option('--param <name=value...>', 'any other search parameter')
    .option('--voice-query-file <wav>', 'search by voice: a 16 kHz 16-bit mono WAV file, transcribed into q by the collection\'s voice_query_model')
    .option('--json', 'print the response object exactly as the HTTP API returns it')
    .option('--jsonl', 'print one hit document per line');
  withDataDir(cmd);
  cmd.action((collection: string, opts: Opts) =>
    run(async () => {
      if (opts.json && opts.jsonl) throw new UsageError('choose one of --json and --jsonl');
      const params = collectParams(opts);
      if (typeof opts.voiceQueryFile === 'string') {
        let wav: Buffer;
        try {
          wav = fs.readFileSync(opts.voiceQueryFile);
        } catch (e) {
          throw new UsageError(`cannot read --voice-query-file ${opts.voiceQueryFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        }
        params.voice_query = wav.toString('base64');
        if (cmd.getOptionValueSource('q') === 'default') delete params.q; // the transcription is the query
      }
      const human = !opts.json && !opts.jsonl;
      if (human) {
        params.highlight_start_tag ??= '\u0001';
        params.highlight_end_tag ??= '\u0002';
      }
      const res = await withEngine(opts.dataDir, (e) => e.search(collection, params), { readOnly: true, pinSnapshot: true }, { exiting: true });
      if (opts.json) {
        await printJson(res, false);
        return;
      }
      if (opts.jsonl) {
        const { stringifyJson } = await import('../src/json.js');
        const hits = res.hits ?? (res.grouped_hits ?? []).flatMap((g) => g.hits);
        await out(hits.map((h) => stringifyJson(h.document)).join('\n') + (hits.length ? '\n' : ''));
        return;
      }
      const { renderHuman } = await import('./search-render.js');
      const heard = (res.request_params as { voice_query?: { transcribed_query: string } }).voice_query;
      await out((heard ? `heard: ${JSON.stringify(heard.transcribed_query)}\n` : '') + (await renderHuman(res, params)));
    }),
  );
  return cmd;
}
