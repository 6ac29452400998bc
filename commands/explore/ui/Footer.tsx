/**
 * commands/explore/ui/Footer.tsx: the last line: the keys that matter where focus is.
 */
import { Text } from 'ink';
import { isTextFocus, type ExploreState } from '../state.js';

export function footerText(state: ExploreState): string {
  if (state.overlay === 'help') return 'Esc, q or ? close the help';
  if (state.overlay === 'command') return 'f copy fathom · c copy curl · Esc back';
  if (state.focus === 'query') return 'type to search · ↑↓ hits · Tab next · Ctrl-X command · Esc ? help · Ctrl-C quit';
  if (isTextFocus(state.focus)) return 'Enter/Esc done · Tab next box · Ctrl-X command · Ctrl-C quit';
  if (state.focus === 'facets') return 'Space toggle · x clear · ↑↓ move · / query · c command · ? help · q quit';
  return '↑↓ move · n/p page · d/u scroll · / f s b w edit · c command · ? help · q quit';
}

export function Footer({ state }: { state: ExploreState }) {
  return (
    <Text dimColor wrap="truncate-end">
      {footerText(state)}
    </Text>
  );
}
