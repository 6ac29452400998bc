/**
 * Worker thread that prepares import batches (see prepare.ts): parses, validates and
 * indexes lines into a segment while the importing thread writes earlier batches.
 *
 * Messages in: { id, req: PrepareRequest }   out: { id, batch } | { id, error }
 * The segment's bytes are transferred, not copied.
 */
import { parentPort } from 'node:worker_threads';
import { prepareBatch, SchemaCache, type PrepareRequest } from './prepare.js';

const schemas = new SchemaCache();

parentPort!.on('message', (msg: { id: number; req: PrepareRequest }) => {
  try {
    const batch = prepareBatch(msg.req, schemas.get(msg.req.record));
    const transfer = batch.segment ? [batch.segment.buffer as ArrayBuffer] : [];
    parentPort!.postMessage({ id: msg.id, batch }, transfer);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: (e as Error).message });
  }
});
