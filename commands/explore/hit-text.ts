/**
 * commands/explore/hit-text.ts: what a hit looks like in the list, as plain data: marked
 * text split into plain and matched segments, the hit's title line and its one-line
 * summary of scores and other matched fields.
 */
import type { SearchHit } from './client.js';
import { MARK_END, MARK_START } from './params.js';

export interface Segment {
  text: string;
  match: boolean;
}

/** Splits text carrying highlight markers into plain and matched runs (markers removed). */
export function segments(marked: string): Segment[] {
  const out: Segment[] = [];
  let match = false;
  let buf = '';
  const flush = () => {
    if (buf) out.push({ text: buf, match });
    buf = '';
  };
  for (const ch of marked) {
    if (ch === MARK_START || ch === MARK_END) {
      flush();
      match = ch === MARK_START;
    } else buf += ch;
  }
  flush();
  return out;
}

/** Text without markers, whitespace collapsed to one line. */
export function plain(marked: string): string {
  return oneLine(marked.split(MARK_START).join('').split(MARK_END).join(''));
}

export function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** The value at a dotted path of own keys (a field may be named `constructor`). */
function getPath(obj: Record<string, unknown>, path: string): unknown {
  if (Object.hasOwn(obj, path)) return obj[path];
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function display(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.map(display).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

interface Snip {
  snippet?: string;
  matched_tokens?: unknown[];
}

/** A field's highlighted snippet (marked) and whether any token matched there. */
export function fieldSnippet(hit: SearchHit, field: string): { text: string; matched: boolean } | undefined {
  const hl = getPath(hit.highlight ?? {}, field) as Snip | Snip[] | undefined;
  if (Array.isArray(hl)) {
    const hits = hl.filter((x) => (x?.matched_tokens?.length ?? 0) > 0 && typeof x.snippet === 'string');
    if (hits.length) return { text: oneLine(hits.map((x) => x.snippet).join(', ')), matched: true };
  } else if (hl && typeof hl.snippet === 'string') {
    return { text: oneLine(hl.snippet), matched: (hl.matched_tokens?.length ?? 0) > 0 };
  }
  const v = getPath(hit.document, field);
  return v === undefined || v === null ? undefined : { text: oneLine(display(v)), matched: false };
}

/** The hit's title: its first query_by field, highlighted, or its id. */
export function hitTitle(hit: SearchHit, queryBy: string[]): string {
  for (const f of queryBy.slice(0, 1)) {
    const s = fieldSnippet(hit, f);
    if (s && s.text) return s.text;
  }
  return display(hit.document.id) || '(no id)';
}

/** `text_match N` or `vector_distance D`, whichever the hit has. */
export function scoreLabel(hit: SearchHit): string {
  const parts: string[] = [];
  if (typeof hit.vector_distance === 'number') parts.push(`vector_distance ${hit.vector_distance.toFixed(4)}`);
  if (hit.text_match !== undefined && hit.text_match !== null) parts.push(`text_match ${String(hit.text_match)}`);
  return parts.join(' · ');
}

/** The second line: id, score, and the first other query_by field where tokens matched. */
export function hitSubtitle(hit: SearchHit, queryBy: string[]): string {
  const parts = [`id ${display(hit.document.id)}`];
  const score = scoreLabel(hit);
  if (score) parts.push(score);
  for (const f of queryBy.slice(1)) {
    const s = fieldSnippet(hit, f);
    if (s?.matched) {
      parts.push(`${f}: ${s.text}`);
      break;
    }
  }
  return parts.join(' · ');
}
