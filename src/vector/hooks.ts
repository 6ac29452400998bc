/**
 * Write hooks that keep vector fields' LMDB copies in step with documents, inside the
 * document's own write transaction.
 */
import type { WriteHooks } from '../collection/writer.js';
import { putVector } from './vecstore.js';

export const vectorHooks: WriteHooks = {
  beforeWrite(ctx, seq, _stored, values, previous) {
    const vecFields = ctx.schema.fields.filter((f) => f.kind === 'vector' && f.id > 0);
    if (vecFields.length === 0) return;
    for (const f of vecFields) {
      const entry = values.find(([vf]) => vf.id === f.id);
      if (entry) putVector(ctx.store, ctx.record.id, f.id, seq, entry[1] as number[]);
      else if (previous) putVector(ctx.store, ctx.record.id, f.id, seq, undefined);
    }
  },
  afterDelete(ctx, seq) {
    for (const f of ctx.schema.fields) {
      if (f.kind === 'vector' && f.id > 0) putVector(ctx.store, ctx.record.id, f.id, seq, undefined);
    }
  },
};
