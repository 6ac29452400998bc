/**
 * commands/explore/text-edit.ts: a one-line text value with a cursor, and the edits the
 * keyboard can make to it (readline-style). Pure: the reducer applies these.
 */

export interface TextValue {
  value: string;
  /** 0..value.length, in UTF-16 code units, always on a code point boundary. */
  cursor: number;
}

export type Edit =
  | { kind: 'insert'; text: string }
  | { kind: 'backspace' }
  | { kind: 'deleteForward' }
  | { kind: 'left' }
  | { kind: 'right' }
  | { kind: 'home' }
  | { kind: 'end' }
  | { kind: 'killToStart' }
  | { kind: 'killToEnd' }
  | { kind: 'deleteWord' }
  | { kind: 'set'; value: string };

export function textValue(value = ''): TextValue {
  return { value, cursor: value.length };
}

/** Length of the code point ending at i (1 or 2 code units). */
function before(s: string, i: number): number {
  if (i <= 0) return 0;
  const c = s.charCodeAt(i - 1);
  return i >= 2 && c >= 0xdc00 && c <= 0xdfff ? 2 : 1;
}

function after(s: string, i: number): number {
  if (i >= s.length) return 0;
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
}

/** Printable text only: pasted newlines and tabs become spaces, other controls go. */
export function printable(text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '');
}

export function applyEdit(t: TextValue, e: Edit): TextValue {
  const { value: v, cursor: c } = t;
  switch (e.kind) {
    case 'insert': {
      const s = printable(e.text);
      return s ? { value: v.slice(0, c) + s + v.slice(c), cursor: c + s.length } : t;
    }
    case 'backspace': {
      const n = before(v, c);
      return n ? { value: v.slice(0, c - n) + v.slice(c), cursor: c - n } : t;
    }
    case 'deleteForward': {
      const n = after(v, c);
      return n ? { value: v.slice(0, c) + v.slice(c + n), cursor: c } : t;
    }
    case 'left':
      return { value: v, cursor: c - before(v, c) };
    case 'right':
      return { value: v, cursor: c + after(v, c) };
    case 'home':
      return { value: v, cursor: 0 };
    case 'end':
      return { value: v, cursor: v.length };
    case 'killToStart':
      return { value: v.slice(c), cursor: 0 };
    case 'killToEnd':
      return { value: v.slice(0, c), cursor: c };
    case 'deleteWord': {
      let i = c;
      while (i > 0 && /\s/.test(v[i - 1]!)) i--;
      while (i > 0 && !/\s/.test(v[i - 1]!)) i--;
      return { value: v.slice(0, i) + v.slice(c), cursor: i };
    }
    case 'set':
      return textValue(printable(e.value));
  }
}
