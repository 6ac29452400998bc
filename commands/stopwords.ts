/**
 * `fathom stopwords put|list|get|delete`: stopword sets applied to queries with --stopwords.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { printJson, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

interface Opts {
  dataDir: string;
  words?: string;
  file?: string;
  locale?: string;
  json?: boolean;
  jsonl?: boolean;
}

export function stopwordsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('stopwords').description('manage stopword sets');
  withDataDir(
    cmd
      .command('put')
      .description('create or replace a stopword set')
      .argument('<name>')
      .option('--words <list>', 'comma-separated words or phrases')
      .option('--file <path>', 'a file with one word or phrase per line')
      .option('--locale <code>', 'language of the words, e.g. en'),
  ).action((name: string, opts: Opts) =>
    run(async () => {
      if (!!opts.words === !!opts.file) throw new UsageError('give exactly one of --words and --file');
      let words: string[];
      if (opts.words) words = opts.words.split(',');
      else {
        if (!fs.existsSync(opts.file!)) throw new UsageError(`file not found: ${opts.file}`);
        words = fs.readFileSync(opts.file!, 'utf8').split(/\r?\n/);
      }
      words = words.map((w) => w.trim()).filter(Boolean);
      const set = await withEngine(opts.dataDir, (e) => e.putStopwords(name, { stopwords: words, ...(opts.locale ? { locale: opts.locale } : {}) }));
      await printJson(set);
    }),
  );
  withDataDir(withListOutput(cmd.command('list').description('list stopword sets'))).action((opts: Opts) =>
    run(async () => {
      const mode = listOutput(opts);
      const sets = await withEngine(opts.dataDir, (e) => e.listStopwords());
      await printList(mode, sets, {
        asJson: { stopwords: sets },
        none: 'no stopword sets\n',
        text: (sets) => sets.map((s) => `${s.id}  ${s.stopwords.length} words${s.locale ? `  (${s.locale})` : ''}\n`).join(''),
      });
    }),
  );
  withDataDir(cmd.command('get').description('show a stopword set').argument('<name>')).action((name: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.getStopwords(name)));
    }),
  );
  withDataDir(cmd.command('delete').description('delete a stopword set').argument('<name>')).action((name: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.deleteStopwords(name)));
    }),
  );
  return cmd;
}
