/**
 * Highlights and snippets for the hits on a page.
 *
 * The stored field value is tokenized again with offsets; tokens whose normalised form
 * is one of the field's matched terms are wrapped in the start/end tags. Short values
 * (fewer tokens than `snippet_threshold`) are returned whole; longer ones as a window of
 * `highlight_affix_num_tokens` tokens around the densest run of matches.
 */
import { getPath } from '../document/document.js';
import type { Tokenizer, Span } from '../tokenizer/tokenizer.js';

export interface HighlightOptions {
  startTag: string;
  endTag: string;
  affix: number;
  snippetThreshold: number;
}

export interface HighlightField {
  name: string;
  tokenizer: Tokenizer;
  terms: Set<string>;
  full: boolean;
  isArray: boolean;
}

interface One {
  matched_tokens: string[];
  snippet: string;
  value?: string;
}

function mark(text: string, spans: Span[], hits: boolean[], from: number, to: number, o: HighlightOptions): string {
  if (spans.length === 0) return text;
  const startChar = from === 0 ? 0 : spans[from]!.start;
  const endChar = to === spans.length - 1 ? text.length : spans[to]!.end;
  let out = '';
  let last = startChar;
  for (let i = from; i <= to; i++) {
    if (!hits[i]) continue;
    const s = spans[i]!;
    out += text.slice(last, s.start) + o.startTag + text.slice(s.start, s.end) + o.endTag;
    last = s.end;
  }
  return out + text.slice(last, endChar);
}

function highlightText(text: string, f: HighlightField, o: HighlightOptions): One | undefined {
  const spans = f.tokenizer.spans(text);
  const hits = spans.map((s) => f.terms.has(s.token));
  const matched: string[] = [];
  spans.forEach((s, i) => {
    if (hits[i]) matched.push(text.slice(s.start, s.end));
  });
  if (matched.length === 0) return undefined;
  let snippet: string;
  if (spans.length < o.snippetThreshold) snippet = mark(text, spans, hits, 0, spans.length - 1, o);
  else {
    // the window of 2*affix+1 tokens holding the most matches
    const win = 2 * o.affix + 1;
    let bestStart = 0;
    let bestCount = -1;
    let count = 0;
    for (let i = 0; i < spans.length; i++) {
      if (hits[i]) count++;
      if (i >= win && hits[i - win]) count--;
      if (i >= win - 1 || i === spans.length - 1) {
        const start = Math.max(0, i - win + 1);
        if (count > bestCount && hits.slice(start, i + 1).some(Boolean)) {
          bestCount = count;
          bestStart = start;
        }
      }
    }
    // start `affix` tokens before the window's first match
    const firstHit = hits.indexOf(true, bestStart);
    let from = Math.max(0, firstHit - o.affix);
    const to = Math.min(spans.length - 1, from + win - 1);
    if (to - from + 1 < win) from = Math.max(0, to - win + 1);
    snippet = mark(text, spans, hits, from, to, o);
    if (from > 0) snippet = snippet.trimStart();
    if (to < spans.length - 1) snippet = snippet.trimEnd();
  }
  const one: One = { matched_tokens: matched, snippet };
  if (f.full) one.value = mark(text, spans, hits, 0, spans.length - 1, o);
  return one;
}

function setPath(obj: Record<string, unknown>, path: string, v: unknown) {
  const parts = path.split('.');
  let cur = obj;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i]!;
    if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = v;
}

/** `highlight` (object mirroring the document) and `highlights` (legacy array). */
export function highlightDocument(doc: Record<string, unknown>, fields: HighlightField[], o: HighlightOptions): { highlight: Record<string, unknown>; highlights: Record<string, unknown>[] } {
  const highlight: Record<string, unknown> = {};
  const highlights: Record<string, unknown>[] = [];
  for (const f of fields) {
    const v = getPath(doc, f.name);
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      const per = v.map((x) => (typeof x === 'string' ? highlightText(x, f, o) : undefined));
      if (!per.some(Boolean)) continue;
      setPath(
        highlight,
        f.name,
        per.map((h, i) => h ?? { matched_tokens: [], snippet: typeof v[i] === 'string' ? (v[i] as string) : String(v[i]) }),
      );
      const indices: number[] = [];
      const snippets: string[] = [];
      const matched: string[][] = [];
      const values: string[] = [];
      per.forEach((h, i) => {
        if (!h) return;
        indices.push(i);
        snippets.push(h.snippet);
        matched.push(h.matched_tokens);
        if (h.value !== undefined) values.push(h.value);
      });
      highlights.push({ field: f.name, indices, matched_tokens: matched, snippets, ...(f.full ? { values } : {}) });
    } else if (typeof v === 'string') {
      const h = highlightText(v, f, o);
      if (!h) continue;
      setPath(highlight, f.name, h);
      highlights.push({ field: f.name, matched_tokens: h.matched_tokens, snippet: h.snippet, ...(h.value !== undefined ? { value: h.value } : {}) });
    }
  }
  return { highlight, highlights };
}
