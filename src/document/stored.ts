/**
 * The stored form of a document. Values of vector fields (`float[]` with `num_dim` or
 * `embed`) are kept once, as float32, in the vector store (src/vector/vecstore.ts) rather
 * than a second time inside the document record: documents stay small to read, and
 * `withVectors` puts the values back (at the end of the document) when a response wants
 * them. Their numbers therefore come back at float32 precision.
 */
import { setOwn } from '../json.js';
import type { Field, Schema } from '../schema/schema.js';
import type { Store } from '../storage/store.js';
import { getVector } from '../vector/vecstore.js';

/**
 * A `store: false` field whose value a stored document leaves out, by its top-level key (an
 * image used only to compute an embedding, never written; the schema allows `store: false`
 * on such fields only, src/schema/schema.ts).
 */
export function isUnstored(f: Field): boolean {
  return f.store === false && !f.pattern && !f.name.includes('.');
}

/**
 * The record to store: `doc` without its top-level vector fields (kept in the vector store)
 * and without its `store: false` fields (isUnstored). A copy only when there are any.
 */
export function stripVectors(schema: Schema, doc: Record<string, unknown>): Record<string, unknown> {
  let out = doc;
  for (const f of schema.fields) {
    if (!((f.kind === 'vector' && !f.name.includes('.')) || isUnstored(f)) || !Object.hasOwn(doc, f.name)) continue;
    if (out === doc) out = { ...doc };
    delete out[f.name];
  }
  return out;
}

/**
 * Adds the stored vectors of document `seq` back. `want(name)` limits which fields are
 * read (for include_fields / exclude_fields); by default all.
 */
export function withVectors(store: Store, schema: Schema, seq: number, doc: Record<string, unknown>, want?: (name: string) => boolean): Record<string, unknown> {
  let out = doc;
  for (const f of schema.fields) {
    if (f.kind !== 'vector' || f.id <= 0 || f.name.includes('.')) continue;
    if (want && !want(f.name)) continue;
    const v = getVector(store, schema.id, f.id, seq);
    if (!v) continue;
    if (out === doc) out = { ...doc };
    setOwn(out, f.name, Array.from(v));
  }
  return out;
}

/** A stored document with its vectors, or undefined. */
export function loadDocument(store: Store, schema: Schema, seq: number, want?: (name: string) => boolean): Record<string, unknown> | undefined {
  const doc = store.docs.get([schema.id, seq]) as Record<string, unknown> | undefined;
  return doc ? withVectors(store, schema, seq, doc, want) : undefined;
}

/** Which vector fields a projection keeps: `include` lists names (plain ones restrict), `exclude` removes. */
export function projectionWants(include?: string[], exclude?: string[]): (name: string) => boolean {
  const inc = include?.filter((n) => !n.startsWith('$'));
  return (name) => (!inc || inc.length === 0 || inc.includes(name)) && !(exclude ?? []).includes(name);
}

/** `doc` without its `store: false` fields, for answers (a copy only when it has any). */
export function withoutUnstored(schema: Schema, doc: Record<string, unknown>): Record<string, unknown> {
  let out = doc;
  for (const f of schema.fields) {
    if (f.store !== false || !Object.hasOwn(doc, f.name)) continue;
    if (out === doc) out = { ...doc };
    delete out[f.name];
  }
  return out;
}
