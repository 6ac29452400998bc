/**
 * commands/explore/sequencer.ts: "a slow query never shows over a newer one".
 *
 * Every search takes a ticket; taking one aborts the previous ticket's signal (so an HTTP
 * request in flight is cancelled) and makes every earlier ticket stale. An answer is
 * shown only if its ticket is still the newest when it arrives, whatever order answers
 * come back in and whether or not the client honoured the abort.
 */

export interface Ticket {
  readonly seq: number;
  readonly signal: AbortSignal;
}

export class Sequencer {
  private latest = 0;
  private controller: AbortController | null = null;

  /** A ticket for a new search; every earlier ticket becomes stale. */
  next(): Ticket {
    this.controller?.abort();
    this.controller = new AbortController();
    return { seq: ++this.latest, signal: this.controller.signal };
  }

  /** Whether an answer for this ticket may be shown. */
  isCurrent(t: Ticket): boolean {
    return t.seq === this.latest && !t.signal.aborted;
  }

  /** Makes every ticket stale (on exit). */
  cancel(): void {
    this.controller?.abort();
    this.controller = null;
    this.latest++;
  }
}
