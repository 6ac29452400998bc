/**
 * `fathom documents get|delete <collection> <id>`: one document by id.
 */
import { Command } from 'commander';
import { printJson, withDataDir, withEngine, type ExitCode } from './common.js';

interface Opts {
  dataDir: string;
  ignoreNotFound?: boolean;
}

export function documentsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('documents').description('fetch or delete one document by id');
  withDataDir(cmd.command('get').description('print a document').argument('<collection>').argument('<id>')).action(
    (collection: string, id: string, opts: Opts) =>
      run(async () => {
        await printJson(await withEngine(opts.dataDir, (e) => e.getDocument(collection, id)));
      }),
  );
  withDataDir(
    cmd
      .command('delete')
      .description('delete a document and print it')
      .argument('<collection>')
      .argument('<id>')
      .option('--ignore-not-found', 'succeed when the document does not exist'),
  ).action((collection: string, id: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.deleteDocument(collection, id, { ignoreNotFound: opts.ignoreNotFound })));
    }),
  );
  return cmd;
}
