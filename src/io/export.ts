/**
 * Export: every document of a collection (or those matching a filter), in seq order,
 * read in chunks of short read transactions so memory stays constant and no read
 * transaction is held open while a slow consumer drains the stream.
 */
import { getSchema } from '../collection/catalog.js';
import { projectionWants, withVectors } from '../document/stored.js';
import { storedText } from '../storage/doctext.js';
import { stringifyJson } from '../json.js';
import type { Store } from '../storage/store.js';
import { project, type Projection } from './project.js';

const CHUNK = 1000;

export interface ExportOptions extends Projection {
  /** Restrict to these seqs (ascending), e.g. the matches of `filter_by`. */
  seqs?: Uint32Array | number[];
  /** Adds joined fields to each document after projection. */
  decorate?: (doc: Record<string, unknown>, seq: number) => Record<string, unknown>;
}

/** Yields documents in chunks; each chunk comes from one read snapshot. */
export function* exportDocuments(store: Store, collection: string, opts: ExportOptions = {}): Generator<Record<string, unknown>> {
  const schema = getSchema(store, collection);
  const collId = schema.id;
  const want = projectionWants(opts.include, opts.exclude);
  const full = (doc: Record<string, unknown>, seq: number) => project(withVectors(store, schema, seq, doc, want), opts);
  if (opts.seqs) {
    const seqs = opts.seqs;
    for (let i = 0; i < seqs.length; i++) {
      const doc = store.docs.get([collId, seqs[i]!]) as Record<string, unknown> | undefined;
      if (doc) yield opts.decorate ? opts.decorate(full(doc, seqs[i]!), seqs[i]!) : full(doc, seqs[i]!);
    }
    return;
  }
  let next = 0;
  for (;;) {
    const chunk: Array<[number, Record<string, unknown>]> = [];
    let last = -1;
    for (const { key, value } of store.docs.getRange({ start: [collId, next], end: [collId + 1], limit: CHUNK })) {
      last = (key as [number, number])[1];
      chunk.push([last, value as Record<string, unknown>]);
    }
    for (const [seq, d] of chunk) yield opts.decorate ? opts.decorate(full(d, seq), seq) : full(d, seq);
    if (chunk.length < CHUNK) return;
    next = last + 1;
  }
}

/**
 * Export as JSON text lines. Without a projection, joined fields or vector fields, the
 * stored text is streamed as it is (no decoding or encoding: hot for large exports).
 */
export function* exportLines(store: Store, collection: string, opts: ExportOptions = {}): Generator<string> {
  const schema = getSchema(store, collection);
  const plain = !opts.include?.length && !opts.exclude?.length && !opts.decorate && schema.vectorFields.length === 0;
  if (!plain) {
    for (const d of exportDocuments(store, collection, opts)) yield stringifyJson(d);
    return;
  }
  const collId = schema.id;
  if (opts.seqs) {
    for (let i = 0; i < opts.seqs.length; i++) {
      const raw = store.docsRaw.getBinary([collId, opts.seqs[i]!]);
      if (raw) yield storedText(raw);
    }
    return;
  }
  let next = 0;
  for (;;) {
    const chunk: string[] = [];
    let last = -1;
    for (const { key, value } of store.docsRaw.getRange({ start: [collId, next], end: [collId + 1], limit: CHUNK })) {
      last = (key as [number, number])[1];
      chunk.push(storedText(value as Buffer));
    }
    yield* chunk;
    if (chunk.length < CHUNK) return;
    next = last + 1;
  }
}
