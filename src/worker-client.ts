/**
 * One request/reply worker thread, started on first use. Every worker thread of the engine
 * is driven through it: segment merges, the preparation of import batches, image decoding,
 * model inference, and HTTP imports.
 *
 *   call(msg) --{id, ...msg}--> worker --{id, event, ...}*  (events of that call, if any)
 *                                      --{id, ...reply} | {id, error, code}--> resolve / reject
 *   post({id, ...})  a further message about a call in progress (an import's next chunk)
 *
 * The thread keeps the process alive only while a call is pending. A thread that fails or
 * exits rejects its pending calls. Without its compiled script (tests run the TypeScript
 * sources) a worker given its `source` is bundled from it with esbuild on first use; any
 * other is not available, and callers do the work on their own thread.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker, type Transferable } from 'node:worker_threads';
import { FathomError, type ErrorCode } from './errors.js';

/** A failure comes back as its message, and its FathomError code when it had one. */
type Reply = { id: number; error?: string; code?: ErrorCode; event?: string };

export interface WorkerOptions {
  workerData?: unknown;
  /** Names the thread in the errors of its death ("the <label> stopped"; default "worker thread"). */
  label?: string;
  /**
   * The script's TypeScript source: when the compiled script is missing (running from the
   * sources), it is bundled from this with esbuild on first use rather than doing without
   * a thread (for work that must not block the calling thread).
   */
  source?: URL;
  /** After the thread has failed, the next call starts a new one (default: no thread from then on). */
  restart?: boolean;
}

interface Pending<R> {
  resolve: (r: R & Reply) => void;
  reject: (e: Error) => void;
  onEvent?: (m: Reply & Record<string, unknown>) => void;
}

export class WorkerClient<R extends object> {
  private worker?: Worker;
  private failed = false;
  private death?: Error;
  private nextId = 1;
  private waiting = new Map<number, Pending<R>>();

  /** @param script the compiled worker (a file URL or path); missing means never start one */
  constructor(
    private readonly script: URL | string,
    private readonly opts: WorkerOptions = {},
  ) {}

  private path(): string | undefined {
    if (typeof this.script === 'string') return this.script;
    if (this.script.protocol !== 'file:') return undefined;
    const p = fileURLToPath(this.script);
    if (fs.existsSync(p)) return p;
    return this.opts.source ? bundleSource(this.opts.source) : undefined;
  }

  private get(): Worker | undefined {
    if (this.failed) return undefined;
    if (this.worker) return this.worker;
    const path = this.path();
    if (!path) {
      this.failed = true;
      return undefined;
    }
    const w = new Worker(path, { workerData: this.opts.workerData });
    w.unref();
    w.on('message', (m: R & Reply) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      if (m.event !== undefined) {
        p.onEvent?.(m as Reply & Record<string, unknown>);
        return;
      }
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) w.unref();
      if (m.error !== undefined) p.reject(m.code ? new FathomError(m.code, m.error) : new Error(m.error));
      else p.resolve(m);
    });
    const label = this.opts.label ?? 'worker thread';
    // a thread that fails or exits (close() terminates it) answers nothing more: its
    // pending calls are rejected rather than left waiting
    const fail = (e: Error) => {
      if (this.worker !== w) return;
      this.death ??= e;
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
      this.worker = undefined;
      if (this.opts.restart) this.death = undefined;
      else this.failed = true;
    };
    w.on('error', (e) => fail(new Error(`the ${label} failed: ${e.message}`)));
    w.on('exit', (code) => fail(new Error(`the ${label} stopped (exit code ${code})`)));
    this.worker = w;
    return w;
  }

  /** Whether calls go to the thread (starting it now if need be). */
  available(): boolean {
    return this.get() !== undefined;
  }

  /** Why the thread is gone, once it has failed or stopped (a model must then be loaded again). */
  get dead(): Error | undefined {
    return this.death;
  }

  /**
   * Sends a request; replies come back in the order requests were sent. `transfer` lists
   * buffers handed over (not copied); `onEvent` receives the messages the worker sends
   * about this call before its reply.
   */
  call(msg: object, opts: { transfer?: Transferable[]; onEvent?: (m: Reply & Record<string, unknown>) => void } = {}): Promise<R & Reply> {
    if (this.death) return Promise.reject(this.death);
    const w = this.get();
    if (!w) return Promise.reject(this.death ?? new Error('the worker thread is not available'));
    const id = this.nextId++;
    w.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, ...(opts.onEvent ? { onEvent: opts.onEvent } : {}) });
      w.postMessage({ ...msg, id }, opts.transfer ?? []);
    });
  }

  /** A further message about a call in progress (it carries the call's id). */
  post<M extends { id: number }>(msg: M, transfer: Transferable[] = []): void {
    this.worker?.postMessage(msg, transfer);
  }

  /** The id the next call will get (so that its events can be told apart before it is sent). */
  get upcomingId(): number {
    return this.nextId;
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.failed = true;
    this.death ??= new Error(`the ${this.opts.label ?? 'worker thread'} was closed`);
    for (const p of this.waiting.values()) p.reject(this.death);
    this.waiting.clear();
    if (w) await w.terminate();
  }
}

const bundled = new Map<string, string | undefined>();

/**
 * Bundles a worker's TypeScript source with esbuild (a development dependency) into
 * node_modules/.cache, once per process; undefined when that cannot be done. Written beside
 * and renamed into place, so that processes bundling at once never read a half-written file.
 */
function bundleSource(source: URL): string | undefined {
  const file = fileURLToPath(source);
  if (bundled.has(file)) return bundled.get(file);
  let out: string | undefined;
  let root = path.dirname(file);
  while (fs.existsSync(file) && !fs.existsSync(path.join(root, 'package.json')) && path.dirname(root) !== root) root = path.dirname(root);
  if (fs.existsSync(file) && fs.existsSync(path.join(root, 'package.json'))) {
    const outfile = path.join(root, 'node_modules', '.cache', 'fathom-workers', `${path.basename(file, '.ts')}.mjs`);
    const tmp = `${outfile}.${process.pid}`;
    try {
      const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
      esbuild.buildSync({ entryPoints: [file], outfile: tmp, bundle: true, platform: 'node', format: 'esm', packages: 'external', logLevel: 'silent' });
      fs.renameSync(tmp, outfile);
      out = outfile;
    } catch {
      out = undefined;
    }
  }
  bundled.set(file, out);
  return out;
}
