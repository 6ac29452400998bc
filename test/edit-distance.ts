/** The optimal string alignment distance in plain code: the oracle the typo walk is checked against. */

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

/** The distance from q to the closest prefix of w (how a prefix walk matches w). */
export function prefixDistance(q: string, w: string): number {
  let best = Infinity;
  for (let k = 0; k <= w.length; k++) {
    // (a prefix longer than q by more than the best found so far cannot do better)
    if (k - q.length >= best) break;
    best = Math.min(best, editDistance(q, w.slice(0, k)));
  }
  return best;
}
