/**
 * src/storage/diskfull.ts: what a write that finds no room does.
 *
 * A full disk must cost the write that did not fit, and nothing else: that write is answered
 * as failed (FathomError NO_SPACE: HTTP 507, an import line's `success: false`, one line from
 * the CLI), nothing of it is stored, the process keeps serving reads, and the next write
 * that fits succeeds, without a restart.
 *
 * Two lines of defence. First, a write that would leave less than the reserve
 * (DISK_DEFAULTS.reserveBytes) free on the data directory's filesystem is refused before LMDB
 * tries it (`transaction`, `checkRoom`): a filesystem filled to the last byte costs more than
 * the write that did not fit, because LMDB's C code then prints its own errors
 * (`mdb_page_spill flushing error 5`: the commit writes pages early while saving its free
 * list, and that write fails) where no JavaScript can catch them, and may crash on a new
 * page of its memory-mapped lock file (SIGBUS).
 *
 * Second, a commit that fails anyway (the reserve is 0, or someone else filled the disk) is
 * reported, not fatal. lmdb-js reports it in several shapes, each of which, left alone, did
 * more damage than the failed write:
 *
 *   - The transaction's promise rejects with "Commit failed", whose `commitError` is a second
 *     promise rejected with the system error: ENOSPC, or EIO when the filesystem took only
 *     part of a write (tmpfs does). Nobody handled the second one: an unhandled rejection,
 *     which ends a Node process (the server exited).
 *   - lmdb-js also rejects a promise nobody holds (the write that opens its event-turn batch)
 *     and logs the system error with console.error: an unhandled rejection again, and raw
 *     LMDB output in the user's terminal.
 *   - lmdb-js resolves a commit's flush promise only when the commit succeeds, so after a
 *     failed one `env.flushed`, and `env.close()` which waits for it, never settle: a CLI
 *     command closing its engine after a failed write waited until Node, with nothing left
 *     to run, exited with status 0 and no message (`fathom documents delete` "succeeded").
 *   - A put inside a transaction throws the system error itself when LMDB spills pages of a
 *     large transaction; a sync put throws it.
 *
 * So every write transaction goes through `transaction()`: a failure becomes a FathomError
 * (space: NO_SPACE; an I/O error with room left: DATA_DIR), and a failed commit queues an
 * empty transaction, whose flush replaces the one that died, so that `flushed()` waiters
 * (woken here) and `close()` carry on; caches of what the failed transaction wrote are
 * dropped (`onRollback`). `installLmdbErrorHandling()` (every thread that opens a store) keeps
 * lmdb-js's orphan rejections and its console.error line from ending the process or reaching
 * the terminal.
 *
 * `diskStatus()` tells `/health` and `/debug` whether the disk is full: less than the reserve
 * free, or this thread's last write failed for lack of space and none has succeeded since.
 * Nothing is blocked on that state: each write checks the filesystem afresh.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DISK_DEFAULTS } from '../defaults.js';
import { FathomError, isFathomError } from '../errors.js';
import type { Store } from './store.js';

const errno = os.constants.errno;
/** System errors that mean the filesystem (or the user's quota) has no room, as LMDB (numbers) and Node (names) report them. */
const NO_ROOM = new Set<unknown>([errno.ENOSPC, errno.EDQUOT, errno.EFBIG, 'ENOSPC', 'EDQUOT', 'EFBIG']);
/** An I/O error: a short write on a full filesystem, or a failing disk. */
const IO_ERROR = new Set<unknown>([errno.EIO, 'EIO']);
/** LMDB's map is full (the environment's own size limit, not the disk's). */
const MDB_MAP_FULL = -30792;

const noop = () => {};

/** The error a write that found no room answers with. */
export function noSpaceError(doing = 'writing to the data directory'): FathomError {
  return new FathomError('NO_SPACE', `no space left on device while ${doing}: nothing of it was stored; free some disk space and retry`);
}

export function isNoSpace(e: unknown): e is FathomError {
  return isFathomError(e) && e.code === 'NO_SPACE';
}

// ---------------------------------------------------------------------------
// Free space
// ---------------------------------------------------------------------------

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** The free space kept (DISK_DEFAULTS.reserveBytes, or FATHOM_DISK_RESERVE_BYTES). */
export function reserveBytes(): number {
  const v = process.env.FATHOM_DISK_RESERVE_BYTES;
  return v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : DISK_DEFAULTS.reserveBytes;
}

