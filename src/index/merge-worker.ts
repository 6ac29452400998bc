/**
 * Worker thread that merges segments, so that merges use the second core and never
 * block the thread that parses, indexes and answers queries. It opens the same LMDB
 * environment (lmdb-js shares it between threads of one process) and commits each
 * merge in its own short transaction.
 *
 * Messages in:  { id, collection, full, maxMerges, below }     out: { id, merges } | { id, error }
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { FathomError } from '../errors.js';
import { openStore } from '../storage/store.js';
import { mergeCollection, type MergeOptions } from './maintenance.js';

// Merges are background work: on a busy machine, searches and imports win the CPU
// (Linux applies niceness to the calling thread).
try {
  os.setPriority(10);
} catch {
  /* not permitted: normal priority */
}
const store = openStore((workerData as { dir: string }).dir, { create: false });

parentPort!.on('message', async (msg: { id: number; collection: string } & MergeOptions) => {
  try {
    const merges = await mergeCollection(store, msg.collection, { full: msg.full, maxMerges: msg.maxMerges, below: msg.below });
    parentPort!.postMessage({ id: msg.id, merges });
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: (e as Error).message, code: e instanceof FathomError ? e.code : undefined });
  }
});
