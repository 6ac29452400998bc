/**
 * `fathom presets put|list|get|delete`: named search parameters, used with `preset=<name>`
 * (`fathom search --preset`, the HTTP API's search and multi_search).
 */
import { Command } from 'commander';
import { isPlainObject, setOwn } from '../src/json.js';
import { printJson, readAllInput, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

interface Opts {
  dataDir: string;
  json?: boolean;
  jsonl?: boolean;
  param?: string[];
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function presetsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command('presets').description('manage search presets (named search parameters)');
  withDataDir(
    cmd
      .command('put')
      .description('create or replace a preset: --param name=value ..., or JSON from a file (- / nothing for stdin): {"value": {...}} or the parameters themselves')
      .argument('<name>')
      .argument('[file]', 'JSON file, or - for stdin')
      .option('-p, --param <name=value>', 'a search parameter of the preset (repeatable)', collect),
  ).action((name: string, file: string | undefined, opts: Opts) =>
    run(async () => {
      let body: unknown;
      if (opts.param && opts.param.length > 0) {
        if (file !== undefined) throw new UsageError('give the preset as --param flags or as a file, not both');
        const value: Record<string, string> = {};
        for (const p of opts.param) {
          const eq = p.indexOf('=');
          if (eq <= 0) throw new UsageError(`--param must look like name=value, got "${p}"`);
          setOwn(value, p.slice(0, eq), p.slice(eq + 1));
        }
        body = { value };
      } else {
        const text = await readAllInput(file);
        const { parseJson } = await import('../src/json.js');
        let v: unknown;
        try {
          v = parseJson(text);
        } catch (e) {
          throw new UsageError(`the preset is not valid JSON: ${(e as Error).message.replace(/^malformed JSON: /, '')}`);
        }
        body = isPlainObject(v) && Object.keys(v).every((k) => k === 'value' || k === 'name') && 'value' in v ? v : { value: v };
      }
      await printJson(await withEngine(opts.dataDir, (e) => e.putPreset(name, body), { merges: 'off' }));
    }),
  );
  withDataDir(withListOutput(cmd.command('list').description('list presets'))).action((opts: Opts) =>
    run(async () => {
      const mode = listOutput(opts);
      const presets = await withEngine(opts.dataDir, (e) => e.listPresets(), { merges: 'off' });
      const line = (p: (typeof presets)[number]) =>
        `${p.name}  ${Array.isArray(p.value.searches) ? `${(p.value.searches as unknown[]).length} searches` : Object.entries(p.value).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ')}\n`;
      await printList(mode, presets, { asJson: { presets }, none: 'no presets\n', text: (presets) => presets.map(line).join('') });
    }),
  );
  withDataDir(cmd.command('get').description('show a preset as JSON').argument('<name>').option('--json', 'print JSON (the default)')).action((name: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.getPreset(name), { merges: 'off' }));
    }),
  );
  withDataDir(cmd.command('delete').description('delete a preset').argument('<name>')).action((name: string, opts: Opts) =>
    run(async () => {
      await printJson(await withEngine(opts.dataDir, (e) => e.deletePreset(name), { merges: 'off' }));
    }),
  );
  return cmd;
}
