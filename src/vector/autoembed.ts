/**
 * Auto-embedding: fields with `embed: {from, model_config}` are filled by a model.
 *
 * Embedding is asynchronous (worker threads, remote APIs), so it happens before a batch's
 * write transaction: `enrichOps` gathers the texts of every document of the batch (the
 * `from` fields joined by spaces), embeds them in as few calls as the model allows, and
 * puts the vectors into the documents. A document whose embedding fails becomes a failed
 * operation of its own; the rest of the batch goes on. An update re-embeds only when one
 * of its `from` fields changed (otherwise the stored vector stays).
 *
 * `image` fields in `from` are embedded by an image-text model's image tower (all the
 * batch's images in batches of IMAGE_DEFAULTS.batchSize); a field with both texts and
 * images gets the normalised mean of the text's vector and each image's. An update that
 * does not send a `store: false` image again keeps the stored vector (the image is gone).
 */
import { FathomError } from '../errors.js';
import type { Store } from '../storage/store.js';
import type { CollectionRecord, Field, FieldDef, Schema } from '../schema/schema.js';
import { getSchema } from '../collection/catalog.js';
import { parseLineOp, type BatchOp } from '../collection/writer.js';
import { isPlainObject, ownValue, setOwn } from '../json.js';
import { getPath, validateId } from '../document/document.js';
import { loadDocument } from '../document/stored.js';
import { cachedEmbedQuery, l2normalize, loadEmbedder, parseModelConfig, type EmbedEnv, type Embedder } from '../embed/index.js';
import { ImageValueError } from '../embed/clip.js';

export interface RemoteEmbeddingOptions {
  /** remote_embedding_batch_size: texts per request to a remote model. */
  batchSize?: number;
  /** remote_embedding_timeout_ms. */
  timeoutMs?: number;
  /** remote_embedding_num_tries. */
  numTries?: number;
}

/** Checks every `embed` field's model and fills in `num_dim` from it. */
export async function resolveEmbedFields(fields: FieldDef[] | Omit<FieldDef, 'id'>[], env: EmbedEnv): Promise<void> {
  const types = new Map<string, string>(fields.map((f) => [f.name, f.type]));
  for (const f of fields) {
    if (!f.embed) continue;
    let embedder: Embedder;
    try {
      parseModelConfig(f.embed.model_config);
      embedder = await loadEmbedder(f.embed.model_config, env);
    } catch (e) {
      throw new FathomError('BAD_SCHEMA', `field \`${f.name}\`: ${(e as Error).message}`);
    }
    const image = f.embed.from.find((src) => types.get(src) === 'image');
    if (image !== undefined && !embedder.embedImages) {
      throw new FathomError(
        'BAD_SCHEMA',
        `field \`${f.name}\`: \`embed.from\` names the image field \`${image}\`, but model \`${f.embed.model_config.model_name}\` embeds only text; ` +
          'use an image-text model such as `ts/clip-vit-b-p32`, or a model directory with `model_type: "clip"`',
      );
    }
    if (f.num_dim !== undefined && f.num_dim !== embedder.dims) {
      throw new FathomError('BAD_SCHEMA', `field \`${f.name}\`: \`num_dim\` is ${f.num_dim} but model \`${f.embed.model_config.model_name}\` produces ${embedder.dims}-dimensional vectors`);
    }
    f.num_dim = embedder.dims;
  }
}

/** The text a document gives an embedding field, or undefined when none of its sources is present. */
export function sourceText(field: Pick<Field, 'embed'>, doc: Record<string, unknown>): string | undefined {
  const parts: string[] = [];
  for (const name of field.embed!.from) {
    const v = getPath(doc, name);
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && x !== undefined) parts.push(String(x));
    } else parts.push(String(v));
  }
  return parts.length ? parts.join(' ') : undefined;
}

function embedFields(schema: Schema): Field[] {
  return schema.fields.filter((f) => f.embed && f.kind === 'vector');
}

