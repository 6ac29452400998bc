/**
 * Import: JSON Lines in, one result line out per input line, in input order.
 *
 *   bytes --splitLines--> lines --batch_size--> prepare (worker: parse, validate, index)
 *                                                  |
 *                                                  v
 *                                     1 txn each: applyPrepared (write)
 *                                          or applyBatch (parse, validate, write)
 *                                                  |
 *                           result lines, in order <-+
 *
 * Batches are prepared ahead when nothing stands in the way (see prepare.ts), otherwise
 * parsed in their transaction. Up to IMPORT_PIPELINE_DEPTH batches (and about
 * IMPORT_PIPELINE_DOCS documents) are in flight: LMDB's writer thread commits batch k
 * while batch k+1 is being prepared. A batch's results are emitted only after its
 * transaction is committed and flushed, so every `"success":true` line is durable.
 */
import { IMPORT_BATCH_SIZE, IMPORT_PIPELINE_DEPTH, IMPORT_PIPELINE_DOCS, MAX_IMPORT_BATCH_SIZE } from '../defaults.js';
import { FathomError, errorMessage, isFathomError } from '../errors.js';
import { stringifyJson } from '../json.js';
import type { DirtyValues } from '../document/document.js';
import { NO_DOC, applyBatch, applyPrepared, type BatchOp, type OpResult, type WriteAction, type WriteHooks } from '../collection/writer.js';
import { getRecord, getSchema } from '../collection/catalog.js';
import type { Preparer } from './prepare.js';
import type { Store } from '../storage/store.js';
import { checkRoom, flushed, isNoSpace } from '../storage/diskfull.js';
import { decodeLine, isBlank, lineBytes, notUtf8, packLines, splitLines, type PackedLines, type RawLine } from './lines.js';

export interface ImportOptions {
  action?: WriteAction;
  batchSize?: number;
  dirtyValues?: DirtyValues;
  returnId?: boolean;
  returnDoc?: boolean;
  /** Hand only failed lines to the sink (the CLI's `--quiet`): successes are counted, not formatted. */
  failedOnly?: boolean;
  hooks?: WriteHooks;
  /** Completes a batch before its transaction (computes embedding fields). */
  enrich?: (ops: BatchOp[]) => Promise<BatchOp[]>;
  /** remote_embedding_batch_size / _timeout_ms / _num_tries for this import. */
  remoteEmbedding?: { batchSize?: number; timeoutMs?: number; numTries?: number };
  /** Prepares batches ahead of their transactions (see prepare.ts); without it, lines are parsed in the transaction. */
  preparer?: Preparer;
  /** Called after each committed batch (progress, merges). */
  afterBatch?: (done: number) => Promise<void> | void;
}

export interface ImportSummary {
  total: number;
  succeeded: number;
  failed: number;
  /** Failed lines that found no room on the disk (their batch stored nothing); absent when none. */
  noSpace?: number;
}

export type ResultSink = (line: string, ok: boolean) => void | Promise<void>;

/** One result line, its keys in the reference's order (sorted, as its JSON library writes them). */
export function formatResult(r: OpResult, text: string, opts: ImportOptions): string {
  if (r.ok) {
    const o: Record<string, unknown> = {};
    if (opts.returnDoc) o.document = r.doc;
    if (opts.returnId) o.id = r.id;
    o.success = true;
    return stringifyJson(o);
  }
  return stringifyJson({ code: r.error.status, document: text, error: r.error.message, success: false });
}

