/**
 * src/join: here is a document with references, which documents of other collections
 * does it point at (and which point at it)?
 *
 * A field with `reference: "<collection>.<field>"` is resolved on write to the internal
 * seq of the referenced document, in the writing transaction:
 *
 *   aux['ref', collId, seq]                          {fieldId: seq | seq[] | null}
 *   aux['refby', targetId, targetSeq, collId, seq]   fieldId   (reverse direction)
 *   aux['refpend', targetId, field, value]           [[collId, seq, fieldId], ...]  (async_reference)
 *
 * and indexed as a numeric column (column id REF_COLUMN_BASE + fieldId) in the document's
 * segment, so join filters and joined sorts read it like any column.
 *
 * Looking a value up in the target collection uses the id map for `id` targets, and for
 * other fields an in-memory value->seq map built lazily per process, checked against the
 * stored document on every hit (a stale entry triggers a rebuild), so it is never wrong.
 */
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import { type Field, type Schema } from '../schema/schema.js';
import { compile, getRecord, resolveName } from '../collection/catalog.js';
import { applyBatch, type BatchContext, type WriteHooks } from '../collection/writer.js';
import { getPath, type IndexValue } from '../document/document.js';
import { loadDocument } from '../document/stored.js';
import { readState } from '../index/manifest.js';
import { PARTS_COLUMN_BASE } from '../index/segment.js';
import type { CollectionRecord } from '../schema/schema.js';

/** Column ids of reference columns: REF_COLUMN_BASE + the reference field's id. */
export const REF_COLUMN_BASE = 1_000_000;

export function refColumnId(field: Pick<Field, 'id'>): number {
  return REF_COLUMN_BASE + field.id;
}

/** Is this column id still wanted by the schema (real fields, their parts and reference columns)? */
export function isLiveColumn(schema: Schema, columnId: number): boolean {
  if (columnId >= PARTS_COLUMN_BASE) return schema.byId.has(columnId - PARTS_COLUMN_BASE);
  if (columnId >= REF_COLUMN_BASE) {
    const f = schema.byId.get(columnId - REF_COLUMN_BASE);
    return !!f && !!f.reference;
  }
  return schema.byId.has(columnId);
}

export function parseReference(ref: string): { collection: string; field: string } {
  const dot = ref.indexOf('.');
  return { collection: ref.slice(0, dot), field: ref.slice(dot + 1) };
}

/** The synthetic column field that carries a reference field's resolved seqs. */
export function refColumnField(f: Field): Field {
  return { ...f, id: refColumnId(f), kind: 'number', isArray: true, type: 'int64[]', numType: 'int64', index: true, reference: undefined };
}

// ---------------------------------------------------------------------------
// Lookup of a referenced value
// ---------------------------------------------------------------------------

interface ValueMap {
  map: Map<string, number>;
  /** nextSeq of the target when the map was last extended. */
  upTo: number;
  collId: number;
}

const valueMaps = new Map<string, ValueMap>();

function keyOf(v: unknown): string {
  return typeof v === 'bigint' ? v.toString() : String(v);
}

function buildMap(store: Store, collId: number, field: string, from: number, into?: Map<string, number>): Map<string, number> {
  const map = into ?? new Map<string, number>();
  for (const { key, value } of store.docs.getRange({ start: [collId, from], end: [collId + 1] })) {
    const seq = (key as [number, number])[1];
    const v = getPath(value as Record<string, unknown>, field);
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const x of v) map.set(keyOf(x), seq);
    else map.set(keyOf(v), seq);
  }
  return map;
}

/** The seq of the document of `target` whose `field` equals `value`, or undefined. */
export function lookupReference(store: Store, target: CollectionRecord, field: string, value: unknown): number | undefined {
  const k = keyOf(value);
  if (field === 'id') return store.ids.get([target.id, k]);
  const cacheKey = `${store.dir}\u0000${target.id}\u0000${field}`;
  const state = readState(store, target.id);
  let vm = valueMaps.get(cacheKey);
  if (!vm) {
    vm = { map: buildMap(store, target.id, field, 0), upTo: state.nextSeq, collId: target.id };
    valueMaps.set(cacheKey, vm);
  } else if (vm.upTo < state.nextSeq) {
    buildMap(store, target.id, field, vm.upTo, vm.map);
    vm.upTo = state.nextSeq;
  }
  const verify = (seq: number | undefined) => {
    if (seq === undefined) return false;
    const doc = store.docs.get([target.id, seq]) as Record<string, unknown> | undefined;
    if (!doc) return false;
    const v = getPath(doc, field);
    return Array.isArray(v) ? v.some((x) => keyOf(x) === k) : v !== undefined && keyOf(v) === k;
  };
  let seq = vm.map.get(k);
  if (seq !== undefined && verify(seq)) return seq;
  // an update or delete moved the value since the map was built: rebuild once
  vm.map = buildMap(store, target.id, field, 0);
  vm.upTo = state.nextSeq;
  seq = vm.map.get(k);
  return verify(seq) ? seq : undefined;
}

