/**
 * src/server/compact.ts: `POST /operations/db/compact`, giving disk space back.
 *
 * LMDB reuses freed pages but never shrinks its file, so after deletes the directory stays
 * as large as it ever was. Compaction:
 *
 *   1. merges every collection's segments that exist as it starts into one (dropping
 *      deleted documents' postings; segments written meanwhile are left, so it ends);
 *   2. copies the environment compacted (LMDB's own copy: live pages only, one read
 *      transaction, so searches and writes go on meanwhile);
 *   3. holds the writes of every process serving the directory (below);
 *   4. if nothing was committed since the copy began, the copy is current; otherwise it is
 *      made again (twice while writes flow, then once with writes held: searches go on);
 *   5. holds the reads too: new ones wait at the read door, those in flight finish;
 *   6. every process closes the environment, the copy replaces `data.mdb` (one rename),
 *      every process opens it again and the doors open.
 *
 * Holding writes, in this order (processParticipant), one deadline for all of it:
 *
 *   a. the write door closes and the write requests in flight finish;
 *   b. a cluster node's applier pauses after the command it is applying;
 *   c. the import and merge threads end; new transactions are held, those started flushed.
 *
 * The order is what makes it deadlock-free: each step waits only for work that needs
 * nothing held by this step or an earlier one. A write request in flight may wait for the
 * applier (a cluster node answers once it has applied the write's command) and for
 * transactions, so (a) comes before (b) and (c); a command being applied and a merge wait
 * for transactions only, so (b) comes before (c); a transaction started waits for nothing
 * of ours. Reads are held last and only around the swap, so searches run on meanwhile;
 * `/health` and this request pass no door. Every wait has the deadline (`quietTimeoutMs`):
 * what has not finished by then is named in a 503, and everything held is let go, with
 * nothing changed. A request that waits at a closed door longer than that is answered 503
 * too (it did nothing: retry it).
 *
 * A `kill -9` at any point leaves either the old file or the new one, both complete: the
 * copy is written beside the data and renamed over it.
 *
 * Other processes working on the directory outside the server (a `fathom` CLI command)
 * must not run during a compaction: they would keep the replaced file open.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import { seconds } from '../deadline.js';
import { dataFileBytes, removeStaleCopies, swapDataFile } from '../storage/copy.js';
import { OPERATIONS_DEFAULTS } from '../defaults.js';
import type { ServerContext } from './context.js';

/** One process (or the orchestrator itself) taking part in a compaction. */
export interface Participant {
  /**
   * Stops writing by `deadline` (ms since the epoch), in the order the header describes.
   * Throws SERVICE_UNAVAILABLE naming what did not finish by then; `release` then.
   */
  holdWrites(deadline: number): Promise<void>;
  /** After holdWrites: new reads wait too and those in flight finish, by `deadline` (or throws as holdWrites). */
  holdReads(deadline: number): Promise<void>;
  /** Closes its environment (after both holds). */
  closeEnv(): Promise<void>;
  /** Opens its environment again (after closeEnv) and lets everything go. */
  openEnv(): Promise<void>;
  /**
   * Lets everything go, opening the environment again if it was closed: safe after any
   * step, a failed one included, and twice (the orchestrator may give up on a process's
   * step before that process has finished it).
   */
  release(): Promise<void>;
}

/** A cluster node's applier (src/cluster/replicator.ts). */
export interface Applier {
  /** Pauses after the command in progress: true once it is done, false when not by `deadline`. */
  pause(deadline: number): Promise<boolean>;
  resume(): void;
}

export interface CompactReport {
  success: true;
  /** Size of data.mdb before and after, bytes. */
  bytes_before: number;
  bytes_after: number;
  /** Segment merges made. */
  merges: number;
}

/** Copies made while writes flow before one is made with writes held. */
const COPIES_WHILE_WRITING = 2;

/**
 * This serving process as a participant: its doors, its import thread, its cluster
 * applier when it is a cluster node (`applier`), and its engine.
 */
