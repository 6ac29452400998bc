/**
 * `fathom analytics rules list|get|put|delete` and `fathom analytics flush`: search
 * analytics on the data directory, with or without a server running on it.
 *
 * Rules live in the data directory, so they can be managed here; a running server sees a
 * change at its next request. `flush` writes what searches and events left pending in the
 * analytics directory into the destination collections now (safe while servers run: a
 * flush is transactional and any number may run at once).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { ANALYTICS_DEFAULTS } from '../src/defaults.js';
import { shown } from '../src/analytics/shapes.js';
import { out, printJson, readAllInput, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

interface Opts {
  dataDir: string;
  json?: boolean;
  jsonl?: boolean;
  analyticsDir?: string;
}

export function analyticsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('analytics').description('search analytics: rules, and flushing aggregated queries and counters');
  const rules = cmd.command('rules').description('manage analytics rules (popular_queries, nohits_queries, counter)');

  withDataDir(withListOutput(rules.command('list').description('list analytics rules'))).action((opts: Opts) =>
    run(async () => {
      const mode = listOutput(opts);
      const list = await withEngine(opts.dataDir, (e) => e.listAnalyticsRules(), { merges: 'off' });
      await printList(mode, list, {
        asJson: { rules: list.map(shown) },
        none: 'no analytics rules\n',
        text: (list) => {
          const rows = list.map((r) => [
            r.name,
            r.type,
            r.params.source.collections.join(','),
            r.params.destination.collection + (r.params.destination.counter_field ? `.${r.params.destination.counter_field}` : ''),
            r.type === 'counter' ? (r.params.source.events ?? []).map((e) => `${e.name}(${e.type} ${e.weight > 0 ? '+' : ''}${e.weight})`).join(' ') : `limit ${r.params.limit ?? ANALYTICS_DEFAULTS.limit}${r.params.expand_query ? ', expand_query' : ''}`,
          ]);
          const head = ['NAME', 'TYPE', 'SOURCE', 'DESTINATION', 'EVENTS / LIMIT'];
          const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
          const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd() + '\n';
          return line(head) + rows.map(line).join('');
        },
      });
    }),
  );

  withDataDir(rules.command('get').description('show an analytics rule as JSON').argument('<name>')).action((name: string, opts: Opts) =>
    run(async () => {
      await printJson(shown(await withEngine(opts.dataDir, (e) => e.getAnalyticsRule(name), { merges: 'off' })));
    }),
  );

  withDataDir(
    rules
      .command('put')
      .description('create or replace an analytics rule from JSON {type, params} (a file, or - / nothing for stdin)')
      .argument('<name>')
      .argument('[rule]', 'rule file, or - for stdin'),
  ).action((name: string, file: string | undefined, opts: Opts) =>
    run(async () => {
      const text = await readAllInput(file);
      const { parseJson } = await import('../src/json.js');
      let body: unknown;
      try {
        body = parseJson(text);
      } catch (e) {
        throw new UsageError(`the rule is not valid JSON: ${(e as Error).message.replace(/^malformed JSON: /, '')}`);
      }
      await printJson(shown(await withEngine(opts.dataDir, (e) => e.putAnalyticsRule(name, body), { merges: 'off' })));
    }),
  );

  withDataDir(rules.command('delete').description('delete an analytics rule (what it wrote stays in its destination)').argument('<name>')).action(
    (name: string, opts: Opts) =>
      run(async () => {
        await printJson(await withEngine(opts.dataDir, (e) => e.deleteAnalyticsRule(name), { merges: 'off' }));
      }),
  );

  withDataDir(
    cmd
      .command('flush')
      .description('write pending aggregated queries and counters into their collections now')
      .option('--analytics-dir <dir>', 'the analytics directory the server uses (default: <data-dir>/analytics)')
      .option('--json', 'print the report as JSON'),
  ).action((opts: Opts) =>
    run(async () => {
      const { Analytics } = await import('../src/analytics/analytics.js');
      const { analyticsDirFor } = await import('../src/analytics/pending.js');
      const dir = analyticsDirFor(opts.dataDir, opts.analyticsDir, ANALYTICS_DEFAULTS.dirName);
      if (!fs.existsSync(path.join(dir, 'data.mdb'))) {
        // (nothing was ever recorded there; do not create it)
        if (opts.json) await printJson({ batches: 0, queries: 0, counters: 0, trimmed: 0, skipped_documents: 0, failed: 0, dropped: 0 });
        else await out(`nothing pending to flush (no analytics directory at ${dir})\n`);
        return;
      }
      const report = await withEngine(opts.dataDir, async (engine) => {
        const a = new Analytics(engine, { dir });
        try {
          return await a.flush();
        } finally {
          await a.close();
          await engine.idle();
        }
      });
      if (opts.json) await printJson(report);
      else
        await out(
          report.batches === 0
            ? 'nothing pending to flush\n'
            : `flushed: ${report.queries} query documents written, ${report.counters} counters incremented` +
                (report.trimmed ? `, ${report.trimmed} queries beyond the limit removed` : '') +
                (report.skipped_documents ? `, ${report.skipped_documents} increments for missing documents skipped` : '') +
                (report.failed ? `, ${report.failed} writes refused` : '') +
                (report.dropped ? `, ${report.dropped} parts of deleted rules dropped` : '') +
                '\n',
        );
    }),
  );
  return cmd;
}
