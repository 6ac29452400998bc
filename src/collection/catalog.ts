/**
 * src/collection: here is a collection name (or alias), give me its schema; here is a
 * batch of writes, apply it.
 *
 * catalog.ts keeps collection records and aliases; writer.ts applies document batches.
 */
import { dictionariesVersion, dictionaryMap } from '../stemming/dictionaries.js';
import { FathomError } from '../errors.js';
import { MAX_NAME_LENGTH } from '../defaults.js';
import { Schema, publicFields, validateCollectionSchema, type CollectionRecord } from '../schema/schema.js';
import { nextCounter, write, type Store } from '../storage/store.js';
import { evictSegments, readState } from '../index/manifest.js';
import { tokenizerFor, type Tokenizer } from '../tokenizer/tokenizer.js';
import type { Field } from '../schema/schema.js';
import { nowSeconds } from '../clock.js';
import { publicVoiceModel } from '../voice/config.js';

const schemas = new Map<string, Schema>();

/** Compiled schema of a record, cached by (directory, collection id, version). */
export function compile(store: Store, record: CollectionRecord): Schema {
  // a schema whose fields use stemming dictionaries carries their contents: keyed by their version too
  const dicts = record.fields.some((f) => f.stem_dictionary) ? dictionariesVersion(store) : -1;
  const key = `${store.dir}\u0000${record.id}\u0000${record.version}\u0000${dicts}`;
  let s = schemas.get(key);
  if (!s) {
    s = new Schema(record);
    if (dicts >= 0) {
      for (const f of record.fields) {
        if (f.stem_dictionary && !s.stemDictionaries.has(f.stem_dictionary)) {
          s.stemDictionaries.set(f.stem_dictionary, { key: `${f.stem_dictionary}@${store.dir}@${dicts}`, map: dictionaryMap(store, f.stem_dictionary) });
        }
      }
    }
    schemas.set(key, s);
  }
  return s;
}

/** The tokenizer of a text field of this schema. */
export function fieldTokenizer(schema: Schema, f: Pick<Field, 'locale' | 'stem'> & { stem_dictionary?: string }): Tokenizer {
  const dictionary = f.stem_dictionary ? schema.stemDictionaries.get(f.stem_dictionary) : undefined;
  return tokenizerFor({
    locale: f.locale,
    stem: f.stem,
    ...(dictionary ? { dictionary } : {}),
    separators: schema.record.token_separators,
    symbols: schema.record.symbols_to_index,
  });
}

/** The collection an alias stands for, or undefined when `name` is no alias. */
export function aliasTarget(store: Store, name: string): string | undefined {
  return name.length <= MAX_NAME_LENGTH ? store.aliases.get(name) : undefined;
}

/** Resolves an alias to its collection name (names that are not aliases come back unchanged). */
export function resolveName(store: Store, name: string): string {
  return aliasTarget(store, name) ?? name;
}

/** The stored record of a collection (or alias); shared, so copy it (copyRecord) before changing it. */
export function getRecord(store: Store, name: string): CollectionRecord {
  const real = resolveName(store, name);
  const rec = real.length <= MAX_NAME_LENGTH ? store.readShared<CollectionRecord>(store.collections, real) : undefined;
  if (!rec) throw new FathomError('COLLECTION_NOT_FOUND', `collection \`${name}\` not found`);
  return rec;
}

export function getSchema(store: Store, name: string): Schema {
  return compile(store, getRecord(store, name));
}

export interface CollectionInfo {
  name: string;
  fields: Record<string, unknown>[];
  default_sorting_field: string;
  token_separators: string[];
  symbols_to_index: string[];
  enable_nested_fields: boolean;
  voice_query_model?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  synonym_sets: string[];
  curation_sets: string[];
  num_documents: number;
  created_at: number;
}

export function describeCollection(store: Store, rec: CollectionRecord): CollectionInfo {
  const state = readState(store, rec.id);
  return {
    name: rec.name,
    fields: publicFields(rec.fields),
    default_sorting_field: rec.default_sorting_field,
    token_separators: rec.token_separators,
    symbols_to_index: rec.symbols_to_index,
    enable_nested_fields: rec.enable_nested_fields,
    ...(rec.voice_query_model ? { voice_query_model: publicVoiceModel(rec.voice_query_model) } : {}),
    ...(rec.metadata ? { metadata: rec.metadata } : {}),
    // shown even when none is linked, as the reference shows them
    synonym_sets: rec.synonym_sets ?? [],
    curation_sets: rec.curation_sets ?? [],
    num_documents: state.count,
    created_at: rec.created_at,
  };
}

/**
 * Creates a collection. `prepare` runs after validation and before anything is stored
 * (the engine resolves embedding models there, which is asynchronous).
 */
export async function createCollection(store: Store, raw: unknown, prepare?: (valid: ReturnType<typeof validateCollectionSchema>) => Promise<void>): Promise<CollectionInfo> {
  const valid = validateCollectionSchema(raw);
  if (store.collections.get(valid.name) !== undefined) {
    throw new FathomError('COLLECTION_EXISTS', `a collection named \`${valid.name}\` already exists`);
  }
  if (prepare) await prepare(valid);
  const rec = await write(store, () => {
    if (store.collections.get(valid.name) !== undefined) {
      throw new FathomError('COLLECTION_EXISTS', `a collection named \`${valid.name}\` already exists`);
    }
    const id = nextCounter(store, 'next_collection_id');
    const record: CollectionRecord = {
      ...valid,
      id,
      created_at: nowSeconds(),
      version: 1,
    };
    store.collections.put(valid.name, record);
    store.colstate.put(id, { nextSeq: 0, count: 0, segments: [] });
    return record;
  });
  return describeCollection(store, rec);
}

export function listCollections(store: Store): CollectionInfo[] {
  const out: CollectionInfo[] = [];
  for (const { value } of store.collections.getRange({})) out.push(describeCollection(store, value as CollectionRecord));
  // newest first, as the reference lists them
  return out.sort((a, b) => b.created_at - a.created_at || a.name.localeCompare(b.name));
}

/** Removes every key of a collection from the per-collection databases. Call inside a write transaction. */
export function dropCollectionData(store: Store, collId: number): void {
  for (const db of [store.docs, store.ids, store.segments, store.deletes, store.vectors]) {
    for (const key of db.getKeys({ start: [collId], end: [collId + 1] })) db.remove(key);
  }
  // (and the collection's own synonyms and curation rules, src/rulesets)
  for (const area of ['vlog', 'vepoch', 'synonyms', 'overrides']) {
    for (const key of store.aux.getKeys({ start: [area, collId], end: [area, collId + 1] })) store.aux.remove(key);
  }
  store.colstate.remove(collId);
}

export async function deleteCollection(store: Store, name: string): Promise<CollectionInfo> {
  const info = await write(store, () => {
    const rec = getRecord(store, name);
    const info = describeCollection(store, rec);
    dropCollectionData(store, rec.id);
    store.collections.remove(rec.name);
    // aliases pointing at it stay (as in the reference) but resolve to nothing
    return { info, id: rec.id };
  });
  evictSegments(store, info.id, []);
  return info.info;
}
