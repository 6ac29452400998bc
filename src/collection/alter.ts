/**
 * Schema changes on a live collection (PATCH /collections/:name): add fields, drop fields,
 * or drop and re-add a field to change its type. Every document is checked against the new
 * schema and the whole index is rebuilt in one transaction, so either the change applies to
 * every document or to none.
 */
import { FathomError } from '../errors.js';
import { isPlainObject, ownValue, protoKeyMessage, protoKeyPath } from '../json.js';
import { Schema, copyRecord, setNames, validateField, withShownDefaults, type CollectionRecord, type FieldDef } from '../schema/schema.js';
import type { Store } from '../storage/store.js';
import { prepareDocument, type IndexValue } from '../document/document.js';
import { SegmentBuilder } from '../index/segment.js';
import { emptyState, readState, type CollectionState } from '../index/manifest.js';
import { fieldTokenizer, getRecord } from './catalog.js';
import type { WriteHooks } from './writer.js';
import { addSegment, removeSegment } from '../index/manifest.js';
import type { Field } from '../schema/schema.js';
import { dropField as dropVectors } from '../vector/vecstore.js';
import { stripVectors, withVectors } from '../document/stored.js';

const REBUILD_SEGMENT_DOCS = 50_000;

export interface AlterResult {
  record: CollectionRecord;
  fields: Record<string, unknown>[];
  /** Field changes were asked for (else only attributes changed, and no index was rebuilt). */
  rebuilt?: boolean;
}

/** What a PATCH may change. */
const ALTERABLE = ['fields', 'metadata', 'synonym_sets', 'curation_sets'];

/** Validates a PATCH body against the current record; returns the new record (not yet stored). */
export function planAlter(current: CollectionRecord, body: unknown): { record: CollectionRecord; changes: Record<string, unknown>[] } {
  if (!isPlainObject(body)) throw new FathomError('BAD_SCHEMA', 'the update must be a JSON object with `fields`');
  for (const k of Object.keys(body)) {
    if (!ALTERABLE.includes(k)) throw new FathomError('BAD_SCHEMA', `only ${ALTERABLE.map((a) => `\`${a}\``).join(', ')} can be changed, not \`${k}\``);
  }
  const record = copyRecord(current);
  const changes: Record<string, unknown>[] = [];
  if (body.metadata !== undefined) {
    if (!isPlainObject(body.metadata)) throw new FathomError('BAD_SCHEMA', '`metadata` must be an object');
    const proto = protoKeyPath(body.metadata, 'metadata');
    if (proto) throw new FathomError('BAD_SCHEMA', protoKeyMessage(proto));
    record.metadata = body.metadata;
  }
  // linked synonym and curation sets (that they exist is checked by the engine); [] unlinks all
  for (const key of ['synonym_sets', 'curation_sets'] as const) {
    if (body[key] === undefined) continue;
    const names = setNames(body[key], key) ?? [];
    if (names.length > 0) record[key] = names;
    else delete record[key];
  }
  const list = body.fields ?? [];
  if (!Array.isArray(list)) throw new FathomError('BAD_SCHEMA', '`fields` must be an array');
  const dropped = new Set<string>();
  list.forEach((raw) => {
    if (isPlainObject(raw) && raw.drop === true) {
      const name = raw.name;
      if (typeof name !== 'string') throw new FathomError('BAD_SCHEMA', 'a field to drop needs its `name`');
      const i = record.fields.findIndex((f) => f.name === name);
      if (i < 0) throw new FathomError('BAD_SCHEMA', `field \`${name}\` cannot be dropped: it is not in the schema`);
      if (record.default_sorting_field === name) throw new FathomError('BAD_SCHEMA', `field \`${name}\` is the default_sorting_field and cannot be dropped`);
      record.fields.splice(i, 1);
      // discovered children of a dropped object go too
      record.fields = record.fields.filter((f) => !f.name.startsWith(`${name}.`));
      dropped.add(name);
      changes.push({ name, drop: true });
    }
  });
  const declared = new Map(record.fields.map((f) => [f.name, f] as [string, FieldDef]));
  list.forEach((raw, i) => {
    if (isPlainObject(raw) && raw.drop === true) return;
    const def = validateField(raw, i, { nested: record.enable_nested_fields, declared });
    if (declared.has(def.name)) throw new FathomError('BAD_SCHEMA', `field \`${def.name}\` already exists; drop it in the same request to change it`);
    const full: FieldDef = { ...def, id: record.next_field_id++ };
    record.fields.push(full);
    declared.set(def.name, full);
    const { id: _id, ...shown } = full;
    changes.push(withShownDefaults(shown));
  });
  record.version++;
  return { record, changes };
}

