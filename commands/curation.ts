/**
 * `fathom curation put|list|get|delete`: curation rules (overrides) of a collection
 * (`--collection`) or in a curation set (`--set`), on the data directory; a running server
 * sees a change at its next search. Rules are JSON (a file, or stdin). See commands/rules.ts.
 */
import type { Command } from 'commander';
import type { CurationItem } from '../src/curation/rules.js';
import type { RuleItem, Rules } from '../src/rulesets/rulesets.js';
import { ruleCommand } from './rules.js';
import type { ExitCode } from './common.js';

export function curationCommand(run: (fn: () => Promise<ExitCode>) => Promise<void>): Command {
  return ruleCommand(
    {
      name: 'curation',
      description: 'manage curation rules (overrides): a collection\'s own (--collection) and curation sets (--set)',
      noun: 'curation rule',
      rules: (e) => e.curation() as unknown as Rules<RuleItem>,
      describe: (i) => {
        const c = i as CurationItem;
        const when = [
          c.rule.query !== undefined ? `q ${c.rule.match} ${JSON.stringify(c.rule.query)}` : '',
          c.rule.filter_by !== undefined ? `filter ${JSON.stringify(c.rule.filter_by)}` : '',
          c.rule.tags ? `tags ${c.rule.tags.join(',')}` : '',
        ].filter(Boolean);
        const does = [
          c.includes ? `pins ${c.includes.map((x) => `${x.id}@${x.position}`).join(',')}` : '',
          c.excludes ? `hides ${c.excludes.map((x) => x.id).join(',')}` : '',
          c.filter_by !== undefined ? `filters ${JSON.stringify(c.filter_by)}` : '',
          c.sort_by !== undefined ? `sorts ${JSON.stringify(c.sort_by)}` : '',
          c.replace_query !== undefined ? `searches ${JSON.stringify(c.replace_query)}` : '',
          c.metadata ? 'metadata' : '',
        ].filter(Boolean);
        return `${when.join(' and ')}: ${does.join('; ')}`;
      },
    },
    run,
  );
}
