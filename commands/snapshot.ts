/**
 * `fathom snapshot <dir>`: a compacted point-in-time copy of the data directory into a new
 * or empty directory (or a new `snapshot-<time>` directory inside one that holds anything),
 * which `fathom serve --data-dir <dir>` and every command open as is.
 */
import path from 'node:path';
import { Command } from 'commander';
import { out, printJson, withDataDir, withEngine, type ExitCode } from './common.js';

interface Opts {
  dataDir: string;
  json?: boolean;
}

export function snapshotCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  return withDataDir(
    new Command('snapshot')
      .description('copy the data directory (compacted, consistent while others write) into a new or empty directory')
      .argument('<dir>', 'where the copy goes: a new or empty directory, or inside one that holds anything (a new snapshot-<time> directory)')
      .option('--json', 'print the result as JSON'),
  ).action((dir: string, opts: Opts) =>
    run(async () => {
      const r = await withEngine(opts.dataDir, (e) => e.snapshot(path.resolve(dir)), { merges: 'off' });
      if (opts.json) await printJson({ success: true, snapshot_path: r.dir, bytes: r.bytes });
      else await out(`snapshot of ${opts.dataDir} written to ${r.dir} (${(r.bytes / 1048576).toFixed(1)} MiB)\n`);
    }),
  );
}
