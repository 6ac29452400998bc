/**
 * Applies a batch of document writes and deletes in one LMDB transaction: documents, the
 * id map, a new index segment for the batch, deletion bits for replaced or deleted
 * documents, and the collection manifest. Either all of it commits or none of it does,
 * so a crash never leaves a document without its index entries or the reverse.
 */
import { FathomError, isFathomError } from '../errors.js';
import { documentObject, prepareDocument, validateId, type DirtyValues, type IndexValue } from '../document/document.js';
import { compile, fieldTokenizer, getRecord } from './catalog.js';
import { Schema, copyRecord, type CollectionRecord, type Field, type FieldDef } from '../schema/schema.js';
import type { Store } from '../storage/store.js';
import { SegmentBuilder } from '../index/segment.js';
import { addSegment, copyState, openSegment, readState, removeSegment, type CollectionState, type SegmentInfo } from '../index/manifest.js';
import { parseJsonLine } from '../json.js';
import { loadDocument, stripVectors, withoutUnstored } from '../document/stored.js';
import { encodeBytesTransient, encodeTextTransient } from '../storage/doctext.js';
import { lineBytes, type PackedLines } from '../io/lines.js';
import { Blob } from '../index/codec.js';
import { TAG } from '../index/segment.js';
import type { PreparedBatch } from './prepared.js';

export type { WriteAction } from '../defaults.js';
import type { WriteAction } from '../defaults.js';

export type BatchOp =
  | {
      kind: 'write';
      doc: unknown;
      action: WriteAction;
      dirty?: DirtyValues;
      id?: string;
      /**
       * The JSON line `doc` was parsed from, exactly (import): stored as it is when
       * validation changes nothing. Whoever replaces `doc` must drop it.
       */
      text?: string;
      /** `text` holds an integer literal of 16+ digits (read it back losslessly). */
      lossless?: boolean;
      /**
       * `store: false` fields whose values the node that received the write checked and
       * left out of its cluster command (src/cluster/unstored.ts): null for a valid value,
       * or the message it failed with.
       */
      unstored?: Record<string, string | null>;
    }
  /**
   * An import line not parsed yet: applyBatch parses it inside the transaction, so the
   * parsed document lives only while its batch is applied. (Parsed as lines arrive, the
   * documents of every batch in the import pipeline outlived two young-generation
   * collections, were copied and promoted, and the old generation grew with the import.)
   */
  | { kind: 'line'; text: string; action: WriteAction; dirty?: DirtyValues }
  | { kind: 'delete'; id: string; ignoreNotFound?: boolean }
  | { kind: 'deleteSeq'; seq: number }
  | { kind: 'error'; error: FathomError };

/** Parses a `line` op into the write it stands for (or the error that the line is not JSON). */
export function parseLineOp(op: Extract<BatchOp, { kind: 'line' }>): Extract<BatchOp, { kind: 'write' | 'error' }> {
  try {
    const { value: doc, lossless } = parseJsonLine(op.text);
    return { kind: 'write', doc, action: op.action, dirty: op.dirty, text: op.text, lossless };
  } catch (e) {
    if (!isFathomError(e)) throw e;
    return { kind: 'error', error: e };
  }
}

export type OpResult =
  | { ok: true; id: string; doc: Record<string, unknown>; seq: number; existed: boolean }
  | { ok: false; error: FathomError };

/** Hooks for indexes kept outside the segments (vectors, references). Called inside the transaction. */
export interface WriteHooks {
  /** A document was written (new or replacing `previous`). May throw to reject it. */
  beforeWrite?(ctx: BatchContext, seq: number, stored: Record<string, unknown>, values: Array<[Field, IndexValue]>, previous: Record<string, unknown> | undefined): void;
  /** A document was stored (after its id map entry), e.g. to resolve references waiting for it. */
  afterWrite?(ctx: BatchContext, seq: number, stored: Record<string, unknown>): void;
  /** A document was removed. */
  afterDelete?(ctx: BatchContext, seq: number, doc: Record<string, unknown>): void;
  /**
   * Must these hooks see every document written to this collection? Then its batches
   * cannot be prepared ahead (applyPrepared declines them).
   */
  needsDocuments?(store: Store, schema: Schema): boolean;
}

