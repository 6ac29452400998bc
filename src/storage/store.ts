/**
 * src/storage: here is a data directory, give me its databases.
 *
 * One LMDB environment per data directory, with named sub-databases. Keys are
 * ordered arrays (lmdb-js ordered-binary), so everything belonging to one collection
 * sits together and is scanned with `getRange`:
 *
 *   meta         'format' -> {version}, counters ('next_collection_id', 'next_segment_id', 'next_key_id')
 *   collections  name -> CollectionRecord (schema, numeric id, created_at)
 *   aliases      alias -> collection name
 *   colstate     collId -> CollectionState (next seq, live count, segment manifest)
 *   docs         [collId, seq] -> document as JSON text (doctext.ts)
 *   ids          [collId, id] -> seq
 *   segments     [collId, segId, fieldId] -> immutable index blob (binary)
 *   deletes      [collId, segId] -> deletion bitmap of that segment (binary)
 *   keys         keyId -> API key record (value hashed)
 *   stopwords    name -> stopword set
 *   vectors      [collId, fieldId, seq] -> float32 vector (binary)
 *   aux          [area, ...] -> records of later features (analytics, conversations)
 *
 * `models/` and `vectors/` directories beside the environment hold embedding models
 * and HNSW graph files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Database, RootDatabase } from 'lmdb';
import type * as LmdbModule from 'lmdb';

import { FORMAT_VERSION, LMDB_MAP_SIZE } from '../defaults.js';
import { FathomError } from '../errors.js';
import { docEncoder } from './doctext.js';
import { checkRoomToCreate, flushed, installLmdbErrorHandling, noSpaceIn, settled, transaction } from './diskfull.js';
import { currentCommand } from '../clock.js';
import { settlesBy } from '../deadline.js';

/** `meta` key of the last replicated command this directory has applied (src/cluster). */
export const APPLIED_KEY = 'cluster_applied_seq';

// lmdb is loaded through its CommonJS build: one bundled file instead of a dozen ES modules
// to resolve and compile on every cold `fathom` command.
// Every caller in the process goes through this one instance.
const { open } = createRequire(import.meta.url)('lmdb') as typeof LmdbModule;

export type Key = string | number | (string | number)[];

export interface Store {
  readonly dir: string;
  readonly readOnly: boolean;
  readonly env: RootDatabase;
  readonly meta: Database<any, Key>;
  readonly collections: Database<any, string>;
  readonly aliases: Database<string, string>;
  readonly colstate: Database<any, number>;
  readonly docs: Database<any, Key>;
  /** The same database as `docs`, read as raw bytes (stored JSON text). */
  readonly docsRaw: Database<Buffer, Key>;
  readonly ids: Database<number, Key>;
  readonly segments: Database<Buffer, Key>;
  readonly deletes: Database<Buffer, Key>;
  readonly keys: Database<any, number>;
  readonly stopwords: Database<any, string>;
  readonly vectors: Database<Buffer, Key>;
  readonly aux: Database<any, Key>;
  /**
   * Reads an immutable blob (an index segment): straight from the memory map when the store
   * pins a snapshot and the blob is 16 MB or more (see OpenOptions.pinSnapshot), else a copy.
   */
  readBlob(db: Database<Buffer, Key>, key: Key): Uint8Array | undefined;
  /**
   * Reads a small msgpack record that every request needs (a collection record, a collection
   * state) and hands back the same decoded object for as long as its stored bytes are
   * unchanged. The result is shared and frozen: copy it to change it.
   */
  readShared<V>(db: Database<any, any>, key: string | number): V | undefined;
  /**
   * Ends pinned reads and closes the environment. With `exiting` (a read-only process about
   * to exit) the environment is left for the exit to release: closing it makes V8 run a
   * full garbage collection for the unmapped memory, a large share of a cold `fathom search`.
   */
  close(opts?: { exiting?: boolean }): Promise<void>;
  /**
   * Runs `fn` in its own nested write transaction (see `write`; `bytes`: about what it
   * writes, for the disk's room check, diskfull.ts). Every write of the process goes
   * through here, so that `hold` can stop new ones.
   */
  transact<T>(fn: () => T, bytes?: number): Promise<T>;
  /**
   * Holds new transactions back and resolves true once those already started have committed
   * and been flushed, or false when they have not by `deadline` (ms since the epoch; the
   * store stays held either way). `release` lets them go. Used to close and reopen the
   * environment (compaction swaps its file).
   */
  hold(deadline?: number): Promise<boolean>;
  release(): void;
  /** Closes the environment (between hold and release); nothing may read the store until openEnv. */
  closeEnv(): Promise<void>;
  /** Opens the environment again from its file, which may have been replaced meanwhile. */
  openEnv(): void;
}

