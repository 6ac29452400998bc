/**
 * search/budget.ts: how much may this search still do? A search's budget is a deadline
 * (`search_cutoff_ms`, bounded by the server's `--search-cutoff-ms`) and a count of the
 * work done so far, in units of about one posting, document or position visited.
 *
 * Every phase of a search (planning's dictionary walks, filters and joins, matching,
 * facets and groups, which count as matching runs, and highlighting) spends from the
 * running search's budget and checks it; once the deadline has passed, each phase stops
 * where it is and the search answers `search_cutoff: true` with what it has. A filter that
 * is cut short allows nothing more, never more than it should: a scoped key's filter stays
 * whole.
 *
 * Searches run synchronously from planning to the page, so the running search's budget is
 * held here (`current`) while it runs (`runWith`), and hot loops far down the call chain
 * spend from it without a parameter threaded through every function. The work count is
 * also what the tests bound: a search's work must stay within a fixed multiple of the
 * collection's size and the query's length, whatever the query (test/search-bounds.test.ts).
 */

/** Work between two looks at the clock: a look costs ~25 ns, a unit a few. */
const CHECK_EVERY = 4096;

export class Budget {
  /** Units of work done so far. */
  work = 0;
  /** The deadline passed: every phase stops and the answer says `search_cutoff: true`. */
  cut = false;
  private nextCheck = CHECK_EVERY;
  /** When the search started (on `clock`). */
  readonly start: number;
  /** When it must stop (on `clock`), or Infinity. */
  private deadline = Infinity;

  /** A budget of `ms` milliseconds from now; 0 or less: no deadline. `clock`: milliseconds (tests pass their own). */
  constructor(
    ms = 0,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.start = clock();
    this.limit(ms);
  }

  /** Milliseconds since the start. */
  elapsed(): number {
    return this.clock() - this.start;
  }

  /** Brings the deadline to at most `ms` after the start (0 or less: no change). */
  limit(ms: number): void {
    if (ms > 0) this.deadline = Math.min(this.deadline, this.start + ms);
  }

  /** Counts `units` of work; true once the deadline has passed (checked every CHECK_EVERY units). */
  spend(units: number): boolean {
    this.work += units;
    if (this.work >= this.nextCheck) {
      this.nextCheck = this.work + CHECK_EVERY;
      if (!this.cut && this.clock() > this.deadline) this.cut = true;
    }
    return this.cut;
  }

  /** Checks the clock now: true once the deadline has passed. */
  stop(): boolean {
    if (!this.cut && this.deadline !== Infinity && this.clock() > this.deadline) this.cut = true;
    return this.cut;
  }
}

/** The budget of no search: no deadline, work counted but never read. */
const NONE = new Budget();

let running: Budget = NONE;

/** The running search's budget (a budget without a deadline outside any search). */
export function current(): Budget {
  return running;
}

/** The running search's budget with its deadline brought to at most `ms` after its start, or a new one of `ms` when no search is running. */
export function budgetOf(ms: number): Budget {
  if (running === NONE) return new Budget(ms);
  running.limit(ms);
  return running;
}

/**
 * Runs `fn` with `budget` as the running search's. A search run inside another (a join's
 * filter, a union's parts) keeps the outer budget when one is running: the request's
 * deadline bounds everything it does.
 */
export function runWith<T>(budget: Budget, fn: () => T): T {
  if (running !== NONE) return fn();
  running = budget;
  try {
    return fn();
  } finally {
    running = NONE;
  }
}
