/**
 * commands/explore/ui/HelpScreen.tsx: the `?` screen: every key binding, from KEY_HELP.
 */
import type { ReactElement } from 'react';
import { Box, Text } from 'ink';
import { KEY_HELP } from '../keys.js';

export function HelpScreen({ width, height }: { width: number; height: number }) {
  const keyWidth = Math.max(...KEY_HELP.flatMap((s) => s.keys.map(([k]) => k.length))) + 2;
  const lines: ReactElement[] = [];
  KEY_HELP.forEach((section, si) => {
    if (si > 0) lines.push(<Text key={`b${si}`}> </Text>);
    lines.push(
      <Text key={`t${si}`} bold color="cyan">
        {section.title}
      </Text>,
    );
    section.keys.forEach(([k, what], ki) =>
      lines.push(
        <Text key={`k${si}.${ki}`} wrap="truncate-end">
          {'  '}
          <Text bold>{k.padEnd(keyWidth)}</Text>
          {what}
        </Text>,
      ),
    );
  });
  return (
    <Box flexDirection="column" width={width} height={height}>
      <Text bold wrap="truncate-end">
        Keys <Text dimColor>(Esc, q or ? to close)</Text>
      </Text>
      {lines.slice(0, Math.max(0, height - 1))}
    </Box>
  );
}
