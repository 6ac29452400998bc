/**
 * commands/explore/ui/TextBox.tsx: a labelled one-line input. When focused it shows a
 * block cursor and scrolls horizontally to keep the cursor in view.
 */
import { Box, Text } from 'ink';
import type { TextValue } from '../text-edit.js';

/** The part of `value` to show in `width` columns with the cursor visible. */
export function visibleWindow(t: TextValue, width: number): { before: string; at: string; after: string } {
  const chars = Array.from(t.value);
  const cursor = Array.from(t.value.slice(0, t.cursor)).length;
  const w = Math.max(1, width - 1);
  const start = Math.max(0, cursor - w + 1);
  return {
    before: chars.slice(start, cursor).join(''),
    at: chars[cursor] ?? ' ',
    after: chars.slice(cursor + 1, start + w + 1).join(''),
  };
}

export function TextBox({ label, value, focused, width, placeholder }: { label: string; value: TextValue; focused: boolean; width: number; placeholder?: string }) {
  const inner = Math.max(4, width - label.length - 3);
  const win = visibleWindow(value, inner);
  return (
    <Box width={width} flexShrink={0} paddingRight={1}>
      <Text wrap="truncate-end">
        <Text color={focused ? 'cyan' : undefined} bold={focused} dimColor={!focused}>
          {label}
        </Text>{' '}
        {focused ? (
          <>
            {win.before}
            <Text inverse>{win.at}</Text>
            {win.after}
            {value.value === '' && placeholder ? <Text dimColor>{placeholder}</Text> : null}
          </>
        ) : value.value ? (
          value.value
        ) : (
          <Text dimColor>{placeholder ?? '—'}</Text>
        )}
      </Text>
    </Box>
  );
}
