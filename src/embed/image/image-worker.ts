/**
 * Worker thread that decodes and preprocesses images for image towers (decode.ts), so
 * that neither the event loop nor the inference thread spends its time in JPEG decoding.
 *
 * Messages in: { id, images: string[], spec }   out: { id, pixels, slot, errors } | { id, error }
 * The pixels are transferred, not copied.
 */
import { parentPort } from 'node:worker_threads';
import { prepareImages, type PreprocessSpec } from './decode.js';

parentPort!.on('message', (msg: { id: number; images: unknown[]; spec: PreprocessSpec }) => {
  try {
    const r = prepareImages(msg.images, msg.spec);
    parentPort!.postMessage({ id: msg.id, ...r }, [r.pixels.buffer as ArrayBuffer, r.slot.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: (e as Error).message });
  }
});
