/** Field lists in parameters (`query_by`, `facet_by`, `include_fields`, ...). */

/** Splits a comma-separated field list, ignoring blanks. Joined-field groups `$c(a, b)` stay whole. */
export function parseFieldList(v: string | string[] | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return v.map((s) => s.trim()).filter(Boolean);
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of v) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}
