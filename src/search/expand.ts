/**
 * Term expansion: which dictionary terms stand for a query token, and at what typo cost.
 *
 * Typo matching walks the sorted term table as if it were a trie, carrying one row of
 * the edit-distance table per depth (Levenshtein with adjacent transpositions counted as
 * one edit, the "optimal string alignment" distance). A branch is abandoned as soon as
 * every cell of its row exceeds the allowed typos, so only a thin slice of the
 * dictionary is visited:
 *
 *   query "lnux", 1 typo       l -> li -> lin -> linu -> linux (cost 1)  reported
 *                               \-> lo -> ... row minimum 2 > 1          pruned
 *
 * The children of a node are the runs of equal code units at that depth inside the
 * node's [lo, hi) range of the table, found by binary search. With `prefix`, a term
 * matches when any of its prefixes is within the allowed typos.
 * (Idea after Steve Hanov's "Fast and Easy Levenshtein distance using a Trie".)
 */
import type { StringTable } from '../index/codec.js';

export type Emit = (termIndex: number, cost: number) => void;

/** Emits every term of `table` within `maxCost` edits of `query` (or of a prefix of it, with `prefix`). */
export function enumerateTerms(table: StringTable, query: string, maxCost: number, prefix: boolean, emit: Emit, emitRange?: (lo: number, hi: number, cost: number) => void): void {
  const size = table.size;
  if (size === 0) return;
  if (maxCost === 0) {
    if (prefix) {
      const [lo, hi] = table.prefixRange(query);
      if (emitRange) emitRange(lo, hi, 0);
      else for (let i = lo; i < hi; i++) emit(i, 0);
    } else {
      const i = table.find(query);
      if (i >= 0) emit(i, 0);
    }
    return;
  }
  const m = query.length;
  const q = new Uint16Array(m);
  for (let i = 0; i < m; i++) q[i] = query.charCodeAt(i);
  const maxDepth = prefix ? Infinity : m + maxCost;
  const rows: Int32Array[] = [];
  const row0 = new Int32Array(m + 1);
  for (let j = 0; j <= m; j++) row0[j] = j;
  rows.push(row0);
  const labels: number[] = [];

  const rowAt = (d: number) => {
    let r = rows[d];
    if (!r) {
      r = new Int32Array(m + 1);
      rows[d] = r;
    }
    return r;
  };

  const emitAll = (lo: number, hi: number, cost: number) => {
    if (emitRange) emitRange(lo, hi, cost);
    else for (let i = lo; i < hi; i++) emit(i, cost);
  };

  // best: the smallest row[m] seen on the path (prefix mode).
  const visit = (lo: number, hi: number, depth: number, best: number) => {
    const prev = rows[depth]!;
    let i = lo;
    if (i < hi && table.length(i) === depth) {
      const c = prefix ? Math.min(best, prev[m]!) : prev[m]!;
      if (c <= maxCost) emit(i, c);
      i++;
    }
    if (depth >= maxDepth) return;
    while (i < hi) {
      const ch = table.charAt(i, depth);
      // end of the run of terms with `ch` at this depth
      let a = i + 1;
      let b = hi;
      while (a < b) {
        const mid = (a + b) >>> 1;
        if (table.charAt(mid, depth) <= ch) a = mid + 1;
        else b = mid;
      }
      const j = a;
      const cur = rowAt(depth + 1);
      cur[0] = depth + 1;
      let rowMin = cur[0]!;
      const pch = depth > 0 ? labels[depth - 1]! : -1;
      const pprev = depth > 0 ? rows[depth - 1]! : null;
      for (let k = 1; k <= m; k++) {
        const sub = prev[k - 1]! + (q[k - 1] === ch ? 0 : 1);
        let v = Math.min(prev[k]! + 1, cur[k - 1]! + 1, sub);
        if (pprev && k > 1 && q[k - 1] === pch && q[k - 2] === ch) v = Math.min(v, pprev[k - 2]! + 1);
        cur[k] = v;
        if (v < rowMin) rowMin = v;
      }
      labels[depth] = ch;
      const nb = prefix ? Math.min(best, cur[m]!) : best;
      if (rowMin <= maxCost) {
        if (prefix && nb === 0) emitAll(i, j, 0);
        else visit(i, j, depth + 1, nb);
      } else if (prefix && nb <= maxCost) {
        emitAll(i, j, nb);
      }
      i = j;
    }
  };
  visit(0, size, 0, prefix ? m : Infinity);
}

/** Typos allowed for a token of this length under the min_len rules. */
export function allowedTypos(token: string, numTypos: number, minLen1: number, minLen2: number): number {
  const len = [...token].length;
  if (len >= minLen2) return Math.min(2, numTypos);
  if (len >= minLen1) return Math.min(1, numTypos);
  return 0;
}

/** Plain OSA distance (reference implementation for tests and highlighting). */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  const d: number[][] = Array.from({ length: m + 1 }, (_, i) => {
    const r = new Array<number>(n + 1).fill(0);
    r[0] = i;
    return r;
  });
  for (let j = 0; j <= n; j++) d[0]![j] = j;
  for (let i = 1; i <= m; i++) {
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[m]![n]!;
}
