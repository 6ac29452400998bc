/**
 * `fathom collections create|list|get|delete`: manage collections in a data directory.
 */
import { Command } from 'commander';
import { printJson, readAllInput, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

interface Opts {
  dataDir: string;
  json?: boolean;
  jsonl?: boolean;
}

export function collectionsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('collections').description('create, list, inspect and delete collections');

  withDataDir(
    cmd
      .command('create')
      .description('create a collection from a JSON schema (a file, or - / nothing for stdin)')
      .argument('[schema]', 'schema file, or - for stdin'),
  ).action((file: string | undefined, opts: Opts) =>
    run(async () => {
      const text = await readAllInput(file);
      const { parseJson } = await import('../src/json.js');
      let schema: unknown;
      try {
        schema = parseJson(text);
      } catch (e) {
        throw new UsageError(`the schema is not valid JSON: ${(e as Error).message.replace(/^malformed JSON: /, '')}`);
      }
      const info = await withEngine(opts.dataDir, (e) => e.createCollection(schema));
      await printJson(info);
    }),
  );

  withDataDir(withListOutput(cmd.command('list').description('list collections'))).action((opts: Opts) =>
    run(async () => {
      const mode = listOutput(opts);
      const list = await withEngine(opts.dataDir, (e) => e.listCollections());
      await printList(mode, list, {
        none: 'no collections\n',
        text: (list) => {
          const rows = list.map((c) => [c.name, String(c.num_documents), String(c.fields.length), new Date(c.created_at * 1000).toISOString()]);
          const head = ['NAME', 'DOCUMENTS', 'FIELDS', 'CREATED'];
          const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
          const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n';
          return line(head) + rows.map(line).join('');
        },
      });
    }),
  );

  withDataDir(cmd.command('get').description('show a collection with its document count').argument('<name>')).action(
    (name: string, opts: Opts) =>
      run(async () => {
        await printJson(await withEngine(opts.dataDir, (e) => e.getCollection(name)));
      }),
  );

  withDataDir(cmd.command('delete').description('delete a collection and all its documents').argument('<name>')).action(
    (name: string, opts: Opts) =>
      run(async () => {
        await printJson(await withEngine(opts.dataDir, (e) => e.deleteCollection(name)));
      }),
  );
  return cmd;
}