export interface BatchContext {
  store: Store;
  record: CollectionRecord;
  schema: Schema;
  state: CollectionState;
  /** Collections referenced by others (filled by the reference hooks once per batch). */
  refTargets?: Set<number>;
}

/** Marks documents deleted in existing segments, copying each bitmap once per batch. */
class Deletions {
  private bits = new Map<number, Uint8Array>();
  constructor(
    private readonly store: Store,
    private readonly collId: number,
    private readonly state: CollectionState,
  ) {}

  /** Marks the live copy of `seq` deleted. Returns false when no segment holds it. */
  mark(seq: number): boolean {
    const segs = this.state.segments;
    for (let i = segs.length - 1; i >= 0; i--) {
      const info = segs[i]!;
      if (seq < info.min || seq > info.max) continue;
      const reader = openSegment(this.store, this.collId, info.id);
      const ord = reader.ordinalOf(seq);
      if (ord < 0) continue;
      const bits = this.bitmap(info);
      const mask = 1 << (ord & 7);
      if (bits[ord >> 3]! & mask) continue;
      bits[ord >> 3] = bits[ord >> 3]! | mask;
      info.del++;
      return true;
    }
    return false;
  }

  private bitmap(info: SegmentInfo): Uint8Array {
    let b = this.bits.get(info.id);
    if (!b) {
      const raw = this.store.deletes.getBinary([this.collId, info.id]);
      b = new Uint8Array((info.n + 7) >> 3);
      if (raw) b.set(raw.subarray(0, b.length));
      this.bits.set(info.id, b);
    }
    return b;
  }

  /** Writes changed bitmaps; drops segments whose documents are all deleted. */
  flush(): void {
    const keep: SegmentInfo[] = [];
    for (const info of this.state.segments) {
      if (info.del >= info.n) {
        removeSegment(this.store, this.collId, info.id);
        continue;
      }
      const b = this.bits.get(info.id);
      if (b) this.store.deletes.put([this.collId, info.id], Buffer.from(b.buffer, b.byteOffset, b.byteLength));
      keep.push(info);
    }
    this.state.segments = keep;
  }
}

function generateIdFor(store: Store, collId: number, seq: number): string {
  let id = String(seq);
  while (store.ids.get([collId, id]) !== undefined) {
    id = `${seq}-${Math.random().toString(36).slice(2, 8)}`;
  }
  return id;
}

/** Adds discovered fields to the record. Returns true when the schema changed. */
function addDiscovered(record: CollectionRecord, defs: Array<Omit<FieldDef, 'id'>>): boolean {
  let changed = false;
  for (const def of defs) {
    const existing = record.fields.find((f) => f.name === def.name);
    if (existing) {
      if (existing.type === 'auto') {
        existing.type = def.type;
        existing.sort = def.sort;
        changed = true;
      }
      continue;
    }
    record.fields.push({ ...def, id: record.next_field_id++ });
    changed = true;
  }
  if (changed) record.version++;
  return changed;
}

/**
 * Applies `ops` to collection `name`. Must run inside a write transaction. Returns one
 * result per op, in order; a failing op affects no other.
 */
