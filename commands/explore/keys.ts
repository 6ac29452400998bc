/**
 * commands/explore/keys.ts: the key bindings. `keyToAction` turns one keypress into one
 * reducer action (pure, so every binding is tested without a terminal); `KEY_HELP` is the
 * same bindings as the `?` screen lists them.
 *
 * Text boxes (the query, filter_by, sort_by, query_by, weights) take printable keys as
 * text, so `q` and `?` type there; the single-letter commands work in the hit and facet
 * panes. Tab, Ctrl-X, PgUp/PgDn, Esc and Ctrl-C work everywhere.
 */
import type { Key } from 'ink';
import { isTextFocus, type Action, type ExploreState, type TextFocus } from './state.js';
import type { Edit } from './text-edit.js';

const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};

/** A Key for one character, as ink would report it had the character come alone. */
export function keyFor(ch: string): [string, Key] {
  const code = ch.codePointAt(0) ?? 0;
  if (ch === '\t') return ['', { ...NO_KEY, tab: true }];
  if (ch === '\r' || ch === '\n') return ['', { ...NO_KEY, return: true }];
  if (ch === '\u007f') return ['', { ...NO_KEY, delete: true }];
  if (ch === '\b') return ['', { ...NO_KEY, backspace: true }];
  if (ch === '\u001b') return ['', { ...NO_KEY, escape: true, meta: true }];
  if (code >= 1 && code <= 26) return [String.fromCharCode(code + 96), { ...NO_KEY, ctrl: true }];
  return [ch, { ...NO_KEY, shift: /[A-Z]/.test(ch) }];
}

/**
 * ink hands over a run of characters that arrived together (fast typing, a paste, a
 * script driving the terminal) as one input. Split into single keys, so that "jj" moves
 * twice and a Tab inside the run still moves focus.
 */
export function splitInput(input: string, key: Key): Array<[string, Key]> {
  const chars = Array.from(input);
  // Esc and a key that arrive together read as Alt+key; the explorer has no Alt bindings,
  // so it takes them as the two keys they were.
  const arrows = key.upArrow || key.downArrow || key.leftArrow || key.rightArrow || key.pageDown || key.pageUp || key.home || key.end;
  if (key.meta && !key.escape && !arrows && chars.length === 1) return [keyFor('\u001b'), keyFor(input)];
  const special = key.upArrow || key.downArrow || key.leftArrow || key.rightArrow || key.pageDown || key.pageUp || key.home || key.end || key.return || key.escape || key.tab || key.backspace || key.delete || key.meta || key.ctrl;
  if (chars.length <= 1 || special) return [[input, key]];
  return chars.map(keyFor);
}

export interface KeyContext {
  /** Lines the detail pane shows at once (d/u scroll by half of it). */
  detailHeight: number;
  /** Largest useful detail scroll offset for the selected hit. */
  detailMax: number;
}

/** Letters that move focus to a text box from a pane. */
const BOX_KEYS: Record<string, TextFocus> = { '/': 'query', f: 'filter', s: 'sort', b: 'queryBy', w: 'weights' };

function textEdit(input: string, key: Key): Edit | null {
  if (key.leftArrow) return { kind: 'left' };
  if (key.rightArrow) return { kind: 'right' };
  if (key.home) return { kind: 'home' };
  if (key.end) return { kind: 'end' };
  // Terminals send DEL (0x7f) for Backspace, which ink reports as `delete`.
  if (key.backspace || key.delete) return { kind: 'backspace' };
  if (key.ctrl) {
    switch (input) {
      case 'a':
        return { kind: 'home' };
      case 'e':
        return { kind: 'end' };
      case 'b':
        return { kind: 'left' };
      case 'f':
        return { kind: 'right' };
      case 'd':
        return { kind: 'deleteForward' };
      case 'u':
        return { kind: 'killToStart' };
      case 'k':
        return { kind: 'killToEnd' };
      case 'w':
        return { kind: 'deleteWord' };
      default:
        return null;
    }
  }
  if (key.meta || key.escape || key.upArrow || key.downArrow || key.return || key.tab) return null;
  return input ? { kind: 'insert', text: input } : null;
}

