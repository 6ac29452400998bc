/**
 * commands/explore/ui/QueryBar.tsx: the query box, then filter_by / sort_by and
 * query_by / weights, two to a line.
 */
import { Box } from 'ink';
import type { ExploreState } from '../state.js';
import { TextBox } from './TextBox.js';

export function QueryBar({ state, width }: { state: ExploreState; width: number }) {
  const half = Math.floor(width / 2);
  const box = (label: string, field: keyof ExploreState['text'], w: number, placeholder?: string) => (
    <TextBox label={label} value={state.text[field]} focused={state.overlay === null && state.focus === field} width={w} placeholder={placeholder} />
  );
  return (
    <Box flexDirection="column" width={width}>
      {box('Search ›', 'query', width, 'type to search (* = everything)')}
      <Box>
        {box('filter_by', 'filter', half)}
        {box('sort_by', 'sort', width - half, 'relevance')}
      </Box>
      <Box>
        {box('query_by', 'queryBy', half)}
        {box('weights', 'weights', width - half, 'equal')}
      </Box>
    </Box>
  );
}