export function applyBatch(store: Store, name: string, ops: BatchOp[], hooks: WriteHooks = {}): OpResult[] {
  // the record is copied only if this batch discovers new fields (rare)
  let record = getRecord(store, name);
  let schema = compile(store, record);
  const collId = record.id;
  const state = copyState(readState(store, collId));
  const ctx: BatchContext = { store, record, schema, state };
  const builder = new SegmentBuilder();
  const deletions = new Deletions(store, collId, state);
  let recordChanged = false;
  const results: OpResult[] = [];

  const removeLive = (seq: number) => {
    if (builder.has(seq)) builder.remove(seq);
    else deletions.mark(seq);
  };

  for (const given of ops) {
    const op = given.kind === 'line' ? parseLineOp(given) : given;
    try {
      if (op.kind === 'error') throw op.error;
      if (op.kind === 'delete' || op.kind === 'deleteSeq') {
        let seq: number | undefined;
        let id: string;
        if (op.kind === 'delete') {
          id = op.id;
          seq = store.ids.get([collId, id]);
          if (seq === undefined) {
            if (op.ignoreNotFound) {
              results.push({ ok: true, id, doc: { id }, seq: -1, existed: false });
              continue;
            }
            throw new FathomError('DOCUMENT_NOT_FOUND', `document \`${id}\` not found in collection \`${record.name}\``);
          }
        } else seq = op.seq;
        const doc = loadDocument(store, schema, seq);
        if (!doc) {
          results.push({ ok: false, error: new FathomError('DOCUMENT_NOT_FOUND', `document not found`) });
          continue;
        }
        id = String(doc.id);
        hooks.afterDelete?.(ctx, seq, doc);
        store.docs.remove([collId, seq]);
        store.ids.remove([collId, id]);
        removeLive(seq);
        state.count--;
        results.push({ ok: true, id, doc, seq, existed: true });
        continue;
      }

      // write
      const input = documentObject(op.doc);
      let givenId: string | undefined;
      if (op.id !== undefined) givenId = validateId(op.id);
      else if (input.id !== undefined && input.id !== null) givenId = validateId(input.id);
      const existingSeq = givenId === undefined ? undefined : store.ids.get([collId, givenId]);
      const action = op.action;
      let previous: Record<string, unknown> | undefined;
      if (existingSeq !== undefined) previous = loadDocument(store, schema, existingSeq);
      if (action === 'create' && existingSeq !== undefined) {
        throw new FathomError('DOCUMENT_EXISTS', `A document with id ${givenId} already exists.`);
      }
      if (action === 'update') {
        if (givenId === undefined) throw new FathomError('BAD_DOCUMENT', 'an update needs the document `id`');
        if (existingSeq === undefined) throw new FathomError('DOCUMENT_NOT_FOUND', `document \`${givenId}\` not found, so it cannot be updated`);
      }
      let full: Record<string, unknown> = input;
      if ((action === 'update' || action === 'emplace') && previous) {
        full = { ...previous, ...input };
        for (const k of Object.keys(input)) if (input[k] === null) delete full[k];
      }
      if (givenId !== undefined) full = full.id === givenId ? full : { ...full, id: givenId };
      const seq = existingSeq ?? state.nextSeq;
      const prepared = prepareDocument(schema, full, {
        mode: op.dirty ?? schema.defaultDirtyValues,
        generateId: () => generateIdFor(store, collId, seq),
        updatesStored: (action === 'update' || action === 'emplace') && previous !== undefined,
        unstored: op.unstored,
      });
      if (prepared.discovered.length > 0) {
        const copy = recordChanged ? record : copyRecord(record);
        if (addDiscovered(copy, prepared.discovered)) {
          record = copy;
          ctx.record = record;
          schema = new Schema(record);
          ctx.schema = schema;
          recordChanged = true;
        }
      }
      const values = prepared.values.map(([f, v]) => [f.id > 0 ? f : (schema.field(f.name) ?? f), v] as [Field, IndexValue]);
      // (a given id was looked up above; a generated one is checked free by generateIdFor)
      hooks.beforeWrite?.(ctx, seq, prepared.stored, values, previous);
      if (existingSeq === undefined) {
        state.nextSeq++;
        state.count++;
      } else removeLive(existingSeq);
      const toStore = stripVectors(schema, prepared.stored);
      if (op.text !== undefined && toStore === prepared.stored && prepared.asGiven && full === input) {
        // store the line exactly as it arrived (plus a generated id): no encoding needed
        store.docsRaw.put([collId, seq], encodeTextTransient(op.text, op.lossless ?? true, prepared.idGenerated ? prepared.id : undefined));
      } else store.docs.put([collId, seq], toStore);
      store.ids.put([collId, prepared.id], seq);
      builder.add(seq, values);
      hooks.afterWrite?.(ctx, seq, prepared.stored);
      results.push({ ok: true, id: prepared.id, doc: withoutUnstored(schema, prepared.stored), seq, existed: existingSeq !== undefined });
    } catch (e) {
      if (!isFathomError(e)) throw e;
      results.push({ ok: false, error: e });
    }
  }

  deletions.flush();
  if (builder.size > 0) {
    const built = builder.build((f) => fieldTokenizer(schema, f));
    addSegment(store, collId, state, built);
  }
  store.colstate.put(collId, state);
  if (recordChanged) store.collections.put(record.name, record);
  return results;
}

