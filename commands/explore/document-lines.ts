/**
 * commands/explore/document-lines.ts: the selected hit's document as pretty-printed JSON
 * lines no wider than the detail pane (long values wrap, indented), for scrolling.
 * Arrays of scalars stay on one line (tags, and embeddings that would otherwise take a
 * line per number); int64 values beyond 2^53 (bigint) print exactly.
 */

export interface DocLine {
  text: string;
  /** Length of the leading `"key": ` part, coloured as a key (0 on continuation lines). */
  keyLength: number;
}

function scalar(v: unknown): string {
  if (typeof v === 'bigint') return v.toString();
  if (v === undefined) return 'null';
  return JSON.stringify(v) ?? 'null';
}

/** JSON, two-space indented, with arrays of scalars kept on one line. */
export function prettyJson(v: unknown, indent = ''): string {
  const inner = indent + '  ';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    if (v.every((x) => x === null || typeof x !== 'object')) return '[' + v.map(scalar).join(', ') + ']';
    return '[\n' + v.map((x) => inner + prettyJson(x, inner)).join(',\n') + '\n' + indent + ']';
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0) return '{}';
    return '{\n' + entries.map(([k, x]) => inner + JSON.stringify(k) + ': ' + prettyJson(x, inner)).join(',\n') + '\n' + indent + '}';
  }
  return scalar(v);
}

const KEY = /^(\s*"(?:[^"\\]|\\.)*":\s)/;

export function documentLines(doc: Record<string, unknown>, width: number): DocLine[] {
  const w = Math.max(8, width);
  const out: DocLine[] = [];
  for (const line of prettyJson(doc).split('\n')) {
    const chars = Array.from(line);
    const keyLength = KEY.exec(line)?.[1]!.length ?? 0;
    if (chars.length <= w) {
      out.push({ text: line, keyLength });
      continue;
    }
    const indent = ' '.repeat(Math.min(Math.max(0, line.length - line.trimStart().length) + 2, Math.floor(w / 2)));
    let rest = chars;
    let first = true;
    while (rest.length > 0) {
      const room = first ? w : w - indent.length;
      let take = Math.min(room, rest.length);
      if (take < rest.length) {
        // Break after the last space in the second half of the line, if there is one.
        const space = rest.lastIndexOf(' ', take - 1);
        if (space >= Math.floor(room / 2)) take = space + 1;
      }
      out.push({ text: (first ? '' : indent) + rest.slice(0, take).join(''), keyLength: first ? Math.min(keyLength, w) : 0 });
      rest = rest.slice(take);
      first = false;
    }
  }
  return out;
}
