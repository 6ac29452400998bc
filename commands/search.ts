/**
 * `fathom search <collection> -q <text> --query-by <fields> [...]`: one search on the data
 * directory. The search parameters of the table (src/query/parameters.ts) are --kebab-case
 * flags (and --param name=value takes any other). Output for people by default; --json
 * prints the API's response object, --jsonl one hit document per line.
 */
import fs from 'node:fs';
import { Command, Option } from 'commander';
import { out, printJson, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { searchFlags } from '../src/query/parameters.js';
import { listOutput } from './jsonl.js';

/** Search parameters exposed as flags: [flag name, description], from the parameter table. */
export const SEARCH_FLAGS: Array<[string, string]> = searchFlags();

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
      const mode = listOutput(opts);
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
      if (mode === 'text') {
        params.highlight_start_tag ??= '\u0001';
        params.highlight_end_tag ??= '\u0002';
      }
      const res = await withEngine(opts.dataDir, (e) => e.search(collection, params), { readOnly: true, pinSnapshot: true }, { exiting: true });
      if (mode === 'json') {
        await printJson(res, false);
        return;
      }
      if (mode === 'jsonl') {
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
