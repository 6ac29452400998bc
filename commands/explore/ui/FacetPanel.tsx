/**
 * commands/explore/ui/FacetPanel.tsx: each facet field with its values and counts; a
 * selected value shows [x] and is part of filter_by.
 */
import { Box, Text } from 'ink';
import { currentFacetRows, type ExploreState } from '../state.js';
import type { Pane } from '../layout.js';
import { PaneTitle } from './PaneTitle.js';
import { windowStart } from './window.js';

type Line = { kind: 'field'; field: string } | { kind: 'value'; row: number; value: string; count: number; selected: boolean };

export function FacetPanel({ state, pane }: { state: ExploreState; pane: Pane }) {
  const focused = state.focus === 'facets';
  const rows = currentFacetRows(state);
  const lines: Line[] = [];
  let field: string | null = null;
  rows.forEach((r, i) => {
    if (r.field !== field) {
      field = r.field;
      lines.push({ kind: 'field', field });
    }
    lines.push({ kind: 'value', row: i, value: r.value, count: r.count, selected: r.selected });
  });
  const capacity = Math.max(1, pane.height - 1);
  const cursorLine = lines.findIndex((l) => l.kind === 'value' && l.row === state.facetCursor);
  const start = windowStart(Math.max(0, cursorLine), lines.length, capacity);
  const selectedCount = Object.values(state.selections).reduce((n, v) => n + v.length, 0);
  let empty = '';
  if (state.facetFields.length === 0) empty = '  no facet fields in this collection';
  else if (rows.length === 0) empty = state.response ? '  no values' : '';
  return (
    <Box flexDirection="column" width={pane.width} height={pane.height} flexShrink={0}>
      <PaneTitle title="Facets" info={selectedCount ? `${selectedCount} selected (x clears)` : ''} focused={focused} />
      {empty ? (
        <Text dimColor wrap="truncate-end">
          {empty}
        </Text>
      ) : null}
      {lines.slice(start, start + capacity).map((l, j) =>
        l.kind === 'field' ? (
          <Text key={j} bold wrap="truncate-end">
            {l.field}
          </Text>
        ) : (
          <Text key={j} wrap="truncate-end" color={focused && l.row === state.facetCursor ? 'cyan' : undefined} bold={focused && l.row === state.facetCursor}>
            {focused && l.row === state.facetCursor ? '▸' : ' '}
            {l.selected ? '[x] ' : '[ ] '}
            {l.value}
            <Text dimColor> {l.count}</Text>
          </Text>
        ),
      )}
    </Box>
  );
}
