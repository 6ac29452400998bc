/**
 * Bench-only: a worker thread that answers searches for threads-server.ts.
 * Messages in: { id, collection, params }   out: { id, json } | { id, status, message }
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Engine } from '../../src/engine.js';
import { FathomError } from '../../src/errors.js';
import { stringifyJson } from '../../src/json.js';

const engine = Engine.open((workerData as { dir: string }).dir, { merges: 'off' });
parentPort!.on('message', async (m: { id: number; collection: string; params: Record<string, unknown> }) => {
  try {
    parentPort!.postMessage({ id: m.id, json: stringifyJson(await engine.search(m.collection, m.params)) });
  } catch (e) {
    const fe = e instanceof FathomError ? e : new FathomError('INTERNAL', 'search failed');
    parentPort!.postMessage({ id: m.id, code: fe.code, message: fe.message });
  }
});
