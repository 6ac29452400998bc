/**
 * src/llm/registry.ts: stored LLM model records (conversation models, natural-language
 * search models) with create / get / list / update / delete.
 *
 * Records live in the `aux` database under `[area, id]`, so every process serving a data
 * directory and the CLI see the same models. A record keeps its `api_key` (each call needs
 * it); every answer and listing shows it masked, and no message quotes it. Creating a model,
 * or changing how it reaches its provider, first makes one real call to the provider: a
 * model that cannot answer is refused with 400 and the provider's message.
 */
import { commit } from '../cluster/command.js';
import { randomUUID } from 'node:crypto';
import { CONVERSATION_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { isPlainObject } from '../json.js';
import { write, type Store } from '../storage/store.js';
import { ChatClient } from './client.js';
import { maskSecret, PROVIDER_FIELDS, providerConfig } from './config.js';
import { openFields, sealFields } from '../storage/secrets.js';

/** A stored model record: its id, provider fields and the kind's own fields. */
export interface ModelRecord {
  id: string;
  model_name: string;
  api_key?: string;
  [k: string]: unknown;
}

export interface ModelKind<R extends ModelRecord> {
  /** `aux` area of the records. */
  area: string;
  /** Names a record in messages ("conversation model"). */
  noun: string;
  /** Fields a record may have, besides `id`. */
  fields: readonly string[];
  /** Checks a whole record (provider fields included) and fills defaults; throws 400. */
  validate(rec: Record<string, unknown>): R;
}

export interface RegistryOptions {
  /** fetch used for the provider check (tests inject one for hosted URLs). */
  fetch?: typeof fetch;
}

const ID_RE = /^[^\s/?#%\\]+$/;

function checkId(id: unknown, noun: string): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > CONVERSATION_DEFAULTS.maxModelIdLength || !ID_RE.test(id)) {
    throw new FathomError('BAD_REQUEST', `a ${noun} \`id\` must be 1-${CONVERSATION_DEFAULTS.maxModelIdLength} characters without whitespace, '/', '\\', '?', '#' or '%'`);
  }
  return id;
}

/** The client for a stored record (the record as loaded, with its key, opened if it is stored encrypted). */
export function clientFor(rec: ModelRecord, opts: RegistryOptions = {}): ChatClient {
  return new ChatClient(providerConfig(openFields(rec, ['api_key'], `model \`${rec.id}\``)), opts.fetch);
}

/** A record as stored: its `api_key` sealed when a secrets key is set (src/storage/secrets.ts). */
function stored(rec: ModelRecord): Record<string, unknown> {
  return sealFields(rec as Record<string, unknown>, ['api_key']);
}

export class ModelRegistry<R extends ModelRecord> {
  constructor(
    readonly kind: ModelKind<R>,
    private readonly store: Store,
  ) {}

  /** A record as shown to users: `api_key` masked. */
  view(r: R): Record<string, unknown> {
    const out: Record<string, unknown> = { ...r };
    if (typeof r.api_key === 'string') out.api_key = maskSecret(r.api_key);
    return out;
  }

  private checkFields(body: Record<string, unknown>): void {
    for (const k of Object.keys(body)) {
      if (k !== 'id' && !this.kind.fields.includes(k)) {
        throw new FathomError('BAD_REQUEST', `unknown field \`${k}\`; a ${this.kind.noun} has ${['id', ...this.kind.fields].map((f) => `\`${f}\``).join(', ')}`);
      }
    }
  }

  /** The stored record with its key (for calls); 404 when there is none. */
  load(id: string): R {
    const r = this.store.aux.get([this.kind.area, id]) as R | undefined;
    if (!r) throw new FathomError('NOT_FOUND', `${this.kind.noun} \`${id}\` not found`);
    return r;
  }

  get(id: string): Record<string, unknown> {
    return this.view(this.load(id));
  }

  list(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (const { key, value } of this.store.aux.getRange({ start: [this.kind.area, ''] })) {
      if (!Array.isArray(key) || key[0] !== this.kind.area) break;
      out.push(this.view(value as R));
    }
    return out;
  }

  /** Creates a model after one real call to its provider. `id` generated when absent. */
  async create(body: unknown, opts: RegistryOptions = {}): Promise<Record<string, unknown>> {
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', `the ${this.kind.noun} must be a JSON object`);
    this.checkFields(body);
    const id = body.id === undefined ? randomUUID() : checkId(body.id, this.kind.noun);
    if (this.store.aux.get([this.kind.area, id]) !== undefined) throw new FathomError('CONFLICT', `a ${this.kind.noun} with id \`${id}\` already exists`);
    const rec = this.kind.validate({ ...body, id });
    await clientFor(rec, opts).check();
    // checked once, by the node that received the request; the record is what replicates
    await putModel(this.store, this.kind, id, stored(rec), true);
    return this.view(rec);
  }

  /**
   * Changes the fields given (the others stay). An `api_key` sent back in its masked form
   * keeps the stored key. A change to how the provider is reached is checked with it first.
   */
  async update(id: string, body: unknown, opts: RegistryOptions = {}): Promise<Record<string, unknown>> {
    if (!isPlainObject(body)) throw new FathomError('BAD_REQUEST', `the ${this.kind.noun} must be a JSON object`);
    this.checkFields(body);
    const old = this.load(id);
    if (body.id !== undefined && body.id !== id) throw new FathomError('BAD_REQUEST', `the ${this.kind.noun} id cannot change (\`${String(body.id)}\` in the body, \`${id}\` in the path)`);
    const merged: Record<string, unknown> = { ...old, ...body, id };
    if (typeof old.api_key === 'string' && body.api_key === maskSecret(old.api_key)) merged.api_key = old.api_key;
    for (const [k, v] of Object.entries(body)) if (v === null) delete merged[k];
    const rec = this.kind.validate(merged);
    const changed = PROVIDER_FIELDS.some((k) => JSON.stringify(rec[k]) !== JSON.stringify(old[k]));
    if (changed) await clientFor(rec, opts).check();
    await putModel(this.store, this.kind, id, stored(rec), false);
    return this.view(rec);
  }

  async delete(id: string): Promise<Record<string, unknown>> {
    return this.view((await deleteModel(this.store, this.kind, id)) as unknown as R);
  }

}

/** Stores a model record (a replicated write: the provider was checked before). */
export function putModel(store: Store, kind: { area: string; noun: string }, id: string, rec: Record<string, unknown>, create: boolean): Promise<void> {
  return commit(store, { op: 'model.put', area: kind.area, noun: kind.noun, id, rec, create }, () =>
    write(store, () => {
      const exists = store.aux.get([kind.area, id]) !== undefined;
      if (create && exists) throw new FathomError('CONFLICT', `a ${kind.noun} with id \`${id}\` already exists`);
      if (!create && !exists) throw new FathomError('NOT_FOUND', `${kind.noun} \`${id}\` not found`);
      store.aux.put([kind.area, id], rec);
    }),
  );
}

/** Deletes a model record (a replicated write); resolves with the record. */
export function deleteModel(store: Store, kind: { area: string; noun: string }, id: string): Promise<Record<string, unknown>> {
  return commit(store, { op: 'model.delete', area: kind.area, noun: kind.noun, id }, () =>
    write(store, () => {
      const r = store.aux.get([kind.area, id]) as Record<string, unknown> | undefined;
      if (!r) throw new FathomError('NOT_FOUND', `${kind.noun} \`${id}\` not found`);
      store.aux.remove([kind.area, id]);
      return r;
    }),
  );
}
