/**
 * commands/explore/facets.ts: the facet panel's model. Selected values become `filter_by`
 * clauses: values of one field are OR-ed (`author:=[`A`,`B`]`), fields are AND-ed with
 * each other and with the free `filter_by`. Counts are disjunctive: a field with a
 * selection shows the counts it would have without its own clause (see params.ts), so
 * its other values stay visible and can be added.
 */
import { setOwn } from '../../src/json.js';
import type { FacetResult } from './client.js';

/** Facet field → selected values, in the order they were chosen (own keys only: a field may be named `constructor`). */
export type Selections = Record<string, string[]>;

/** The values selected for `field`, if any. */
export function selected(selections: Selections, field: string): string[] | undefined {
  return Object.hasOwn(selections, field) ? selections[field] : undefined;
}

export interface FacetRow {
  field: string;
  value: string;
  count: number;
  selected: boolean;
}

/** The panel's rows: each field's values as counted, then selected values the counts left out. */
export function facetRows(facetFields: string[], counts: FacetResult[], selections: Selections): FacetRow[] {
  const rows: FacetRow[] = [];
  for (const field of facetFields) {
    const chosen = new Set(selected(selections, field) ?? []);
    const result = counts.find((f) => f.field_name === field);
    const seen = new Set<string>();
    for (const c of result?.counts ?? []) {
      const value = String(c.value);
      seen.add(value);
      rows.push({ field, value, count: c.count, selected: chosen.has(value) });
    }
    for (const value of selected(selections, field) ?? []) if (!seen.has(value)) rows.push({ field, value, count: 0, selected: true });
  }
  return rows;
}

export function toggleSelection(selections: Selections, field: string, value: string): Selections {
  const current = selected(selections, field) ?? [];
  const next = current.includes(value) ? current.filter((v) => v !== value) : [...current, value];
  const out = { ...selections };
  if (next.length) setOwn(out, field, next);
  else delete out[field];
  return out;
}

const BARE_FIELD = /^[A-Za-z0-9_.-]+$/;
const STRING_TYPES = new Set(['string', 'string[]', 'string*', 'auto']);

function quoteValue(value: string, type: string): string {
  if (!STRING_TYPES.has(type)) return value;
  // Backquotes cannot be escaped in filter_by; such a value can only go bare.
  return value.includes('`') ? value : '`' + value + '`';
}

/** One field's clause: `field:=[v1,v2]` with string values backquoted. */
export function facetClause(field: string, values: string[], type: string): string {
  const name = BARE_FIELD.test(field) ? field : '`' + field + '`';
  return `${name}:=[${values.map((v) => quoteValue(v, type)).join(',')}]`;
}

/** The clauses for every selected field but `except`, in facet panel order. */
export function selectionClauses(facetFields: string[], selections: Selections, fieldTypes: Record<string, string>, except?: string): string[] {
  const fields = [...facetFields, ...Object.keys(selections).filter((f) => !facetFields.includes(f))];
  const typeOf = (f: string) => (Object.hasOwn(fieldTypes, f) ? fieldTypes[f]! : 'string');
  return fields.filter((f) => f !== except && (selected(selections, f)?.length ?? 0) > 0).map((f) => facetClause(f, selections[f]!, typeOf(f)));
}

/** The free filter and the facet clauses as one `filter_by` ('' when both are empty). */
export function combineFilters(free: string, clauses: string[]): string {
  const f = free.trim();
  if (clauses.length === 0) return f;
  return [...(f ? [`(${f})`] : []), ...clauses].join(' && ');
}

/** The main response's facet counts, with each selected field's own disjunctive counts swapped in. */
export function mergeFacetCounts(main: FacetResult[], own: FacetResult[]): FacetResult[] {
  return main.map((f) => own.find((o) => o.field_name === f.field_name) ?? f);
}