// (lmdb-js types put options as a version number; it takes an options object too)
const APPEND = { append: true } as unknown as number;

/** The document of a success whose document nobody asked for (imports without return_doc). */
export const NO_DOC: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/**
 * Applies a batch prepared ahead (io/prepare.ts). Must run inside a write transaction.
 * Returns null, having written nothing, unless the batch still holds: the record is the
 * version it was prepared with, no hook needs the documents, and every id (given, or
 * generated as the document's seq) is new. The caller then applies the lines with
 * applyBatch, so the outcome is the same either way. Results carry no documents.
 */
export function applyPrepared(store: Store, name: string, p: PreparedBatch, lines: PackedLines, hooks: WriteHooks = {}): OpResult[] | null {
  if (p.fallback !== null) return null;
  const record = getRecord(store, name);
  if (record.id !== p.collId || record.version !== p.version) return null;
  const schema = compile(store, record);
  const collId = record.id;
  const state = copyState(readState(store, collId));
  if (hooks.needsDocuments?.(store, schema)) return null;
  const n = p.ids.length;
  const base = state.nextSeq;
  const ids = new Array<string>(n);
  const taken = new Set<string>();
  for (let k = 0; k < n; k++) {
    const id = p.ids[k] ?? String(base + k);
    // applyBatch would fail a taken given id or pick another generated one: leave it that way
    if (taken.has(id) || store.ids.get([collId, id]) !== undefined) return null;
    taken.add(id);
    ids[k] = id;
  }
  for (const id of p.failedIds) if (taken.has(id) || store.ids.get([collId, id]) !== undefined) return null;
  // Documents are keyed [collId, seq] with seqs ascending from `base`: when no key sorts
  // after [collId, base] (this is the newest collection), they can be appended to the
  // B-tree instead of inserted (MDB_APPEND): no search per put, and full pages instead of
  // half-full ones after each split.
  const last = [...store.docsRaw.getKeys({ reverse: true, limit: 1 })][0] as number[] | undefined;
  let put = last === undefined || last[0]! < collId || (last[0] === collId && last[1]! < base) ? APPEND : 0;
  const results = new Array<OpResult>(p.docOf.length);
  for (let i = 0; i < p.docOf.length; i++) {
    const k = p.docOf[i]!;
    if (k < 0) {
      const e = p.errors[i]!;
      results[i] = { ok: false, error: new FathomError(e.code, e.message) };
      continue;
    }
    const seq = base + k;
    const generated = p.ids[k] === null ? ids[k] : undefined;
    const text = p.texts[k]!;
    const bytes = text === null ? encodeBytesTransient(lineBytes(lines, i), p.lossless[k] === 1, generated) : encodeTextTransient(text, p.lossless[k] === 1, generated);
    // An append that does not sort last is refused (lmdb-js reports it as a false result,
    // not an error): then insert, and stop appending. Never taken while the check above holds.
    if (put === APPEND && (store.docsRaw.put([collId, seq], bytes, put) as unknown as { result?: boolean }).result === false) put = 0;
    if (put !== APPEND) store.docsRaw.put([collId, seq], bytes);
    store.ids.put([collId, ids[k]!], seq);
    results[i] = { ok: true, id: ids[k]!, doc: NO_DOC, seq, existed: false };
  }
  if (n > 0 && p.segment) {
    const seqs = new Blob(p.segment).u32(TAG.SEQS);
    for (let k = 0; k < n; k++) seqs[k] = base + k;
    addSegment(store, collId, state, { n, seqs, minSeq: base, maxSeq: base + n - 1, blob: p.segment });
  }
  state.nextSeq += n;
  state.count += n;
  store.colstate.put(collId, state);
  return results;
}
