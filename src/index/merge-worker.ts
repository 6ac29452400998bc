/**
 * The segment merger, run apart from the thread that parses, indexes and answers queries,
 * so that merges use the second core and never block it. It opens the same LMDB
 * environment and commits each merge in its own short transaction.
 *
 *   in a worker thread (default)   lmdb-js shares the environment between threads of one
 *                                  process; source segments are read as copies
 *   in a child process (bulk       its own environment, reading source segments as views
 *   imports: Engine merges         of a snapshot pinned for one merge, closed after each:
 *   'process')                     the pages a merge read leave the process with it, so
 *                                  that neither process holds the whole map's pages
 *                                  (index/merger.ts MergeProcess)
 *
 * Messages in:  { id, collection, full, maxMerges }     out: { id, merges } | { id, error, code }
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { FathomError } from '../errors.js';
import { openStore, type Store } from '../storage/store.js';
import { mergeCollection } from './maintenance.js';
import { evictStore } from './manifest.js';

type Request = { id: number; collection: string; full?: boolean; maxMerges?: number };

// Merges are background work: on a busy machine, searches and imports win the CPU
// (Linux applies niceness to the calling thread).
try {
  os.setPriority(10);
} catch {
  /* not permitted: normal priority */
}

const reply = (m: object) => (parentPort ? parentPort.postMessage(m) : process.send!(m));
const failure = (id: number, e: unknown) => ({ id, error: (e as Error).message, code: e instanceof FathomError ? e.code : undefined });

if (parentPort) {
  const store = openStore((workerData as { dir: string }).dir, { create: false });
  parentPort.on('message', async (msg: Request) => {
    try {
      reply({ id: msg.id, merges: await mergeCollection(store, msg.collection, { full: msg.full, maxMerges: msg.maxMerges }) });
    } catch (e) {
      reply(failure(msg.id, e));
    }
  });
} else {
  const dir = process.argv[2]!;
  // one request at a time, each merge with a store of its own
  let queue = Promise.resolve();
  process.on('message', (msg: Request) => {
    queue = queue.then(async () => {
      let merges = 0;
      try {
        const max = msg.maxMerges ?? Infinity;
        while (merges < max) {
          const store: Store = openStore(dir, { create: false, pinSnapshot: true });
          let n: number;
          try {
            n = await mergeCollection(store, msg.collection, { full: msg.full, maxMerges: 1 });
          } finally {
            // (cached readers hold views of this store's map: forgotten before it is unmapped)
            evictStore(store);
            await store.close();
          }
          if (n === 0) break;
          merges += n;
        }
        reply({ id: msg.id, merges });
      } catch (e) {
        reply(failure(msg.id, e));
      }
    });
  });
  // the parent gone: nothing more to do
  process.on('disconnect', () => process.exit(0));
}
