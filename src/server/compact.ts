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
 *   3. brings every process serving the directory to a standstill for a moment: new
 *      requests wait at the door, those in flight finish, writer threads stop;
 *   4. if nothing was committed since the copy began, the copy is current; otherwise it is
 *      made again (twice while writes flow, then once with writes held);
 *   5. every process closes the environment, the copy replaces `data.mdb` (one rename),
 *      every process opens it again and the door opens.
 *
 * Searches and writes wait only during steps 3-5 (a rename and the reopen, plus the third
 * copy if writes kept landing). A `kill -9` at any point leaves either the old file or the
 * new one, both complete: the copy is written beside the data and renamed over it.
 *
 * Other processes working on the directory outside the server (a `fathom` CLI command)
 * must not run during a compaction: they would keep the replaced file open.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import { dataFileBytes, removeStaleCopies, swapDataFile } from '../storage/copy.js';
import { OPERATIONS_DEFAULTS } from '../defaults.js';
import type { ServerContext } from './context.js';

/** One process (or the orchestrator itself) taking part in a compaction. */
export interface Participant {
  /** Stops taking requests and writing; resolves once quiet. Throws when it could not get quiet in time. */
  hold(): Promise<void>;
  /** Closes its environment (after hold). */
  closeEnv(): Promise<void>;
  /** Opens its environment again and goes on (after closeEnv). */
  openEnv(): Promise<void>;
  /** Goes on without having closed its environment (after hold). */
  release(): Promise<void>;
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
 * This serving process as a participant: its door closes (waiting at most `quietMs` for the
 * requests in flight, `except` of which are the caller's own), its import thread and merge
 * thread end, and its engine holds writes.
 */
export function processParticipant(ctx: ServerContext, except: number, quietMs = OPERATIONS_DEFAULTS.quietTimeoutMs): Participant {
  const goOn = () => {
    ctx.engine.resume();
    ctx.importer = ctx.importer.fresh();
    ctx.gate.open();
  };
  return {
    hold: async () => {
      if (!(await ctx.gate.close(except, quietMs))) {
        ctx.gate.open();
        throw new FathomError('SERVICE_UNAVAILABLE', `requests in flight did not finish within ${quietMs / 1000} s, so the compacted file was not swapped in; compact again when the server is quieter`);
      }
      await ctx.importer.close();
      await ctx.engine.suspend();
    },
    closeEnv: () => ctx.engine.closeEnvironment(),
    openEnv: async () => {
      ctx.engine.openEnvironment();
      goOn();
    },
    release: async () => goOn(),
  };
}

/** An engine that serves no requests (a cluster's primary process) as a participant. */
export function engineParticipant(engine: Engine): Participant {
  return {
    hold: () => engine.suspend(),
    closeEnv: () => engine.closeEnvironment(),
    openEnv: async () => {
      engine.openEnvironment();
      engine.resume();
    },
    release: async () => engine.resume(),
  };
}

export async function compact(engine: Engine, participants: Participant[]): Promise<CompactReport> {
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
      const held: Participant[] = [];
      try {
        for (const p of participants) {
          await p.hold();
          held.push(p);
        }
      } catch (e) {
        for (const p of held) await p.release();
        throw e;
      }
      if (engine.lastTxnId() !== since) {
        if (attempt < COPIES_WHILE_WRITING) {
          for (const p of participants) await p.release();
          fs.rmSync(copy, { recursive: true, force: true });
          continue;
        }
        // writes are held everywhere now: this copy is current
        fs.rmSync(copy, { recursive: true, force: true });
        copy = fresh();
        await engine.copyEnvironment(copy);
      }
      for (const p of participants) await p.closeEnv();
      try {
        swapDataFile(dir, copy);
      } finally {
        for (const p of participants) await p.openEnv();
      }
      return { success: true, bytes_before: before, bytes_after: dataFileBytes(dir), merges };
    } catch (e) {
      fs.rmSync(copy, { recursive: true, force: true });
      if (e instanceof FathomError) throw e;
      if ((e as NodeJS.ErrnoException).code === 'ENOSPC') throw new FathomError('NO_SPACE', 'no space left on device for the compacted copy; free some space and compact again');
      throw e;
    }
  }
}
