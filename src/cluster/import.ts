/**
 * src/cluster/import.ts: an import on a cluster node.
 *
 * Lines are read as they arrive and grouped into commands of up to
 * CLUSTER_DEFAULTS.importCommandLines lines (or `batch_size`, when larger) and about
 * importCommandBytes; each becomes one `docs.write` command (its lines as they arrived,
 * or, for a collection with embedding fields, the documents with their vectors computed
 * here, once; a `store: false` image is checked here and left out: unstored.ts). Up to
 * CLUSTER_IMPORT_DEPTH batches are in flight: published in input order (the embedding of a
 * batch waits for the one before it, and its publish follows at once), while JetStream and
 * the nodes work on the earlier ones. Each batch's result lines go out once this node has
 * applied it, in input order, so every `"success": true` line is replicated and durable.
 */
import { CLUSTER_DEFAULTS, IMPORT_BATCH_SIZE, MAX_IMPORT_BATCH_SIZE } from '../defaults.js';
import { FathomError } from '../errors.js';
import type { Engine } from '../engine.js';
import type { BatchOp, OpResult } from '../collection/writer.js';
import { getRecord } from '../collection/catalog.js';
import { formatResult, type ImportOptions, type ImportSummary, type ResultSink } from '../io/import.js';
import { decodeLine, isBlank, notUtf8, splitLines } from '../io/lines.js';

/** Batches of one import in flight at once. */
const CLUSTER_IMPORT_DEPTH = 16;

export async function replicatedImport(
  engine: Engine,
  collection: string,
  source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
  opts: ImportOptions,
  sink: ResultSink,
): Promise<ImportSummary> {
  getRecord(engine.store, collection); // 404 before anything is read
  const batchSize = opts.batchSize ?? IMPORT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_IMPORT_BATCH_SIZE) {
    throw new FathomError('BAD_PARAMETER', `batch_size must be an integer from 1 to ${MAX_IMPORT_BATCH_SIZE}`);
  }
  const action = opts.action ?? 'create';
  // (a command is one transaction on every node: batch_size lines is too small a unit)
  const commandLines = Math.max(batchSize, CLUSTER_DEFAULTS.importCommandLines);
  let bytes = 0;
  const summary: ImportSummary = { total: 0, succeeded: 0, failed: 0 };
  const inflight: Array<{ texts: string[]; results: Promise<OpResult[]> }> = [];
  /** Publishing order: each batch is handed to the cluster after the one before it. */
  let order: Promise<unknown> = Promise.resolve();
  let ops: BatchOp[] = [];
  let texts: string[] = [];

  const emitOldest = async () => {
    const { texts: t, results } = inflight.shift()!;
    const rs = await results;
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i]!;
      summary.total++;
      if (r.ok) summary.succeeded++;
      else summary.failed++;
      if (r.ok && opts.failedOnly) continue;
      await sink(formatResult(r, t[i] ?? '', opts), r.ok);
    }
    await opts.afterBatch?.(summary.total);
  };

  const submit = async () => {
    if (ops.length === 0) return;
    const batch = ops;
    const batchTexts = texts;
    ops = [];
    texts = [];
    bytes = 0;
    // prepared (embedded) after the batch before it, and handed to the cluster at once:
    // batches reach the stream in input order while several are in flight
    const ready = order.then(() => engine.prepareOps(collection, batch, opts.remoteEmbedding ?? {}));
    order = ready.catch(() => undefined);
    const results = ready.then((r) => engine.commitOps(collection, r));
    results.catch(() => undefined);
    inflight.push({ texts: batchTexts, results });
    if (inflight.length >= CLUSTER_IMPORT_DEPTH) await emitOldest();
  };

  for await (const raw of splitLines(source)) {
    if (isBlank(raw.bytes)) continue;
    const text = decodeLine(raw.bytes);
    if (text === undefined) {
      ops.push({ kind: 'error', error: notUtf8(raw.no) });
      texts.push(raw.bytes.toString('utf8'));
    } else {
      ops.push({ kind: 'line', text, action, dirty: opts.dirtyValues });
      texts.push(text);
    }
    bytes += raw.bytes.length;
    if (ops.length >= commandLines || bytes >= CLUSTER_DEFAULTS.importCommandBytes) await submit();
  }
  await submit();
  while (inflight.length > 0) await emitOldest();
  return summary;
}
