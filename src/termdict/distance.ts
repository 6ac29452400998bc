/**
 * termdict/distance.ts: is a dictionary term within k edits of a word? The distance the
 * typo walk (walk.ts) counts: Levenshtein with adjacent transpositions as one edit (optimal
 * string alignment). For the terms a prefix walk offers, which it reports at the distance
 * of their closest prefix: whether the whole term is as close decides whether it is a
 * whole word or a completion (search/candidates.ts).
 */

let rows = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/**
 * Is the term stored as code units chars[start, start + len) within `k` edits of `word`?
 * A band of 2k + 1 cells per row: O(len x k), no allocation.
 */
export function termWithinEdits(chars: Uint16Array, start: number, len: number, word: string, k: number): boolean {
  const m = len;
  const n = word.length;
  if (Math.abs(m - n) > k) return false;
  if (rows[0]!.length < n + 2) rows = [0, 1, 2].map(() => new Int32Array(2 * (n + 2)));
  let prev2 = rows[0]!;
  let prev = rows[1]!;
  let cur = rows[2]!;
  const BIG = k + 1;
  for (let j = 0; j <= n; j++) prev[j] = j <= k ? j : BIG;
  if (n + 1 < prev.length) prev[n + 1] = BIG;
  for (let i = 1; i <= m; i++) {
    // only cells within k of the diagonal can hold a distance <= k; those beside the band count as k + 1
    const lo = Math.max(1, i - k);
    const hi = Math.min(n, i + k);
    cur[0] = i <= k ? i : BIG;
    cur[lo - 1] = lo > 1 ? BIG : cur[0]!;
    let best = lo > 1 ? BIG : cur[0]!;
    const ca = chars[start + i - 1]!;
    const cp = i > 1 ? chars[start + i - 2]! : -1;
    for (let j = lo; j <= hi; j++) {
      const cb = word.charCodeAt(j - 1);
      let v = prev[j - 1]! + (ca === cb ? 0 : 1);
      const del = prev[j]! + 1;
      if (del < v) v = del;
      const ins = cur[j - 1]! + 1;
      if (ins < v) v = ins;
      if (j > 1 && ca === word.charCodeAt(j - 2) && cp === cb) {
        const tr = prev2[j - 2]! + 1;
        if (tr < v) v = tr;
      }
      if (v > BIG) v = BIG;
      cur[j] = v;
      if (v < best) best = v;
    }
    cur[hi + 1] = BIG;
    if (best > k) return false;
    const t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[n]! <= k;
}

/** termWithinEdits for two strings. */
export function withinEdits(a: string, b: string, k: number): boolean {
  const chars = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) chars[i] = a.charCodeAt(i);
  return termWithinEdits(chars, 0, a.length, b, k);
}
