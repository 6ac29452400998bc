/**
 * `sort_by` parser: up to three comma-separated clauses `name:asc|desc`, where name is a
 * sortable field, `_text_match`, `_seq_id`, `_vector_distance`, `_group_found`,
 * `_vector_query(<field>:([...])):asc` or a joined field `$coll(field:asc)`.
 */
import { SEARCH_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import type { Field, Schema } from '../schema/schema.js';
import { parseGeoSort, type GeoSort } from '../geo/sort.js';

export type SortClause =
  | { kind: 'field'; field: Field; dir: 1 | -1 }
  | { kind: 'text_match'; dir: 1 | -1 }
  | { kind: 'seq'; dir: 1 | -1 }
  /** The rarity tie-break of a keyword score (search/score.ts); added by the search, never parsed. */
  | { kind: 'rarity'; dir: 1 | -1 }
  | { kind: 'vector_distance'; dir: 1 | -1 }
  | { kind: 'vector_query'; expr: string; dir: 1 | -1 }
  | { kind: 'group_found'; dir: 1 | -1 }
  | { kind: 'join'; collection: string; field: string; dir: 1 | -1 }
  | GeoSort;

function bad(msg: string): never {
  throw new FathomError('BAD_SORT', `sort_by: ${msg}`);
}

/** Splits on commas outside parentheses and brackets. */
export function splitTopLevel(s: string, sep = ','): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(' || ch === '[') depth++;
    else if (ch === ')' || ch === ']') depth--;
    if (ch === sep && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function direction(d: string, clause: string): 1 | -1 {
  const x = d.trim().toLowerCase();
  if (x === 'asc') return 1;
  if (x === 'desc') return -1;
  bad(`\`${clause}\` must end in \`:asc\` or \`:desc\``);
}

export function parseSort(src: string, schema: Schema): SortClause[] {
  const clauses = splitTopLevel(src).filter(Boolean);
  if (clauses.length > SEARCH_DEFAULTS.max_sort_clauses) bad(`at most ${SEARCH_DEFAULTS.max_sort_clauses} clauses are allowed, got ${clauses.length}`);
  return clauses.map((c) => {
    if (c.startsWith('$')) {
      const m = /^\$([^(\s]+)\((.*)\)$/.exec(c);
      if (!m) bad(`\`${c}\` must look like \`$collection(field:asc)\``);
      const inner = m[2]!;
      const colon = inner.lastIndexOf(':');
      if (colon < 0) bad(`\`${c}\` must look like \`$collection(field:asc)\``);
      return { kind: 'join', collection: m[1]!, field: inner.slice(0, colon).trim(), dir: direction(inner.slice(colon + 1), c) };
    }
    if (c.startsWith('_vector_query(')) {
      const close = c.lastIndexOf(')');
      const colon = c.indexOf(':', close);
      if (close < 0 || colon < 0) bad(`\`${c}\` must look like \`_vector_query(field:([...])):asc\``);
      return { kind: 'vector_query', expr: c.slice('_vector_query('.length, close), dir: direction(c.slice(colon + 1), c) };
    }
    const colon = c.lastIndexOf(':');
    if (colon < 0) bad(`\`${c}\` must end in \`:asc\` or \`:desc\``);
    let name = c.slice(0, colon).trim();
    const dir = direction(c.slice(colon + 1), c);
    const paren = name.indexOf('(');
    if (paren > 0) {
      const geo = schema.field(name.slice(0, paren).trim());
      if (geo && geo.kind === 'geo') {
        if (!name.endsWith(')')) bad(`\`${c}\`: expected \`)\` to close \`${geo.name}(\``);
        return parseGeoSort(geo, name.slice(paren + 1, -1), dir);
      }
      name = name.slice(0, paren); // options such as _text_match(buckets: 10) are accepted and ignored
    }
    if (name === '_text_match') return { kind: 'text_match', dir };
    if (name === '_seq_id') return { kind: 'seq', dir };
    if (name === '_vector_distance') return { kind: 'vector_distance', dir };
    if (name === '_group_found') return { kind: 'group_found', dir };
    const field = schema.field(name);
    if (!field) bad(`no field named \`${name}\` in collection \`${schema.name}\``);
    if (field.kind === 'geo') bad(`\`${name}\` is a geopoint field: sort by distance from a point with \`${name}(lat, lng):asc\``);
    if (field.isArray || field.type === 'string*') bad(`\`${name}\` holds several values per document and cannot be sorted on`);
    if (!field.sort || !field.index) {
      bad(`field \`${name}\` is not sortable${field.kind === 'text' ? ' (declare it with `sort: true`)' : ''}`);
    }
    if (!['text', 'number', 'bool'].includes(field.kind)) bad(`field \`${name}\` of type ${field.type} cannot be sorted on`);
    return { kind: 'field', field, dir };
  });
}
