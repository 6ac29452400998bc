/**
 * commands/explore/ui/use-terminal-size.ts: the terminal's size, updated on resize.
 */
import { useEffect, useState } from 'react';
import { useStdout } from 'ink';

export interface Size {
  columns: number;
  rows: number;
}

export function useTerminalSize(fixed?: Partial<Size>): Size {
  const { stdout } = useStdout();
  const read = (): Size => ({ columns: fixed?.columns ?? (stdout.columns || 80), rows: fixed?.rows ?? (stdout.rows || 24) });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, fixed?.columns, fixed?.rows]);
  return size;
}