/** Bytes Fathom may still write on the filesystem holding `dir` (root may use the reserved blocks), or undefined when unknown. */
export function freeBytes(dir: string): number | undefined {
  try {
    const s = fs.statfsSync(dir);
    return (isRoot ? s.bfree : s.bavail) * s.bsize;
  } catch {
    return undefined;
  }
}

/**
 * Throws NO_SPACE when less than the reserve would be left free after a write of about
 * `bytes` and the writes this thread has queued and not committed yet (which the filesystem
 * does not show yet), each taking `overhead` times its size.
 */
export function checkRoom(store: Store, bytes: number, doing: string, overhead: number = DISK_DEFAULTS.writeOverhead): void {
  const free = freeBytes(store.dir);
  if (free === undefined) return;
  const queued = writers.get(store.env)?.queuedBytes ?? 0;
  if (free >= reserveBytes() + overhead * (bytes + queued)) return;
  const e = noSpaceError(doing);
  noteNoSpace(store.dir, e, free);
  throw e;
}

/**
 * Throws NO_SPACE when a new environment should not be created in `dir`: LMDB writes its
 * first pages, and touches its lock file's, through memory maps, where a full filesystem
 * is a crash (SIGBUS), not an error.
 */
export function checkRoomToCreate(dir: string): void {
  let existing = path.resolve(dir);
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  const free = freeBytes(existing);
  if (free !== undefined && free < Math.max(reserveBytes(), DISK_DEFAULTS.eioFullBelowBytes)) throw noSpaceError('creating the data directory');
}

// ---------------------------------------------------------------------------
// Classifying a failed write
// ---------------------------------------------------------------------------

/** lmdb-js's "Commit failed" error carries the system error as a rejected promise. */
function commitErrorOf(e: unknown): Promise<unknown> | undefined {
  const c = (e as { commitError?: unknown } | null)?.commitError;
  return c && typeof (c as Promise<unknown>).then === 'function' ? (c as Promise<unknown>) : undefined;
}

/** An error raised by lmdb's native code (a numeric code, thrown from lmdb's files). */
function isLmdbSystemError(e: unknown): e is Error & { code: number } {
  return e instanceof Error && typeof (e as { code?: unknown }).code === 'number' && /[\\/]lmdb[\\/]/.test(e.stack ?? '');
}

/**
 * The FathomError a failed write stands for, or undefined when it is no storage failure (a
 * FathomError thrown by the transaction's own code, a bug). `cause` is the system error.
 */
function classify(cause: unknown, dir: string, commitFailed: boolean): FathomError | undefined {
  if (isFathomError(cause)) return undefined;
  const code = (cause as { code?: unknown } | null)?.code;
  if (NO_ROOM.has(code)) return noSpaceError();
  if (code === MDB_MAP_FULL) {
    return new FathomError('NO_SPACE', 'no space left in the data directory: its LMDB map is full; nothing of this write was stored');
  }
  if (IO_ERROR.has(code) || commitFailed) {
    // a full filesystem takes part of a write, then refuses: LMDB reports EIO
    const free = freeBytes(dir);
    if (free !== undefined && free < DISK_DEFAULTS.eioFullBelowBytes) return noSpaceError();
    const what = cause instanceof Error ? cause.message : String(cause);
    return new FathomError('DATA_DIR', `writing to the data directory failed (${what}): nothing of this write was stored`);
  }
  return undefined;
}

