/**
 * The radix sort of term ids by the strings they stand for: a new segment's term order
 * (index/segment.ts) and StringTable.tails (table.ts).
 */

/** Ids below 2^19 fit beside a two-unit prefix (33 bits) in a double's 53 (radixSortIds). */
export const RADIX_ID_SPACE = 2 ** 19;
/** Runs this short are sorted by comparison (radixSortIds). */
const RADIX_SHORT_RUN = 12;

/**
 * Sorts `ids` in place by the strings they stand for, in code unit order, equal strings by
 * id: a most-significant-first radix sort, two code units per pass, each pass one native
 * sort of numbers. Shared by a new segment's term order (segment.ts's sortedTermIds, hot:
 * once per text field of every segment an import builds) and StringTable.tails.
 *
 *   key = (unit(2p) * 65537 + unit(2p+1)) * 2^19 + id      (52 bits: exact in a double)
 *   unit(i) = code unit i + 1, or 0 past the end (so "ab" sorts before "ab\0")
 *
 *   pass 0:  [ab|7] [ab|2] [ac|5] [b_|1] ...    ids sharing their first two units form a run
 *   pass 1:  each run sorted again by units 2 and 3, and so on; short runs by `compare`
 *
 * `fill(keys, start, end, pass)` writes the keys of ids[start..end) for that pass (once per
 * run, so the per-id loop stays in the caller, monomorphic). A run whose strings end within
 * the pass (second unit 0) holds equal strings and keeps id order. With an id at or above
 * RADIX_ID_SPACE everything goes to `compare`, which must break ties by id.
 */
export function radixSortIds(
  ids: Int32Array,
  fill: (keys: Float64Array, start: number, end: number, pass: number) => void,
  compare: (a: number, b: number) => number,
): Int32Array {
  const T = ids.length;
  let top = 0;
  for (let i = 0; i < T; i++) if (ids[i]! > top) top = ids[i]!;
  if (top >= RADIX_ID_SPACE) return ids.sort(compare);
  const keys = new Float64Array(T);
  const runs: number[] = [0, T, 0]; // start, end, pass
  while (runs.length > 0) {
    const pass = runs.pop()!;
    const end = runs.pop()!;
    const start = runs.pop()!;
    if (end - start <= RADIX_SHORT_RUN) {
      // insertion sort
      for (let i = start + 1; i < end; i++) {
        const id = ids[i]!;
        let j = i - 1;
        while (j >= start && compare(ids[j]!, id) > 0) {
          ids[j + 1] = ids[j]!;
          j--;
        }
        ids[j + 1] = id;
      }
      continue;
    }
    fill(keys, start, end, pass);
    keys.subarray(start, end).sort();
    let runStart = start;
    let runPrefix = -1;
    for (let j = start; j <= end; j++) {
      let prefix = -2;
      if (j < end) {
        const k = keys[j]!;
        prefix = Math.floor(k / RADIX_ID_SPACE);
        ids[j] = k - prefix * RADIX_ID_SPACE;
      }
      if (prefix === runPrefix) continue;
      if (j - runStart > 1 && runPrefix % 65537 !== 0) runs.push(runStart, j, pass + 1);
      runStart = j;
      runPrefix = prefix;
    }
  }
  return ids;
}
