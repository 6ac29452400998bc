/**
 * src/analytics/analytics.ts: search analytics for one process serving a data directory.
 *
 *   search answered ─ recordSearch ─▶ [SEARCH, user, ts, ...]   (durable before the answer)
 *                                        │ compact: every few seconds, and before a flush
 *                                        ▼
 *   event accepted ─ recordEvent ──▶ [QUERY, rule, q] += 1, [COUNTER, rule, doc] += weight
 *                                        │ flush: every --analytics-flush-interval,
 *                                        ▼ POST /analytics/flush, graceful stop
 *                                    destination collections (data directory)
 *
 * Every process serving the directory opens one of these over the same analytics directory;
 * the one that owns the timers (the only process, or a cluster's primary) compacts and
 * flushes on schedule, and any may flush on request: each step is a transaction, so they
 * never count a search or an event twice (see pending.ts and flush.ts).
 */
import { ANALYTICS_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import type { Engine } from '../engine.js';
import { isPlainObject } from '../json.js';
import { decideUser, type LoggedSearch } from './aggregate.js';
import { applyBatchOnce, dropBatch, emptyReport, sealBatch, waitingBatches, type FlushReport } from './flush.js';
import { COUNTER, DISTINCT, QUERY, SEARCH, openPending, type PendingKey, type PendingStore } from './pending.js';
import { analyticsDisabled, expandQuery, foundOf, normalizeQuery } from './query.js';
import { EVENT_TYPES, ruleIndex, type RuleEvent, type StoredRule } from './rules.js';

export type AnalyticsLog = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface AnalyticsOptions {
  /** The pending-state directory (`--analytics-dir`). */
  dir: string;
  /** Seconds between scheduled flushes (default ANALYTICS_DEFAULTS.flushIntervalSec). */
  flushIntervalSec?: number;
  log?: AnalyticsLog;
  /** Called for each collection a flush wrote (a cluster worker tells the merging process). */
  afterWrite?: (collection: string) => void;
}

/** A search answer as the routes have it: the engine's object or the JSON text sent. */
export type SearchAnswer = string | { found?: unknown; hits?: unknown; grouped_hits?: unknown };

function bad(message: string): never {
  throw new FathomError('BAD_REQUEST', message);
}

export class Analytics {
  readonly pending: PendingStore;
  readonly flushIntervalSec: number;
  private readonly log: AnalyticsLog;
  private readonly afterWrite?: (collection: string) => void;
  private n = 0;
  private compacting?: Promise<number>;
  private flushing: Promise<unknown> = Promise.resolve();
  private timers: NodeJS.Timeout[] = [];
  private closed = false;

  constructor(
    readonly engine: Engine,
    opts: AnalyticsOptions,
  ) {
    this.pending = openPending(opts.dir);
    this.flushIntervalSec = opts.flushIntervalSec ?? ANALYTICS_DEFAULTS.flushIntervalSec;
    this.log = opts.log ?? (() => {});
    this.afterWrite = opts.afterWrite;
  }

  /** Query rules fed by searches on `collection` (the name as requested: a collection or an alias). Hot. */
  private rulesFor(collection: string): StoredRule[] | undefined {
    const { bySource } = ruleIndex(this.engine.store);
    if (bySource.size === 0) return undefined;
    const direct = bySource.get(collection);
    const target = this.engine.store.aliases.get(collection);
    const viaAlias = target === undefined ? undefined : bySource.get(target);
    if (!viaAlias) return direct;
    if (!direct) return viaAlias;
    return [...new Set([...direct, ...viaAlias])];
  }

  /**
   * Logs one answered search for the query rules whose source is `collection`; resolves once
   * the log entry is durable (the caller answers after that). Returns undefined, having done
   * nothing, when no rule wants the search. Hot: every search of a served directory.
   */
  recordSearch(collection: string, params: Record<string, unknown>, answer: SearchAnswer, user: string): Promise<void> | undefined {
    const rules = this.rulesFor(collection);
    if (!rules || this.closed || analyticsDisabled(params)) return undefined;
    const q = normalizeQuery(params.q);
    if (q === undefined) return undefined;
    const entry: Array<[number, string]> = [];
    let found: number | undefined;
    let expanded: string | undefined;
    for (const r of rules) {
      if (r.type === 'nohits_queries') {
        found ??= foundOf(answer);
        if (found === 0) entry.push([r.id, q]);
      } else if (r.params.expand_query) {
        expanded ??= normalizeQuery(expandQuery(q, answer)) ?? q;
        entry.push([r.id, expanded]);
      } else entry.push([r.id, q]);
    }
    if (entry.length === 0) return undefined;
    const { db, env } = this.pending;
    const n = ++this.n;
    // The time is taken inside the transaction, so entries are in commit order (aggregate.ts).
    return db.childTransaction(() => db.put([SEARCH, user, Date.now(), process.pid, n], entry)).then(() => env.flushed) as Promise<void>;
  }

  /** Checks an event against the rules; returns what it increments. */
  private parseEvent(body: unknown): { rule: StoredRule; event: RuleEvent; docId: string } {
    if (!isPlainObject(body)) bad('an analytics event must be a JSON object with `type`, `name` and `data`');
    const { type, name, data } = body;
    if (typeof name !== 'string' || name === '') bad('an analytics event needs a `name` (the event name of a counter rule)');
    if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
      bad(`an analytics event's \`type\` must be one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(type ?? null)}`);
    }
    const hit = ruleIndex(this.engine.store).byEvent.get(name);
    if (!hit) bad(`no analytics rule has an event named \`${name}\``);
    if (hit.event.type !== type) bad(`event \`${name}\` is a ${hit.event.type} event (rule \`${hit.rule.name}\`), not a ${type} event`);
    if (!isPlainObject(data)) bad('an analytics event needs `data`: an object with `doc_id` and `user_id`');
    if (typeof data.doc_id !== 'string' || data.doc_id === '') bad('an analytics event needs `data.doc_id`: the id of the document (a string)');
    if (data.doc_id.length > 2048) bad('`data.doc_id` is too long to be a document id');
    if (typeof data.user_id !== 'string' || data.user_id === '') bad('an analytics event needs `data.user_id` (a string)');
    if (data.q !== undefined && typeof data.q !== 'string') bad('`data.q` must be a string when given');
    return { rule: hit.rule, event: hit.event, docId: data.doc_id };
  }

  /** Accepts one event: its weight is added to the pending count of its document; resolves once durable. */
  async recordEvent(body: unknown): Promise<void> {
    const { rule, event, docId } = this.parseEvent(body);
    const { db, env } = this.pending;
    await db.childTransaction(() => {
      const key: PendingKey = [COUNTER, rule.id, docId];
      const cur = db.get(key) as number | undefined;
      if (cur === undefined && !this.takeDistinct(rule, 'c', ANALYTICS_DEFAULTS.maxPendingCounters)) return;
      db.put(key, (cur ?? 0) + event.weight);
    });
    await env.flushed;
  }

  /** Inside a transaction: counts one more distinct pending key for a rule, unless it has `cap`. */
  private takeDistinct(rule: StoredRule, kind: 'q' | 'c', cap: number): boolean {
    const { db } = this.pending;
    const key: PendingKey = [DISTINCT, rule.id, kind];
    const n = (db.get(key) as number | undefined) ?? 0;
    if (n >= cap) return false;
    db.put(key, n + 1);
    return true;
  }

  /**
   * Decides the logged searches whose pause has passed (aggregate.ts) and adds the ones
   * that count to their rules' pending counts, in transactions of about
   * ANALYTICS_DEFAULTS.compactChunk searches. Resolves with the number decided.
   */
  compact(): Promise<number> {
    this.compacting ??= (async () => {
      let total = 0;
      let start: PendingKey = [SEARCH];
      try {
        for (;;) {
          const r = (await this.pending.db.childTransaction(() => this.compactChunk(start))) as { decided: number; next?: PendingKey };
          total += r.decided;
          if (!r.next) break;
          start = r.next;
        }
        await this.pending.env.flushed;
        return total;
      } finally {
        this.compacting = undefined;
      }
    })();
    return this.compacting;
  }

  /** One compaction transaction from `start`: whole users, about compactChunk searches. */
  private compactChunk(start: PendingKey): { decided: number; next?: PendingKey } {
    const { db } = this.pending;
    const now = Date.now();
    const byId = ruleIndex(this.engine.store).byId;
    const groups: Array<{ keys: PendingKey[]; entries: LoggedSearch[] }> = [];
    let user: unknown;
    let seen = 0;
    let next: PendingKey | undefined;
    for (const { key, value } of db.getRange({ start, end: [SEARCH + 1] })) {
      if (key[1] !== user) {
        if (seen >= ANALYTICS_DEFAULTS.compactChunk) {
          next = [SEARCH, user as string, Number.MAX_VALUE];
          break;
        }
        user = key[1];
        groups.push({ keys: [], entries: [] });
      }
      const g = groups[groups.length - 1]!;
      g.keys.push(key);
      g.entries.push({ ts: key[2] as number, rules: value as Array<[number, string]> });
      seen++;
    }
    let decided = 0;
    for (const g of groups) {
      const d = decideUser(g.entries, now, ANALYTICS_DEFAULTS.pauseMs);
      for (let i = 0; i < d.decided; i++) db.remove(g.keys[i]!);
      decided += d.decided;
      for (const [ruleId, q] of d.counted) {
        const rule = byId.get(ruleId);
        if (!rule || rule.type === 'counter') continue; // deleted meanwhile
        const key: PendingKey = [QUERY, ruleId, q];
        const cur = db.get(key) as number | undefined;
        const cap = (rule.params.limit ?? ANALYTICS_DEFAULTS.limit) * ANALYTICS_DEFAULTS.pendingQueriesPerLimit;
        if (cur === undefined && !this.takeDistinct(rule, 'q', cap)) continue;
        db.put(key, (cur ?? 0) + 1);
      }
    }
    return { decided, next };
  }

  /** True when searches are logged and not yet decided. */
  private hasLoggedSearches(): boolean {
    for (const _ of this.pending.db.getKeys({ start: [SEARCH], end: [SEARCH + 1], limit: 1 })) return true;
    return false;
  }

  /**
   * Compacts, then writes everything pending into the destination collections (exactly
   * once, flush.ts). Flushes of one process run one at a time; other processes' may overlap.
   */
  flush(): Promise<FlushReport> {
    const run = async (): Promise<FlushReport> => {
      const t0 = performance.now();
      await this.compact();
      const report = emptyReport();
      await this.applyWaiting(report);
      if ((await sealBatch(this.pending)) > 0) await this.applyWaiting(report);
      if (report.batches > 0) this.log('info', 'analytics flush', { ...report, ms: Math.round(performance.now() - t0) });
      return report;
    };
    const p = this.flushing.then(run, run);
    this.flushing = p.catch(() => {});
    return p;
  }

  /** Applies batches sealed but not applied (a flush cut short by a crash). */
  recover(): Promise<FlushReport> {
    const run = async (): Promise<FlushReport> => {
      const report = emptyReport();
      await this.applyWaiting(report);
      if (report.batches > 0) this.log('info', 'analytics flush: applied batches left by an interrupted flush', { ...report });
      return report;
    };
    const p = this.flushing.then(run, run);
    this.flushing = p.catch(() => {});
    return p;
  }

  private async applyWaiting(report: FlushReport): Promise<void> {
    for (const b of waitingBatches(this.pending)) {
      const written = await applyBatchOnce(this.engine, this.pending, b, report, (msg) => this.log('warn', msg));
      for (const c of written) this.afterWrite?.(c);
      await dropBatch(this.pending, b.id);
    }
  }

  /** Starts the scheduled compactions and flushes (the owning process only). */
  startTimers(): void {
    const every = (ms: number, fn: () => Promise<unknown>, what: string) => {
      let busy = false;
      const t = setInterval(() => {
        if (busy || this.closed) return;
        busy = true;
        fn()
          .catch((e) => this.log('error', `analytics ${what} failed`, { err: String(e) }))
          .finally(() => (busy = false));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(ANALYTICS_DEFAULTS.compactIntervalMs, async () => (this.hasLoggedSearches() ? this.compact() : 0), 'compaction');
    every(this.flushIntervalSec * 1000, () => this.flush(), 'flush');
  }

  /** Stops the timers and closes the analytics directory (after any flush in progress). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flushing;
    await this.compacting;
    await this.pending.close();
  }
}
