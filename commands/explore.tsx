/**
 * `fathom explore <collection>`: an interactive query explorer in the terminal (ink).
 * Works straight on the data directory, or with --server/--api-key against a running
 * `fathom serve`. This file parses options and opens the search client; the explorer
 * itself (commands/explore/) is loaded only when it runs, so other commands do not pay
 * for ink and React at start-up.
 */
import { Command, Option } from 'commander';
import { openEngine, parseIntOption, UsageError, withDataDir, type ExitCode } from './common.js';
import type { CollectionSchema, SearchClient, SearchParams } from './explore/client.js';

interface Opts {
  dataDir: string;
  q?: string;
  queryBy?: string;
  queryByWeights?: string;
  filterBy?: string;
  sortBy?: string;
  perPage?: number;
  param?: string[];
  server?: string;
  apiKey?: string;
}

/** Parameters the explorer itself controls, each with its own option or input box. */
const OWN_PARAMS: Record<string, string> = {
  q: '-q',
  query_by: '--query-by',
  query_by_weights: '--query-by-weights',
  filter_by: '--filter-by',
  sort_by: '--sort-by',
  per_page: '--per-page',
  page: 'the n/p keys',
  facet_by: 'the facet fields of the schema',
  highlight_start_tag: 'the explorer',
  highlight_end_tag: 'the explorer',
};

function extraParams(list: string[] = []): SearchParams {
  const out: SearchParams = {};
  for (const p of list) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`--param must look like name=value, got "${p}"`);
    const name = p.slice(0, eq).trim();
    if (Object.hasOwn(OWN_PARAMS, name)) throw new UsageError(`--param ${name} is set by ${OWN_PARAMS[name]}, not --param`);
    out[name] = p.slice(eq + 1);
  }
  return out;
}

function serverUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--server must be a URL like http://localhost:8108, got "${url}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--server must be an http:// or https:// URL, got "${url}"`);
  return url;
}

/** Set by bin/program.cjs when this runs from the built bundle. */
declare const __fathomImport: ((spec: string) => Promise<unknown>) | undefined;

/**
 * ink decides when it is first imported whether it runs under CI (the CI variable), and
 * under CI draws only the final frame. The explorer runs only on a real terminal, so it
 * hides the variable while ink loads.
 */
async function loadExplorer() {
  const saved = { CI: process.env.CI, CONTINUOUS_INTEGRATION: process.env.CONTINUOUS_INTEGRATION };
  delete process.env.CI;
  delete process.env.CONTINUOUS_INTEGRATION;
  try {
    // Built, this command lives in a CommonJS bundle and ink is an ES module with top-level
    // await: bin/program.cjs hands the bundle an importer for dist/explore/run.js.
    if (typeof __fathomImport === 'function') return (await __fathomImport('./explore/run.js')) as typeof import('./explore/run.js');
    return await import('./explore/run.js');
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
  }
}

async function openClient(collection: string, opts: Opts, dataDirFrom: string | undefined): Promise<{ client: SearchClient; schema: CollectionSchema }> {
  let client: SearchClient;
  if (opts.server !== undefined) {
    const { HttpClient } = await import('./explore/http-client.js');
    client = new HttpClient(serverUrl(opts.server), opts.apiKey!);
  } else {
    const { EngineClient } = await import('./explore/engine-client.js');
    const engine = await openEngine(opts.dataDir, { readOnly: true, merges: 'off' });
    client = new EngineClient(engine, { kind: 'local', dataDir: opts.dataDir, defaultDataDir: dataDirFrom === 'default' });
  }
  try {
    return { client, schema: await client.schema(collection) };
  } catch (e) {
    await client.close();
    throw e;
  }
}

export function exploreCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('explore')
    .description('explore a collection interactively: type queries, toggle facets, tune filters and weights (needs a terminal)')
    .argument('<collection>')
    .option('-q, --q <text>', 'initial query')
    .option('--query-by <fields>', 'fields to search (default: every string field)')
    .option('--query-by-weights <weights>', 'one weight per query-by field')
    .option('--filter-by <expr>', 'initial filter')
    .option('--sort-by <clauses>', 'initial sort')
    .option('--per-page <n>', 'hits per page, 1-250 (default 10)', parseIntOption('per-page', 1, 250))
    .option('--param <name=value...>', 'any other search parameter, sent with every search')
    .option('--server <url>', 'explore through a running fathom serve instead of the data directory')
    .addOption(new Option('--api-key <key>', 'API key for --server').env('FATHOM_API_KEY'));
  withDataDir(cmd);
  cmd.action((collection: string, opts: Opts) =>
    run(async () => {
      const dataDirFrom = cmd.getOptionValueSource('dataDir');
      if (opts.server !== undefined) {
        if (dataDirFrom === 'cli') throw new UsageError('choose one of --data-dir and --server');
        if (!opts.apiKey) throw new UsageError('--server needs --api-key (or FATHOM_API_KEY in the environment)');
        serverUrl(opts.server);
      } else if (opts.apiKey !== undefined && cmd.getOptionValueSource('apiKey') === 'cli') {
        throw new UsageError('--api-key goes with --server');
      }
      const initial = {
        q: opts.q,
        queryBy: opts.queryBy,
        weights: opts.queryByWeights,
        filterBy: opts.filterBy,
        sortBy: opts.sortBy,
        perPage: opts.perPage,
        extraParams: extraParams(opts.param),
      };
      if (!process.stdin.isTTY || !process.stdout.isTTY) {
        throw new UsageError(`fathom explore is interactive and needs a terminal (stdin and stdout must be a TTY); in scripts and pipes use \`fathom search ${collection} -q <query>\``);
      }
      const { client, schema } = await openClient(collection, opts, dataDirFrom);
      try {
        const { runExplorer } = await loadExplorer();
        return await runExplorer({ client, schema, initial });
      } finally {
        await client.close();
      }
    }),
  );
  return cmd;
}
