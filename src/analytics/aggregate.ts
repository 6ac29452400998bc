/**
 * src/analytics/aggregate.ts: here is one user's log of searches, which of them count?
 *
 * A search counts for a query rule only when the same user sent no other search that the
 * rule records within the pause after it (4 seconds): someone typing `g`, `ga`, `gar`,
 * `garden` is recorded once, as `garden`. So a search is decided only once the pause after
 * it has passed; until then it stays in the log.
 *
 *   ts:      0      300    700    1100                  5200 (now)
 *   search:  g      ga     gar    garden
 *   next:    300    700    1100   none
 *   counts:  no     no     no     yes (decided: now - 1100 > 4000)
 *
 * Pure: the caller reads the log and applies the outcome in one transaction.
 */

/** One logged search: when it was recorded, and the query each rule it feeds records. */
export interface LoggedSearch {
  ts: number;
  rules: ReadonlyArray<readonly [ruleId: number, q: string]>;
}

export interface Decision {
  /** How many leading entries are decided (older than the pause); they leave the log. */
  decided: number;
  /** What counts, as [ruleId, query], in log order. */
  counted: Array<[number, string]>;
}

/**
 * Decides one user's searches at time `now`. `entries` are sorted by `ts`, and every search
 * recorded after them has `ts >= now` (timestamps are taken inside the write transaction
 * that logs them, and `now` inside the one that decides), so an entry older than the pause
 * sees every search that could still cancel it.
 */
export function decideUser(entries: readonly LoggedSearch[], now: number, pauseMs: number): Decision {
  let decided = 0;
  while (decided < entries.length && now - entries[decided]!.ts > pauseMs) decided++;
  const counted: Array<[number, string]> = [];
  if (decided === 0) return { decided, counted };
  // Walk backwards, remembering when each rule next records a search of this user.
  const next = new Map<number, number>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    for (const [rule, q] of e.rules) {
      if (i < decided) {
        const after = next.get(rule);
        if (after === undefined || after - e.ts > pauseMs) counted.push([rule, q]);
      }
      next.set(rule, e.ts);
    }
  }
  counted.reverse();
  return { decided, counted };
}
