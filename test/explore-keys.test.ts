import { describe, expect, it } from 'vitest';
import type { Key } from 'ink';
import { keyFor, keyToAction, splitInput, KEY_HELP } from '../commands/explore/keys.js';
import { footerText } from '../commands/explore/ui/Footer.js';
import { initialState, type ExploreState, type Focus } from '../commands/explore/state.js';
import type { CollectionSchema } from '../commands/explore/client.js';
import { BOOKS_SCHEMA } from './helpers.js';

const schema = BOOKS_SCHEMA as unknown as CollectionSchema;
const ctx = { detailHeight: 10, detailMax: 30 };

function key(k: Partial<Key> = {}): Key {
  return { ...keyFor('x')[1], ...k };
}

function at(focus: Focus, extra: Partial<ExploreState> = {}): ExploreState {
  return { ...initialState(schema), focus, ...extra };
}

function press(state: ExploreState, input: string, k: Partial<Key> = {}) {
  return keyToAction(state, input, key(k), ctx);
}

describe('in the query box', () => {
  it('types q and ? as text', () => {
    expect(press(at('query'), 'q')).toEqual({ type: 'edit', field: 'query', edit: { kind: 'insert', text: 'q' } });
    expect(press(at('query'), '?')).toEqual({ type: 'edit', field: 'query', edit: { kind: 'insert', text: '?' } });
  });

  it('moves through the hits with the arrow keys', () => {
    expect(press(at('query'), '', { downArrow: true })).toEqual({ type: 'moveHit', by: 1 });
    expect(press(at('query'), '', { upArrow: true })).toEqual({ type: 'moveHit', by: -1 });
  });

  it('leaves for the hit list on Enter or Esc', () => {
    expect(press(at('query'), '', { return: true })).toEqual({ type: 'focus', focus: 'hits' });
    expect(press(at('query'), '', { escape: true })).toEqual({ type: 'focus', focus: 'hits' });
  });

  it('treats Backspace (which terminals send as DEL) as delete-before-cursor', () => {
    expect(press(at('query'), '', { delete: true })).toEqual({ type: 'edit', field: 'query', edit: { kind: 'backspace' } });
  });

  it('quits on Ctrl-C', () => {
    expect(press(at('query'), 'c', { ctrl: true })).toEqual({ type: 'quit' });
  });
});

describe('in the hit and facet panes', () => {
  it('quits on q and opens help on ?', () => {
    expect(press(at('hits'), 'q')).toEqual({ type: 'quit' });
    expect(press(at('facets'), '?')).toEqual({ type: 'overlay', overlay: 'help' });
  });

  it('jumps to the text boxes with / f s b w', () => {
    const foci = ['/', 'f', 's', 'b', 'w'].map((k) => (press(at('hits'), k) as { focus: string }).focus);
    expect(foci).toEqual(['query', 'filter', 'sort', 'queryBy', 'weights']);
  });

  it('toggles a facet value with Space and clears all with x', () => {
    expect(press(at('facets'), ' ')).toEqual({ type: 'toggleFacet' });
    expect(press(at('facets'), 'x')).toEqual({ type: 'clearFacets' });
  });

  it('pages with n and p, and with PgDn / PgUp everywhere', () => {
    expect(press(at('hits'), 'n')).toEqual({ type: 'page', by: 1 });
    expect(press(at('hits'), 'p')).toEqual({ type: 'page', by: -1 });
    expect(press(at('query'), '', { pageDown: true })).toEqual({ type: 'page', by: 1 });
  });

  it('scrolls the document by half its height', () => {
    expect(press(at('hits'), 'd')).toEqual({ type: 'scrollDetail', by: 5, max: 30 });
  });
});

describe('everywhere', () => {
  it('shows the equivalent command line on Ctrl-X, even while typing', () => {
    expect(press(at('query'), 'x', { ctrl: true })).toEqual({ type: 'overlay', overlay: 'command' });
    expect(press(at('hits'), 'c')).toEqual({ type: 'overlay', overlay: 'command' });
  });

  it('moves focus with Tab and Shift-Tab', () => {
    expect(press(at('query'), '', { tab: true })).toEqual({ type: 'focusNext' });
    expect(press(at('query'), '', { tab: true, shift: true })).toEqual({ type: 'focusPrev' });
  });

  it('copies the commands from the command screen and closes it on Esc', () => {
    const s = at('hits', { overlay: 'command' });
    expect(press(s, 'f')).toEqual({ type: 'copy', what: 'fathom' });
    expect(press(s, 'c')).toEqual({ type: 'copy', what: 'curl' });
    expect(press(s, '', { escape: true })).toEqual({ type: 'overlay', overlay: null });
  });

  it('closes help with ?, q or Esc without quitting', () => {
    const s = at('hits', { overlay: 'help' });
    for (const [input, k] of [['?', {}], ['q', {}], ['', { escape: true }]] as const) expect(press(s, input, k)).toEqual({ type: 'overlay', overlay: null });
  });
});

describe('input that arrives in one chunk', () => {
  it('is split into keys, so a Tab inside it still moves focus', () => {
    const keys = splitInput('ab\tq', key({ shift: false }));
    expect(keys.map(([i, k]) => (k.tab ? 'TAB' : i))).toEqual(['a', 'b', 'TAB', 'q']);
  });

  it('maps control characters to the keys terminals mean by them', () => {
    expect(keyFor('\r')[1].return).toBe(true);
    expect(keyFor('\u007f')[1].delete).toBe(true);
    expect(keyFor('\u0018')).toEqual(['x', expect.objectContaining({ ctrl: true })]);
  });

  it('reads Esc followed at once by a letter (Alt+letter) as the two keys', () => {
    const keys = splitInput('f', key({ meta: true }));
    expect(keys.map(([i, k]) => (k.escape ? 'ESC' : i))).toEqual(['ESC', 'f']);
  });

  it('leaves a single key or an escape sequence alone', () => {
    expect(splitInput('q', key())).toHaveLength(1);
    expect(splitInput('[B', key({ downArrow: true }))).toHaveLength(1);
  });
});

describe('the help screen', () => {
  it('fits in an 80x24 terminal', () => {
    const lines = 1 + KEY_HELP.reduce((n, s) => n + 1 + s.keys.length, 0) + (KEY_HELP.length - 1);
    expect(lines).toBeLessThanOrEqual(23);
    const keyWidth = Math.max(...KEY_HELP.flatMap((s) => s.keys.map(([k]) => k.length))) + 2;
    for (const s of KEY_HELP) for (const [, what] of s.keys) expect(2 + keyWidth + what.length).toBeLessThanOrEqual(80);
  });

  it('documents the single-letter pane keys that keyToAction handles', () => {
    const documented = KEY_HELP.flatMap((s) => s.keys.map(([k]) => k)).join(' ');
    for (const letter of ['q', '?', '/', 'f', 's', 'b', 'w', 'c', 'j', 'k', 'g', 'G', 'n', 'p', 'd', 'u', 'x']) {
      expect(documented.split(/\s+/)).toContain(letter);
      expect(press(at('hits'), letter)).not.toBeNull();
    }
  });
});

describe('the footer', () => {
  it('fits the key hints for every focus in 80 columns', () => {
    for (const focus of ['query', 'hits', 'facets', 'filter', 'sort', 'queryBy', 'weights'] as const)
      for (const overlay of [null, 'help', 'command'] as const) expect(Array.from(footerText(at(focus, { overlay }))).length).toBeLessThanOrEqual(80);
  });
});
