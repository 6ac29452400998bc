/**
 * src/server/importer.ts: runs an HTTP import off the serving thread.
 *
 * One import thread per server process (import-thread.ts), driven through the worker
 * client (src/worker-client.ts), started on the first import and kept while imports run;
 * it may serve several imports at once, each one call whose events pull request chunks and
 * push result lines. The serving thread only passes request chunks in and result lines out.
 * A thread that fails fails the imports in progress, and the next import starts a new one.
 * When the compiled thread script is not there (tests run the TypeScript sources), imports
 * run on this thread instead.
 */
import type { Engine } from '../engine.js';
import type { ImportOptions } from '../io/import.js';
import { WorkerClient } from '../worker-client.js';
import type { ImportEvent, ToImportThread } from './import-thread.js';

/** Receives result lines (joined by '\n', without a trailing one); may ask to wait. */
export type LinesSink = (text: string) => void | Promise<void>;

export class Importer {
  private readonly thread?: WorkerClient<object>;

  constructor(
    private readonly engine: Engine,
    private readonly onBatch: (collection: string) => void,
    /** Use the import thread (false: import on this thread, as a cluster node must). */
    private readonly useThread = true,
  ) {
    if (useThread) this.thread = new WorkerClient(new URL('./import-thread.js', import.meta.url), { workerData: { dir: engine.dir }, label: 'import thread', restart: true });
  }

  /** A new importer like this one (after close: compaction ends the thread). */
  fresh(): Importer {
    return new Importer(this.engine, this.onBatch, this.useThread);
  }

  /** Imports `source` into `collection`; result lines reach `sink` in order. */
  run(collection: string, source: AsyncIterable<Buffer | Uint8Array | string>, opts: ImportOptions, sink: LinesSink): Promise<void> {
    const thread = this.thread;
    if (!thread?.available()) {
      return this.engine
        .import(collection, source, { ...opts, afterBatch: () => this.onBatch(collection) }, (line) => sink(line))
        .then(() => undefined);
    }
    const chunks = source[Symbol.asyncIterator]();
    // result delivery in order; the next chunk goes once the results so far are delivered (backpressure)
    let delivering: Promise<void> = Promise.resolve();
    const id = thread.upcomingId;
    const onEvent = (m: Record<string, unknown>) => {
      const e = m as ImportEvent;
      switch (e.event) {
        case 'pull':
          void delivering.then(async () => {
            try {
              const r = await chunks.next();
              if (r.done) thread.post({ type: 'end', id } satisfies ToImportThread);
              else {
                const data = toBytes(r.value);
                thread.post({ type: 'chunk', id, data } satisfies ToImportThread, [data.buffer as ArrayBuffer]);
              }
            } catch {
              thread.post({ type: 'abort', id } satisfies ToImportThread);
            }
          });
          break;
        case 'lines':
          delivering = delivering.then(() => sink(e.text));
          break;
        case 'batch':
          this.onBatch(e.collection);
          break;
      }
    };
    const start: Omit<Extract<ToImportThread, { type: 'start' }>, 'id'> = { type: 'start', collection, opts };
    return thread.call(start, { onEvent }).then(
      () => delivering,
      (err: Error) => delivering.then(() => Promise.reject(err)),
    );
  }

  async close(): Promise<void> {
    await this.thread?.close();
  }
}

/** A copy of the chunk in its own buffer, so that it can be transferred, not cloned. */
function toBytes(v: Buffer | Uint8Array | string): Uint8Array {
  return typeof v === 'string' ? new Uint8Array(Buffer.from(v)) : new Uint8Array(v);
}
