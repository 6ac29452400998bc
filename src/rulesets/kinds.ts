/**
 * src/rulesets/kinds.ts: the kinds of items src/rulesets stores, by name (a replicated
 * command names its kind; src/cluster/apply.ts finds the spec here).
 */
import { CURATION } from '../curation/rules.js';
import { SYNONYMS } from '../synonyms/synonyms.js';
import type { KindSpec, RuleItem, RuleKind } from './rulesets.js';

export function specOf(kind: RuleKind): KindSpec<RuleItem> {
  return (kind === 'synonym' ? SYNONYMS : CURATION) as unknown as KindSpec<RuleItem>;
}
