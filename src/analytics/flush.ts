/**
 * src/analytics/flush.ts: here are pending counts, apply them to their collections exactly
 * once.
 *
 * The pending state (analytics directory) and the destination collections (data directory)
 * are two LMDB environments, so no single transaction spans both. A flush therefore goes
 *
 *   1. analytics dir: seal     pending counts -> batch n (n from a counter), pending cleared
 *   2. data dir:      apply    if applied[envId] < n: write batch n into the destinations,
 *                              applied[envId] = n        (one transaction, durable)
 *   3. analytics dir: drop     batch n
 *
 * A kill between 1 and 2 leaves batch n to apply; between 2 and 3, a batch the data
 * directory records as applied, which the next flush drops without applying. Batches are
 * applied in ascending order and a flush stops at the first that fails, so "applied up to
 * n" is exact: every process that sees batch n also sees every lower batch not yet
 * dropped (numbers come from one counter in the same environment), so none is skipped,
 * and however many processes flush at once, each batch is written once.
 */
import { ANALYTICS_DEFAULTS } from '../defaults.js';
import { commit } from '../cluster/command.js';
import type { Engine } from '../engine.js';
import type { BatchOp } from '../collection/writer.js';
import { readState } from '../index/manifest.js';
import type { CollectionRecord } from '../schema/schema.js';
import type { Store } from '../storage/store.js';
import { queryDocId } from './query.js';
import { BATCH, COUNTER, DISTINCT, META, QUERY, type PendingKey, type PendingStore } from './pending.js';
import { storedRules, type StoredRule } from './rules.js';

/** A rule's part of a batch: queries with their counts, or documents with their increments. */
export interface BatchPart {
  kind: 'queries' | 'counters';
  entries: Array<[string, number]>;
}

export interface Batch {
  id: number;
  parts: Map<number, BatchPart>;
}

/** What a flush did, for its log line and for `POST /analytics/flush`. */
export interface FlushReport {
  /** Batches written into the data directory by this flush. */
  batches: number;
  /** Query documents written (popular and no-hit queries). */
  queries: number;
  /** Documents whose counter field was incremented. */
  counters: number;
  /** Query documents removed to keep a rule's destination within its `limit`. */
  trimmed: number;
  /** Counter increments for documents that no longer exist (skipped, not an error). */
  skipped_documents: number;
  /** Writes the destination refused (e.g. a counter beyond int32); counted and left out. */
  failed: number;
  /** Parts whose rule was deleted, or whose destination collection is gone. */
  dropped: number;
}

export function emptyReport(): FlushReport {
  return { batches: 0, queries: 0, counters: 0, trimmed: 0, skipped_documents: 0, failed: 0, dropped: 0 };
}

/** The data-directory record of the batches of one analytics environment already applied. */
function appliedKey(envId: string): PendingKey {
  return ['analytics', 'applied', envId];
}

/** Moves everything pending into a new batch; resolves with its id, or 0 when nothing was pending. */
export async function sealBatch(p: PendingStore): Promise<number> {
  const id = (await p.db.childTransaction(() => {
    const parts = new Map<number, BatchPart>();
    const keys: PendingKey[] = [];
    for (const [area, kind] of [
      [QUERY, 'queries'],
      [COUNTER, 'counters'],
    ] as const) {
      for (const { key, value } of p.db.getRange({ start: [area], end: [area + 1] })) {
        keys.push(key);
        const rule = key[1] as number;
        let part = parts.get(rule);
        if (!part) parts.set(rule, (part = { kind, entries: [] }));
        part.entries.push([String(key[2]), value as number]);
      }
    }
    if (keys.length === 0) return 0;
    for (const key of p.db.getKeys({ start: [DISTINCT], end: [DISTINCT + 1] })) keys.push(key);
    const n = (p.db.get([META, 'next_batch']) as number | undefined) ?? 1;
    p.db.put([META, 'next_batch'], n + 1);
    for (const [rule, part] of parts) p.db.put([BATCH, n, rule], part);
    for (const k of keys) p.db.remove(k);
    return n;
  })) as number;
  await p.env.flushed;
  return id;
}

/** Sealed batches not yet dropped, in ascending order. */
export function waitingBatches(p: PendingStore): Batch[] {
  const out: Batch[] = [];
  for (const { key, value } of p.db.getRange({ start: [BATCH], end: [BATCH + 1] })) {
    const id = key[1] as number;
    let b = out[out.length - 1];
    if (!b || b.id !== id) out.push((b = { id, parts: new Map() }));
    b.parts.set(key[2] as number, value as BatchPart);
  }
  return out;
}

export async function dropBatch(p: PendingStore, id: number): Promise<void> {
  await p.db.childTransaction(() => {
    for (const k of p.db.getKeys({ start: [BATCH, id], end: [BATCH, id + 1] })) p.db.remove(k);
  });
  await p.env.flushed;
}

function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return 0;
}

type Apply = (collection: string, ops: BatchOp[]) => Array<{ ok: boolean; error?: Error }>;

/**
 * Writes a query rule's counts: each query's document `{id, q, count}` gets its pending
 * count added, and the destination keeps the rule's `limit` queries with the highest counts
 * (ties: by query text). Only documents that hold a query's count (id = queryDocId(q)) are
 * ever removed; documents the user put there under other ids are left alone.
 */
