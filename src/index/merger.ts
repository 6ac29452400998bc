/**
 * Schedules segment merges for an engine: in a worker thread when the compiled worker
 * is available (the normal case), otherwise on the calling thread between writes.
 */
import { WorkerClient } from '../worker-client.js';
import type { Store } from '../storage/store.js';
import { mergeCollection, type MergeOptions } from './maintenance.js';
import { readState } from './manifest.js';
import { planMerge } from './merge.js';

export class Merger {
  private readonly worker?: WorkerClient<{ merges: number }>;
  private queue = new Set<string>();
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly store: Store,
    useWorker: boolean,
    /** Told of a background merge that failed (the engine logs it). */
    private readonly onError: (collection: string, e: unknown) => void,
  ) {
    if (useWorker) this.worker = new WorkerClient(new URL('./merge-worker.js', import.meta.url), { workerData: { dir: store.dir }, label: 'merge thread' });
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
  async merge(collection: string, opts: MergeOptions = {}): Promise<number> {
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
    await this.worker?.close();
  }
}
