/**
 * Point-in-time copies of a data directory: snapshots (`POST /operations/snapshot`,
 * `fathom snapshot`) and the compacted copy that compaction swaps in.
 *
 * The environment is copied by LMDB itself (mdb_env_copy2 with MDB_CP_COMPACT): one read
 * transaction, so the copy is consistent while writes go on, and only live pages are
 * written, in order, so the copy is as small as the data. A snapshot is a data directory
 * of its own: `data.mdb` plus the embedding models (`models/`), which a restore needs;
 * HNSW graph files (`vectors/`) are a cache and are rebuilt from the copied vectors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FathomError } from '../errors.js';
import type { Store } from './store.js';

const DATA_FILE = 'data.mdb';

function refuse(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

/**
 * Checks a snapshot target: an absolute path that does not exist yet (its parent must) or
 * a directory, writable. A new or empty directory becomes the snapshot; into a directory
 * that holds anything, the snapshot goes in a new directory of its own,
 * `snapshot-<UTC time>` (as the reference writes its snapshot inside the path it is given),
 * so nothing already there is touched. Returns the snapshot's directory, created.
 */
export function prepareTarget(target: unknown, dataDir: string): string {
  if (typeof target !== 'string' || target.trim() === '') refuse('parameter `snapshot_path` is required: an absolute path to a new or empty directory');
  if (!path.isAbsolute(target)) refuse(`snapshot_path must be an absolute path on the server, got "${target}"`);
  const dir = path.resolve(target);
  const data = path.resolve(dataDir);
  if (dir === data || dir.startsWith(data + path.sep)) refuse('snapshot_path must not be inside the data directory');
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(dir);
  } catch {
    st = undefined;
  }
  if (st) {
    if (!st.isDirectory()) refuse(`snapshot_path ${dir} exists and is not a directory`);
    if (fs.readdirSync(dir).length > 0) return writableDir(innerDir(dir));
  } else {
    try {
      fs.mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      refuse(`cannot create snapshot_path ${dir}: ${code === 'ENOENT' ? 'its parent directory does not exist' : code === 'EACCES' ? 'permission denied' : (code ?? (e as Error).message)}`);
    }
  }
  return writableDir(dir);
}

function writableDir(dir: string): string {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    refuse(`snapshot_path ${dir} is not writable`);
  }
  return dir;
}

/** Snapshot directories tried inside one non-empty directory in the same second, at most. */
const INNER_TRIES = 100;

/** A new directory `snapshot-YYYYMMDDTHHMMSSZ` (then `-2`, `-3`, ...) inside `parent`, created. */
function innerDir(parent: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  for (let i = 1; i <= INNER_TRIES; i++) {
    const dir = path.join(parent, `snapshot-${stamp}${i === 1 ? '' : `-${i}`}`);
    try {
      fs.mkdirSync(dir, { mode: 0o700 });
      return dir;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      refuse(`cannot create a snapshot directory in snapshot_path ${parent}: ${code === 'EACCES' ? 'permission denied' : (code ?? (e as Error).message)}`);
    }
  }
  refuse(`snapshot_path ${parent} already holds ${INNER_TRIES} snapshots made this second`);
}

/** Copies a directory tree (small: embedding models), hard-linking files where it can. */
function copyTree(from: string, to: string): void {
  if (!fs.existsSync(from)) return;
  fs.mkdirSync(to, { recursive: true, mode: 0o700 });
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    const a = path.join(from, e.name);
    const b = path.join(to, e.name);
    if (e.isDirectory()) copyTree(a, b);
    else if (e.isFile()) {
      try {
        fs.linkSync(a, b);
      } catch {
        fs.copyFileSync(a, b);
      }
    }
  }
}

/** Writes a compacted, consistent copy of the store's environment into `dir` (which must exist and be empty). */
export async function copyEnvironment(store: Store, dir: string): Promise<void> {
  await store.env.flushed;
  await store.env.backup(dir, true);
  fs.chmodSync(path.join(dir, DATA_FILE), 0o600);
}

/** A snapshot of the whole data directory into `target` (see prepareTarget). */
export async function snapshot(store: Store, target: unknown): Promise<{ dir: string; bytes: number }> {
  const dir = prepareTarget(target, store.dir);
  try {
    await copyEnvironment(store, dir);
    copyTree(path.join(store.dir, 'models'), path.join(dir, 'models'));
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (e instanceof FathomError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC') throw new FathomError('NO_SPACE', `no space left on device while writing the snapshot to ${dir}`);
    throw new FathomError('BAD_REQUEST', `could not write the snapshot to ${dir}: ${(e as Error).message}`);
  }
  return { dir, bytes: fs.statSync(path.join(dir, DATA_FILE)).size };
}

/** Size of the environment's file. */
export function dataFileBytes(dir: string): number {
  try {
    return fs.statSync(path.join(dir, DATA_FILE)).size;
  } catch {
    return 0;
  }
}

/** Replaces the environment's file with a compacted copy (every environment on it must be closed). */
export function swapDataFile(dir: string, copyDir: string): void {
  fs.renameSync(path.join(copyDir, DATA_FILE), path.join(dir, DATA_FILE));
  fs.rmSync(copyDir, { recursive: true, force: true });
}

/**
 * Removes compacted copies a compaction left behind when it was killed before its rename
 * (`.compact-*`; the data file itself is whole either way). Called as a compaction starts:
 * the server runs one at a time.
 */
export function removeStaleCopies(dir: string): void {
  for (const e of fs.readdirSync(dir)) {
    if (e.startsWith('.compact-')) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
  }
}
