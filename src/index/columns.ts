/**
 * A document's value in a field's column, as sorting, grouping and joined sorts read it:
 * a text field's first stored value, a number or bool column's first value.
 */
import type { LiveSegment } from './manifest.js';
import type { Field } from '../schema/schema.js';

/** The sort key of a missing string value (it sorts last in both directions, as NaN does). */
export const MISSING = '\u0000missing';

export function fieldSortValue(seg: LiveSegment, field: Field, ord: number): number | string {
  if (field.kind === 'text') {
    const ti = seg.reader.text(field.id);
    if (!ti || !ti.valueIds) return MISSING;
    const a = ti.valueIds.offsets[ord]!;
    if (a >= ti.valueIds.offsets[ord + 1]!) return MISSING;
    return ti.valueStrings()[ti.valueIds.values[a]!]!;
  }
  const col = seg.reader.numeric(field.id);
  if (!col) return NaN;
  return col.first(ord);
}

/** A document's group_by value: a string, the strings of an array, a number, a bool, or null. */
export function groupValue(seg: LiveSegment, f: Field, ord: number): unknown {
  if (f.kind === 'text') {
    const ti = seg.reader.text(f.id);
    if (!ti || !ti.valueIds) return null;
    const strs = ti.valueStrings();
    const a = ti.valueIds.offsets[ord]!;
    const b = ti.valueIds.offsets[ord + 1]!;
    if (f.isArray || f.type === 'string*') {
      const out: string[] = [];
      for (let k = a; k < b; k++) out.push(strs[ti.valueIds.values[k]!]!);
      return out;
    }
    return a < b ? strs[ti.valueIds.values[a]!]! : null;
  }
  const v = fieldSortValue(seg, f, ord);
  if (f.kind === 'bool') return v === 1;
  return typeof v === 'number' && Number.isNaN(v) ? null : v;
}
