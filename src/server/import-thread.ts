/**
 * src/server/import-thread.ts: the worker thread that runs HTTP imports.
 *
 * Why a thread: an import parses and indexes documents in write transactions whose
 * callbacks run on the thread that queued them. On the serving thread, batches that
 * queue up behind a merge's commit then run back to back and block searches for
 * hundreds of milliseconds. Here they block only this thread; the serving thread just
 * forwards request bytes and result lines.
 *
 * It runs at a lower CPU priority (niceness 10) so that searches win the CPU on a busy
 * machine. The thread opens the data directory itself (lmdb-js shares one environment between
 * the threads of a process) with merges off; the serving thread is told after every
 * batch so that its engine schedules merges as usual.
 *
 * Protocol, through src/worker-client.ts (one thread serves any number of concurrent
 * imports, each a call with its own id):
 *   call:    {type:'start', id, collection, opts}
 *   events:  {id, event:'pull'}  {id, event:'lines', text}  {id, event:'batch', collection}
 *   reply:   {id}, or {id, error, code} when the import failed as a whole
 *   posted:  {type:'chunk', id, data}  {type:'end', id}  {type:'abort', id}
 * The thread pulls one chunk at a time, so a slow client or a slow reader of results
 * holds the import back instead of filling memory.
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Engine } from '../engine.js';
import { FathomError } from '../errors.js';
import type { ImportOptions } from '../io/import.js';

export type ToImportThread =
  | { type: 'start'; id: number; collection: string; opts: ImportOptions }
  | { type: 'chunk'; id: number; data: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'abort'; id: number };

/** The events of an import, before its reply. */
export type ImportEvent = { id: number; event: 'pull' } | { id: number; event: 'lines'; text: string } | { id: number; event: 'batch'; collection: string };

type FromImportThread = ImportEvent | { id: number } | { id: number; error: string; code: string };

/** Niceness of this thread (Linux applies it per thread): searches win the CPU over imports. */
const IMPORT_THREAD_NICENESS = 10;

if (parentPort) {
  const port = parentPort;
  try {
    os.setPriority(IMPORT_THREAD_NICENESS);
  } catch {
    /* not permitted here: run at normal priority */
  }
  const engine = Engine.open((workerData as { dir: string }).dir, { merges: 'off', create: false });
  const waiting = new Map<number, (chunk: Uint8Array | null | Error) => void>();
  const send = (m: FromImportThread) => port.postMessage(m);

  /** The request body, pulled from the serving thread one chunk at a time. */
  async function* body(id: number): AsyncGenerator<Uint8Array> {
    for (;;) {
      const chunk = await new Promise<Uint8Array | null | Error>((resolve) => {
        waiting.set(id, resolve);
        send({ id, event: 'pull' });
      });
      if (chunk === null) return;
      if (chunk instanceof Error) throw chunk;
      yield chunk;
    }
  }

  async function run(id: number, collection: string, opts: ImportOptions): Promise<void> {
    let pending: string[] = [];
    const flush = () => {
      if (pending.length === 0) return;
      send({ id, event: 'lines', text: pending.join('\n') });
      pending = [];
    };
    try {
      await engine.import(
        collection,
        body(id),
        {
          ...opts,
          afterBatch: () => {
            flush();
            send({ id, event: 'batch', collection });
          },
        },
        (line) => {
          pending.push(line);
        },
      );
      flush();
      send({ id });
    } catch (e) {
      flush();
      const fe = e instanceof FathomError ? e : undefined;
      send({ id, code: fe?.code ?? 'INTERNAL', error: fe?.message ?? String((e as Error)?.message ?? e) });
    } finally {
      waiting.delete(id);
    }
  }

  port.on('message', (m: ToImportThread) => {
    if (m.type === 'start') void run(m.id, m.collection, m.opts);
    else {
      const resolve = waiting.get(m.id);
      waiting.delete(m.id);
      resolve?.(m.type === 'chunk' ? m.data : m.type === 'end' ? null : new Error('the client went away'));
    }
  });
}