/**
 * Decoded records by database and key, with the bytes they were decoded from. Hot: two
 * lookups per search. Comparing ~1 KB of bytes costs far less than msgpack-decoding a record
 * again, and it sees writes from other processes (the bytes change), which a plain cache
 * would not.
 */
function sharedReader(): Store['readShared'] {
  const caches = new WeakMap<object, Map<string | number, { bytes: Buffer; value: unknown }>>();
  return <V>(db: Database<any, any>, key: string | number): V | undefined => {
    // lmdb-js's shared read buffer, valid until the next read; its `length` property says
    // how many bytes are this value (the buffer itself is larger)
    const shared = (db as any).getBinaryFast(key) as Buffer | undefined;
    let cache = caches.get(db);
    if (shared === undefined) {
      cache?.delete(key);
      return undefined;
    }
    const raw = shared.subarray(0, shared.length);
    if (!cache) caches.set(db, (cache = new Map()));
    const hit = cache.get(key);
    if (hit && hit.bytes.equals(raw)) return hit.value as V;
    const bytes = Buffer.from(raw);
    const value = deepFreeze(db.get(key)) as V;
    cache.set(key, { bytes, value });
    return value;
  };
}

/** Freezes a decoded record and everything in it: a caller that changes a shared record throws instead of corrupting every later read. */
function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as object)) deepFreeze(x);
  }
  return v;
}

const DATA_FILE = 'data.mdb';
const LOCK_FILE = 'lock.mdb';

export interface OpenOptions {
  /** Create the directory when it does not exist (default true). */
  create?: boolean;
  readOnly?: boolean;
  /**
   * Short-lived processes (`fathom search`): hold one read transaction until close
   * and read index segments straight from the memory map instead of copying them, so that a
   * cold query touches only the pages it needs (copying a large segment whole costs more
   * than the rest of a search).
   * Safe because LMDB never reuses a page a live read transaction can see, and segments are
   * immutable (ids are never reused): a segment found in the pinned snapshot has the same
   * bytes in every later one. Default false (a long-lived process must not pin old pages).
   */
  pinSnapshot?: boolean;
}

