/**
 * Evaluates a parsed `filter_by` against one segment, giving a byte per document
 * (1 = matches). Conditions read the segment's columns (numbers, bools) or postings
 * (strings); `&&` / `||` combine the arrays.
 *
 * String semantics: `field:value` matches documents whose field (or one array element)
 * contains the value's tokens as a phrase; `field:=value` requires the whole field or
 * element to equal the value, token for token; `!=` and `![...]` negate the exact form.
 */
import { current } from '../search/budget.js';
import { FathomError } from '../errors.js';
import type { Field, Schema } from '../schema/schema.js';
import type { Store } from '../storage/store.js';
import { fieldTokenizer } from '../collection/catalog.js';
import { ELEMENT_SHIFT, type PostingCursor, type TextIndex } from '../index/segment.js';
import type { LiveSegment } from '../index/manifest.js';
import type { FilterNode, FilterOp } from './filter.js';
import { parseGeoShapes } from '../geo/filter.js';
import type { GeoShape } from '../geo/geo.js';

type Compiled =
  | { kind: 'and' | 'or'; children: Compiled[] }
  | { kind: 'none' }
  | { kind: 'all' }
  | { kind: 'ids'; seqs: Set<number>; negated: boolean }
  | { kind: 'text'; field: Field; op: FilterOp; phrases: string[][]; negated: boolean }
  | { kind: 'num'; field: Field; op: FilterOp; values: number[]; ranges: Array<[number, number]>; negated: boolean }
  | { kind: 'geo'; field: Field; shapes: GeoShape[] }
  | { kind: 'geoExists'; field: Field }
  | { kind: 'join'; evaluate: (seg: LiveSegment) => Uint8Array };

export interface CompiledFilter {
  root: Compiled;
}

/** Resolves a join condition; provided by the join module. */
export type JoinResolver = (node: Extract<FilterNode, { kind: 'join' }>) => (seg: LiveSegment) => Uint8Array;

function bad(node: { pos: number }, msg: string): never {
  throw new FathomError('BAD_FILTER', `filter_by: ${msg} (at position ${node.pos})`);
}

function parseNumber(field: Field, raw: string, node: { pos: number }): number {
  const s = raw.trim();
  if (field.kind === 'bool') {
    if (s === 'true') return 1;
    if (s === 'false') return 0;
    bad(node, `\`${field.name}\` is a bool field; \`${s}\` is not true or false`);
  }
  const v = Number(s);
  if (s === '' || !Number.isFinite(v)) bad(node, `\`${field.name}\` is a numeric field; \`${s}\` is not a number`);
  return v;
}

export function compileFilter(node: FilterNode, schema: Schema, store: Store, joins?: JoinResolver): CompiledFilter {
  const compile = (n: FilterNode): Compiled => {
    if (n.kind === 'and' || n.kind === 'or') return { kind: n.kind, children: n.children.map(compile) };
    if (n.kind === 'join') {
      if (!joins) bad(n, `join filters (\`$${n.collection}(...)\`) are not available here`);
      return { kind: 'join', evaluate: joins(n) };
    }
    if (n.field === 'id') {
      if (n.op === 'exists') return { kind: 'all' };
      if (!['match', 'eq'].includes(n.op)) bad(n, '`id` supports `:`, `:=`, `:!=` and lists only');
      const seqs = new Set<number>();
      for (const v of n.values) {
        if (v.value === undefined) bad(n, '`id` does not take ranges');
        const seq = store.ids.get([schema.id, v.value.trim()]);
        if (seq !== undefined) seqs.add(seq);
      }
      return { kind: 'ids', seqs, negated: n.negated };
    }
    const field = schema.field(n.field) ?? schema.resolve(n.field);
    if (!field) bad(n, `no field named \`${n.field}\` in collection \`${schema.name}\``);
    if (field.pattern || field.type === 'auto') {
      // a pattern that no document has used under this name yet
      return n.negated ? { kind: 'all' } : { kind: 'none' };
    }
    if (!field.index) bad(n, `field \`${field.name}\` has \`index: false\`, so it cannot be filtered`);
    if (field.kind === 'geo') {
      if (n.op === 'exists') return { kind: 'geoExists', field };
      if (n.op !== 'match' || n.negated) bad(n, `\`${field.name}\` is a geopoint field: only \`${field.name}:(...)\` filters it (no \`=\`, \`!\` or comparisons)`);
      return { kind: 'geo', field, shapes: parseGeoShapes(field.name, n.values, n.pos) };
    }
    if (n.values.some((v) => v.paren)) bad(n, 'unexpected `(` in a value; wrap values that contain parentheses in backquotes');
    if (field.kind === 'text') {
      if (['gt', 'gte', 'lt', 'lte'].includes(n.op)) bad(n, `\`${field.name}\` is a string field; comparisons like > and < need a numeric field`);
      if (n.values.some((v) => v.value === undefined)) bad(n, `\`${field.name}\` is a string field; ranges need a numeric field`);
      const tok = fieldTokenizer(schema, field);
      const phrases = n.values.map((v) => tok.tokens(v.value!));
      return { kind: 'text', field, op: n.op, phrases, negated: n.negated };
    }
    if (field.kind === 'number' || field.kind === 'bool') {
      const values: number[] = [];
      const ranges: Array<[number, number]> = [];
      for (const v of n.values) {
        if (v.value !== undefined) values.push(parseNumber(field, v.value, n));
        else ranges.push([parseNumber(field, v.lo!, n), parseNumber(field, v.hi!, n)]);
      }
      if (n.op !== 'exists' && values.length + ranges.length === 0) bad(n, 'expected a value');
      if (['gt', 'gte', 'lt', 'lte'].includes(n.op) && (n.list || ranges.length > 0)) bad(n, 'comparisons take a single value');
      return { kind: 'num', field, op: n.op, values, ranges, negated: n.negated };
    }
    bad(n, `field \`${field.name}\` of type ${field.type} cannot be filtered`);
  };
  return { root: compile(node) };
}