// ---------------------------------------------------------------------------
// Write hooks
// ---------------------------------------------------------------------------

type RefRecord = Record<number, number | number[] | null>;

function refFields(schema: Schema): Field[] {
  return schema.referenceFields;
}

/**
 * Collections that some other collection references (only their writes can resolve
 * pending async references or cascade). Cached per catalogue state; hot: every write.
 */
let targetsCache: { key: string; targets: Set<number> } | undefined;
function referencedCollections(store: Store): Set<number> {
  const recs = [...store.collections.getRange({})].map(({ value }) => value as CollectionRecord);
  const key = `${store.dir}\u0000` + recs.map((r) => `${r.id}:${r.version}`).join(',') + '|' + [...store.aliases.getRange({})].map(({ key, value }) => `${String(key)}=${String(value)}`).join(',');
  if (targetsCache?.key === key) return targetsCache.targets;
  const targets = new Set<number>();
  for (const r of recs) {
    for (const f of r.fields) {
      if (!f.reference) continue;
      const name = resolveName(store, parseReference(f.reference).collection);
      const t = recs.find((x) => x.name === name);
      if (t) targets.add(t.id);
    }
  }
  targetsCache = { key, targets };
  return targets;
}

function targetRecord(store: Store, f: Field): CollectionRecord {
  const { collection } = parseReference(f.reference!);
  try {
    return getRecord(store, collection);
  } catch {
    throw new FathomError('BAD_DOCUMENT', `field \`${f.name}\` references collection \`${collection}\`, which does not exist`);
  }
}

function removeReverse(store: Store, collId: number, seq: number, old: RefRecord | undefined, schema: Schema) {
  if (!old) return;
  for (const [fid, v] of Object.entries(old)) {
    const f = schema.byId.get(Number(fid));
    if (!f || v === null) continue;
    let target: CollectionRecord;
    try {
      target = targetRecord(store, f);
    } catch {
      continue;
    }
    for (const t of Array.isArray(v) ? v : [v]) store.aux.remove(['refby', target.id, t, collId, seq]);
  }
}

function addPending(store: Store, target: CollectionRecord, field: string, value: unknown, collId: number, seq: number, fieldId: number) {
  const key = ['refpend', target.id, field, keyOf(value)];
  const list = (store.aux.get(key) as Array<[number, number, number]> | undefined) ?? [];
  if (!list.some(([c, s, f]) => c === collId && s === seq && f === fieldId)) list.push([collId, seq, fieldId]);
  store.aux.put(key, list);
}

export function makeReferenceHooks(getHooks: () => WriteHooks): WriteHooks {
  return {
    beforeWrite(ctx: BatchContext, seq, stored, values, _previous) {
      const fields = refFields(ctx.schema);
      const store = ctx.store;
      const collId = ctx.record.id;
      if (fields.length === 0) return; // no reference fields, no reference records
      const old = _previous ? (store.aux.get(['ref', collId, seq]) as RefRecord | undefined) : undefined;
      removeReverse(store, collId, seq, old, ctx.schema);
      const rec: RefRecord = {};
      for (const f of fields) {
        const v = getPath(stored, f.name);
        if (v === undefined || v === null) continue;
        const target = targetRecord(store, f);
        const { field: tfield } = parseReference(f.reference!);
        const list = Array.isArray(v) ? v : [v];
        const seqs: number[] = [];
        for (const item of list) {
          const t = lookupReference(store, target, tfield, item);
          if (t === undefined) {
            if (f.async_reference) {
              addPending(store, target, tfield, item, collId, seq, f.id);
              continue;
            }
            throw new FathomError(
              'BAD_DOCUMENT',
              `reference field \`${f.name}\`: no document of \`${target.name}\` has \`${tfield}\` = ${JSON.stringify(keyOf(item))}`,
            );
          }
          seqs.push(t);
          store.aux.put(['refby', target.id, t, collId, seq], f.id);
        }
        rec[f.id] = f.isArray || (f.name.includes('.') && Array.isArray(v)) ? seqs : (seqs[0] ?? null);
        if (seqs.length) values.push([refColumnField(f), seqs as IndexValue]);
      }
      store.aux.put(['ref', collId, seq], rec);
    },
    afterWrite(ctx, _seq, stored) {
      if (!ctx.refTargets) ctx.refTargets = referencedCollections(ctx.store);
      if (ctx.refTargets.has(ctx.record.id)) resolvePending(ctx, stored, getHooks());
    },
    needsDocuments(store, schema) {
      return refFields(schema).length > 0 || referencedCollections(store).has(schema.id);
    },
    afterDelete(ctx, seq, _doc) {
      const store = ctx.store;
      const collId = ctx.record.id;
      if (refFields(ctx.schema).length > 0) {
        const old = store.aux.get(['ref', collId, seq]) as RefRecord | undefined;
        removeReverse(store, collId, seq, old, ctx.schema);
        store.aux.remove(['ref', collId, seq]);
      }
      if (!ctx.refTargets) ctx.refTargets = referencedCollections(store);
      if (ctx.refTargets.has(collId)) cascade(ctx, seq, getHooks());
    },
  };
}

