/**
 * src/analytics/analytics.ts: search analytics for one process serving a data directory.
 *
 *   search answered ─ recordSearch ─▶ [SEARCH, ts, ...]  ┐ committed before the answer
 *   event accepted ── recordEvent ──▶ [EVENT, ts, ...]   ┘
 *                                        │ compact: every few seconds, and before a flush
 *                                        ▼ (searches once the 4-second pause has passed)
 *                                    [QUERY, rule, q] += 1, [COUNTER, rule, doc] += weight
 *                                        │ flush: every --analytics-flush-interval,
 *                                        ▼ POST /analytics/flush, the graceful stop
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
import { COUNTER, DISTINCT, EVENT, QUERY, SEARCH, openPending, type PendingKey, type PendingStore } from './pending.js';
import { analyticsDisabled, expandQuery, foundOf, normalizeQuery, userKey } from './query.js';
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
/** GET /analytics/status: counts of what is pending, by the reference's names. */
export interface AnalyticsStatus {
  popular_prefix_queries: number;
  nohits_prefix_queries: number;
  log_prefix_queries: number;
  query_log_events: number;
  query_counter_events: number;
  doc_log_events: number;
  doc_counter_events: number;
}

/** The status of a server without search analytics: nothing pending. */
export function emptyStatus(): AnalyticsStatus {
  return { popular_prefix_queries: 0, nohits_prefix_queries: 0, log_prefix_queries: 0, query_log_events: 0, query_counter_events: 0, doc_log_events: 0, doc_counter_events: 0 };
}

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
  private queued: Array<() => void> = [];
  private batch?: Promise<void>;
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
   * the log entry is committed (inTransaction; the caller answers after that). Returns undefined, having done
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
      if (r.capture_search_requests === false) continue; // counts only the query events sent to it
      if (r.type === 'nohits_queries') {
        found ??= foundOf(answer);
        if (found === 0) entry.push([r.id, q]);
      } else if (r.params.expand_query) {
        expanded ??= normalizeQuery(expandQuery(q, answer)) ?? q;
        entry.push([r.id, expanded]);
      } else entry.push([r.id, q]);
    }
    if (entry.length === 0) return undefined;
    const { db } = this.pending;
    const n = ++this.n;
    // The time is taken inside the transaction, so entries are in commit order (aggregate.ts).
    return this.inTransaction(() => db.put([SEARCH, Date.now(), process.pid, n], [user, entry]));
  }

  /**
   * Runs `op` in the next write transaction of the analytics directory, with every other op
   * queued before that transaction starts, and resolves once it is committed. One
   * transaction callback per batch instead of one per request: callbacks cross from LMDB's
   * writer thread to this one, and per request that cost more than the writes themselves.
   *
   * The analytics directory commits synchronously (pending.ts: no overlapping sync), so a
   * commit is on disk when it resolves: the answer waits for one disk flush, shared by every
   * request in the batch.
   */
  private inTransaction(op: () => void): Promise<void> {
    this.queued.push(op);
    if (this.batch) return this.batch;
    const { db } = this.pending;
    let ran = false;
    const batch = (
      db.childTransaction(() => {
        ran = true;
        const ops = this.queued;
        this.queued = [];
        this.batch = undefined; // ops queued from now on go into the next transaction
        for (const o of ops) o();
      }) as Promise<unknown>
    ).then(() => undefined);
    if (!ran) this.batch = batch;
    return batch;
  }

  /**
   * Checks an event against the rules; returns what it increments, or for a `query` event
   * (Typesense 30: named after a popular_queries or nohits_queries rule) the query it logs.
   * The event's type is `type` (v1) or `event_type` (v30).
   */
  private parseEvent(body: unknown): { rule: StoredRule; event: RuleEvent; docId: string } | { rule: StoredRule; q: string; user: string } {
    if (!isPlainObject(body)) bad('an analytics event must be a JSON object with `type`, `name` and `data`');
    const { name, data } = body;
    const type = body.type ?? body.event_type;
    if (typeof name !== 'string' || name === '') bad('an analytics event needs a `name` (the event name of a counter rule)');
    if (type === 'query') {
      const rule = ruleIndex(this.engine.store).queryByName.get(name);
      if (!rule) bad(`no popular_queries or nohits_queries rule is named \`${name}\``);
      if (!isPlainObject(data) || typeof data.q !== 'string') bad('a query event needs `data.q`: the query (a string)');
      if (typeof data.user_id !== 'string' || data.user_id === '') bad('an analytics event needs `data.user_id` (a string)');
      const q = normalizeQuery(data.q);
      if (q === undefined) bad('`data.q` is empty or too long to be recorded');
      return { rule, q, user: userKey(data.user_id, '') };
    }
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

  /**
   * What is pending, in the reference's GET /analytics/status shape: distinct queries of
   * popular_queries and nohits_queries rules, and documents with counts pending for counter
   * rules (log rules are not implemented, so their counts are 0). Reads two numbers per rule.
   */
  status(): AnalyticsStatus {
    const { db } = this.pending;
    const out = emptyStatus();
    for (const r of ruleIndex(this.engine.store).byId.values()) {
      if (r.type === 'counter') out.doc_counter_events += (db.get([DISTINCT, r.id, 'c']) as number | undefined) ?? 0;
      else {
        const n = (db.get([DISTINCT, r.id, 'q']) as number | undefined) ?? 0;
        if (r.type === 'popular_queries') out.popular_prefix_queries += n;
        else out.nohits_prefix_queries += n;
      }
    }
    return out;
  }

  /** Accepts one event: logged with its rule and weight, resolving once committed (inTransaction); compaction adds it to its document's count. */
  async recordEvent(body: unknown): Promise<void> {
    const parsed = this.parseEvent(body);
    const { db } = this.pending;
    const n = ++this.n;
    if ('q' in parsed) {
      // logged as a search of that rule alone, so it is counted the way searches are
      const entry: Array<[number, string]> = [[parsed.rule.id, parsed.q]];
      await this.inTransaction(() => db.put([SEARCH, Date.now(), process.pid, n], [parsed.user, entry]));
      return;
    }
    const { rule, event, docId } = parsed;
    await this.inTransaction(() => db.put([EVENT, Date.now(), process.pid, n], [rule.id, docId, event.weight]));
  }

  /** Inside a transaction: counts one more distinct pending key for a rule, unless it has `cap`. */
  private takeDistinct(ruleId: number, kind: 'q' | 'c', cap: number): boolean {
    const { db } = this.pending;
    const key: PendingKey = [DISTINCT, ruleId, kind];
    const n = (db.get(key) as number | undefined) ?? 0;
    if (n >= cap) return false;
    db.put(key, n + 1);
    return true;
  }

  /** Inside a transaction: adds `n` to a pending count, unless it would be a new key beyond the rule's cap. */
  private addPending(area: typeof QUERY | typeof COUNTER, ruleId: number, key: string, n: number, cap: number): void {
    const { db } = this.pending;
    const k: PendingKey = [area, ruleId, key];
    const cur = db.get(k) as number | undefined;
    if (cur === undefined && !this.takeDistinct(ruleId, area === QUERY ? 'q' : 'c', cap)) return;
    db.put(k, (cur ?? 0) + n);
  }

  /**
   * Folds the logs into the pending counts: events all, searches once the pause after them
   * has passed (aggregate.ts), in transactions of about ANALYTICS_DEFAULTS.compactChunk
   * entries. Resolves with the number of log entries folded.
   */
  compact(): Promise<number> {
    this.compacting ??= (async () => {
      let total = 0;
      const { db, env } = this.pending;
      try {
        for (let start: PendingKey | undefined = [SEARCH]; start; ) {
          const r = (await db.childTransaction(() => this.compactSearches(start!))) as { decided: number; next?: PendingKey };
          total += r.decided;
          start = r.next;
        }
        for (;;) {
          const folded = (await db.childTransaction(() => this.compactEvents())) as number;
          total += folded;
          if (folded < ANALYTICS_DEFAULTS.compactChunk) break;
        }
        await env.flushed;
        return total;
      } finally {
        this.compacting = undefined;
      }
    })();
    return this.compacting;
  }

  /**
   * One transaction's worth of the search log from `start`, in time order. A search is
   * decided once every search that could cancel it (the same user's, within the pause
   * after it) has been read: when the read reached the end of the log, that is every search
   * older than the pause; when it stopped at time T, every search older than T - pause.
   * Those form a prefix of the log; they are removed and what counts is added.
   */
  private compactSearches(start: PendingKey): { decided: number; next?: PendingKey } {
    const { db } = this.pending;
    const pause = ANALYTICS_DEFAULTS.pauseMs;
    const read: Array<{ key: PendingKey; user: string; entry: LoggedSearch }> = [];
    let horizon = Date.now(); // (inside the transaction: every search logged before it is visible)
    let atEnd = true;
    const chunk = ANALYTICS_DEFAULTS.compactChunk;
    for (const { key, value } of db.getRange({ start, end: [SEARCH + 1] })) {
      const ts = key[1] as number;
      // Stop once a chunk is read and the pause after its last search too: the whole chunk is
      // then decided, however little time it spans. (The pause after its first search would
      // decide only that search's millisecond when the chunk spans less than the pause.)
      if (read.length >= chunk && ts - read[chunk - 1]!.entry.ts > pause + 1) {
        horizon = ts;
        atEnd = false;
        break;
      }
      const [user, rules] = value as [string, Array<[number, string]>];
      read.push({ key, user, entry: { ts, rules } });
    }
    const byUser = new Map<string, LoggedSearch[]>();
    for (const r of read) {
      let list = byUser.get(r.user);
      if (!list) byUser.set(r.user, (list = []));
      list.push(r.entry);
    }
    const byId = ruleIndex(this.engine.store).byId;
    for (const list of byUser.values()) {
      for (const [ruleId, q] of decideUser(list, horizon, pause).counted) {
        const rule = byId.get(ruleId);
        if (!rule || rule.type === 'counter') continue; // deleted (or replaced) meanwhile
        this.addPending(QUERY, ruleId, q, 1, (rule.params.limit ?? ANALYTICS_DEFAULTS.limit) * ANALYTICS_DEFAULTS.pendingQueriesPerLimit);
      }
    }
    // Decided: exactly the searches older than horizon - pause, a prefix of what was read.
    let decided = 0;
    while (decided < read.length && horizon - read[decided]!.entry.ts > pause) db.remove(read[decided++]!.key);
    return { decided, next: atEnd ? undefined : [SEARCH, horizon - pause] };
  }

  /** One transaction's worth of the event log: each event's weight added to its document's pending count. */
  private compactEvents(): number {
    const { db } = this.pending;
    const byId = ruleIndex(this.engine.store).byId;
    let n = 0;
    for (const { key, value } of db.getRange({ start: [EVENT], end: [EVENT + 1], limit: ANALYTICS_DEFAULTS.compactChunk })) {
      db.remove(key);
      n++;
      const [ruleId, docId, weight] = value as [number, string, number];
      if (byId.get(ruleId)?.type !== 'counter') continue; // deleted meanwhile
      this.addPending(COUNTER, ruleId, docId, weight, ANALYTICS_DEFAULTS.maxPendingCounters);
    }
    return n;
  }

  /** True when the search or event log holds anything. */
  private hasLogged(): boolean {
    const { db } = this.pending;
    for (const area of [SEARCH, EVENT]) for (const _ of db.getKeys({ start: [area], end: [area + 1], limit: 1 })) return true;
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
    every(ANALYTICS_DEFAULTS.compactIntervalMs, async () => (this.hasLogged() ? this.compact() : 0), 'compaction');
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