function applyQueries(store: Store, apply: Apply, rec: CollectionRecord, rule: StoredRule, entries: Array<[string, number]>, report: FlushReport, warn: Warn): void {
  const collId = rec.id;
  const limit = rule.params.limit ?? ANALYTICS_DEFAULTS.limit;
  const ranked = new Map<string, { q: string; count: number; pending: boolean; exists: boolean }>();
  let added = 0;
  for (const [q, n] of entries) {
    const id = queryDocId(q);
    const seq = store.ids.get([collId, id]);
    const prev = seq === undefined ? undefined : (store.docs.get([collId, seq]) as Record<string, unknown> | undefined);
    ranked.set(id, { q, count: num(prev?.count) + n, pending: true, exists: prev !== undefined });
    if (!prev) added++;
  }
  if (readState(store, collId).count + added > limit) {
    // Rank with every query document already there.
    for (const { value } of store.docs.getRange({ start: [collId], end: [collId + 1] })) {
      const doc = value as Record<string, unknown>;
      if (typeof doc.q !== 'string' || typeof doc.id !== 'string' || ranked.has(doc.id) || doc.id !== queryDocId(doc.q)) continue;
      ranked.set(doc.id, { q: doc.q, count: num(doc.count), pending: false, exists: true });
    }
  }
  const order = [...ranked.entries()].sort((a, b) => b[1].count - a[1].count || (a[1].q < b[1].q ? -1 : a[1].q > b[1].q ? 1 : 0));
  const ops: BatchOp[] = [];
  order.forEach(([id, e], i) => {
    if (i < limit) {
      if (e.pending) ops.push({ kind: 'write', action: 'emplace', doc: { id, q: e.q, count: e.count } });
    } else if (e.exists) {
      ops.push({ kind: 'delete', id, ignoreNotFound: true });
      report.trimmed++;
    }
  });
  if (ops.length === 0) return;
  const results = apply(rec.name, ops);
  results.forEach((r, i) => {
    if (r.ok) {
      if (ops[i]!.kind === 'write') report.queries++;
    } else {
      report.failed++;
      warn(`analytics rule \`${rule.name}\`: a query document was refused by \`${rec.name}\`: ${r.error?.message}`);
    }
  });
}

/** Adds a counter rule's increments to `counter_field` of each existing destination document. */
function applyCounters(store: Store, apply: Apply, rec: CollectionRecord, rule: StoredRule, entries: Array<[string, number]>, report: FlushReport, warn: Warn): void {
  const collId = rec.id;
  const field = rule.params.destination.counter_field!;
  const ops: BatchOp[] = [];
  for (const [docId, w] of entries) {
    const seq = store.ids.get([collId, docId]);
    const doc = seq === undefined ? undefined : (store.docs.get([collId, seq]) as Record<string, unknown> | undefined);
    if (!doc) {
      report.skipped_documents++;
      continue;
    }
    const cur = doc[field];
    const next = typeof cur === 'bigint' ? cur + BigInt(w) : num(cur) + w;
    ops.push({ kind: 'write', action: 'update', id: docId, doc: { [field]: next } });
  }
  if (ops.length === 0) return;
  apply(rec.name, ops).forEach((r) => {
    if (r.ok) report.counters++;
    else {
      report.failed++;
      warn(`analytics rule \`${rule.name}\`: a counter update was refused by \`${rec.name}\`: ${r.error?.message}`);
    }
  });
}

type Warn = (msg: string) => void;

/**
 * Applies one batch to the data directory unless it already was (one transaction, with the
 * applied record). Resolves with the collections written.
 */
export async function applyBatchOnce(engine: Engine, p: PendingStore, batch: Batch, report: FlushReport, warn: Warn): Promise<string[]> {
  // On a cluster node the batch is a replicated command: every node applies it, and the
  // applied record (replicated too) keeps a batch published twice from being counted twice.
  const cmd = { op: 'analytics.apply' as const, envId: p.id, batchId: batch.id, parts: [...batch.parts.entries()] };
  const { applied, part, written } = await commit(engine.store, cmd, () => applyBatchLocal(engine, p.id, batch, warn));
  if (applied) {
    for (const k of Object.keys(part) as Array<keyof FlushReport>) report[k] += part[k];
    report.batches++;
  }
  // Fault injection for the kill tests: die (as kill -9 would) with the batch applied and not yet dropped.
  if (process.env.FATHOM_ANALYTICS_FAILPOINT === 'after-apply') process.kill(process.pid, 'SIGKILL');
  return written;
}

/** What applying one batch did: whether it was applied (not before), its counts, the collections written. */
export interface AppliedBatch {
  applied: boolean;
  part: FlushReport;
  written: string[];
}

/** Applies batch `batch` of analytics environment `envId` in one transaction, unless it already was. */
export async function applyBatchLocal(engine: Engine, envId: string, batch: Batch, warn: Warn = () => {}): Promise<AppliedBatch> {
  const store = engine.store;
  const part = emptyReport();
  const { result: applied, written } = await engine.writeTogether((apply) => {
    const done = (store.aux.get(appliedKey(envId)) as number | undefined) ?? 0;
    if (done >= batch.id) return false;
    const byId = new Map([...storedRules(store).values()].map((r) => [r.id, r]));
    for (const [ruleId, bp] of batch.parts) {
      const rule = byId.get(ruleId);
      const wantKind = rule && (rule.type === 'counter' ? 'counters' : 'queries');
      if (!rule || wantKind !== bp.kind) {
        part.dropped++;
        continue;
      }
      const dest = rule.params.destination.collection;
      const rec = store.collections.get(store.aliases.get(dest) ?? dest) as CollectionRecord | undefined;
      if (!rec) {
        part.dropped++;
        warn(`analytics rule \`${rule.name}\`: destination collection \`${dest}\` no longer exists; its pending counts are dropped`);
        continue;
      }
      if (bp.kind === 'queries') applyQueries(store, apply, rec, rule, bp.entries, part, warn);
      else applyCounters(store, apply, rec, rule, bp.entries, part, warn);
    }
    store.aux.put(appliedKey(envId), batch.id);
    return true;
  });
  return { applied, part, written };
}
