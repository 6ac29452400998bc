/**
 * src/server/gate.ts: the doors in front of requests, so that a process can be brought to a
 * standstill for a moment (compaction swaps the environment's file under it).
 *
 *   write door   requests that change data. Compaction closes it first and keeps it closed
 *                until the swap is done (a copy made while writes are held stays current)
 *   read door    searches and every other read. Closed only around the swap itself (close,
 *                rename, reopen), so reads go on from the old file until then
 *   no door      `/health` and the compaction request itself: they never wait
 *
 * A closed door holds new requests back; `drained` resolves once those already past it have
 * finished. A request held at a closed door for longer than its wait is answered 503 saying
 * to retry (it did nothing), so no client waits without bound.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FathomError } from '../errors.js';
import { seconds, settlesBy } from '../deadline.js';

export type DoorName = 'read' | 'write';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The door the route's requests pass: 'none' for routes that must never wait (default: doorOf). */
    door?: DoorName | 'none';
  }
}

/** The action of searches, which are sent as POST too (multi_search, long queries). */
const SEARCH_ACTION = 'documents:search';

/**
 * Which door a request passes: the route's own `door`, else GET and HEAD read, searches
 * read, and every other method writes. (A read that writes, as a conversation's history,
 * waits at the store's write hold instead.)
 */
export function doorOf(method: string, config: { door?: DoorName | 'none'; auth?: { action?: unknown } } | undefined): DoorName | undefined {
  if (config?.door) return config.door === 'none' ? undefined : config.door;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return 'read';
  return config?.auth?.action === SEARCH_ACTION ? 'read' : 'write';
}

/** One door: `active` requests are past it, `waiting` are held at it. */
export class Door {
  active = 0;
  waiting = 0;
  private shut: { opened: Promise<void>; open: () => void } | null = null;
  private emptied: Array<() => void> = [];

  /** Waits while the door is closed, until `deadline` at most (false then), and counts the request in. */
  async enter(deadline: number): Promise<boolean> {
    this.waiting++;
    try {
      while (this.shut) if (!(await settlesBy(this.shut.opened, deadline))) return false;
    } finally {
      this.waiting--;
    }
    this.active++;
    return true;
  }

  /** Once per entered request, when its response has finished or its connection closed. */
  leave(): void {
    this.active--;
    if (this.active === 0) for (const r of this.emptied.splice(0)) r();
  }

  get closed(): boolean {
    return this.shut !== null;
  }

  /** New requests wait from now on. */
  close(): void {
    if (this.shut) return;
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    this.shut = { opened, open };
  }

  /** True once no request is past the door, false when some still are at `deadline`. */
  drained(deadline: number): Promise<boolean> {
    if (this.active === 0) return Promise.resolve(true);
    return settlesBy(new Promise<void>((r) => this.emptied.push(r)), deadline);
  }

  open(): void {
    const s = this.shut;
    this.shut = null;
    s?.open();
  }
}

export class RequestGate {
  readonly read = new Door();
  readonly write = new Door();

  /** @param waitMs how long a request may wait at a closed door before it is answered 503 */
  constructor(readonly waitMs: number) {}

  /**
   * onRequest: the request passes its door (or is answered 503 after waiting `waitMs`). A
   * request whose client went away while it waited is not run: it would be in flight
   * without a close to count it out.
   */
  readonly hook = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const name = doorOf(req.method, req.routeOptions.config);
    if (!name) return;
    const door = this[name];
    let entered = false;
    let gone = false;
    reply.raw.once('close', () => {
      gone = true;
      if (entered) door.leave();
    });
    if (!(await door.enter(Date.now() + this.waitMs))) {
      throw new FathomError('SERVICE_UNAVAILABLE', `the server is compacting its data directory and held this request for ${seconds(this.waitMs)}; nothing was done: retry it`);
    }
    if (gone) {
      door.leave();
      throw new FathomError('SERVICE_UNAVAILABLE', 'the client went away while the request waited at the door; nothing was done');
    }
    entered = true;
  };
}
