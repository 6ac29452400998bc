/**
 * Import preparation off the writing thread: parse, validate and index a batch of JSON
 * lines into a segment before its write transaction, in a worker thread.
 *
 *   main thread                       prepare worker
 *   -----------                       --------------
 *   lines --batch--> prepare(req) ---> parse, validate, tokenize, build the segment
 *                                      (documents get seqs 0..n-1, ids to generate are left open)
 *          txn: applyPrepared <------- PreparedBatch (segment blob transferred, not copied)
 *               check ids free, put documents and ids, give the segment its real seqs
 *               (or, if anything does not hold, applyBatch on the same lines)
 *
 * Why: a bulk import spent most of the writing thread's time parsing, validating,
 * tokenizing and building segments, none of which needs the database. A prepared batch
 * is speculative: it assumes every id is new and the collection's schema is the one it
 * was prepared with. `applyPrepared` checks both inside the transaction and otherwise
 * returns null, and the batch is applied the ordinary way, so results never differ.
 *
 * The worker is started by the second batch of an import (a small import never pays
 * for a thread) and lives as long as the engine. Without the compiled worker (tests run
 * from the TypeScript sources) batches are prepared on the calling thread, through the
 * same code.
 */
import { WorkerClient } from '../worker-client.js';
import { isFathomError } from '../errors.js';
import { documentObject, prepareDocument, validateId, type DirtyValues } from '../document/document.js';
import { Schema, type CollectionRecord } from '../schema/schema.js';
import { SegmentBuilder } from '../index/segment.js';
import { fieldTokenizer } from '../collection/catalog.js';
import { hasLongInteger, parseJsonLine, stringifyJson } from '../json.js';
import { stripVectors } from '../document/stored.js';
import type { WriteAction } from '../defaults.js';
import type { PreparedBatch } from '../collection/prepared.js';

export type { PreparedBatch } from '../collection/prepared.js';
import { decodeLine, lineBytes, notUtf8, type PackedLines } from './lines.js';

export interface PrepareRequest {
  record: CollectionRecord;
  /** The batch's lines, as bytes (copied to the worker: a memcpy, where strings are serialized one by one). */
  lines: PackedLines;
  /** `create`, `upsert` or `emplace` (an `update` needs the stored documents). */
  action: WriteAction;
  dirty?: DirtyValues;
}

const PENDING_ID = '';

/**
 * Prepares one batch (the worker's job, also run inline). Hot: once per imported line.
 * Mirrors applyBatch's order of checks, so that a line fails with the same message.
 */
export function prepareBatch(req: PrepareRequest, schema: Schema = new Schema(req.record)): PreparedBatch {
  const { lines } = req;
  const count = lines.nos.length;
  const docOf = new Int32Array(count).fill(-1);
  const errors: PreparedBatch['errors'] = new Array(count);
  const ids: Array<string | null> = [];
  const stored: Array<string | null> = [];
  const lossless: number[] = [];
  const given = new Set<string>();
  const failedIds: string[] = [];
  const builder = new SegmentBuilder();
  const mode = req.dirty ?? schema.defaultDirtyValues;
  // (a field's stemming dictionary is read from the data directory, which the worker does not open)
  let fallback: string | null = req.action === 'update' ? 'update' : schema.record.fields.some((f) => f.stem_dictionary) ? 'a stemming dictionary' : null;
  for (let i = 0; i < count && fallback === null; i++) {
    let id: string | null = null;
    try {
      const text = decodeLine(lineBytes(lines, i));
      if (text === undefined) throw notUtf8(lines.nos[i]!);
      const parsed = parseJsonLine(text);
      const input = documentObject(parsed.value);
      const wide = parsed.lossless;
      if (input.id !== undefined && input.id !== null) {
        id = validateId(input.id);
        if (given.has(id)) {
          fallback = 'an id given twice';
          break;
        }
        given.add(id);
      } else if ('id' in input) {
        fallback = 'a null id';
        break;
      }
      const prepared = prepareDocument(schema, input, { mode, generateId: () => PENDING_ID, owned: true });
      if (prepared.discovered.length > 0) {
        fallback = 'new fields';
        break;
      }
      const n = ids.length;
      docOf[i] = n;
      ids.push(id);
      const toStore = stripVectors(schema, prepared.stored); // `store: false` fields are never written
      if (prepared.asGiven && toStore === prepared.stored) {
        stored.push(null);
        lossless.push(wide ? 1 : 0);
      } else {
        if (id === null) delete toStore.id; // appended when applied
        const text = stringifyJson(toStore);
        stored.push(text);
        lossless.push(hasLongInteger(text) ? 1 : 0);
      }
      builder.add(n, prepared.values);
    } catch (e) {
      if (!isFathomError(e)) throw e;
      errors[i] = { code: e.code, message: e.message };
      if (id !== null) failedIds.push(id);
    }
  }
  const segment = fallback === null && builder.size > 0 ? builder.build((f) => fieldTokenizer(schema, f)).blob : null;
  return { collId: req.record.id, version: req.record.version, fallback, docOf, errors, failedIds, ids, texts: stored, lossless: Uint8Array.from(lossless), segment };
}

/** Compiled schemas by collection id and record version (one per record a preparer sees). */
export class SchemaCache {
  private key = '';
  private schema?: Schema;
  get(record: CollectionRecord): Schema {
    const key = `${record.id}:${record.version}`;
    if (key !== this.key || !this.schema) {
      this.schema = new Schema(record);
      this.key = key;
    }
    return this.schema;
  }
}

/** Prepares batches in a worker thread (started on demand), or inline without one. */
export class Preparer {
  private readonly worker?: WorkerClient<{ batch: PreparedBatch }>;
  private readonly schemas = new SchemaCache();
  /** Batches prepared so far, by where. */
  readonly counts = { worker: 0, inline: 0 };

  /**
   * @param opts.worker use a worker thread (default true)
   * @param opts.workerPath the compiled worker script (default: prepare-worker.js beside this module, when it exists)
   */
  constructor(opts: { worker?: boolean; workerPath?: string } = {}) {
    if (opts.worker !== false) this.worker = new WorkerClient(opts.workerPath ?? new URL('./prepare-worker.js', import.meta.url), { label: 'prepare thread' });
  }

  /**
   * Prepares a batch: inline when `inline` (an import's first batch, so that small imports
   * start no thread) or when there is no worker; in the worker otherwise. Batches sent to
   * the worker come back in the order they were sent.
   */
  prepare(req: PrepareRequest, inline: boolean): Promise<PreparedBatch> {
    if (!inline && this.worker?.available()) {
      return this.worker.call({ req }).then((m) => {
        this.counts.worker++;
        return m.batch;
      });
    }
    try {
      const batch = prepareBatch(req, this.schemas.get(req.record));
      this.counts.inline++;
      return Promise.resolve(batch);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Starts the worker thread now, if there is one, so that it boots (~50-100 ms of module
   * loading on its own core) while the first batch is prepared inline and written.
   */
  warm(): void {
    this.worker?.available();
  }

  async close(): Promise<void> {
    await this.worker?.close();
  }
}
