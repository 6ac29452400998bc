/**
 * The `q` mini-language: words, "quoted phrases" (exact, adjacent, no typos), and
 * -excluded words or -"excluded phrases". `*` (or nothing) matches every document.
 */

export interface QueryPart {
  text: string;
  phrase: boolean;
  exclude: boolean;
}

export interface ParsedQ {
  wildcard: boolean;
  parts: QueryPart[];
}

export function parseQ(q: string): ParsedQ {
  const s = q.trim();
  if (s === '' || s === '*') return { wildcard: true, parts: [] };
  const parts: QueryPart[] = [];
  let i = 0;
  while (i < s.length) {
    while (i < s.length && /\s/.test(s[i]!)) i++;
    if (i >= s.length) break;
    let exclude = false;
    if (s[i] === '-' && i + 1 < s.length && !/\s/.test(s[i + 1]!)) {
      exclude = true;
      i++;
    }
    if (s[i] === '"') {
      const end = s.indexOf('"', i + 1);
      const stop = end < 0 ? s.length : end;
      const text = s.slice(i + 1, stop);
      if (text.trim()) parts.push({ text, phrase: true, exclude });
      i = stop + 1;
      continue;
    }
    const start = i;
    while (i < s.length && !/\s/.test(s[i]!)) i++;
    parts.push({ text: s.slice(start, i), phrase: false, exclude });
  }
  return { wildcard: parts.length === 0, parts };
}
