/**
 * Schedules segment merges for an engine: in a worker thread when the compiled worker
 * is available (the normal case), in a child process for bulk imports ('process': see
 * merge-worker.ts), otherwise on the calling thread between writes.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FathomError, type ErrorCode } from '../errors.js';
import { WorkerClient } from '../worker-client.js';
import type { Store } from '../storage/store.js';
import { mergeCollection } from './maintenance.js';
import { readState } from './manifest.js';
import { planMerge } from './merge.js';

/** Where merges run: a worker thread, a child process, or the calling thread. */
export type MergeMode = 'worker' | 'process' | 'inline';

/**
 * The merger in a child process (merge-worker.ts run as a script), started on first use;
 * requests answered in order. Unavailable without the compiled script (tests run the
 * sources): merges then run in the worker thread.
 */
class MergeProcess {
  private child?: ChildProcess;
  private failed = false;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();

  constructor(private readonly dir: string) {}

  private get(): ChildProcess | undefined {
    if (this.child || this.failed) return this.child;
    const script = fileURLToPath(new URL('./merge-worker.js', import.meta.url));
    if (!fs.existsSync(script)) {
      this.failed = true;
      return undefined;
    }
    const child = fork(script, [this.dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'json' });
    child.on('message', (m: { id: number; merges?: number; error?: string; code?: ErrorCode }) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) child.unref();
      if (m.error !== undefined) p.reject(m.code ? new FathomError(m.code, m.error) : new Error(m.error));
      else p.resolve(m.merges ?? 0);
    });
    const fail = (e: Error) => {
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
      this.child = undefined;
      this.failed = true;
    };
    child.on('error', (e) => fail(new Error(`the merge process failed: ${e.message}`)));
    child.on('exit', (code) => fail(new Error(`the merge process stopped (exit code ${code})`)));
    child.unref();
    this.child = child;
    return child;
  }

  available(): boolean {
    return this.get() !== undefined;
  }

  call(msg: { collection: string; full?: boolean; maxMerges?: number }): Promise<number> {
    const child = this.get();
    if (!child) return Promise.reject(new Error('the merge process is not available'));
    const id = this.nextId++;
    child.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      child.send({ ...msg, id });
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.failed = true;
    this.child = undefined;
    if (!child) return;
    // (held until it has gone: an unreferenced child would let this process end first, mid-close)
    child.ref();
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      if (child.connected) child.disconnect();
      else child.kill();
    });
  }
}

export class Merger {
  private readonly worker?: WorkerClient<{ merges: number }>;
  private readonly process?: MergeProcess;
  private queue = new Set<string>();
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    mode: MergeMode,
    /** Told of a background merge that failed (the engine logs it). */
    private readonly onError: (collection: string, e: unknown) => void,
  ) {
    if (mode === 'process') this.process = new MergeProcess(store.dir);
    if (mode !== 'inline') this.worker = new WorkerClient(new URL('./merge-worker.js', import.meta.url), { workerData: { dir: store.dir }, label: 'merge thread' });
  }

  private isDue(collection: string): boolean {
    const rec = this.store.collections.get(this.store.aliases.get(collection) ?? collection) as { id: number } | undefined;
    return !!rec && planMerge(readState(this.store, rec.id).segments) !== undefined;
  }

  /** A merge of a collection that is gone by the time it runs is no failure. */
  private stillThere(collection: string): boolean {
    try {
      return this.store.collections.get(this.store.aliases.get(collection) ?? collection) !== undefined;
    } catch {
      return true; // the store cannot be read: the failure is worth reporting
    }
  }

  /** Runs merges for a collection now (in the worker when there is one). */
  async merge(collection: string, opts: { full?: boolean; maxMerges?: number } = {}): Promise<number> {
    if (this.process?.available()) return this.process.call({ collection, ...opts });
    if (!this.worker?.available()) return mergeCollection(this.store, collection, opts);
    return (await this.worker.call({ collection, ...opts })).merges ?? 0;
  }

  /** Notes that a collection was written; merges run in the background when due. */
  schedule(collection: string): void {
    if (this.closed) return;
    this.queue.add(collection);
    if (this.running) return;
    this.running = (async () => {
      while (this.queue.size > 0 && !this.closed) {
        const [name] = this.queue;
        this.queue.delete(name!);
        try {
          if (this.isDue(name!)) {
            await this.merge(name!, { maxMerges: 1 });
            if (this.isDue(name!)) this.queue.add(name!);
          }
        } catch (e) {
          if (!this.closed && this.stillThere(name!)) this.onError(name!, e);
        }
        await new Promise((r) => setImmediate(r));
      }
      this.running = null;
    })();
  }

  /** Resolves when no merge is queued or running. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.idle().catch(() => undefined);
    await this.process?.close();
    await this.worker?.close();
  }
}
