/**
 * `fathom synonyms put|list|get|delete`: synonyms of a collection (`--collection`) or in a
 * synonym set (`--set`), on the data directory; a running server sees a change at its next
 * search. See commands/rules.ts for the shape shared with `fathom curation`.
 */
import type { Command } from 'commander';
import type { SynonymItem } from '../src/synonyms/synonyms.js';
import type { RuleItem, Rules } from '../src/rulesets/rulesets.js';
import { ruleCommand, type RuleOpts } from './rules.js';
import type { ExitCode } from './common.js';

const list = (v: unknown) =>
  String(v)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function synonymsCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  return ruleCommand(
    {
      name: 'synonyms',
      description: 'manage synonyms: a collection\'s own (--collection) and synonym sets (--set)',
      noun: 'synonym',
      rules: (e) => e.synonyms() as unknown as Rules<RuleItem>,
      flags: {
        add: (cmd) =>
          cmd
            .option('--synonyms <list>', 'comma-separated words or phrases (multi-way, or what --root stands for)')
            .option('--root <phrase>', 'one-way: the word or phrase the synonyms stand for')
            .option('--locale <code>', 'apply only to fields of this locale')
            .option('--symbols-to-index <chars>', 'characters kept in the synonyms, e.g. "+#"'),
        body: (o: RuleOpts) => {
          if (o.synonyms === undefined && o.root === undefined && o.locale === undefined && o.symbolsToIndex === undefined) return undefined;
          return {
            synonyms: o.synonyms === undefined ? [] : list(o.synonyms),
            ...(o.root !== undefined ? { root: o.root } : {}),
            ...(o.locale !== undefined ? { locale: o.locale } : {}),
            ...(o.symbolsToIndex !== undefined ? { symbols_to_index: [...String(o.symbolsToIndex)] } : {}),
          };
        },
      },
      describe: (i) => {
        const s = i as SynonymItem;
        const tail = s.locale ? `  (${s.locale})` : '';
        return (s.root ? `${s.root} -> ${s.synonyms.join(', ')}` : s.synonyms.join(' = ')) + tail;
      },
    },
    run,
  );
}
