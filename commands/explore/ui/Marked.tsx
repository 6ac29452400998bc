/**
 * commands/explore/ui/Marked.tsx: one line of text with highlight markers, the matched
 * tokens in bold yellow, cut to the box's width.
 */
import type { ReactNode } from 'react';
import { Text } from 'ink';
import { segments } from '../hit-text.js';

export function Marked({ text, dim, bold, prefix }: { text: string; dim?: boolean; bold?: boolean; prefix?: ReactNode }) {
  return (
    <Text wrap="truncate-end" dimColor={dim} bold={bold}>
      {prefix}
      {segments(text).map((s, i) =>
        s.match ? (
          <Text key={i} bold color="yellow">
            {s.text}
          </Text>
        ) : (
          s.text
        ),
      )}
    </Text>
  );
}
