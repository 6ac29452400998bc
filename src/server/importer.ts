/**
 * src/server/importer.ts: runs an HTTP import off the serving thread.
 *
 * One import thread per server process (import-thread.ts), started on the first import
 * and kept while imports run; it may serve several imports at once. The serving thread
 * only passes request chunks in and result lines out. When the compiled thread script
 * is not there (tests run the TypeScript sources), imports run on this thread instead.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Engine } from '../engine.js';
import { FathomError, type ErrorCode } from '../errors.js';
import type { ImportOptions } from '../io/import.js';
import type { FromImportThread, ToImportThread } from './import-thread.js';

/** Receives result lines (joined by '\n', without a trailing one); may ask to wait. */
export type LinesSink = (text: string) => void | Promise<void>;

interface Job {
  source: AsyncIterator<Buffer | Uint8Array | string>;
  sink: LinesSink;
  collection: string;
  /** Result delivery in order; pulls wait for it (backpressure). */
  delivering: Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
}

export class Importer {
  private worker?: Worker;
  private failed = false;
  private nextId = 1;
  private jobs = new Map<number, Job>();

  constructor(
    private readonly engine: Engine,
    private readonly onBatch: (collection: string) => void,
    /** Use the import thread (false: import on this thread, as a cluster node must). */
    private readonly useThread = true,
  ) {
    if (!useThread) this.failed = true;
  }

  /** A new importer like this one (after close: compaction ends the thread). */
  fresh(): Importer {
    return new Importer(this.engine, this.onBatch, this.useThread);
  }

  private scriptPath(): string | undefined {
    const url = new URL('./import-thread.js', import.meta.url);
    if (url.protocol !== 'file:') return undefined;
    const p = fileURLToPath(url);
    return fs.existsSync(p) ? p : undefined;
  }

  private thread(): Worker | undefined {
    if (this.worker || this.failed) return this.worker;
    const script = this.scriptPath();
    if (!script) {
      this.failed = true;
      return undefined;
    }
    const w = new Worker(script, { workerData: { dir: this.engine.dir } });
    w.on('message', (m: FromImportThread) => this.onMessage(w, m));
    w.on('error', (e) => {
      for (const job of this.jobs.values()) job.reject(e);
      this.jobs.clear();
      this.worker = undefined;
    });
    w.unref();
    this.worker = w;
    return w;
  }

  private onMessage(w: Worker, m: FromImportThread): void {
    const job = this.jobs.get(m.id);
    if (!job) return;
    switch (m.type) {
      case 'pull':
        // The next chunk goes once the results so far are delivered (or buffered).
        void job.delivering.then(async () => {
          try {
            const r = await job.source.next();
            if (r.done) w.postMessage({ type: 'end', id: m.id } satisfies ToImportThread);
            else {
              const data = toBytes(r.value);
              w.postMessage({ type: 'chunk', id: m.id, data } satisfies ToImportThread, [data.buffer as ArrayBuffer]);
            }
          } catch {
            w.postMessage({ type: 'abort', id: m.id } satisfies ToImportThread);
          }
        });
        break;
      case 'lines':
        job.delivering = job.delivering.then(() => job.sink(m.text));
        break;
      case 'batch':
        this.onBatch(m.collection);
        break;
      case 'done':
        this.finish(m.id, job, undefined);
        break;
      case 'failed':
        this.finish(m.id, job, new FathomError(m.code as ErrorCode, m.message));
        break;
    }
  }

  private finish(id: number, job: Job, err: Error | undefined): void {
    this.jobs.delete(id);
    if (this.jobs.size === 0) this.worker?.unref();
    void job.delivering.then(
      () => (err ? job.reject(err) : job.resolve()),
      (e) => job.reject(e as Error),
    );
  }

  /** Imports `source` into `collection`; result lines reach `sink` in order. */
  run(collection: string, source: AsyncIterable<Buffer | Uint8Array | string>, opts: ImportOptions, sink: LinesSink): Promise<void> {
    const w = this.thread();
    if (!w) {
      return this.engine
        .import(collection, source, { ...opts, afterBatch: () => this.onBatch(collection) }, (line) => sink(line))
        .then(() => undefined);
    }
    return new Promise<void>((resolve, reject) => {
      const id = this.nextId++;
      this.jobs.set(id, { source: source[Symbol.asyncIterator](), sink, collection, delivering: Promise.resolve(), resolve, reject });
      w.ref();
      w.postMessage({ type: 'start', id, collection, opts } satisfies ToImportThread);
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.failed = true;
    if (w) await w.terminate();
  }
}

/** A copy of the chunk in its own buffer, so that it can be transferred, not cloned. */
function toBytes(v: Buffer | Uint8Array | string): Uint8Array {
  return typeof v === 'string' ? new Uint8Array(Buffer.from(v)) : new Uint8Array(v);
}