export async function importLines(
  store: Store,
  collection: string,
  source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
  opts: ImportOptions,
  sink: ResultSink,
): Promise<ImportSummary> {
  getRecord(store, collection); // fails early when the collection does not exist
  const batchSize = opts.batchSize ?? IMPORT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_IMPORT_BATCH_SIZE) {
    throw new FathomError('BAD_PARAMETER', `batch_size must be an integer from 1 to ${MAX_IMPORT_BATCH_SIZE}`);
  }
  const action = opts.action ?? 'create';
  const depth = Math.max(2, Math.min(IMPORT_PIPELINE_DEPTH, Math.ceil(IMPORT_PIPELINE_DOCS / batchSize)));
  const summary: ImportSummary = { total: 0, succeeded: 0, failed: 0 };
  /**
   * Per batch in flight: its lines (a failure echoes its line) and, once applied, the
   * results. A prepared batch keeps its lines as bytes and decodes only failed ones.
   */
  const inflight: Array<{ texts: string[]; done: Promise<OpResult[]>; results?: OpResult[] }> = [];
  let texts: string[] = [];
  let ops: BatchOp[] = [];
  let raws: RawLine[] = [];

  /**
   * Emits the results of the oldest batches once they are durable: every batch whose
   * commit had resolved before we asked for `flushed` is covered by that one flush, so a
   * single fsync wait acknowledges many batches.
   */
  const drain = async () => {
    await inflight[0]!.done;
    let ready = 0;
    while (ready < inflight.length && inflight[ready]!.results) ready++;
    await flushed(store);
    for (const { texts, results } of inflight.splice(0, ready)) {
      for (let i = 0; i < results!.length; i++) {
        const r = results![i]!;
        summary.total++;
        if (r.ok) summary.succeeded++;
        else {
          summary.failed++;
          if (r.error.code === 'NO_SPACE') summary.noSpace = (summary.noSpace ?? 0) + 1;
        }
        if (r.ok && opts.failedOnly) continue;
        await sink(formatResult(r, texts[i] ?? '', opts), r.ok);
      }
      await opts.afterBatch?.(summary.total);
    }
  };

  // Batches are prepared ahead (prepare.ts) unless the import wants documents back, updates
  // stored documents, or writes a collection whose hooks need every document (vectors,
  // embeddings, references).
  const schema = getSchema(store, collection);
  const ahead =
    opts.preparer !== undefined &&
    !opts.returnDoc &&
    action !== 'update' &&
    !opts.hooks?.needsDocuments?.(store, schema);
  let prepared = 0;
  /** Transactions are queued in batch order, each once its batch is prepared. */
  let queued: Promise<unknown> = Promise.resolve();

  const enqueue = (entry: (typeof inflight)[number], txn: Promise<unknown>) => {
    entry.done = (txn as Promise<OpResult[]>).then((r) => {
      // Results wait for the flush. A success needs neither its line (only failures echo
      // it) nor, without return_doc, its document: let them go while still young.
      for (let i = 0; i < r.length; i++) {
        const x = r[i]!;
        if (!x.ok) continue;
        if (entry.texts.length > i) entry.texts[i] = '';
        if (!opts.returnDoc) x.doc = NO_DOC;
      }
      entry.results = r;
      return r;
    });
    // a failure is reported by drain, once; batches queued behind it are never drained
    entry.done.catch(() => undefined);
    inflight.push(entry);
  };

  /**
   * A batch of raw lines, prepared ahead (in the worker from the second batch on). A full
   * first batch means more lines may follow: the worker starts booting on its own core
   * before the first batch is prepared here, rather than after it is written.
   */
  const submitRaw = async () => {
    if (raws.length === 0) return;
    if (prepared === 0 && raws.length >= batchSize) opts.preparer!.warm();
    const lines = packLines(raws);
    raws = [];
    const entry: (typeof inflight)[number] = { texts: [], done: undefined as unknown as Promise<OpResult[]> };
    const record = getRecord(store, collection);
    // The first batch is prepared here: an import of one batch starts no thread. A batch
    // the worker failed on, or that applyPrepared declines, is applied line by line.
    // (a batch that will not fit on the disk is not prepared: its transaction refuses it)
    const ready = hasRoom(store)
      ? opts.preparer!.prepare({ record, lines, action, dirty: opts.dirtyValues }, prepared++ === 0).catch(() => null)
      : Promise.resolve(null);
    const txn = (queued = Promise.all([ready, queued]).then(([p]) =>
      isolated(
        store,
        collection,
        () => (p && applyPrepared(store, collection, p, lines, opts.hooks)) || applyBatch(store, collection, lineOps(lines, action, opts.dirtyValues), opts.hooks),
        () => lineOps(lines, action, opts.dirtyValues),
        opts.hooks,
        lines.bytes.byteLength,
      ).then((r) => {
        // failures echo their line
        for (let i = 0; i < r.length; i++) if (!r[i]!.ok) entry.texts[i] = lineText(lines, i);
        return r;
      }).catch(unstored(lines.nos.length, (i) => (entry.texts[i] = lineText(lines, i)))),
    ));
    enqueue(entry, txn);
    if (inflight.length >= depth) await drain();
  };

  /** The latest batch's embedding; the next one starts when it is done. */
  let enriching: Promise<unknown> = Promise.resolve();

  const submit = async () => {
    if (ops.length === 0) return;
    const batchTexts = texts;
    let batchOps = ops;
    texts = [];
    ops = [];
    // Embedding (a model's thread, a remote API) runs while the next lines are read and
    // batched, one batch at a time (so a model's memory for a batch is taken once);
    // transactions still apply in batch order. A batch that will not fit on the disk is not
    // embedded: its transaction refuses it.
    const enrich = opts.enrich && hasRoom(store) ? opts.enrich : undefined;
    const ready: Promise<BatchOp[]> = enrich ? enriching.then(() => enrich(batchOps)) : Promise.resolve(batchOps);
    enriching = ready.catch(() => undefined);
    const entry: (typeof inflight)[number] = { texts: batchTexts, done: undefined as unknown as Promise<OpResult[]> };
    enqueue(
      entry,
      (queued = Promise.all([ready, queued]).then(([enriched]) => {
        batchOps = enriched;
        return isolated(store, collection, () => applyBatch(store, collection, batchOps, opts.hooks), () => batchOps, opts.hooks, textBytes(batchTexts)).catch(
          unstored(batchOps.length, () => ''),
        );
      })),
    );
    if (inflight.length >= depth) await drain();
  };

  for await (const raw of splitLines(source)) {
    if (isBlank(raw.bytes)) continue;
    if (ahead) {
      // decoded where it is parsed (prepare.ts)
      raws.push(raw);
      if (raws.length >= batchSize) await submitRaw();
      continue;
    }
    const op = lineOp(raw.bytes, raw.no, action, opts.dirtyValues);
    ops.push(op);
    // a failure echoes its line (invalid UTF-8 replaced: it is only echoed)
    texts.push(op.kind === 'line' ? op.text : raw.bytes.toString('utf8'));
    if (ops.length >= batchSize) await submit();
  }
  await submitRaw();
  await submit();
  while (inflight.length > 0) await drain();
  return summary;
}