export function processParticipant(ctx: ServerContext, applier?: () => Applier | undefined): Participant {
  let paused: Applier | undefined;
  let importerClosed = false;
  let envClosed = false;
  const release = async () => {
    if (envClosed) {
      ctx.engine.openEnvironment();
      envClosed = false;
    }
    ctx.engine.resume();
    if (importerClosed) {
      ctx.importer = ctx.importer.fresh();
      importerClosed = false;
    }
    paused?.resume();
    paused = undefined;
    ctx.gate.read.open();
    ctx.gate.write.open();
  };
  return {
    holdWrites: async (deadline) => {
      ctx.gate.write.close();
      if (!(await ctx.gate.write.drained(deadline))) {
        throw new FathomError('SERVICE_UNAVAILABLE', `${ctx.gate.write.active} write request(s) in flight did not finish`);
      }
      paused = applier?.();
      if (paused && !(await paused.pause(deadline))) {
        throw new FathomError('SERVICE_UNAVAILABLE', 'the command this cluster node was applying did not finish');
      }
      // (no import runs: imports are write requests)
      importerClosed = true;
      await ctx.importer.close();
      await ctx.engine.suspend(deadline);
    },
    holdReads: async (deadline) => {
      ctx.gate.read.close();
      if (!(await ctx.gate.read.drained(deadline))) {
        throw new FathomError('SERVICE_UNAVAILABLE', `${ctx.gate.read.active} read request(s) in flight (searches, exports) did not finish`);
      }
    },
    closeEnv: async () => {
      envClosed = true;
      await ctx.engine.closeEnvironment();
    },
    openEnv: release,
    release,
  };
}

/** An engine that serves no requests (a cluster's primary process) as a participant. */
export function engineParticipant(engine: Engine): Participant {
  let envClosed = false;
  const release = async () => {
    if (envClosed) {
      engine.openEnvironment();
      envClosed = false;
    }
    engine.resume();
  };
  return {
    holdWrites: (deadline) => engine.suspend(deadline),
    holdReads: async () => undefined,
    closeEnv: async () => {
      envClosed = true;
      await engine.closeEnvironment();
    },
    openEnv: release,
    release,
  };
}

/** Runs one step on every participant at once; throws the first failure once all have settled. */
async function onEvery(participants: Participant[], step: (p: Participant) => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(participants.map(step));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Closes every environment, renames the copy over the data file, and opens them again. */
async function swap(dir: string, copy: string, participants: Participant[]): Promise<void> {
  const closed: Participant[] = [];
  try {
    for (const p of participants) {
      await p.closeEnv();
      closed.push(p);
    }
    swapDataFile(dir, copy);
  } finally {
    // (on the new file, or on the old one when the rename failed; either is whole)
    await onEvery(closed, (p) => p.openEnv());
  }
}

export async function compact(engine: Engine, participants: Participant[], quietMs: number = OPERATIONS_DEFAULTS.quietTimeoutMs): Promise<CompactReport> {
  const dir = engine.dir;
  removeStaleCopies(dir);
  const before = dataFileBytes(dir);
  let merges = 0;
  // (only the segments there now: with writes landing all the while, merging into one never ends)
  for (const c of engine.listCollections()) merges += await engine.optimize(c.name, { existingOnly: true });

  const fresh = () => fs.mkdtempSync(path.join(dir, '.compact-'));
  for (let attempt = 0; ; attempt++) {
    let copy = fresh();
    try {
      const since = engine.lastTxnId();
      await engine.copyEnvironment(copy);
      let swapped = false;
      try {
        const deadline = Date.now() + quietMs;
        await onEvery(participants, (p) => p.holdWrites(deadline));
        if (engine.lastTxnId() !== since) {
          if (attempt < COPIES_WHILE_WRITING) {
            fs.rmSync(copy, { recursive: true, force: true });
            continue;
          }
          // writes are held everywhere now: this copy is current (reads go on meanwhile)
          fs.rmSync(copy, { recursive: true, force: true });
          copy = fresh();
          await engine.copyEnvironment(copy);
        }
        const readDeadline = Date.now() + quietMs;
        await onEvery(participants, (p) => p.holdReads(readDeadline));
        await swap(dir, copy, participants);
        swapped = true;
      } finally {
        if (!swapped) await onEvery(participants, (p) => p.release());
      }
      return { success: true, bytes_before: before, bytes_after: dataFileBytes(dir), merges };
    } catch (e) {
      fs.rmSync(copy, { recursive: true, force: true });
      if (e instanceof FathomError && e.code === 'SERVICE_UNAVAILABLE') {
        throw new FathomError('SERVICE_UNAVAILABLE', `the data directory was not compacted (it waits ${seconds(quietMs)} for quiet): ${e.message}; nothing was changed, so compact again when the server is quieter`);
      }
      if (e instanceof FathomError) throw e;
      if ((e as NodeJS.ErrnoException).code === 'ENOSPC') throw new FathomError('NO_SPACE', 'no space left on device for the compacted copy; free some space and compact again');
      throw e;
    }
  }
}