/** Evaluates a compiled filter on a segment. Deleted documents are not cleared here. */
export function evalFilter(f: CompiledFilter, seg: LiveSegment): Uint8Array {
  return evalNode(f.root, seg);
}

function evalNode(c: Compiled, seg: LiveSegment): Uint8Array {
  const n = seg.reader.n;
  // (counted, never cut here: a part of a filter cut short could let through what it should stop)
  current().spend(n);
  switch (c.kind) {
    case 'all':
      return new Uint8Array(n).fill(1);
    case 'none':
      return new Uint8Array(n);
    case 'and': {
      let acc: Uint8Array | undefined;
      for (const ch of c.children) {
        const r = evalNode(ch, seg);
        if (!acc) acc = r;
        else for (let i = 0; i < n; i++) acc[i]! &= r[i]!;
      }
      return acc ?? new Uint8Array(n).fill(1);
    }
    case 'or': {
      const acc = new Uint8Array(n);
      for (const ch of c.children) {
        const r = evalNode(ch, seg);
        for (let i = 0; i < n; i++) acc[i]! |= r[i]!;
      }
      return acc;
    }
    case 'join':
      return c.evaluate(seg);
    case 'ids': {
      const out = new Uint8Array(n);
      for (const seq of c.seqs) {
        const o = seg.reader.ordinalOf(seq);
        if (o >= 0) out[o] = 1;
      }
      return c.negated ? invert(out) : out;
    }
    case 'geo': {
      const out = new Uint8Array(n);
      seg.reader.geo(c.field.id)?.markShapes(c.shapes, out);
      return out;
    }
    case 'geoExists': {
      const out = new Uint8Array(n);
      const col = seg.reader.geo(c.field.id);
      if (col) for (let d = 0; d < n; d++) if (col.has(d)) out[d] = 1;
      return out;
    }
    case 'num':
      return evalNum(c, seg);
    case 'text':
      return evalText(c, seg);
  }
}

function invert(a: Uint8Array): Uint8Array {
  for (let i = 0; i < a.length; i++) a[i] = a[i] ? 0 : 1;
  return a;
}

function evalNum(c: Extract<Compiled, { kind: 'num' }>, seg: LiveSegment): Uint8Array {
  const n = seg.reader.n;
  const out = new Uint8Array(n);
  const col = seg.reader.numeric(c.field.id);
  if (!col) return c.negated ? out.fill(1) : out;
  const { values: vals, offsets } = col;
  const test = numTest(c);
  for (let d = 0; d < n; d++) {
    const a = offsets[d]!;
    const b = offsets[d + 1]!;
    if (c.op === 'exists') {
      if (b > a) out[d] = 1;
      continue;
    }
    for (let k = a; k < b; k++) {
      if (test(vals[k]!)) {
        out[d] = 1;
        break;
      }
    }
  }
  return c.negated ? invert(out) : out;
}

