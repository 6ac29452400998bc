/**
 * Highlights and snippets for the hits on a page.
 *
 * The stored field value is tokenized again with offsets; tokens whose normalised form
 * is one of the field's matched terms are wrapped in the start/end tags. Short values
 * (fewer tokens than `snippet_threshold`) are returned whole; longer ones as a window of
 * `highlight_affix_num_tokens` tokens around the densest run of matches.
 */
import { current } from './budget.js';
import { getPath } from '../document/document.js';
import { ownValue, setOwn } from '../json.js';
import { TokenMarks, type TermLookup, type Tokenizer } from '../tokenizer/tokenizer.js';

export interface HighlightOptions {
  startTag: string;
  endTag: string;
  affix: number;
  snippetThreshold: number;
}

export interface HighlightField {
  name: string;
  tokenizer: Tokenizer;
  /** The field's matched terms (every candidate of every query token), see termLookup. */
  terms: TermLookup;
  full: boolean;
  isArray: boolean;
}

interface One {
  matched_tokens: string[];
  snippet: string;
  value?: string;
}

function mark(text: string, m: TokenMarks, from: number, to: number, o: HighlightOptions): string {
  if (m.count === 0) return text;
  const startChar = from === 0 ? 0 : m.starts[from]!;
  const endChar = to === m.count - 1 ? text.length : m.ends[to]!;
  let out = '';
  let last = startChar;
  for (let i = from; i <= to; i++) {
    if (m.hit[i] === 0) continue;
    const s = m.starts[i]!;
    const e = m.ends[i]!;
    out += text.slice(last, s) + o.startTag + text.slice(s, e) + o.endTag;
    last = e;
  }
  return out + text.slice(last, endChar);
}

/** Token offsets and term marks of the value being highlighted (one value at a time). */
const marks = new TokenMarks();

function highlightText(text: string, f: HighlightField, o: HighlightOptions): One | undefined {
  const m = marks;
  f.tokenizer.markTerms(text, f.terms, m);
  const n = m.count;
  const hits = m.hit;
  const matched: string[] = [];
  for (let i = 0; i < n; i++) if (hits[i] === 1) matched.push(text.slice(m.starts[i]!, m.ends[i]!));
  if (matched.length === 0) return undefined;
  let snippet: string;
  if (n < o.snippetThreshold) snippet = mark(text, m, 0, n - 1, o);
  else {
    // the window of 2*affix+1 tokens holding the most matches (count: matches in the window)
    const win = 2 * o.affix + 1;
    let bestStart = 0;
    let bestCount = -1;
    let count = 0;
    for (let i = 0; i < n; i++) {
      count += hits[i]!;
      if (i >= win) count -= hits[i - win]!;
      if ((i >= win - 1 || i === n - 1) && count > 0 && count > bestCount) {
        bestCount = count;
        bestStart = Math.max(0, i - win + 1);
      }
    }
    // start `affix` tokens before the window's first match
    const firstHit = hits.indexOf(1, bestStart);
    let from = Math.max(0, firstHit - o.affix);
    const to = Math.min(n - 1, from + win - 1);
    if (to - from + 1 < win) from = Math.max(0, to - win + 1);
    snippet = mark(text, m, from, to, o);
    if (from > 0) snippet = snippet.trimStart();
    if (to < n - 1) snippet = snippet.trimEnd();
  }
  const one: One = { matched_tokens: matched, snippet };
  if (f.full) one.value = mark(text, m, 0, n - 1, o);
  return one;
}

/** Sets `v` at a dotted path of own keys, making the objects on the way (a key may be `__proto__`). */
function setPath(obj: Record<string, unknown>, path: string, v: unknown) {
  const parts = path.split('.');
  let cur = obj;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i]!;
    let next = ownValue(cur, p);
    if (typeof next !== 'object' || next === null) setOwn(cur, p, (next = {}));
    cur = next as Record<string, unknown>;
  }
  setOwn(cur, parts[parts.length - 1]!, v);
}

/**
 * `highlight` (v2) and `highlights` (v1, a list). `highlight` mirrors the document: each
 * highlighted field has `{matched_tokens, snippet, value?}`, and nothing else is beside
 * them, as the reference engine answers since its 0.24 highlight format: the InstantSearch
 * adapter reads a `highlight` holding top-level `full` or `snippet` keys as the older
 * format and takes field values from `highlights` instead, where a field without
 * `highlight_full_fields` has no value (an empty hit on the page).
 */
export function highlightDocument(doc: Record<string, unknown>, fields: HighlightField[], o: HighlightOptions): { highlight: Record<string, unknown>; highlights: Record<string, unknown>[] } {
  const highlight: Record<string, unknown> = {};
  const highlights: Record<string, unknown>[] = [];
  const budget = current();
  for (const f of fields) {
    const v = getPath(doc, f.name);
    if (v === undefined || v === null) continue;
    budget.spend(typeof v === 'string' ? v.length : Array.isArray(v) ? v.length : 1);
    if (Array.isArray(v)) {
      const per = v.map((x) => (typeof x === 'string' ? highlightText(x, f, o) : undefined));
      if (!per.some(Boolean)) continue;
      const plainOf = (i: number) => (typeof v[i] === 'string' ? (v[i] as string) : String(v[i]));
      setPath(
        highlight,
        f.name,
        per.map((h, i) => (h ? { matched_tokens: h.matched_tokens, snippet: h.snippet, ...(h.value !== undefined ? { value: h.value } : {}) } : { matched_tokens: [], snippet: plainOf(i) })),
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
      setPath(highlight, f.name, { matched_tokens: h.matched_tokens, snippet: h.snippet, ...(h.value !== undefined ? { value: h.value } : {}) });
      highlights.push({ field: f.name, matched_tokens: h.matched_tokens, snippet: h.snippet, ...(h.value !== undefined ? { value: h.value } : {}) });
    }
  }
  return { highlight, highlights };
}
