/**
 * src/cluster/unstored.ts: `store: false` values stay out of the replicated stream.
 *
 * An `image` field with `store: false` is used only to compute an embedding and is never
 * written to disk: a single node drops it when it stores the document (document/stored.ts).
 * A cluster command, though, is written to JetStream's file storage on every NATS server,
 * so the node that received the write takes such values out of its `docs.write` command
 * once it has computed the embeddings (which the command carries).
 *
 * What the value decided still has to be decided alike on every node: its own check (a
 * Base64 BMP, JPEG or PNG within the pixel limit, made here, with the message a single
 * node gives) and a required field's presence. So the op's `unstored` names each field
 * taken out, with null when its value was a valid image (the field counts as present) or
 * the message it failed with; the document keeps the key, holding `true`, where the value
 * was, so that applying the command runs the document's checks in the same order, with the
 * same first failure, as a single node does (document.ts prepareDocument).
 */
import { coerceValue } from '../document/document.js';
import { isPlainObject, ownValue, setOwn } from '../json.js';
import { parseLineOp, type BatchOp } from '../collection/writer.js';
import type { Schema } from '../schema/schema.js';
import { isUnstored } from '../document/stored.js';

/** What stands in a command's document for a value taken out. */
const UNSTORED_PLACEHOLDER = true;

/** `ops` as a command carries them: without the values of `store: false` fields (those a stored document leaves out). */
export function leaveOutUnstored(schema: Schema, ops: BatchOp[]): BatchOp[] {
  const fields = schema.fields.filter(isUnstored);
  if (fields.length === 0) return ops;
  return ops.map((op) => {
    // (an import line is parsed only to look: a line without such values travels as it came)
    const write = op.kind === 'line' ? parseLineOp(op) : op;
    if (write.kind !== 'write' || !isPlainObject(write.doc)) return op;
    const doc = write.doc;
    let out: Record<string, unknown> | undefined;
    const unstored: Record<string, string | null> = {};
    for (const f of fields) {
      const v = ownValue(doc, f.name);
      if (v === undefined || v === null) continue; // absent (null is absent, or a removal in an update)
      if (write.unstored && Object.hasOwn(write.unstored, f.name)) continue; // taken out already
      const r = coerceValue(f, v, 'reject');
      setOwn(unstored, f.name, r.ok ? null : r.message);
      out ??= { ...doc };
      setOwn(out, f.name, UNSTORED_PLACEHOLDER);
    }
    if (!out) return op;
    // (`text`, the line as it arrived, holds the values)
    const { text: _text, lossless: _lossless, ...rest } = write;
    return { ...rest, doc: out, unstored: { ...write.unstored, ...unstored } };
  });
}
