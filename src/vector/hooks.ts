/**
 * Write hooks that keep vector fields' LMDB copies in step with documents, inside the
 * document's own write transaction.
 */
import type { WriteHooks } from '../collection/writer.js';
import { getVector, putVector } from './vecstore.js';

function same(a: Float32Array | undefined, b: ArrayLike<number>): boolean {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== Math.fround(b[i]!)) return false;
  return true;
}

export const vectorHooks: WriteHooks = {
  beforeWrite(ctx, seq, _stored, values, previous) {
    const vecFields = ctx.schema.vectorFields;
    if (vecFields.length === 0) return;
    for (const f of vecFields) {
      const entry = values.find(([vf]) => vf.id === f.id);
      if (entry) {
        const v = entry[1] as number[];
        // an update that leaves the vector as it was does not touch the graph
        if (previous && same(getVector(ctx.store, ctx.record.id, f.id, seq), v)) continue;
        putVector(ctx.store, ctx.record.id, f.id, seq, v);
      } else if (previous) putVector(ctx.store, ctx.record.id, f.id, seq, undefined);
    }
  },
  needsDocuments(_store, schema) {
    return schema.vectorFields.length > 0;
  },
  afterDelete(ctx, seq) {
    for (const f of ctx.schema.vectorFields) putVector(ctx.store, ctx.record.id, f.id, seq, undefined);
  },
};