/** Documents that reference (collId, seq). */
export function referrers(store: Store, targetId: number, seq: number): Array<{ collId: number; seq: number; fieldId: number }> {
  const out: Array<{ collId: number; seq: number; fieldId: number }> = [];
  for (const { key, value } of store.aux.getRange({ start: ['refby', targetId, seq], end: ['refby', targetId, seq + 1] })) {
    const k = key as [string, number, number, number, number];
    out.push({ collId: k[3], seq: k[4], fieldId: value as number });
  }
  return out;
}

/**
 * Per document of collection `targetId`, the first document of `collId` whose field `fieldId`
 * references it: one pass over the collection's references (for a sort by a joined field,
 * where looking each document up alone costs a range read apiece).
 */
export function firstReferrers(store: Store, targetId: number, collId: number, fieldId: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const { key, value } of store.aux.getRange({ start: ['refby', targetId], end: ['refby', targetId + 1] })) {
    const k = key as [string, number, number, number, number];
    if (k[3] === collId && value === fieldId && !out.has(k[2])) out.set(k[2], k[4]);
  }
  return out;
}

function recordById(store: Store, collId: number): CollectionRecord | undefined {
  for (const { value } of store.collections.getRange({})) if ((value as CollectionRecord).id === collId) return value as CollectionRecord;
  return undefined;
}

/** A referenced document was deleted: delete (or trim) the documents pointing at it. */
function cascade(ctx: BatchContext, seq: number, hooks: WriteHooks) {
  const store = ctx.store;
  for (const r of referrers(store, ctx.record.id, seq)) {
    store.aux.remove(['refby', ctx.record.id, seq, r.collId, r.seq]);
    const rec = recordById(store, r.collId);
    if (!rec) continue;
    const schema = compile(store, rec);
    const f = schema.byId.get(r.fieldId);
    if (!f || f.cascade_delete === false) continue;
    // only when the referrer still points here (an alias may have been re-pointed since)
    if (referenceTarget(store, f) !== ctx.record.name) continue;
    const cur = store.aux.get(['ref', r.collId, r.seq]) as RefRecord | undefined;
    const curv = cur?.[f.id];
    if (curv === undefined || curv === null || !(Array.isArray(curv) ? curv.includes(seq) : curv === seq)) continue;
    const doc = loadDocument(store, schema, r.seq);
    if (!doc) continue;
    const { field: tfield } = parseReference(f.reference!);
    const deleted = store.docs.get([ctx.record.id, seq]) as Record<string, unknown> | undefined;
    const v = doc[f.name];
    if (Array.isArray(v) && deleted) {
      // drop the deleted target from the array, keep the document
      const gone = getPath(deleted, tfield);
      const next = v.filter((x) => keyOf(x) !== keyOf(gone));
      applyBatch(store, rec.name, [{ kind: 'write', doc: { ...doc, [f.name]: next }, action: 'upsert' }], hooks);
    } else {
      applyBatch(store, rec.name, [{ kind: 'deleteSeq', seq: r.seq }], hooks);
    }
  }
}

/** A document arrived that async references were waiting for: re-index those referrers. */
function resolvePending(ctx: BatchContext, stored: Record<string, unknown>, hooks: WriteHooks) {
  const store = ctx.store;
  for (const { key, value } of store.aux.getRange({ start: ['refpend', ctx.record.id], end: ['refpend', ctx.record.id + 1] })) {
    const [, , field, val] = key as [string, number, string, string];
    const v = getPath(stored, field);
    const matches = Array.isArray(v) ? v.some((x) => keyOf(x) === val) : v !== undefined && v !== null && keyOf(v) === val;
    if (!matches) continue;
    store.aux.remove(key);
    for (const [collId, seq] of value as Array<[number, number, number]>) {
      const rec = recordById(store, collId);
      const doc = rec && loadDocument(store, compile(store, rec), seq);
      if (rec && doc) applyBatch(store, rec.name, [{ kind: 'write', doc, action: 'upsert' }], hooks);
    }
  }
}

/** Collections (other than `name`) with a reference field pointing at `name` or at an alias of it. */
export function referencingCollections(store: Store, target: string): CollectionRecord[] {
  const out: CollectionRecord[] = [];
  for (const { value } of store.collections.getRange({})) {
    const rec = value as CollectionRecord;
    if (rec.fields.some((f) => f.reference && parseReference(f.reference).collection === target)) out.push(rec);
  }
  return out;
}

/** The actual collection name a reference field's target resolves to now. */
export function referenceTarget(store: Store, f: Field): string {
  return resolveName(store, parseReference(f.reference!).collection);
}
