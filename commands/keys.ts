/**
 * `fathom keys create|list|get|delete`: API keys, straight on the data directory.
 *
 * The same records the server's /keys routes manage (src/keys/keys.ts); a running server
 * sees changes at once. `create` prints the value once; nothing can show it again.
 */
import { Command, Option } from 'commander';
import { printJson, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

interface Opts {
  dataDir: string;
  actions?: string;
  collections?: string;
  description?: string;
  value?: string;
  expiresAt?: number;
  autodelete?: boolean;
  json?: boolean;
  jsonl?: boolean;
}

function list(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function parseExpiry(v: string): number {
  if (!/^\d+$/.test(v.trim())) throw new UsageError(`--expires-at must be a Unix timestamp in seconds, got "${v}"`);
  return Number(v);
}

export function keysCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('keys').description('manage API keys for the HTTP API');
  withDataDir(
    cmd
      .command('create')
      .description('create a key and print it, with its value (shown only this once)')
      .requiredOption('--actions <list>', 'comma-separated actions, e.g. documents:search or "*"')
      .requiredOption('--collections <list>', 'comma-separated collection patterns (regular expressions), or "*"')
      .requiredOption('--description <text>', 'what the key is for')
      .option('--value <value>', 'the key value to use (default: a random 32-character value)')
      .addOption(new Option('--expires-at <unix-seconds>', 'when the key stops working').argParser(parseExpiry))
      .option('--autodelete', 'delete the key automatically once it has expired'),
  ).action((opts: Opts) =>
    run(async () => {
      const body = {
        actions: list(opts.actions!),
        collections: list(opts.collections!),
        description: opts.description,
        ...(opts.value !== undefined ? { value: opts.value } : {}),
        ...(opts.expiresAt !== undefined ? { expires_at: opts.expiresAt } : {}),
        ...(opts.autodelete ? { autodelete: true } : {}),
      };
      await printJson(await withEngine(opts.dataDir, (e) => e.createKey(body), { merges: 'off' }));
    }),
  );
  withDataDir(withListOutput(cmd.command('list').description('list keys (values are never shown, only their first characters)'))).action(
    (opts: Opts) =>
      run(async () => {
        const mode = listOutput(opts);
        const keys = await withEngine(opts.dataDir, (e) => e.listKeys(), { merges: 'off' });
        const now = Date.now() / 1000;
        await printList(mode, keys, {
          asJson: { keys },
          none: 'no keys\n',
          text: (keys) =>
            keys
              .map(
                (k) =>
                  `${k.id}  ${k.value_prefix}...  actions=${k.actions.join(',')}  collections=${k.collections.join(',')}` +
                  (k.expires_at < now ? '  (expired)' : '') +
                  `  ${k.description}\n`,
              )
              .join(''),
        });
      }),
  );
  withDataDir(cmd.command('get').description('show a key (without its value)').argument('<id>')).action((id: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.getKey(id), { merges: 'off' }));
    }),
  );
  withDataDir(cmd.command('delete').description('delete a key').argument('<id>')).action((id: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.deleteKey(id), { merges: 'off' }));
    }),
  );
  return cmd;
}
