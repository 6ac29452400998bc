/**
 * One request/reply worker thread, started on first use: the merge worker and the import
 * prepare worker are both driven through it.
 *
 *   call(msg) --{id, ...msg}--> worker --{id, ...reply} | {id, error}--> resolve / reject
 *
 * The thread keeps the process alive only while a call is pending. Without its compiled
 * script (tests run from the TypeScript sources), or once it has failed, `available()` is
 * false and callers do the work on their own thread.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { FathomError, type ErrorCode } from './errors.js';

/** A failure comes back as its message, and its FathomError code when it had one. */
type Reply = { id: number; error?: string; code?: ErrorCode };

export class WorkerClient<R extends object> {
  private worker?: Worker;
  private failed = false;
  private nextId = 1;
  private waiting = new Map<number, { resolve: (r: R & Reply) => void; reject: (e: Error) => void }>();

  /** @param script the compiled worker (a file URL or path); missing means never start one */
  constructor(
    private readonly script: URL | string,
    private readonly workerData?: unknown,
  ) {}

  private path(): string | undefined {
    if (typeof this.script === 'string') return this.script;
    if (this.script.protocol !== 'file:') return undefined;
    const p = fileURLToPath(this.script);
    return fs.existsSync(p) ? p : undefined;
  }

  private get(): Worker | undefined {
    if (this.failed) return undefined;
    if (this.worker) return this.worker;
    const path = this.path();
    if (!path) {
      this.failed = true;
      return undefined;
    }
    const w = new Worker(path, { workerData: this.workerData });
    w.unref();
    w.on('message', (m: R & Reply) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) w.unref();
      if (m.error !== undefined) p.reject(m.code ? new FathomError(m.code, m.error) : new Error(m.error));
      else p.resolve(m);
    });
    // a thread that fails or exits (close() terminates it) answers nothing more: its
    // pending calls are rejected rather than left waiting
    const fail = (e: Error) => {
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
      this.worker = undefined;
      this.failed = true;
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`the worker thread exited (code ${code})`)));
    this.worker = w;
    return w;
  }

  /** Whether calls go to the thread (starting it now if need be). */
  available(): boolean {
    return this.get() !== undefined;
  }

  /** Sends a request; replies come back in the order requests were sent. */
  call(msg: object): Promise<R & Reply> {
    const w = this.get();
    if (!w) return Promise.reject(new Error('the worker thread is not available'));
    const id = this.nextId++;
    w.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.postMessage({ ...msg, id });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.failed = true;
    if (w) await w.terminate();
  }
}
