/**
 * commands/explore/ui/CommandScreen.tsx: the current query as `fathom search` and `curl`
 * commands, laid out as continued lines so a mouse selection pastes as one command;
 * f / c also put the one-line form on the clipboard.
 */
import { Box, Text } from 'ink';
import { curlCommand, fathomCommand, layoutCommand, API_KEY_ENV } from '../command-line.js';
import type { Source } from '../client.js';
import { userParams } from '../params.js';
import type { ExploreState } from '../state.js';

export function CommandScreen({ state, source, width, height }: { state: ExploreState; source: Source; width: number; height: number }) {
  const params = userParams(state);
  const fathom = layoutCommand(fathomCommand(state.collection, params, source), width);
  const curl = layoutCommand(curlCommand(state.collection, params, source), width);
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold wrap="truncate-end">
        The current query as a command <Text dimColor>(f: copy fathom · c: copy curl · Esc: back)</Text>
      </Text>
      <Text> </Text>
      <Text bold color="cyan">
        fathom search{source.kind === 'server' ? <Text dimColor> (run where the server's data directory is)</Text> : null}
      </Text>
      {fathom.map((l, i) => (
        <Text key={`f${i}`}>{l}</Text>
      ))}
      <Text> </Text>
      <Text bold color="cyan">
        curl <Text dimColor>(key from ${API_KEY_ENV})</Text>
      </Text>
      {curl.map((l, i) => (
        <Text key={`c${i}`}>{l}</Text>
      ))}
      {state.notice ? (
        <>
          <Text> </Text>
          <Text color="green">{state.notice}</Text>
        </>
      ) : null}
    </Box>
  );
}
