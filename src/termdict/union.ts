/**
 * The union of several fields' dictionaries, so that one typo walk serves all the fields
 * a query word is looked up in with the same budget (search/candidates.ts).
 */
import { StringTableBuilder, compareEntries, type StringTable } from './table.js';

/** unionTables: the entries of several tables, and where each table's entries sit among them. */
export interface UnionTable {
  table: StringTable;
  /**
   * Per source table t, pos[t][u]: how many of t's entries sort before union entry u
   * (size + 1 numbers). Union entry u is t's entry pos[t][u] when pos[t][u + 1] > pos[t][u];
   * the union's entries [lo, hi) hold t's entries [pos[t][lo], pos[t][hi]).
   */
  pos: Int32Array[];
}

/**
 * The sorted union of a few sorted tables (a k-way merge), so that one typo walk serves
 * the dictionaries of several fields (search/candidates.ts): the Debian `name` and
 * `summary` dictionaries, 36k and 21k terms, make a union of 46k.
 */
export function unionTables(tables: readonly StringTable[]): UnionTable {
  const k = tables.length;
  const at = new Int32Array(k);
  const out = new StringTableBuilder();
  const pos: number[][] = tables.map(() => []);
  for (;;) {
    // the smallest entry among the tables' next ones
    let min = -1;
    for (let t = 0; t < k; t++) {
      if (at[t]! >= tables[t]!.size) continue;
      if (min < 0 || compareEntries(tables[t]!, at[t]!, tables[min]!, at[min]!) < 0) min = t;
    }
    for (let t = 0; t < k; t++) pos[t]!.push(at[t]!);
    if (min < 0) break;
    out.appendFrom(tables[min]!, at[min]!);
    const src = tables[min]!;
    const i = at[min]!;
    for (let t = 0; t < k; t++) if (t === min || (at[t]! < tables[t]!.size && compareEntries(tables[t]!, at[t]!, src, i) === 0)) at[t]!++;
  }
  return { table: out.build(), pos: pos.map((p) => Int32Array.from(p)) };
}
