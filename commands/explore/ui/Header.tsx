/**
 * commands/explore/ui/Header.tsx: the top line: collection and where it lives on the
 * left; found / out_of / search_time_ms and the page, always, on the right.
 */
import { Box, Text } from 'ink';
import type { Source } from '../client.js';
import { lastPage, type ExploreState } from '../state.js';
import { thousands } from '../../search-render.js';

export function statusText(state: ExploreState): string {
  const r = state.response;
  if (!r) return state.loading ? 'searching…' : state.error ? 'no results yet' : '';
  const parts = [`found ${thousands(r.found)} of ${thousands(r.out_of)}`, `${r.search_time_ms} ms`, `page ${state.page}/${lastPage(state)}`];
  if (r.search_cutoff) parts.push('cut off');
  return parts.join(' · ') + (state.loading ? ' · …' : '');
}

export function sourceText(source: Source): string {
  return source.kind === 'local' ? source.dataDir : source.url;
}

export function Header({ state, source, width }: { state: ExploreState; source: Source; width: number }) {
  const status = statusText(state);
  return (
    <Box width={width}>
      <Box flexGrow={1} flexShrink={1}>
        <Text wrap="truncate-end">
          <Text bold color="cyan">
            fathom explore
          </Text>{' '}
          <Text bold>{state.collection}</Text> <Text dimColor>{sourceText(source)}</Text>
        </Text>
      </Box>
      <Box flexShrink={0} marginLeft={1}>
        <Text bold>{status}</Text>
      </Box>
    </Box>
  );
}
