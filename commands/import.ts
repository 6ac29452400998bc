/**
 * `fathom import <collection> [file|-]`: JSON Lines in, one result line per input line out.
 * Exit status 0 when every line succeeded, 1 when any failed, 2 for a usage error.
 */
import { Command, Option } from 'commander';
import { inputStream, isStdoutClosed, out, parseChoice, parseIntOption, withDataDir, withEngine, type ExitCode } from './common.js';
import { CLI_IMPORT_BATCH_SIZE, DIRTY_VALUES, MAX_IMPORT_BATCH_SIZE, WRITE_ACTIONS } from '../src/defaults.js';
import { isNoSpace } from '../src/storage/diskfull.js';

const ACTIONS = WRITE_ACTIONS;
const DIRTY = DIRTY_VALUES;

interface Opts {
  dataDir: string;
  optimize?: boolean;
  action: (typeof ACTIONS)[number];
  batchSize: number;
  dirtyValues?: (typeof DIRTY)[number];
  returnId?: boolean;
  returnDoc?: boolean;
  quiet?: boolean;
  progress?: boolean;
}

export function importCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('import')
    .description('import JSON Lines documents into a collection (reads stdin when no file is given)')
    .argument('<collection>')
    .argument('[file]', 'JSON Lines file, or - for stdin')
    .addOption(new Option('--action <action>', 'create | upsert | update | emplace').argParser(parseChoice('action', ACTIONS)).default('create'))
    .addOption(
      new Option('--batch-size <n>', `documents per transaction (1-${MAX_IMPORT_BATCH_SIZE})`)
        .argParser(parseIntOption('batch-size', 1, MAX_IMPORT_BATCH_SIZE))
        .default(CLI_IMPORT_BATCH_SIZE),
    )
    .addOption(new Option('--dirty-values <mode>', `${DIRTY.join(' | ')} (default: reject, or coerce_or_reject when the collection has pattern fields)`).argParser(parseChoice('dirty-values', DIRTY)))
    .option('--return-id', 'include each document id in its result line')
    .option('--return-doc', 'include each stored document in its result line')
    .option('-q, --quiet', 'print failed lines only')
    .option('--optimize', 'merge the index into one segment at the end (default: when the import at least doubled the collection)')
    .option('--no-optimize', 'leave segment merging to the background policy')
    .option('--no-progress', 'no progress bar, even on a terminal');
  withDataDir(cmd);
  cmd.action((collection: string, file: string | undefined, opts: Opts) =>
    run(async () => {
      const source = inputStream(file);
      const started = performance.now();
      let bar: { update(n: number, p: object): void; stop(): void } | undefined;
      if (process.stderr.isTTY && opts.progress !== false) {
        const { SingleBar } = await import('cli-progress');
        const b = new SingleBar(
          { stream: process.stderr, format: 'importing {value} documents | {rate} docs/s | {failed} failed', fps: 5, hideCursor: false, clearOnComplete: true },
        );
        b.start(0, 0, { rate: 0, failed: 0 });
        bar = b as unknown as typeof bar;
      }
      let failed = 0;
      const summary = await withEngine(opts.dataDir, async (engine) => {
        const before = engine.liveCount(collection);
        return engine.import(
          collection,
          source,
          {
            action: opts.action,
            batchSize: opts.batchSize,
            dirtyValues: opts.dirtyValues,
            returnId: opts.returnId,
            returnDoc: opts.returnDoc,
            failedOnly: opts.quiet,
            afterBatch: (done) => {
              const secs = (performance.now() - started) / 1000;
              bar?.update(done, { rate: Math.round(done / Math.max(secs, 0.001)), failed });
            },
          },
          async (line, ok) => {
            if (!ok) failed++;
            if (isStdoutClosed() || (opts.quiet && ok)) return;
            await out(line + '\n');
          },
        ).then(async (s) => {
          await engine.idle(); // let queued segment merges finish before the process exits
          // a bulk load ends as one segment: the fastest shape to query (see ARCHITECTURE.md)
          const bulk = opts.optimize ?? (s.succeeded > 0 && s.succeeded >= before);
          let unmerged = false;
          if (bulk && !s.noSpace) {
            try {
              await engine.optimize(collection);
            } catch (e) {
              // the documents are stored; only the final merge did not fit
              if (!isNoSpace(e)) throw e;
              unmerged = true;
            }
          }
          engine.syncVectors(collection); // build and save vector graphs so the next open loads them
          return { ...s, unmerged };
        });
      });
      bar?.stop();
      const secs = (performance.now() - started) / 1000;
      const rate = Math.round(summary.total / Math.max(secs, 0.001));
      if (summary.noSpace || summary.unmerged) {
        // one line: the per-line results on stdout say which lines were not stored
        const n = summary.noSpace ?? 0;
        const what = n > 0 ? `${n} line${n === 1 ? ' was' : 's were'} not stored` : 'the final merge of the index was skipped';
        process.stderr.write(
          `error: no space left on device while writing to ${opts.dataDir}: imported ${summary.succeeded} of ${summary.total} documents into ${collection}; ${what}\n`,
        );
        return 1;
      }
      process.stderr.write(
        `imported ${summary.succeeded} of ${summary.total} documents into ${collection} in ${secs.toFixed(2)} s (${rate} docs/s)` +
          (summary.failed ? `; ${summary.failed} failed` : '') +
          '\n',
      );
      return summary.failed > 0 ? 1 : 0;
    }),
  );
  return cmd;
}
