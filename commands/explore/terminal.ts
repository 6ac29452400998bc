/**
 * commands/explore/terminal.ts: the escape sequences the explorer writes itself: the
 * alternate screen (so quitting leaves the terminal as it was) and OSC 52 (clipboard).
 */

/** Switch to the alternate screen and home the cursor. */
export const ENTER_ALT_SCREEN = '\u001b[?1049h\u001b[H';
/** Show the cursor and return to the normal screen, with its contents as they were. */
export const LEAVE_ALT_SCREEN = '\u001b[?25h\u001b[?1049l';

/** OSC 52: asks the terminal to put `text` on the system clipboard. */
export function osc52(text: string): string {
  return `\u001b]52;c;${Buffer.from(text, 'utf8').toString('base64')}\u0007`;
}
