/**
 * `fathom export <collection>`: every document as JSON Lines on stdout, in constant memory.
 */
import { Command } from 'commander';
import { isStdoutClosed, out, withDataDir, withEngine, type ExitCode } from './common.js';

interface Opts {
  dataDir: string;
  includeFields?: string;
  excludeFields?: string;
  filterBy?: string;
}

export function exportCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('export')
    .description('write every document of a collection to stdout as JSON Lines')
    .argument('<collection>')
    .option('--include-fields <fields>', 'comma-separated fields to keep')
    .option('--exclude-fields <fields>', 'comma-separated fields to leave out')
    .option('--filter-by <expr>', 'only documents matching this filter');
  withDataDir(cmd);
  cmd.action((collection: string, opts: Opts) =>
    run(async () => {
      const { parseFieldList } = await import('../src/query/fields.js');
      await withEngine(opts.dataDir, async (engine) => {
        const lines = engine.exportLines(collection, {
          include: parseFieldList(opts.includeFields),
          exclude: parseFieldList(opts.excludeFields),
          filterBy: opts.filterBy,
        });
        let buf = '';
        for (const line of lines) {
          buf += line + '\n';
          if (buf.length > 1 << 16) {
            if (!(await out(buf))) return;
            buf = '';
          }
          if (isStdoutClosed()) return;
        }
        if (buf) await out(buf);
      });
    }),
  );
  return cmd;
}
