/**
 * `fathom serve`: the HTTP API over the data directory (src/server).
 *
 * Runs until SIGTERM or SIGINT, then stops gracefully and exits 0. With more than one
 * process (the default on a multi-core machine) this process is the cluster primary and
 * the same command runs again in each forked worker, which takes the serving role.
 */
import os from 'node:os';
import { Command, Option } from 'commander';
import { ANALYTICS_DEFAULTS, CLUSTER_DEFAULTS, SEARCH_CACHE_ENTRIES, SERVER_DEFAULTS, SERVE_DEFAULTS } from '../src/defaults.js';
import { parseBool, parseChoice, parseIntOption, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

interface Opts {
  dataDir: string;
  apiKey?: string;
  apiAddress: string;
  apiPort: number;
  enableCors?: boolean;
  logLevel: (typeof LEVELS)[number];
  processes: number;
  cacheNumEntries: number;
  searchCutoffMs: number;
  enableSearchAnalytics?: boolean;
  analyticsDir?: string;
  analyticsFlushInterval: number;
  cluster?: string;
  nodeName?: string;
  healthyReadLag: number;
  clusterReplicas: number;
  clusterSnapshotEvery: number;
  clusterSnapshotKeep: number;
  dashboard: boolean;
}

export function serveCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('serve')
    .description('serve the HTTP API (Typesense-compatible) over the data directory')
    .addOption(new Option('--api-key <key>', 'bootstrap admin key (never stored); without one, the first start creates a stored admin key and prints it once').env('FATHOM_API_KEY'))
    .addOption(new Option('--api-address <address>', 'address to listen on').default(SERVER_DEFAULTS.address))
    .addOption(new Option('--api-port <port>', 'port to listen on (0: any free port)').argParser(parseIntOption('api-port', 0, 65535)).default(SERVER_DEFAULTS.port))
    .option('--enable-cors', 'answer CORS preflights and allow browser requests from any origin')
    .option('--no-dashboard', 'do not serve the web dashboard on / (it asks for an API key and uses the API like any client)')
    .addOption(new Option('--log-level <level>', LEVELS.join(' | ')).argParser(parseChoice('log-level', LEVELS)).default(SERVE_DEFAULTS.logLevel))
    .addOption(
      new Option('--processes <n>', 'server processes sharing the data directory (0: one per CPU core)')
        .argParser(parseIntOption('processes', 0, 64))
        .default(SERVE_DEFAULTS.processes),
    )
    .addOption(
      new Option('--cache-num-entries <n>', 'answers each server process keeps for searches sent with use_cache=true (0: none)')
        .argParser(parseIntOption('cache-num-entries', 0, 10_000_000))
        .default(SEARCH_CACHE_ENTRIES),
    )
    .addOption(
      new Option('--search-cutoff-ms <ms>', 'the longest any search may run; past it the search answers search_cutoff: true with what it found (a request\'s search_cutoff_ms may ask for less, never more; 0: no ceiling)')
        .argParser(parseIntOption('search-cutoff-ms', 0, 1e9))
        .default(SERVE_DEFAULTS.searchCutoffMs),
    )
    .addOption(new Option('--enable-search-analytics [bool]', 'record searches and accept events for the analytics rules (`fathom analytics`)').argParser(parseBool('enable-search-analytics')))
    .option('--analytics-dir <dir>', 'where pending analytics live, an LMDB environment of their own (default: <data-dir>/analytics)')
    .addOption(
      new Option('--analytics-flush-interval <seconds>', 'seconds between flushes of aggregated queries and counters into their collections')
        .argParser(parseIntOption('analytics-flush-interval', ANALYTICS_DEFAULTS.minFlushIntervalSec, ANALYTICS_DEFAULTS.maxFlushIntervalSec))
        .default(ANALYTICS_DEFAULTS.flushIntervalSec),
    )
    .option('--cluster <urls>', 'join a cluster replicated through NATS JetStream: comma-separated NATS URLs, this node\'s own server first')
    .option('--node-name <name>', 'this node\'s name in the cluster (default: the host name and port)')
    .addOption(
      new Option('--healthy-read-lag <n>', 'commands behind the stream beyond which /health answers {"ok": false}')
        .argParser(parseIntOption('healthy-read-lag', 0, 1e9))
        .default(CLUSTER_DEFAULTS.healthyLag),
    )
    .addOption(new Option('--cluster-replicas <n>', 'copies JetStream keeps of the stream (a write needs a majority)').argParser(parseIntOption('cluster-replicas', 1, 5)).default(CLUSTER_DEFAULTS.replicas))
    .addOption(
      new Option('--cluster-snapshot-every <n>', 'the leader stores a snapshot in JetStream every this many commands, and trims the stream before it')
        .argParser(parseIntOption('cluster-snapshot-every', 10, 1e9))
        .default(CLUSTER_DEFAULTS.snapshotEvery),
    )
    .addOption(
      new Option('--cluster-snapshot-keep <n>', 'commands kept in the stream before the latest snapshot')
        .argParser(parseIntOption('cluster-snapshot-keep', 0, 1e9))
        .default(CLUSTER_DEFAULTS.keepAfterSnapshot),
    );
  withDataDir(cmd);
  cmd.action((opts: Opts) =>
    run(async () => {
      const { isClusterWorker, runClusterWorker, startCluster } = await import('../src/server/cluster.js');
      if (isClusterWorker()) {
        await runClusterWorker();
        return 0;
      }
      const { startServer } = await import('../src/server/serve.js');
      if (opts.apiKey !== undefined && opts.apiKey.trim() === '') throw new UsageError('--api-key must not be empty');
      if (opts.cluster !== undefined) {
        // a key made here would exist on this node alone: a cluster starts with a bootstrap key
        if (!opts.apiKey) throw new UsageError('--cluster needs --api-key (the same bootstrap key on every node); create other keys through the API');
        if (opts.processes > 1) throw new UsageError('a cluster node runs one server process: leave out --processes or give 1 (add nodes to serve more searches)');
        opts.processes = 1;
      }
      const generated = opts.cluster !== undefined ? undefined : await withEngine(opts.dataDir, (e) => e.ensureFirstKey(opts.apiKey), { merges: 'off' });
      if (generated) {
        process.stderr.write(
          `No --api-key given and no keys in ${opts.dataDir}: created an admin key. It is shown only this once; keep it safe:\n\n    ${generated}\n\n`,
        );
      }
      const processes = opts.processes === 0 ? os.availableParallelism() : opts.processes;
      const serveOpts = {
        dataDir: opts.dataDir,
        apiKey: opts.apiKey,
        address: opts.apiAddress,
        port: opts.apiPort,
        enableCors: opts.enableCors,
        logLevel: opts.logLevel,
        cacheNumEntries: opts.cacheNumEntries,
        searchCutoffMs: opts.searchCutoffMs,
        dashboard: opts.dashboard,
        ...(opts.cluster !== undefined
          ? {
              cluster: {
                servers: opts.cluster.split(',').map((u) => u.trim()).filter(Boolean),
                nodeName: opts.nodeName ?? `${os.hostname()}-${opts.apiPort}`,
                healthyLag: opts.healthyReadLag,
                replicas: opts.clusterReplicas,
                snapshotEvery: opts.clusterSnapshotEvery,
                keepAfterSnapshot: opts.clusterSnapshotKeep,
              },
            }
          : {}),
        analytics: { enabled: opts.enableSearchAnalytics === true, dir: opts.analyticsDir, flushIntervalSec: opts.analyticsFlushInterval },
      };
      let stop: () => Promise<void>;
      let done: Promise<void>;
      if (processes <= 1) {
        const s = await startServer(serveOpts);
        stop = s.stop;
        done = new Promise<void>((resolve) => {
          const orig = s.stop;
          stop = () => orig().then(resolve);
        });
      } else {
        const c = await startCluster(serveOpts, processes);
        stop = c.stop;
        done = c.done;
      }
      const onSignal = () => void stop();
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      await done;
      return 0;
    }),
  );
  return cmd;
}
