/**
 * Bench-only: the real app in one process with searches run on a pool of worker
 * threads (the alternative to a cluster of processes that bench.ts compares).
 *
 *   node <bundle>/threads-server.mjs <data-dir> <port> <api-key> <threads>
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Engine } from '../../src/engine.js';
import { FathomError, type ErrorCode } from '../../src/errors.js';
import { buildApp } from '../../src/server/app.js';

const [dir, port, key, n] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const workers = Array.from({ length: Number(n) }, () => new Worker(path.join(here, 'search-thread.mjs'), { workerData: { dir } }));
const waiting = new Map<number, { resolve: (s: string) => void; reject: (e: Error) => void }>();
let next = 0;
for (const w of workers) {
  w.on('message', (m: { id: number; json?: string; code?: ErrorCode; message?: string }) => {
    const p = waiting.get(m.id)!;
    waiting.delete(m.id);
    if (m.json !== undefined) p.resolve(m.json);
    else p.reject(new FathomError(m.code!, m.message!));
  });
}
const engine = Engine.open(dir!, { merges: 'off' });
const { app } = buildApp({
  engine,
  apiKey: key,
  logLevel: 'warn',
  searchExecutor: (collection, params, scope) =>
    new Promise((resolve, reject) => {
      // the experiment's workers take plain searches; a scoped key's bounds would be lost
      if (scope) return reject(new FathomError('BAD_REQUEST', 'the worker-threads experiment does not serve scoped search keys'));
      const id = next++;
      waiting.set(id, { resolve, reject });
      workers[id % workers.length]!.postMessage({ id, collection, params });
    }),
});
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', async () => {
  await app.close();
  await Promise.all(workers.map((w) => w.terminate()));
  await engine.close();
});