/**
 * A batch's transaction, such that one line cannot fail the others: when the batch fails
 * on something other than a line's own error (a FathomError is a line's answer, or the
 * import's, such as a collection dropped meanwhile, or the disk's: see unstored), its
 * lines are applied again one transaction each, and a line that still fails gets that
 * failure as its result.
 */
async function isolated(store: Store, collection: string, batch: () => OpResult[], ops: () => BatchOp[], hooks: WriteHooks | undefined, bytes: number): Promise<OpResult[]> {
  try {
    return await store.transact(batch, bytes);
  } catch (e) {
    if (isFathomError(e)) throw e;
  }
  return Promise.all(
    ops().map((op) =>
      store.transact(() => applyBatch(store, collection, [op], hooks)).then(
        (r) => r[0]!,
        (e): OpResult => ({ ok: false, error: isFathomError(e) ? e : new FathomError('UNPROCESSABLE', `this line could not be indexed: ${errorMessage(e)}`) }),
      ),
    ),
  );
}

/**
 * A batch whose transaction found no room on the disk stored nothing: each of its `n`
 * lines fails with that error (`echo(i)` keeps line i for the result), and the import goes
 * on with the next batch, which may fit (space freed meanwhile, or a smaller batch).
 * Any other failure still ends the import.
 */
function unstored(n: number, echo: (i: number) => unknown): (e: unknown) => OpResult[] {
  return (e) => {
    if (!isNoSpace(e)) throw e;
    const results: OpResult[] = [];
    for (let i = 0; i < n; i++) {
      echo(i);
      results.push({ ok: false, error: e });
    }
    return results;
  };
}

/** Whether the disk takes another batch now (see diskfull.ts, transaction). */
function hasRoom(store: Store): boolean {
  try {
    checkRoom(store, 0, 'importing');
    return true;
  } catch {
    return false;
  }
}

/** About the bytes of a batch's lines (their UTF-16 length: close enough for the room check). */
function textBytes(texts: string[]): number {
  let n = 0;
  for (const t of texts) n += t.length;
  return n;
}

/** Line i of a packed batch, as given (invalid UTF-8 replaced: it is only echoed). */
function lineText(lines: PackedLines, i: number): string {
  return lineBytes(lines, i).toString('utf8');
}

/** A line's op for applyBatch: parsed when its batch is applied (see BatchOp 'line'), or its UTF-8 error. */
function lineOp(bytes: Buffer, no: number, action: WriteAction, dirty: DirtyValues | undefined): BatchOp {
  const text = decodeLine(bytes);
  return text === undefined ? { kind: 'error', error: notUtf8(no) } : { kind: 'line', text, action, dirty };
}

/** The ops of a packed batch, for applyBatch. */
function lineOps(lines: PackedLines, action: WriteAction, dirty: DirtyValues | undefined): BatchOp[] {
  return Array.from({ length: lines.nos.length }, (_, i) => lineOp(lineBytes(lines, i), lines.nos[i]!, action, dirty));
}