/** The system error behind lmdb-js's "Commit failed" (rejected by the time the commit's own promise is, or soon after). */
async function causeOf(e: unknown): Promise<unknown> {
  const pending = commitErrorOf(e);
  if (!pending) return e;
  let timer: NodeJS.Timeout | undefined;
  const cause = await Promise.race([
    pending.then(
      () => e,
      (x: unknown) => x,
    ),
    new Promise<unknown>((resolve) => {
      timer = setTimeout(() => resolve(e), 1000);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  return cause;
}

/**
 * For writes outside transactions (creating a directory, a sync put): NO_SPACE when the
 * thrown error means the disk is full, else undefined.
 */
export function noSpaceIn(e: unknown, dir: string, doing: string): FathomError | undefined {
  if (!isNoSpace(classify(e, dir, false))) return undefined;
  const f = noSpaceError(doing);
  noteNoSpace(dir, f);
  return f;
}

// ---------------------------------------------------------------------------
// Transactions
// ---------------------------------------------------------------------------

interface WriterState {
  /** Bytes given to transactions queued and not settled yet (they will take room the filesystem does not show yet). */
  queuedBytes: number;
  /** Waiters of flushed(), woken when a commit fails (the flush they wait for may never come). */
  waiters: Set<() => void>;
  /** The empty transaction that replaces a failed commit's flush, while queued. */
  recovering?: Promise<void>;
}

/** Per lmdb-js environment, which is per thread: each thread opens its own. */
const writers = new WeakMap<object, WriterState>();

function writerOf(store: Store): WriterState {
  let w = writers.get(store.env);
  if (!w) writers.set(store.env, (w = { queuedBytes: 0, waiters: new Set() }));
  return w;
}

const rollbackListeners: Array<(store: Store) => void> = [];

/**
 * Registers a cache to drop when a commit fails: a transaction may read what earlier ones
 * of the same commit wrote, and the ids of what was never stored are handed out again.
 */
export function onRollback(listener: (store: Store) => void): void {
  rollbackListeners.push(listener);
}

/**
 * Runs `fn` in its own nested write transaction (a throw rolls back exactly its writes) and
 * resolves once it is committed, not yet flushed (see flushed()). A write is refused once less
 * than the reserve is free (counting the writes queued ahead of it), so the filesystem never
 * fills up while `/health` says otherwise; the last write before that may eat into the
 * reserve, which is what it is for. `bytes`: about how much it writes (an import batch's
 * lines), counted while it is queued. A write that does not fit rejects with FathomError
 * NO_SPACE, another failed commit with DATA_DIR; nothing of it is stored.
 */
export function transaction<T>(store: Store, fn: () => T, bytes = 0): Promise<T> {
  try {
    checkRoom(store, 0, 'writing to the data directory');
  } catch (e) {
    return Promise.reject(e);
  }
  const w = writerOf(store);
  w.queuedBytes += bytes;
  return (store.env.childTransaction(fn as () => any) as Promise<T>).then(
    (r) => {
      w.queuedBytes -= bytes;
      if (lastNoSpace) noteWriteOk();
      return r;
    },
    (e: unknown) => {
      w.queuedBytes -= bytes;
      return failed(store, e);
    },
  );
}

async function failed(store: Store, e: unknown): Promise<never> {
  const pending = commitErrorOf(e);
  if (pending) {
    pending.catch(noop); // (already rejected: handle it before any await)
    recover(store);
    for (const l of rollbackListeners) l(store);
  }
  const mapped = classify(await causeOf(e), store.dir, pending !== undefined);
  if (mapped?.code === 'NO_SPACE') noteNoSpace(store.dir, mapped);
  throw mapped ?? e;
}

/**
 * After a failed commit: queues an empty transaction (its flush promise replaces the dead
 * one) and wakes flushed() waiters, who then wait for the new one. Retried until one goes
 * through: batched with another failing write, it fails too.
 */
function recover(store: Store): void {
  const w = writerOf(store);
  if (w.recovering) return;
  try {
    w.recovering = (store.env.childTransaction(() => undefined) as Promise<unknown>).then(
      () => {
        w.recovering = undefined;
      },
      (e: unknown) => {
        w.recovering = undefined;
        const again = commitErrorOf(e);
        again?.catch(noop);
        if (again) setImmediate(() => recover(store));
      },
    );
  } catch {
    return; // the environment was closed meanwhile
  }
  const waiters = [...w.waiters];
  w.waiters.clear();
  for (const wake of waiters) wake();
}

/**
 * Resolves once every commit so far is flushed to disk. Unlike `env.flushed`, it also
 * settles after a failed commit (whose flush lmdb-js never resolves): woken by the failure,
 * it waits for the flush of the transaction that replaced it, which covers every earlier
 * commit (a flush syncs the whole file).
 */
export async function flushed(store: Store): Promise<void> {
  const w = writerOf(store);
  for (;;) {
    let wake!: () => void;
    const woken = new Promise<boolean>((resolve) => {
      wake = () => resolve(false);
      w.waiters.add(wake);
    });
    const done = await Promise.race([Promise.resolve(store.env.flushed).then(() => true), woken]);
    w.waiters.delete(wake);
    if (done) return;
  }
}

/** Resolves when no recovery transaction is queued (before closing an environment). */
export async function settled(store: Store): Promise<void> {
  for (let r = writers.get(store.env)?.recovering; r; r = writers.get(store.env)?.recovering) await r;
}

// ---------------------------------------------------------------------------
// lmdb-js's own reports of a failed commit
// ---------------------------------------------------------------------------

let installed = false;

/**
 * Once per thread: lmdb-js's rejections that nobody can hold, and its console.error line of
 * a failed commit, are failures `transaction()` reports already; they must neither end the
 * process nor reach the terminal. Any other unhandled rejection still ends the process as
 * Node's default does (unless someone else listens, e.g. a test runner).
 */
export function installLmdbErrorHandling(): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    const pending = commitErrorOf(reason);
    if (pending) {
      pending.catch(noop); // (the system error, rejected right after: handled in time)
      return;
    }
    if (process.listenerCount('unhandledRejection') === 1) throw reason;
  });
  const original = console.error;
  console.error = function (this: unknown, ...args: unknown[]) {
    if (args.length === 1 && isLmdbSystemError(args[0])) return;
    return original.apply(this, args as []);
  } as typeof console.error;
}

// ---------------------------------------------------------------------------
// The disk's state, for /health and /debug
// ---------------------------------------------------------------------------

/** The last write in this thread that failed for lack of space, while no later one succeeded. */
let lastNoSpace: { dir: string; at: number; message: string; freeBytes: number | undefined } | undefined;

function noteNoSpace(dir: string, e: FathomError, free = freeBytes(dir)): void {
  lastNoSpace = { dir: path.resolve(dir), at: Date.now(), message: e.message, freeBytes: free };
  statusCache.clear();
}

function noteWriteOk(): void {
  lastNoSpace = undefined;
  statusCache.clear();
}

export interface DiskStatus {
  /** Writes fail, or are about to, for lack of space. */
  full: boolean;
  free_bytes?: number;
  total_bytes?: number;
  /** Free space kept: writes that would leave less are refused. */
  reserve_bytes: number;
  /** The last write this process saw fail for lack of space, while no later one succeeded. */
  last_failure?: { at: string; message: string };
}

const statusCache = new Map<string, { at: number; status: DiskStatus }>();

/**
 * The disk's state for a data directory, from a filesystem reading at most every
 * DISK_DEFAULTS.checkIntervalMs. A remembered failure is forgotten once a write succeeds, or
 * once the filesystem has DISK_DEFAULTS.eioFullBelowBytes more free than it had then.
 */
export function diskStatus(dir: string, now = Date.now()): DiskStatus {
  const cached = statusCache.get(dir);
  if (cached && now - cached.at < DISK_DEFAULTS.checkIntervalMs) return cached.status;
  const reserve = reserveBytes();
  let total: number | undefined;
  let free: number | undefined;
  try {
    const s = fs.statfsSync(dir);
    total = s.blocks * s.bsize;
    free = (isRoot ? s.bfree : s.bavail) * s.bsize;
  } catch {
    /* not every platform has statfs */
  }
  let failure = lastNoSpace?.dir === path.resolve(dir) ? lastNoSpace : undefined;
  if (failure && free !== undefined && failure.freeBytes !== undefined && free >= failure.freeBytes + DISK_DEFAULTS.eioFullBelowBytes) {
    lastNoSpace = failure = undefined; // space was freed since: the next write will tell
  }
  const status: DiskStatus = {
    full: (free !== undefined && free < Math.max(reserve, DISK_DEFAULTS.eioFullBelowBytes)) || failure !== undefined,
    ...(free !== undefined ? { free_bytes: free, total_bytes: total } : {}),
    reserve_bytes: reserve,
    ...(failure ? { last_failure: { at: new Date(failure.at).toISOString(), message: failure.message } } : {}),
  };
  statusCache.set(dir, { at: now, status });
  return status;
}