/** What a document gives an embedding field: the text of its text sources and its images. */
interface Sources {
  text?: string;
  /** Image values, with the field each came from. */
  images: Array<{ field: string; value: string }>;
  /** A `store: false` image source is absent (an update that did not send it again). */
  unsentImage: boolean;
}

function sources(schema: Schema, field: Field, doc: Record<string, unknown>): Sources | undefined {
  const parts: string[] = [];
  const images: Sources['images'] = [];
  let unsentImage = false;
  for (const name of field.embed!.from) {
    const src = schema.field(name);
    const v = getPath(doc, name);
    if (src?.kind === 'image') {
      if (typeof v === 'string') images.push({ field: name, value: v });
      else if (v === undefined || v === null) unsentImage ||= src.store === false;
      continue;
    }
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && x !== undefined) parts.push(String(x));
    } else parts.push(String(v));
  }
  if (parts.length === 0 && images.length === 0) return undefined;
  return { text: parts.length ? parts.join(' ') : undefined, images, unsentImage };
}

function sameSources(a: Sources | undefined, b: Sources | undefined): boolean {
  return !!a && !!b && a.text === b.text && a.images.length === b.images.length && a.images.every((x, i) => x.value === b.images[i]!.value);
}

interface Pending {
  op: number;
  field: Field;
  text?: string;
  images: Sources['images'];
}

/**
 * Returns `ops` with embedding fields filled in. Runs before the write transaction; the
 * previous version of an updated document is read from the current snapshot.
 */
export async function enrichOps(store: Store, collection: string, ops: BatchOp[], env: EmbedEnv, remote: RemoteEmbeddingOptions = {}): Promise<BatchOp[]> {
  let schema: Schema;
  try {
    schema = getSchema(store, collection);
  } catch {
    return ops;
  }
  const fields = embedFields(schema);
  if (fields.length === 0) return ops;
  const out = ops.map((op) => (op.kind === 'line' ? parseLineOp(op) : op));
  const pending: Pending[] = [];
  out.forEach((op, i) => {
    if (op.kind !== 'write' || !isPlainObject(op.doc)) return;
    const doc = op.doc;
    let previous: Record<string, unknown> | undefined;
    if (op.action !== 'create') {
      let id: string | undefined;
      try {
        id = op.id !== undefined ? validateId(op.id) : doc.id !== undefined && doc.id !== null ? validateId(doc.id) : undefined;
      } catch {
        return; // the write itself will report the bad id
      }
      const seq = id === undefined ? undefined : store.ids.get([schema.id, id]);
      if (seq !== undefined) previous = loadDocument(store, schema, seq);
    }
    const partial = op.action === 'update' || op.action === 'emplace';
    const merged = partial && previous ? { ...previous, ...doc } : doc;
    for (const f of fields) {
      const given = ownValue(doc, f.name);
      if (given !== undefined && given !== null) continue; // a vector given by the caller is kept
      const src = sources(schema, f, merged);
      if (src === undefined) continue;
      if (partial && previous && ownValue(previous, f.name) !== undefined) {
        if (sameSources(src, sources(schema, f, previous))) continue; // unchanged sources
        if (src.unsentImage) continue; // the image is not stored: the vector made with it stays
      }
      pending.push({ op: i, field: f, text: src.text, images: src.images });
    }
  });
  if (pending.length === 0) return out;
  // one call per field (model), all documents of the batch together
  const byField = new Map<number, Pending[]>();
  for (const p of pending) {
    const list = byField.get(p.field.id) ?? [];
    list.push(p);
    byField.set(p.field.id, list);
  }
  const failed = new Map<number, Error>();
  const vectors = new Map<number, Record<string, number[]>>();
  for (const list of byField.values()) {
    const field = list[0]!.field;
    const results = await embedSources(field, list, env, remote);
    list.forEach((p, k) => {
      const r = results[k]!;
      if (r instanceof Error) failed.set(p.op, r);
      else {
        const v = vectors.get(p.op) ?? {};
        setOwn(v, p.field.name, Array.from(r));
        vectors.set(p.op, v);
      }
    });
  }
  for (const [i, err] of failed) {
    out[i] = { kind: 'error', error: err instanceof FathomError ? err : new FathomError('BAD_REQUEST', `embedding failed: ${err.message}`) };
  }
  for (const [i, v] of vectors) {
    if (failed.has(i)) continue;
    const op = out[i] as Extract<BatchOp, { kind: 'write' }>;
    out[i] = { ...op, doc: { ...(op.doc as Record<string, unknown>), ...v }, text: undefined };
  }
  return out;
}

