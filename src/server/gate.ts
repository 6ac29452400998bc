/**
 * src/server/gate.ts: a door in front of every request, so that a process can be brought
 * to a standstill for a moment (compaction swaps the environment's file under it).
 *
 *   open     requests pass; `active` counts those in flight
 *   closed   new requests wait at the door (onRequest) until it opens again;
 *            `drain` resolves once those in flight have finished
 *
 * Waiting requests are not refused: a client sees a request that took a moment longer.
 */
export class RequestGate {
  private waiting: Promise<void> | null = null;
  private openDoor: () => void = () => {};
  private drained: (() => void) | null = null;
  private limit = 0;
  /** Requests in flight (past the door, not yet answered). */
  active = 0;

  /** onRequest: waits while the door is closed, then counts the request in. */
  async enter(): Promise<void> {
    while (this.waiting) await this.waiting;
    this.active++;
  }

  /** When a request's response has finished or its connection closed (once per entered request). */
  leave(): void {
    this.active--;
    if (this.drained && this.active <= this.limit) {
      const d = this.drained;
      this.drained = null;
      d();
    }
  }

  /**
   * Closes the door and waits until at most `except` requests are in flight (the caller's own),
   * for at most `timeoutMs`. False when they did not finish in time (the door stays closed).
   */
  async close(except: number, timeoutMs: number): Promise<boolean> {
    if (!this.waiting) this.waiting = new Promise<void>((r) => (this.openDoor = r));
    if (this.active <= except) return true;
    this.limit = except;
    let timer: NodeJS.Timeout | undefined;
    const ok = await Promise.race([
      new Promise<boolean>((r) => (this.drained = () => r(true))),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    this.drained = null;
    return ok;
  }

  open(): void {
    const r = this.openDoor;
    this.waiting = null;
    r();
  }
}
