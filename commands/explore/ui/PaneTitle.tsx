/**
 * commands/explore/ui/PaneTitle.tsx: a pane's first line; inverse when it has focus.
 */
import { Text } from 'ink';

export function PaneTitle({ title, info, focused }: { title: string; info?: string; focused: boolean }) {
  return (
    <Text wrap="truncate-end">
      <Text inverse={focused} bold color={focused ? 'cyan' : undefined}>
        {` ${title} `}
      </Text>
      {info ? <Text dimColor> {info}</Text> : null}
    </Text>
  );
}
