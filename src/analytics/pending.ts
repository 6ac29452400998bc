/**
 * src/analytics/pending.ts: here is an analytics directory, give me its pending state.
 *
 * What searches and events contributed and no flush has applied yet lives in its own LMDB
 * environment (`--analytics-dir`, default `<data-dir>/analytics`), shared by every process
 * serving the data directory: a contribution is committed (and flushed) there before its
 * request is answered, and LMDB serialises the writers of all processes, so each read-modify-write
 * below is exact however the requests were spread over processes. One database, ordered
 * array keys whose first element names the area:
 *
 *   [SEARCH, ts, pid, n]         -> [user, [[ruleId, q], ...]]   a search, until the pause after it has passed
 *   [EVENT, ts, pid, n]          -> [ruleId, docId, weight]      an event, until the next compaction
 *   [QUERY, ruleId, q]           -> count                        decided searches, until a flush
 *   [COUNTER, ruleId, docId]     -> sum of weights               compacted events, until a flush
 *   [DISTINCT, ruleId, 'q'|'c']  -> n                            distinct keys pending per rule (bounds them)
 *   [BATCH, batchId, ruleId]     -> {kind, entries}              sealed by a flush, until applied
 *   [META, 'id']                 -> this environment's random id
 *   [META, 'next_batch']         -> next batch id
 *
 * The two logs are keyed by time so that every request's write lands at the right edge of
 * the B-tree: a commit then rewrites a few pages, where keys ordered by user or document
 * scattered each commit's writes over the tree (many pages written to disk per search).
 * Compaction (analytics.ts) reads them in order and folds them into the per-rule counts.
 *
 * A flush seals the pending counts into a numbered batch (one transaction here), applies the
 * batch to the destination collections together with the record "batches of environment
 * <id> are applied up to n" (one transaction in the data directory), then drops the batch
 * here. A crash between the two leaves the batch, and the next flush either applies it or
 * finds it already applied: never lost, never applied twice (src/analytics/flush.ts).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Database, RootDatabase } from 'lmdb';
import type * as LmdbModule from 'lmdb';
import { LMDB_MAP_SIZE } from '../defaults.js';
import { FathomError } from '../errors.js';

const { open } = createRequire(import.meta.url)('lmdb') as typeof LmdbModule;

export const SEARCH = 1;
export const QUERY = 2;
export const COUNTER = 3;
export const DISTINCT = 4;
export const BATCH = 5;
export const META = 6;
export const EVENT = 7;

export type PendingKey = (string | number)[];

export interface PendingStore {
  readonly dir: string;
  readonly env: RootDatabase;
  readonly db: Database<any, PendingKey>;
  /** Random id of this environment: batch numbers are only meaningful with it. */
  readonly id: string;
  close(): Promise<void>;
}

/** Opens (creating when needed, owner-only) the pending-state environment in `dir`. */
export function openPending(dir: string): PendingStore {
  const abs = path.resolve(dir);
  try {
    fs.mkdirSync(abs, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new FathomError('DATA_DIR', `cannot create analytics directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const fresh = !fs.existsSync(path.join(abs, 'data.mdb'));
  let env: RootDatabase;
  try {
    // No overlapping sync: each commit is flushed before it resolves. Requests wait for their
    // commit, and lmdb-js's overlapping sync made some commits wait for the previous flush
    // (under many concurrent writers: slower commits at the tail, and fewer per second).
    env = open({ path: abs, noSubdir: false, maxDbs: 4, mapSize: LMDB_MAP_SIZE, overlappingSync: false });
  } catch (e) {
    throw new FathomError('DATA_DIR', `cannot open analytics directory ${dir}: ${(e as Error).message}`);
  }
  if (fresh) {
    for (const f of ['data.mdb', 'lock.mdb']) {
      try {
        fs.chmodSync(path.join(abs, f), 0o600);
      } catch {
        /* the lock file may live elsewhere */
      }
    }
  }
  const db = env.openDB<any, PendingKey>({ name: 'pending', encoding: 'msgpack', create: true } as any);
  // Two processes opening a new directory at once: the second transaction sees the first's id.
  const id = env.transactionSync(() => {
    const have = db.get([META, 'id']) as string | undefined;
    if (have !== undefined) return have;
    const fresh = randomBytes(12).toString('hex');
    db.putSync([META, 'id'], fresh);
    return fresh;
  }) as string;
  return { dir: abs, env, db, id, close: () => env.close() };
}

/** The analytics directory to use: the one given, or `analytics/` in the data directory. */
export function analyticsDirFor(dataDir: string, given?: string, dirName = 'analytics'): string {
  return given !== undefined && given !== '' ? path.resolve(given) : path.join(path.resolve(dataDir), dirName);
}
