/**
 * Image preparation for image towers, off the calling thread: a batch of Base64 images
 * goes to the image worker (image-worker.ts, started on first use, one per process) and
 * comes back as the tower's input. Without the compiled worker (tests run from the
 * TypeScript sources) the same code runs on the calling thread.
 *
 * One worker is shared by every image model of the process: while the inference thread
 * runs batch k, the image worker decodes batch k+1.
 */
import { WorkerClient } from '../../worker-client.js';
import { prepareImages, type PreparedImages, type PreprocessSpec } from './decode.js';

export type { PreparedImages, PreprocessSpec } from './decode.js';

export class ImagePreparer {
  private readonly worker?: WorkerClient<PreparedImages>;
  /** Batches prepared so far, by where. */
  readonly counts = { worker: 0, inline: 0 };

  /** @param workerPath the compiled worker (default: image-worker.js beside this module, when it exists); false: always inline */
  constructor(workerPath?: string | false) {
    if (workerPath !== false) this.worker = new WorkerClient(workerPath ?? new URL('./image-worker.js', import.meta.url), { label: 'image thread' });
  }

  async prepare(images: unknown[], spec: PreprocessSpec): Promise<PreparedImages> {
    if (this.worker?.available()) {
      const r = await this.worker.call({ images, spec });
      this.counts.worker++;
      return { pixels: r.pixels, slot: r.slot, errors: r.errors };
    }
    const r = prepareImages(images, spec);
    this.counts.inline++;
    return r;
  }

  async close(): Promise<void> {
    await this.worker?.close();
  }
}

let shared: ImagePreparer | undefined;

/** The process's image preparer (created on first use). */
export function imagePreparer(): ImagePreparer {
  shared ??= new ImagePreparer();
  return shared;
}

/** Stops the shared image worker (engine shutdown, tests). */
export async function closeImagePreparer(): Promise<void> {
  const p = shared;
  shared = undefined;
  await p?.close();
}
