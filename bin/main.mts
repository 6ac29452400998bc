/**
 * The `fathom` program: wires the subcommands together and turns errors into one line on
 * stderr and an exit status (0 ok, 1 failure, 2 usage error). bin/fathom.js loads this
 * (built to dist/main.cjs), runs `main` and is the only place that calls process.exit.
 */
import { Command, CommanderError } from 'commander';
import { collectionsCommand } from '../commands/collections.js';
import { importCommand } from '../commands/import.js';
import { exportCommand } from '../commands/export.js';
import { documentsCommand } from '../commands/documents.js';
import { searchCommand } from '../commands/search.js';
import { stopwordsCommand } from '../commands/stopwords.js';
import { serveCommand } from '../commands/serve.js';
import { keysCommand } from '../commands/keys.js';
import { snapshotCommand } from '../commands/snapshot.js';
import { analyticsCommand } from '../commands/analytics.js';
import { synonymsCommand } from '../commands/synonyms.js';
import { curationCommand } from '../commands/curation.js';
import { presetsCommand } from '../commands/presets.js';
import { exploreCommand } from '../commands/explore.js';
import { conversationsCommand } from '../commands/conversations.js';
import { askCommand } from '../commands/ask.js';
import { background, backgroundWarning, UsageError, type ExitCode } from '../commands/common.js';
import { FathomError } from '../src/errors.js';
import { VERSION } from '../src/version.js';
import { checkSecretsKey, SECRETS_ENV, secretsKey } from '../src/storage/secrets.js';

/** Commands that store or use provider credentials (LLM, embedding, transcription keys): they take --secrets-key. */
const SECRET_USERS = new Set(['serve', 'search', 'import', 'documents', 'collections', 'conversations', 'ask', 'explore']);

function report(e: unknown, debug: boolean): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
  const usage = e instanceof UsageError || (e instanceof FathomError && ['BAD_PARAMETER', 'BAD_FILTER', 'BAD_SORT'].includes(e.code));
  const msg = e instanceof Error ? e.message : String(e);
  process.stderr.write(`error: ${msg}\n`);
  if (debug && e instanceof Error && e.stack) process.stderr.write(e.stack + '\n');
  return usage ? 2 : 1;
}

/** Runs one `fathom` command line (`argv` as in process.argv); resolves to its exit status. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const debug = argv.includes('--debug');
  background.debug = debug;
  /** Runs a command action, recording its exit status; background failures make at most one line (common.ts `background`). */
  async function run(fn: () => Promise<ExitCode>): Promise<void> {
    try {
      const code = await fn();
      exitCode = typeof code === 'number' ? code : 0;
      // (a command that reports its own failure, as an import does, has said what went wrong)
      const warning = backgroundWarning();
      if (warning && exitCode === 0) process.stderr.write(`${warning}\n`);
    } catch (e) {
      backgroundWarning();
      exitCode = report(e, debug);
    }
  }

  const program = new Command('fathom')
    .description('Fathom: a search engine whose CLI works straight on its data directory')
    .version(VERSION, '-V, --version')
    .option('--debug', 'show stack traces on errors')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  const commands = [collectionsCommand(run), importCommand(run), exportCommand(run), documentsCommand(run), searchCommand(run), stopwordsCommand(run), exploreCommand(run), serveCommand(run), keysCommand(run), conversationsCommand(run), askCommand(run), snapshotCommand(run), analyticsCommand(run), synonymsCommand(run), curationCommand(run), presetsCommand(run)];
  for (const c of commands) {
    program.addCommand(c);
    // every level: `fathom conversations models create` is three deep
    const all = (x: Command): Command[] => [x, ...x.commands.flatMap((y) => all(y as Command))];
    for (const sub of all(c)) {
      sub.exitOverride();
      sub.option('--debug', 'show stack traces on errors');
      if (SECRET_USERS.has(c.name())) sub.option('--secrets-key <key>', `encrypt provider credentials at rest and read them back (or ${SECRETS_ENV}; README, Security)`);
      sub.configureOutput({ writeErr: (s) => process.stderr.write(s) });
    }
  }

  // --secrets-key becomes the environment variable, which worker threads and server processes inherit
  program.hook('preAction', (_program, action) => {
    // (a parent command takes the option when it comes after a subcommand's arguments: look at all of them)
    const given = action.optsWithGlobals().secretsKey as string | undefined;
    if (given !== undefined) process.env[SECRETS_ENV] = given;
    const k = secretsKey();
    const problem = k === undefined ? undefined : checkSecretsKey(k);
    if (problem) throw new UsageError(`${given !== undefined ? '--secrets-key' : SECRETS_ENV}: ${problem}`);
  });

  try {
    await program.parseAsync(argv);
  } catch (e) {
    exitCode = report(e, debug);
  }
  return exitCode;
}