/**
 * Rebuilds every segment of a collection from its stored documents under `record`.
 * Runs inside a write transaction; throws (rolling everything back) on the first
 * document that does not fit the schema.
 */
export function rebuildIndex(store: Store, record: CollectionRecord, hooks: WriteHooks = {}): CollectionState {
  const schema = new Schema(record);
  const old = readState(store, record.id);
  for (const s of old.segments) removeSegment(store, record.id, s.id);
  const state: CollectionState = { ...emptyState(), nextSeq: old.nextSeq, count: 0 };
  let builder = new SegmentBuilder();
  const flush = () => {
    if (builder.size === 0) return;
    addSegment(store, record.id, state, builder.build((f) => fieldTokenizer(schema, f)));
    builder = new SegmentBuilder();
  };
  const ctx = { store, record, schema, state };
  const oldSchema = new Schema(getRecord(store, record.name));
  // a stored document never holds the `store: false` fields it was written with, so they may
  // be absent; a required one that this change makes unstored must be there to be used
  const newlyUnstored = schema.fields.filter((f) => f.store === false && !f.optional && !oldSchema.fields.some((o) => o.name === f.name && o.store === false));
  for (const { key, value } of store.docs.getRange({ start: [record.id], end: [record.id + 1] })) {
    const seq = (key as [number, number])[1];
    const doc = withVectors(store, oldSchema, seq, value as Record<string, unknown>);
    let prepared;
    try {
      const missing = newlyUnstored.find((f) => ownValue(doc, f.name) === undefined || ownValue(doc, f.name) === null);
      if (missing) throw new Error(`field \`${missing.name}\` is required by the schema but missing from the document`);
      prepared = prepareDocument(schema, doc, { mode: 'coerce_or_reject', generateId: () => String(doc.id), updatesStored: true });
    } catch (e) {
      throw new FathomError('BAD_SCHEMA', `document \`${String(doc.id)}\` does not fit the new schema: ${(e as Error).message}`);
    }
    if (prepared.discovered.length) {
      for (const d of prepared.discovered) {
        if (!record.fields.some((f) => f.name === d.name)) record.fields.push({ ...d, id: record.next_field_id++ });
      }
    }
    const values = prepared.values.map(([f, v]) => [f.id > 0 ? f : (record.fields.find((x) => x.name === f.name) as Field | undefined) ?? f, v] as [Field, IndexValue]);
    hooks.beforeWrite?.(ctx, seq, prepared.stored, values, doc);
    store.docs.put([record.id, seq], stripVectors(schema, prepared.stored));
    builder.add(seq, values);
    state.count++;
    if (builder.size >= REBUILD_SEGMENT_DOCS) flush();
  }
  flush();
  store.colstate.put(record.id, state);
  return state;
}

export function alterCollection(store: Store, name: string, body: unknown, hooks: WriteHooks = {}): AlterResult {
  const current = getRecord(store, name);
  const { record, changes } = planAlter(current, body);
  if (!isPlainObject(body) || body.fields === undefined) {
    // attributes only: the index stays as it is
    store.collections.put(record.name, record);
    return { record, fields: changes, rebuilt: false };
  }
  // stored vectors of dropped vector fields go with them
  for (const f of current.fields) {
    if (!record.fields.some((g) => g.id === f.id) && f.type === 'float[]') dropVectors(store, current.id, f.id);
  }
  rebuildIndex(store, record, hooks);
  store.collections.put(record.name, record);
  return { record, fields: changes };
}