/**
 * One vector per pending document: its text's, its images', or the normalised mean of
 * both. Texts go to the model in one call, images in another; a failure fails only the
 * documents it concerns.
 */
async function embedSources(field: Field, list: Pending[], env: EmbedEnv, remote: RemoteEmbeddingOptions): Promise<Array<Float32Array | Error>> {
  let embedder: Embedder;
  try {
    embedder = await loadEmbedder(field.embed!.model_config, env);
  } catch (e) {
    return list.map(() => e as Error);
  }
  const withText = list.filter((p) => p.text !== undefined);
  const textVecs = new Map<Pending, Float32Array | Error>();
  if (withText.length > 0) {
    const opts = { purpose: 'index' as const, ...remote };
    const texts = withText.map((p) => p.text!);
    let r: Array<Float32Array | Error>;
    try {
      r = embedder.embedEach ? await embedder.embedEach(texts, opts) : await embedder.embed(texts, opts);
    } catch (e) {
      r = texts.map(() => e as Error);
    }
    withText.forEach((p, k) => textVecs.set(p, r[k]!));
  }
  const images = list.flatMap((p) => p.images.map((i) => i.value));
  let imageVecs: Array<Float32Array | Error> = [];
  if (images.length > 0) {
    try {
      if (!embedder.embedImages) throw new FathomError('BAD_SCHEMA', `model \`${embedder.modelName}\` embeds only text and cannot embed images`);
      imageVecs = await embedder.embedImages(images);
    } catch (e) {
      imageVecs = images.map(() => e as Error);
    }
  }
  let next = 0;
  return list.map((p) => {
    const parts: Array<Float32Array | Error> = [];
    if (p.text !== undefined) parts.push(textVecs.get(p)!);
    p.images.forEach((img, k) => {
      const v = imageVecs[next + k]!;
      // the source field's name completes an undecodable image's message
      parts.push(v instanceof ImageValueError ? new FathomError('BAD_DOCUMENT', `field \`${img.field}\` ${v.message}`) : v);
    });
    next += p.images.length;
    const err = parts.find((v) => v instanceof Error);
    if (err) return err;
    if (parts.length === 1) return parts[0]!;
    const mean = new Float32Array((parts[0] as Float32Array).length);
    for (const v of parts as Float32Array[]) for (let k = 0; k < mean.length; k++) mean[k]! += v[k]!;
    return l2normalize(mean);
  });
}

/** The query vector for `texts` (one text, or a weighted average of several, normalised). */
export async function embedQuery(field: Field, texts: string[], weights: number[] | undefined, env: EmbedEnv, remote: RemoteEmbeddingOptions = {}): Promise<Float32Array> {
  const embedder = await loadEmbedder(field.embed!.model_config, env);
  const vecs = await Promise.all(texts.map((t) => cachedEmbedQuery(embedder, t, remote)));
  if (vecs.length === 1) return vecs[0]!;
  const w = weights ?? vecs.map(() => 1 / vecs.length);
  const out = new Float32Array(embedder.dims);
  vecs.forEach((v, i) => {
    for (let k = 0; k < out.length; k++) out[k]! += w[i]! * v[k]!;
  });
  let n = 0;
  for (let k = 0; k < out.length; k++) n += out[k]! * out[k]!;
  n = Math.sqrt(n) || 1;
  for (let k = 0; k < out.length; k++) out[k]! /= n;
  return out;
}

export function hasEmbedFields(record: CollectionRecord): boolean {
  return record.fields.some((f) => !!f.embed);
}
