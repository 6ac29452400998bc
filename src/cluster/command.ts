/**
 * src/cluster/command.ts: the writes a cluster replicates, as commands.
 *
 * Every function that changes a data directory's replicated state goes through `commit`.
 * On a single node it runs its local part at once. On a cluster node it hands the command
 * to the replicator, which appends it to the JetStream stream; every node (this one
 * included) then applies the stream in order (apply.ts), running the same local part inside
 * `applying(...)`, where `commit` runs locally. The caller gets the result of its own
 * node's application. What is not deterministic (a generated key value, an embedding, an
 * LLM's answer, a provider check) is settled before the command is made, by the node that
 * received the request, and carried in the command.
 */
import { currentCommand } from '../clock.js';
import { FathomError, type ErrorCode } from '../errors.js';
import { parseJson, stringifyJson } from '../json.js';
import type { BatchOp } from '../collection/writer.js';
import type { Store } from '../storage/store.js';
import type { BatchPart } from '../analytics/flush.js';
import type { RuleKind } from '../rulesets/rulesets.js';
import type { ConversationActor } from '../conversation/history.js';

export type Command =
  | { op: 'collection.create'; schema: unknown }
  | { op: 'collection.delete'; name: string }
  | { op: 'collection.update'; name: string; body: unknown }
  | { op: 'alias.upsert'; name: string; body: unknown }
  | { op: 'alias.delete'; name: string }
  | { op: 'stopwords.put'; name: string; body: unknown }
  | { op: 'stopwords.delete'; name: string }
  /** A stemming dictionary's words, parsed and normalised by the node that received the import. */
  | { op: 'stemdict.import'; id: string; words: Array<[string, string]> }
  | { op: 'stemdict.delete'; id: string }
  | { op: 'docs.write'; collection: string; ops: BatchOp[] }
  /** A key's validated fields and what is stored of its value (its hash and prefix; the value only when kept). */
  | { op: 'key.create'; body: Record<string, unknown> }
  | { op: 'key.delete'; id: string }
  | { op: 'keys.purge' }
  | { op: 'model.put'; area: string; noun: string; id: string; rec: Record<string, unknown>; create: boolean }
  | { op: 'model.delete'; area: string; noun: string; id: string }
  /** `actor`: who asked (src/conversation/history.ts); absent in commands published before owners were recorded. */
  | { op: 'conversation.append'; id: string; question: string; answer: string; ttl: number; create: boolean; actor?: ConversationActor }
  | { op: 'conversation.update'; id: string; body: unknown; actor?: ConversationActor }
  | { op: 'conversation.delete'; id: string; actor?: ConversationActor }
  | { op: 'conversations.purge' }
  | { op: 'analytics.rule.put'; name: string; body: unknown; create: boolean }
  | { op: 'analytics.rule.delete'; name: string }
  /** A collection's own synonym or curation rule (src/rulesets: /collections/:c/synonyms, /overrides). */
  | { op: 'rule.put'; kind: RuleKind; collection: string; id: string; body: unknown }
  | { op: 'rule.delete'; kind: RuleKind; collection: string; id: string }
  /** A synonym set or curation set, whole (/synonym_sets, /curation_sets). */
  | { op: 'ruleset.put'; kind: RuleKind; name: string; body: unknown }
  | { op: 'ruleset.delete'; kind: RuleKind; name: string }
  /** One item of a set (/synonym_sets/:name/items/:id, /curation_sets/:name/items/:id). */
  | { op: 'ruleset.item.put'; kind: RuleKind; name: string; id: string; body: unknown }
  | { op: 'ruleset.item.delete'; kind: RuleKind; name: string; id: string }
  /** POST /config: runtime settings, as checked by the node that received them (src/runtime-config.ts). */
  | { op: 'config.update'; changes: Record<string, unknown> }
  | { op: 'preset.put'; name: string; body: unknown }
  | { op: 'preset.delete'; name: string }
  /** A sealed batch of one node's analytics, with its parts as [rule id, part] pairs. */
  | { op: 'analytics.apply'; envId: string; batchId: number; parts: Array<[number, BatchPart]> };

/** A command as it travels: who made it (to route the result back) and when it takes effect. */
export interface Envelope {
  /** Unique id (also JetStream's de-duplication id). */
  id: string;
  /** Its time, ms: what `now` is while it is applied everywhere. */
  at: number;
  cmd: Command;
}

/** Hands a command to the cluster and resolves with this node's result of applying it. */
export type Replicate = (cmd: Command) => Promise<unknown>;

const replicators = new WeakMap<Store, Replicate>();

/** Makes every write to `store` go through the cluster (a cluster node's serving process). */
export function replicateThrough(store: Store, r: Replicate | undefined): void {
  if (r) replicators.set(store, r);
  else replicators.delete(store);
}

/**
 * Does a write to `store` made now go through the stream (a cluster node's, and not a
 * command being applied)? What `commit` decides; callers that shape a command first ask it.
 */
export function goesThroughStream(store: Store): boolean {
  return replicators.has(store) && !currentCommand();
}

/**
 * Runs a write: `local` at once on a single node, or while its command is applied; on a
 * cluster node, through the stream (resolving with what `local` returned on this node).
 */
export function commit<T>(store: Store, cmd: Command, local: () => Promise<T>): Promise<T> {
  if (!goesThroughStream(store)) return local();
  return replicators.get(store)!(cmd) as Promise<T>;
}

// ---------------------------------------------------------------------------
// Wire format: JSON (64-bit integers exact, see json.ts); an op that carries an error
// carries its code and message.
// ---------------------------------------------------------------------------

function wireOps(ops: BatchOp[]): unknown[] {
  return ops.map((op) => (op.kind === 'error' ? { kind: 'error', error: { code: op.error instanceof FathomError ? op.error.code : 'BAD_DOCUMENT', message: op.error.message } } : op));
}

export function encode(e: Envelope): Uint8Array {
  const cmd = e.cmd.op === 'docs.write' ? { ...e.cmd, ops: wireOps(e.cmd.ops) } : e.cmd;
  return Buffer.from(stringifyJson({ ...e, cmd }));
}

export function decode(bytes: Uint8Array): Envelope {
  const e = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as Envelope;
  if (e.cmd.op === 'docs.write') {
    e.cmd.ops = e.cmd.ops.map((op) => {
      const o = op as unknown as { kind: string; error?: { code: ErrorCode; message: string } };
      return o.kind === 'error' ? { kind: 'error', error: new FathomError(o.error!.code, o.error!.message) } : op;
    }) as BatchOp[];
  }
  return e;
}
