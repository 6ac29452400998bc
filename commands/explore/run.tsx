/**
 * commands/explore/run.tsx: mounts the explorer on the real terminal and resolves when it
 * exits. Draws on the alternate screen and always leaves it (on q, Ctrl-C, SIGTERM,
 * SIGHUP, or an exception), so the terminal is as it was before.
 */
import fs from 'node:fs';
import os from 'node:os';
import { render } from 'ink';
import type { CollectionSchema, SearchClient } from './client.js';
import type { InitialOptions } from './state.js';
import { ENTER_ALT_SCREEN, LEAVE_ALT_SCREEN } from './terminal.js';
import { App } from './ui/App.js';

export interface RunOptions {
  client: SearchClient;
  schema: CollectionSchema;
  initial: InitialOptions;
}

/** Runs the explorer until the user quits; resolves with the exit status. */
export async function runExplorer({ client, schema, initial }: RunOptions): Promise<number> {
  const out = process.stdout;
  const write = (s: string) => {
    try {
      fs.writeSync(out.fd, s);
    } catch {
      // The terminal went away; nothing left to restore.
    }
  };
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    write(LEAVE_ALT_SCREEN);
  };
  process.on('exit', restore);
  write(ENTER_ALT_SCREEN);

  let code = 0;
  const app = render(<App client={client} schema={schema} initial={initial} />, { stdout: out, stdin: process.stdin, exitOnCtrlC: false, patchConsole: true });
  const onSignal = (signal: NodeJS.Signals) => {
    code = 128 + (os.constants.signals[signal as keyof typeof os.constants.signals] ?? 0);
    app.unmount();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  try {
    await app.waitUntilExit();
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    restore();
    process.off('exit', restore);
  }
  return code;
}
