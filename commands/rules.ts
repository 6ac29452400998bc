/**
 * What `fathom synonyms` and `fathom curation` share: items kept by a collection
 * (`--collection`, Typesense <= 29's per-collection synonyms and overrides) or by a named set
 * (`--set`, Typesense 30's synonym sets and curation sets), with put / list / get / delete.
 *
 *   put <id> [file]  --collection C | --set S   one item (JSON from the file or stdin, or flags)
 *   put [file]       --set S                    a whole set ({"items": [...]})
 *   list             --collection C | --set S   the items; neither: the sets
 *   get [id]         --collection C | --set S   one item; with --set and no id, the set
 *   delete [id]      --collection C | --set S   one item; with --set and no id, the set
 */
import { Command } from 'commander';
import type { Engine } from '../src/engine.js';
import type { RuleItem, RuleSet, Rules } from '../src/rulesets/rulesets.js';
import { printJson, readAllInput, UsageError, withDataDir, withEngine, type ExitCode } from './common.js';
import { listOutput, printList, withListOutput } from './jsonl.js';

export interface RuleOpts {
  dataDir: string;
  collection?: string;
  set?: string;
  json?: boolean;
  jsonl?: boolean;
  [k: string]: unknown;
}

export interface RuleCommandSpec {
  name: string;
  description: string;
  /** One item in help and messages: "synonym", "curation rule". */
  noun: string;
  rules(e: Engine): Rules<RuleItem>;
  /** Flags of `put` that build an item without a file, and how they do; undefined: none given. */
  flags?: { add(cmd: Command): Command; body(opts: RuleOpts): Record<string, unknown> | undefined };
  /** One line about an item, for people. */
  describe(item: RuleItem): string;
}

type Target = { collection: string } | { set: string };

function target(opts: RuleOpts, required: boolean): Target | undefined {
  if (opts.collection !== undefined && opts.set !== undefined) throw new UsageError('give --collection or --set, not both');
  if (opts.collection !== undefined) return { collection: opts.collection };
  if (opts.set !== undefined) return { set: opts.set };
  if (required) throw new UsageError('give --collection <name> (its own items) or --set <name> (a set)');
  return undefined;
}

async function readBody(file: string | undefined, what: string): Promise<unknown> {
  const text = await readAllInput(file);
  const { parseJson } = await import('../src/json.js');
  try {
    return parseJson(text);
  } catch (e) {
    throw new UsageError(`the ${what} is not valid JSON: ${(e as Error).message.replace(/^malformed JSON: /, '')}`);
  }
}

const targeted = (cmd: Command) =>
  withDataDir(cmd.option('-c, --collection <name>', "a collection's own items").option('-s, --set <name>', 'a named set'));

export function ruleCommand(spec: RuleCommandSpec, run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  const cmd = new Command(spec.name).description(spec.description);
  const rules = (e: Engine) => spec.rules(e);

  let put = targeted(
    cmd
      .command('put')
      .description(`create or replace a ${spec.noun} (JSON from a file, or - / nothing for stdin), or with --set and no id a whole set ({"items": [...]})`)
      .argument('[id]')
      .argument('[file]', 'JSON file, or - for stdin'),
  );
  if (spec.flags) put = spec.flags.add(put);
  put.action((id: string | undefined, file: string | undefined, opts: RuleOpts) =>
    run(async () => {
      const t = target(opts, true)!;
      const fromFlags = spec.flags?.body(opts);
      if (fromFlags && file !== undefined) throw new UsageError(`give the ${spec.noun} as flags or as a file, not both`);
      if (id === undefined) {
        if (!('set' in t)) throw new UsageError(`give the ${spec.noun}'s id`);
        if (fromFlags) throw new UsageError('a whole set comes from a file: {"items": [...]}');
        const body = await readBody(file, 'set');
        await printJson(await withEngine(opts.dataDir, (e) => rules(e).putSet(t.set, body), { merges: 'off' }));
        return;
      }
      const body = fromFlags ?? (await readBody(file, spec.noun));
      const item = await withEngine(opts.dataDir, (e) => ('set' in t ? rules(e).putItem(t.set, id, body) : rules(e).put(t.collection, id, body)), { merges: 'off' });
      await printJson(item);
    }),
  );

  targeted(withListOutput(cmd.command('list').description(`list the ${spec.noun}s of a collection or a set; neither: the sets`))).action((opts: RuleOpts) =>
    run(async () => {
      const mode = listOutput(opts);
      const t = target(opts, false);
      if (!t) {
        const sets = await withEngine(opts.dataDir, (e) => rules(e).listSets(), { merges: 'off' });
        await printList(mode, sets, { none: 'no sets\n', text: (sets) => sets.map((s: RuleSet) => `${s.name}  ${s.items.length} item${s.items.length === 1 ? '' : 's'}\n`).join('') });
        return;
      }
      const items = await withEngine(opts.dataDir, (e) => ('set' in t ? rules(e).listItems(t.set) : rules(e).list(t.collection)), { merges: 'off' });
      await printList(mode, items, { none: `no ${spec.noun}s\n`, text: (items) => items.map((i) => `${i.id}  ${spec.describe(i)}\n`).join('') });
    }),
  );

  targeted(cmd.command('get').description(`show a ${spec.noun} as JSON; with --set and no id, the whole set`).argument('[id]').option('--json', 'print JSON (the default)')).action(
    (id: string | undefined, opts: RuleOpts) =>
      run(async () => {
        const t = target(opts, true)!;
        if (id === undefined && !('set' in t)) throw new UsageError(`give the ${spec.noun}'s id`);
        await printJson(
          await withEngine(opts.dataDir, (e): unknown => (id === undefined ? rules(e).getSet((t as { set: string }).set) : 'set' in t ? rules(e).getItem(t.set, id) : rules(e).get(t.collection, id)), { merges: 'off' }),
        );
      }),
  );

  targeted(cmd.command('delete').description(`delete a ${spec.noun}; with --set and no id, the whole set`).argument('[id]')).action((id: string | undefined, opts: RuleOpts) =>
    run(async () => {
      const t = target(opts, true)!;
      if (id === undefined && !('set' in t)) throw new UsageError(`give the ${spec.noun}'s id`);
      await printJson(
        await withEngine(
          opts.dataDir,
          (e): Promise<{ id: string } | { name: string }> => (id === undefined ? rules(e).deleteSet((t as { set: string }).set) : 'set' in t ? rules(e).deleteItem(t.set, id) : rules(e).delete(t.collection, id)),
          { merges: 'off' },
        ),
      );
    }),
  );
  return cmd;
}