export function keyToAction(state: ExploreState, input: string, key: Key, ctx: KeyContext): Action | null {
  if (key.ctrl && input === 'c') return { type: 'quit' };

  if (state.overlay === 'help') {
    if (key.escape || key.return || input === 'q' || input === '?') return { type: 'overlay', overlay: null };
    return null;
  }
  if (state.overlay === 'command') {
    if (key.escape || key.return || input === 'q' || (key.ctrl && input === 'x')) return { type: 'overlay', overlay: null };
    if (input === 'f') return { type: 'copy', what: 'fathom' };
    if (input === 'c') return { type: 'copy', what: 'curl' };
    return null;
  }

  if (key.tab) return { type: key.shift ? 'focusPrev' : 'focusNext' };
  if (key.ctrl && input === 'x') return { type: 'overlay', overlay: 'command' };
  if (key.ctrl && input === 'r') return { type: 'refresh' };
  if (key.pageDown) return { type: 'page', by: 1 };
  if (key.pageUp) return { type: 'page', by: -1 };

  const half = Math.max(1, Math.floor(ctx.detailHeight / 2));

  if (isTextFocus(state.focus)) {
    if (key.escape || key.return) return { type: 'focus', focus: 'hits' };
    if (state.focus === 'query' && key.upArrow) return { type: 'moveHit', by: -1 };
    if (state.focus === 'query' && key.downArrow) return { type: 'moveHit', by: 1 };
    const edit = textEdit(input, key);
    return edit ? { type: 'edit', field: state.focus, edit } : null;
  }

  // The hit and facet panes.
  if (key.escape) return { type: 'focus', focus: 'query' };
  if (key.ctrl || key.meta) return null;
  if (input === 'q') return { type: 'quit' };
  if (input === '?') return { type: 'overlay', overlay: 'help' };
  if (input === 'c') return { type: 'overlay', overlay: 'command' };
  if (BOX_KEYS[input]) return { type: 'focus', focus: BOX_KEYS[input]! };
  if (input === 'n' || key.rightArrow) return { type: 'page', by: 1 };
  if (input === 'p' || key.leftArrow) return { type: 'page', by: -1 };
  if (input === 'd') return { type: 'scrollDetail', by: half, max: ctx.detailMax };
  if (input === 'u') return { type: 'scrollDetail', by: -half, max: ctx.detailMax };
  if (input === 'x') return { type: 'clearFacets' };
  const down = key.downArrow || input === 'j';
  const up = key.upArrow || input === 'k';
  if (state.focus === 'hits') {
    if (down) return { type: 'moveHit', by: 1 };
    if (up) return { type: 'moveHit', by: -1 };
    if (key.home || input === 'g') return { type: 'moveHitTo', index: 0 };
    if (key.end || input === 'G') return { type: 'moveHitTo', index: 'last' };
    return null;
  }
  if (down) return { type: 'moveFacet', by: 1 };
  if (up) return { type: 'moveFacet', by: -1 };
  if (input === ' ' || key.return) return { type: 'toggleFacet' };
  return null;
}

export interface KeyHelpSection {
  title: string;
  keys: Array<[keys: string, what: string]>;
}

/** The `?` screen. Keep in step with keyToAction (test/explore-keys.test.ts checks). */
export const KEY_HELP: KeyHelpSection[] = [
  {
    title: 'Everywhere',
    keys: [
      ['Tab  Shift-Tab', 'next / previous pane or box'],
      ['Ctrl-X', 'the query as fathom search / curl commands'],
      ['PgDn  PgUp', 'next / previous page'],
      ['Ctrl-R', 'run the search again'],
      ['Esc  Ctrl-C', 'leave a box (back to the query) / quit'],
    ],
  },
  {
    title: 'Text boxes (query, filter_by, sort_by, query_by, weights)',
    keys: [
      ['↑ ↓  Enter', 'query box: move through hits / go to the hits'],
      ['← → Home End', 'move the cursor (also Ctrl-A Ctrl-E Ctrl-B Ctrl-F)'],
      ['Bksp Ctrl-D', 'delete back / forward; Ctrl-U Ctrl-K Ctrl-W: to start/end/word'],
    ],
  },
  {
    title: 'Hit and facet panes',
    keys: [
      ['q  ?', 'quit / this help'],
      ['/ f s b w', 'edit query / filter_by / sort_by / query_by / weights'],
      ['c', 'the query as fathom search / curl commands'],
      ['↑ ↓ j k  g G', 'move; first / last hit'],
      ['n p  → ←', 'next / previous page'],
      ['d u', 'scroll the document down / up'],
      ['Space  Enter', 'toggle the facet value (facets pane)'],
      ['x', 'clear every facet selection'],
    ],
  },
];