function numTest(c: Extract<Compiled, { kind: 'num' }>): (x: number) => boolean {
  const v = c.values[0]!;
  switch (c.op) {
    case 'gt':
      return (x) => x > v;
    case 'gte':
      return (x) => x >= v;
    case 'lt':
      return (x) => x < v;
    case 'lte':
      return (x) => x <= v;
    default: {
      const set = new Set(c.values);
      if (c.ranges.length === 0) return (x) => set.has(x);
      // ranges merged and sorted, so a value is tested against one, found by bisection
      const { lo, hi } = mergedRanges(c.ranges);
      return (x) => {
        if (set.has(x)) return true;
        let a = 0;
        let b = lo.length;
        while (a < b) {
          const m = (a + b) >>> 1;
          if (lo[m]! <= x) a = m + 1;
          else b = m;
        }
        return a > 0 && x <= hi[a - 1]!;
      };
    }
  }
}

/** Ranges [lo, hi] as disjoint runs sorted by lo. */
function mergedRanges(ranges: readonly (readonly [number, number])[]): { lo: Float64Array; hi: Float64Array } {
  const sorted = ranges.filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const lo: number[] = [];
  const hi: number[] = [];
  for (const [a, b] of sorted) {
    if (lo.length > 0 && a <= hi[hi.length - 1]!) hi[hi.length - 1] = Math.max(hi[hi.length - 1]!, b);
    else {
      lo.push(a);
      hi.push(b);
    }
  }
  return { lo: Float64Array.from(lo), hi: Float64Array.from(hi) };
}

function evalText(c: Extract<Compiled, { kind: 'text' }>, seg: LiveSegment): Uint8Array {
  const n = seg.reader.n;
  const out = new Uint8Array(n);
  const ti = seg.reader.text(c.field.id);
  if (c.op === 'exists') {
    if (ti) {
      const off = ti.lengths.offsets;
      for (let d = 0; d < n; d++) if (off[d + 1]! > off[d]!) out[d] = 1;
    }
    return out;
  }
  if (ti) {
    const exact = c.op === 'eq';
    for (const phrase of c.phrases) {
      if (phrase.length === 0) continue;
      markPhrase(ti, phrase, exact, out);
    }
  }
  return c.negated ? invert(out) : out;
}

/**
 * Sets out[d] = 1 for documents where `tokens` occur consecutively in one element;
 * with `exact`, the element must consist of exactly these tokens.
 */
export function markPhrase(ti: TextIndex, tokens: string[], exact: boolean, out: Uint8Array): void {
  const cursors: PostingCursor[] = [];
  for (const t of tokens) {
    const idx = ti.terms.find(t);
    if (idx < 0) return;
    cursors.push(ti.cursor(idx));
  }
  const k = cursors.length;
  const pos: number[][] = tokens.map(() => []);
  let target = 0;
  for (;;) {
    // leapfrog intersection
    let agreed = true;
    for (let i = 0; i < k; i++) {
      const d = cursors[i]!.advance(target);
      if (d === Infinity) return;
      if (d > target) {
        target = d;
        agreed = false;
        break;
      }
    }
    if (!agreed) continue;
    const d = target;
    for (let i = 0; i < k; i++) cursors[i]!.positions(pos[i]);
    if (phraseAt(pos, exact ? ti : null, d)) out[d] = 1;
    target = d + 1;
  }
}

/** Whether sorted position lists contain p, p+1, ..., p+k-1 (at an element start and filling it, when `exactIn`). */
export function phraseAt(pos: number[][], exactIn: TextIndex | null, doc: number): boolean {
  const k = pos.length;
  for (const p of pos[0]!) {
    if (exactIn) {
      if (p % ELEMENT_SHIFT !== 0) continue;
      const el = Math.floor(p / ELEMENT_SHIFT);
      const lo = exactIn.lengths.offsets[doc]!;
      if (lo + el >= exactIn.lengths.offsets[doc + 1]! || exactIn.lengths.values[lo + el] !== k) continue;
    }
    let ok = true;
    for (let i = 1; i < k && ok; i++) ok = pos[i]!.includes(p + i);
    if (ok) return true;
  }
  return false;
}
