/**
 * Schedules segment merges for an engine: in a worker thread when the compiled worker
 * is available (the normal case), otherwise on the calling thread between writes.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Store } from '../storage/store.js';
import { mergeCollection } from './maintenance.js';
import { readState } from './manifest.js';
import { planMerge } from './merge.js';

export class Merger {
  private worker?: Worker;
  private workerFailed = false;
  private nextId = 1;
  private waiting = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  private queue = new Set<string>();
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly useWorker: boolean,
  ) {}

  private workerPath(): string | undefined {
    const url = new URL('./merge-worker.js', import.meta.url);
    if (url.protocol !== 'file:') return undefined;
    const p = fileURLToPath(url);
    return fs.existsSync(p) ? p : undefined;
  }

  private getWorker(): Worker | undefined {
    if (!this.useWorker || this.workerFailed) return undefined;
    if (this.worker) return this.worker;
    const path = this.workerPath();
    if (!path) {
      this.workerFailed = true;
      return undefined;
    }
    const w = new Worker(path, { workerData: { dir: this.store.dir } });
    w.unref();
    w.on('message', (m: { id: number; merges?: number; error?: string }) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve(m.merges ?? 0);
    });
    w.on('error', (e) => {
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
      this.worker = undefined;
      this.workerFailed = true;
    });
    this.worker = w;
    return w;
  }

  private isDue(collection: string): boolean {
    const rec = this.store.collections.get(this.store.aliases.get(collection) ?? collection) as { id: number } | undefined;
    return !!rec && planMerge(readState(this.store, rec.id).segments) !== undefined;
  }

  /** Runs merges for a collection now (in the worker when there is one). */
  async merge(collection: string, opts: { full?: boolean; maxMerges?: number } = {}): Promise<number> {
    const w = this.getWorker();
    if (!w) return mergeCollection(this.store, collection, opts);
    const id = this.nextId++;
    w.ref();
    try {
      return await new Promise<number>((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        w.postMessage({ id, collection, ...opts });
      });
    } finally {
      if (this.waiting.size === 0) w.unref();
    }
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
        } catch {
          /* the collection may have been dropped meanwhile */
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
    if (this.worker) await this.worker.terminate();
    this.worker = undefined;
  }
}
