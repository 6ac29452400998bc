/**
 * commands/explore/ui/StatusLine.tsx: the line under the inputs: the last error (a bad
 * filter, an unreachable server) in red, else a notice, else the facet clauses in force.
 */
import { Text } from 'ink';
import { selectionClauses } from '../facets.js';
import type { ExploreState } from '../state.js';

export function StatusLine({ state }: { state: ExploreState }) {
  if (state.error)
    return (
      <Text color="red" wrap="truncate-end">
        ✗ {state.error}
      </Text>
    );
  if (state.notice)
    return (
      <Text color="green" wrap="truncate-end">
        {state.notice}
      </Text>
    );
  const clauses = selectionClauses(state.facetFields, state.selections, state.fieldTypes);
  return (
    <Text dimColor wrap="truncate-end">
      {clauses.length ? `facets: ${clauses.join(' && ')}` : ' '}
    </Text>
  );
}