/** Opens (and, when allowed, creates) a data directory. Fails with a clear message on anything else. */
export function openStore(dir: string, opts: OpenOptions = {}): Store {
  installLmdbErrorHandling();
  const create = opts.create ?? true;
  const readOnly = opts.readOnly ?? false;
  const abs = path.resolve(dir);
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(abs);
  } catch {
    st = undefined;
  }
  if (st && !st.isDirectory()) {
    throw new FathomError('DATA_DIR', `${dir} is a file, not a Fathom data directory`);
  }
  if (!st) {
    if (!create || readOnly) throw new FathomError('DATA_DIR', `data directory ${dir} does not exist`);
    checkRoomToCreate(abs);
    try {
      mkdirp(abs);
    } catch (e) {
      const full = noSpaceIn(e, path.dirname(abs), 'creating the data directory');
      if (full) throw full;
      throw new FathomError('DATA_DIR', `cannot create data directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  } else {
    const entries = fs.readdirSync(abs);
    // a new directory may already hold user models (models/) before the first start
    if (!entries.includes(DATA_FILE) && entries.some((e) => !e.startsWith('.') && e !== 'models' && e !== 'vectors')) {
      throw new FathomError('DATA_DIR', `${dir} is not a Fathom data directory (it has files but no ${DATA_FILE})`);
    }
    if (!entries.includes(DATA_FILE) && readOnly) {
      throw new FathomError('DATA_DIR', `data directory ${dir} is empty`);
    }
  }
  const fresh = !fs.existsSync(path.join(abs, DATA_FILE));
  if (fresh && !readOnly && st) checkRoomToCreate(abs);
  const openEnv = (): RootDatabase => {
    try {
      return open({
        path: abs,
        // lmdb-js takes a path with an extension (`data.v2`, mktemp's `tmp.XXXX`) for a file
        noSubdir: false,
        maxDbs: 32,
        mapSize: LMDB_MAP_SIZE,
        readOnly,
        // Writers await `env.flushed` before acknowledging (see ARCHITECTURE.md, durability).
      });
    } catch (e) {
      const full = noSpaceIn(e, abs, 'creating the data directory');
      if (full) throw full;
      throw new FathomError('DATA_DIR', `cannot open data directory ${dir}: ${(e as Error).message}`);
    }
  };
  const env = openEnv();
  let store: Store;
  try {
    store = { dir: abs, readOnly, ...databases(env, readOnly) } as unknown as Store;
    Object.assign(store, {
      readBlob: (d: Database<Buffer, Key>, key: Key) => d.getBinary(key) ?? undefined,
      readShared: sharedReader(),
      // (a failed commit leaves lmdb-js waiting for a flush that never comes: see diskfull.ts)
      close: async () => {
        await settled(store);
        return store.env.close();
      },
    });
    writeGate(store);
    Object.assign(store, {
      closeEnv: async () => {
        await settled(store);
        return store.env.close();
      },
      openEnv: () => Object.assign(store, databases(openEnv(), readOnly)),
    });
    if (opts.pinSnapshot) {
      const pinned = env.useReadTransaction();
      // getBinaryFast hands out values of 16 MB and more as views of the map; smaller ones
      // arrive in a buffer reused by the next read, so those are copied.
      store.readBlob = (d, key) => {
        const b = (d as any).getBinaryFast(key, { transaction: pinned }) as (Uint8Array & { isGlobal?: boolean }) | undefined;
        if (b === undefined) return d.getBinary(key) ?? undefined; // written after the pin
        return b.isGlobal ? Uint8Array.prototype.slice.call(b, 0, b.length) : b;
      };
      store.close = async (o) => {
        pinned.done();
        if (o?.exiting && readOnly) return;
        await settled(store);
        return env.close();
      };
    }
  } catch (e) {
    void env.close();
    if (e instanceof FathomError) throw e;
    throw new FathomError('DATA_DIR', `cannot open data directory ${dir}: ${(e as Error).message}`);
  }
  const format = store.meta.get('format') as { version: number } | undefined;
  if (format === undefined) {
    const hasData = [...store.collections.getKeys({ limit: 1 })].length > 0;
    if (!fresh && hasData) {
      void env.close();
      throw new FathomError('DATA_DIR', `${dir} is not a Fathom data directory (no format version)`);
    }
    if (!readOnly) {
      try {
        store.meta.putSync('format', { version: FORMAT_VERSION, created_at: Math.floor(Date.now() / 1000) });
      } catch (e) {
        void env.close();
        throw noSpaceIn(e, abs, 'creating the data directory') ?? e;
      }
    }
  } else if (typeof format?.version !== 'number') {
    void env.close();
    throw new FathomError('DATA_DIR', `${dir} is not a Fathom data directory (bad format record)`);
  } else if (format.version > FORMAT_VERSION) {
    void env.close();
    throw new FathomError(
      'DATA_DIR',
      `data directory ${dir} has format version ${format.version}, newer than this Fathom supports (${FORMAT_VERSION}); upgrade Fathom`,
    );
  }
  if (fresh && !readOnly) {
    for (const f of [DATA_FILE, LOCK_FILE]) {
      try {
        fs.chmodSync(path.join(abs, f), 0o600);
      } catch {
        /* the lock file may live elsewhere on some systems */
      }
    }
    try {
      fs.mkdirSync(path.join(abs, 'models'), { recursive: true, mode: 0o700 });
    } catch (e) {
      void env.close();
      throw noSpaceIn(e, abs, 'creating the data directory') ?? e;
    }
  }
  return store;
}

/** The environment's named databases (a new set each time the environment is opened). */
function databases(env: RootDatabase, readOnly: boolean) {
  const db = <V = any, K extends Key = Key>(name: string, encoding: 'msgpack' | 'binary' | 'ordered-binary' = 'msgpack') =>
    env.openDB<V, K>({ name, encoding, create: !readOnly, int64AsType: 'auto' } as any);
  return {
    env,
    meta: db('meta'),
    collections: db<any, string>('collections'),
    aliases: db<string, string>('aliases'),
    colstate: db<any, number>('colstate'),
    docs: env.openDB<any, Key>({ name: 'docs', encoder: docEncoder, create: !readOnly } as any),
    docsRaw: env.openDB<Buffer, Key>({ name: 'docs', encoding: 'binary', create: !readOnly } as any),
    ids: db<number>('ids'),
    segments: db<Buffer>('segments', 'binary'),
    deletes: db<Buffer>('deletes', 'binary'),
    keys: db<any, number>('keys'),
    stopwords: db<any, string>('stopwords'),
    vectors: db<Buffer>('vectors', 'binary'),
    aux: db('aux'),
  };
}

/**
 * Gives a store its write gate: `transact` runs a nested transaction unless the store is
 * held, in which case it waits for `release`; `hold` resolves once the transactions already
 * started have finished.
 */
function writeGate(store: Store): void {
  let held: Promise<void> | null = null;
  let releaseHeld: () => void = () => {};
  let running = 0;
  const drained: Array<() => void> = [];
  const finished = () => {
    running--;
    if (running === 0) for (const d of drained.splice(0)) d();
  };
  const transact = async <T>(fn: () => T, bytes = 0): Promise<T> => {
    while (held) await held;
    running++;
    // A replicated command's transactions record its sequence with its effects, so a node
    // that restarts resumes after exactly the commands it applied (src/cluster).
    const cmd = currentCommand();
    const body = cmd
      ? () => {
          const r = fn();
          const prev = (store.meta.get(APPLIED_KEY) as number | undefined) ?? 0;
          if (cmd.seq > prev) store.meta.put(APPLIED_KEY, cmd.seq);
          return r;
        }
      : fn;
    try {
      return await transaction(store, body, bytes);
    } finally {
      finished();
    }
  };
  Object.assign(store, {
    transact,
    hold: async (deadline = Infinity) => {
      if (!held) held = new Promise<void>((r) => (releaseHeld = r));
      if (running > 0 && !(await settlesBy(new Promise<void>((r) => drained.push(r)), deadline))) return false;
      return settlesBy(flushed(store), deadline);
    },
    release: () => {
      const r = releaseHeld;
      held = null;
      r();
    },
  });
}

/**
 * Creates a directory and its missing parents, owner-only. (Node 20's recursive mkdirSync
 * never returns for some impossible paths, such as ones under /proc.)
 */
function mkdirp(abs: string): void {
  const missing: string[] = [];
  let cur = abs;
  while (!fs.existsSync(cur)) {
    missing.push(cur);
    const parent = path.dirname(cur);
    if (parent === cur) break;
    cur = parent;
  }
  for (const d of missing.reverse()) fs.mkdirSync(d, { mode: 0o700 });
}

/** Increments a counter in `meta`; call inside a write transaction. */
export function nextCounter(store: Store, name: string, start = 1): number {
  const cur = (store.meta.get(name) as number | undefined) ?? start;
  store.meta.put(name, cur + 1);
  return cur;
}

/**
 * Runs `fn` in a write transaction and resolves once it is committed and flushed to disk.
 *
 * lmdb-js batches queued async transactions into one LMDB commit; each callback gets its
 * own nested transaction (diskfull.ts `transaction`), so that a throw rolls back exactly
 * that callback's writes (a plain `transaction` callback that throws would still commit what
 * it wrote). Waiting for the flush makes an acknowledged write survive a machine crash. A
 * commit that cannot be written (a full disk: FathomError NO_SPACE) rejects, and stores nothing.
 */
export async function write<T>(store: Store, fn: () => T): Promise<T> {
  const result = await store.transact(fn);
  await flushed(store);
  return result;
}

/** Like `write` but resolves when committed (visible), before the flush. */
export function writeQueued<T>(store: Store, fn: () => T): Promise<T> {
  return store.transact(fn);
}
