/**
 * commands/explore/ui/HitList.tsx: the hits of the current page, two lines each: the
 * first query_by field with matched tokens highlighted, then id, text_match (or
 * vector_distance) and another matched field.
 */
import { Box, Text } from 'ink';
import { hitSubtitle, hitTitle } from '../hit-text.js';
import { hitsOf, type ExploreState } from '../state.js';
import type { Pane } from '../layout.js';
import { Marked } from './Marked.js';
import { PaneTitle } from './PaneTitle.js';
import { windowStart } from './window.js';

export function queryByFields(state: ExploreState): string[] {
  return state.text.queryBy.value.split(',').map((s) => s.trim()).filter(Boolean);
}

export function HitList({ state, pane }: { state: ExploreState; pane: Pane }) {
  const hits = hitsOf(state);
  const focused = state.focus === 'hits';
  const capacity = Math.max(1, Math.floor((pane.height - 1) / 2));
  const start = windowStart(state.selectedHit, hits.length, capacity);
  const first = (state.page - 1) * state.perPage;
  const info = hits.length ? `${first + 1}-${first + hits.length}` : '';
  const fields = queryByFields(state);
  return (
    <Box flexDirection="column" width={pane.width} height={pane.height} flexShrink={0}>
      <PaneTitle title="Hits" info={info} focused={focused} />
      {hits.length === 0 ? (
        <Text dimColor wrap="truncate-end">
          {state.response ? '  no hits' : state.loading ? '  searching…' : ''}
        </Text>
      ) : null}
      {hits.slice(start, start + capacity).map((hit, j) => {
        const i = start + j;
        const selected = i === state.selectedHit;
        return (
          <Box key={i} flexDirection="column">
            <Marked
              text={hitTitle(hit, fields)}
              bold={selected}
              prefix={<Text color={selected ? 'cyan' : undefined}>{`${selected ? '▸' : ' '}${String(first + i + 1).padStart(3)}. `}</Text>}
            />
            <Box paddingLeft={6}>
              <Marked text={hitSubtitle(hit, fields)} dim />
            </Box>
          </Box>
        );
      })}
    </Box>
  );
}
