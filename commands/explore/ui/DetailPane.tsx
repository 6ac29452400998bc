/**
 * commands/explore/ui/DetailPane.tsx: the selected hit's full document, pretty-printed,
 * scrolled with d / u.
 */
import { Box, Text } from 'ink';
import { documentLines, type DocLine } from '../document-lines.js';
import { selectedHit, type ExploreState } from '../state.js';
import type { Pane } from '../layout.js';
import { PaneTitle } from './PaneTitle.js';

/** The selected document's lines for a pane (also used for the scroll limit). */
export function detailLines(state: ExploreState, pane: Pane): DocLine[] {
  const hit = selectedHit(state);
  return hit ? documentLines(hit.document, pane.width - 1) : [];
}

export function DetailPane({ state, pane }: { state: ExploreState; pane: Pane }) {
  const lines = detailLines(state, pane);
  const capacity = Math.max(1, pane.height - 1);
  const scroll = Math.max(0, Math.min(state.detailScroll, lines.length - capacity));
  const shown = lines.slice(scroll, scroll + capacity);
  const info = lines.length > capacity ? `lines ${scroll + 1}-${scroll + shown.length} of ${lines.length} (d/u)` : '';
  return (
    <Box flexDirection="column" width={pane.width} height={pane.height} flexShrink={0} paddingLeft={1}>
      <PaneTitle title="Document" info={info} focused={false} />
      {shown.map((l, i) => (
        <Text key={i} wrap="truncate-end">
          <Text color="cyan">{l.text.slice(0, l.keyLength)}</Text>
          {l.text.slice(l.keyLength)}
        </Text>
      ))}
    </Box>
  );
}
