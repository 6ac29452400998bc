/**
 * Search analytics below the HTTP layer: which searches count (against a brute-force
 * reference), compaction over many users, and flushes that apply each batch exactly once
 * whatever point a crash cut them at.
 */
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { decideUser, type LoggedSearch } from '../src/analytics/aggregate.js';
import { Analytics } from '../src/analytics/analytics.js';
import { applyBatchOnce, emptyReport, sealBatch, waitingBatches } from '../src/analytics/flush.js';
import { BATCH, EVENT, META, QUERY, SEARCH } from '../src/analytics/pending.js';
import { expandQuery, foundOf, normalizeQuery, queryDocId, userKey } from '../src/analytics/query.js';
import { RULES_KEY, getRule, listRules, putRule, ruleIndex, storedRules } from '../src/analytics/rules.js';
import { ANALYTICS_DEFAULTS } from '../src/defaults.js';
import { actionAllowed } from '../src/keys/scope.js';
import type { Engine } from '../src/engine.js';
import { openEngine, tmpDir } from './helpers.js';

const PAUSE = ANALYTICS_DEFAULTS.pauseMs;

/** The rule in words: a search counts when no other search of the same rule follows within the pause. */
function reference(entries: LoggedSearch[], now: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  entries.forEach((e, i) => {
    if (now - e.ts <= PAUSE) return;
    for (const [rule, q] of e.rules) {
      const cancelled = entries.some((o, j) => j > i && o.rules.some(([r]) => r === rule) && o.ts - e.ts <= PAUSE);
      if (!cancelled) out.push([rule, q]);
    }
  });
  return out;
}

const sortPairs = (xs: Array<[number, string]>) => [...xs].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));

describe('which searches count', () => {
  it('records a typing sequence once, as its last query', () => {
    const typed = ['g', 'ga', 'gar', 'garden'].map((q, i) => ({ ts: 1000 + i * 300, rules: [[1, q]] as Array<[number, string]> }));
    expect(decideUser(typed, 1900 + PAUSE + 1, PAUSE)).toEqual({ decided: 4, counted: [[1, 'garden']] });
  });

  it('leaves searches younger than the pause undecided', () => {
    const typed = [
      { ts: 0, rules: [[1, 'a']] as Array<[number, string]> },
      { ts: 5000, rules: [[1, 'b']] as Array<[number, string]> },
    ];
    expect(decideUser(typed, 6000, PAUSE)).toEqual({ decided: 1, counted: [[1, 'a']] });
    expect(decideUser(typed, 9001, PAUSE)).toEqual({ decided: 2, counted: [[1, 'a'], [1, 'b']] });
  });

  it('decides each rule over the searches that rule records (a no-hit rule skips searches with hits)', () => {
    const log = [
      { ts: 0, rules: [[1, 'zz'], [2, 'zz']] as Array<[number, string]> },
      { ts: 1000, rules: [[1, 'zoo']] as Array<[number, string]> },
    ];
    expect(sortPairs(decideUser(log, 10_000, PAUSE).counted)).toEqual([[1, 'zoo'], [2, 'zz']]);
  });

  it('agrees with the brute-force rule on random logs, decided all at once or in several passes', () => {
    const entry = fc.record({ gap: fc.integer({ min: 0, max: 9000 }), rules: fc.uniqueArray(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom('a', 'b', 'c')), { selector: (x) => x[0], maxLength: 3 }) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 25 }), fc.array(fc.integer({ min: 0, max: 20_000 }), { maxLength: 4 }), (raw, steps) => {
        let ts = 0;
        const log: LoggedSearch[] = raw.map((r) => ({ ts: (ts += r.gap), rules: r.rules }));
        const end = ts + PAUSE + 1;
        // One pass at the end...
        expect(sortPairs(decideUser(log, end, PAUSE).counted)).toEqual(sortPairs(reference(log, end)));
        // ...or passes at earlier times (each seeing only searches logged before it), then the end.
        let rest = log;
        const counted: Array<[number, string]> = [];
        let now = 0;
        for (const s of [...steps, Infinity]) {
          now = s === Infinity ? end : Math.min(end, now + s);
          const visible = rest.filter((e) => e.ts < now);
          const d = decideUser(visible, now, PAUSE);
          counted.push(...d.counted);
          rest = rest.slice(d.decided);
        }
        expect(sortPairs(counted)).toEqual(sortPairs(reference(log, end)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('query helpers', () => {
  it('normalises queries and leaves out * and empty ones', () => {
    expect(normalizeQuery('  Garden   TOOLS ')).toBe('garden tools');
    expect(normalizeQuery('*')).toBeUndefined();
    expect(normalizeQuery('   ')).toBeUndefined();
    expect(normalizeQuery('x'.repeat(ANALYTICS_DEFAULTS.maxQueryBytes + 1))).toBeUndefined();
  });

  it('reads `found` from the answer text the server sends', () => {
    const answer = JSON.stringify({ facet_counts: [{ field_name: 'found', counts: [{ value: '"found":7' }] }], found: 0, hits: [{ document: { found: 3 } }] });
    expect(foundOf(answer)).toBe(0);
    expect(foundOf({ found: 12 })).toBe(12);
  });

  it('expands the last word to what it completed to in the top hit', () => {
    const answer = { hits: [{ highlights: [{ field: 'title', matched_tokens: ['Secret', 'Garden'] }] }] };
    expect(expandQuery('secret gar', answer)).toBe('secret garden');
    expect(expandQuery('secret gar', JSON.stringify(answer))).toBe('secret garden');
    expect(expandQuery('kni', answer)).toBe('kni');
    expect(expandQuery('gar', { hits: [] })).toBe('gar');
    // A word typed whole stays, even when the top hit also holds a longer word it starts.
    const both = { hits: [{ highlights: [{ field: 'tags', matched_tokens: [['Gardening'], ['garden']] }] }] };
    expect(expandQuery('garden', both)).toBe('garden');
  });

  it('groups searches by user id, else by address, and hashes very long ids', () => {
    expect(userKey('alice', '1.2.3.4')).toBe('u:alice');
    expect(userKey(undefined, '1.2.3.4')).toBe('ip:1.2.3.4');
    expect(userKey('x'.repeat(1000), '1.2.3.4')).toMatch(/^h:/);
  });
});

describe('analytics actions in key scopes', () => {
  it('lets a resource cover its sub-resources, and nothing that merely starts like it', () => {
    expect(actionAllowed(['analytics:*'], 'analytics/rules:create')).toBe(true);
    expect(actionAllowed(['analytics:*'], 'analytics/events:create')).toBe(true);
    expect(actionAllowed(['analytics/rules:*'], 'analytics/rules:delete')).toBe(true);
    expect(actionAllowed(['analytics/rules:*'], 'analytics/events:create')).toBe(false);
    expect(actionAllowed(['analytics/rules:list'], 'analytics/rules:get')).toBe(false);
    expect(actionAllowed(['analytics:*'], 'analyticsx/rules:create')).toBe(false);
    expect(actionAllowed(['documents:search'], 'analytics/rules:list')).toBe(false);
  });
});

/** A data directory with `products` (a counter field) and a `queries` collection, and an Analytics over it. */
async function setup(limit = 1000): Promise<{ engine: Engine; dir: string; analytics: Analytics; open: () => Analytics }> {
  const dir = tmpDir();
  const engine = openEngine(path.join(dir, 'data'));
  await engine.createCollection({ name: 'products', fields: [{ name: 'title', type: 'string' }, { name: 'popularity', type: 'int32', optional: true }] });
  await engine.createCollection({ name: 'queries', fields: [{ name: 'q', type: 'string' }, { name: 'count', type: 'int32' }] });
  for (const id of ['1', '2', '3']) await engine.writeDocument('products', { id, title: `product ${id}` });
  await putRule(engine.store, 'popular', { type: 'popular_queries', params: { source: { collections: ['products'] }, destination: { collection: 'queries' }, limit } });
  await putRule(engine.store, 'clicks', {
    type: 'counter',
    params: { source: { collections: ['products'], events: [{ type: 'click', weight: 2, name: 'click' }] }, destination: { collection: 'products', counter_field: 'popularity' } },
  });
  const open = () => new Analytics(engine, { dir: path.join(dir, 'analytics') });
  return { engine, dir, analytics: open(), open };
}

const opened: Array<{ engine: Engine; analytics: Analytics }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.analytics.close();
    await o.engine.close();
  }
});

function popularity(engine: Engine, id: string): unknown {
  return engine.getDocument('products', id).popularity;
}

function queryCounts(engine: Engine): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of engine.exportDocuments('queries')) out[d.q as string] = d.count as number;
  return out;
}

describe('compaction and flushes', () => {
  it('decides thousands of users across several compaction transactions', async () => {
    const s = await setup(100_000);
    opened.push(s);
    const rule = ruleIndex(s.engine.store).bySource.get('products')![0]!;
    const users = ANALYTICS_DEFAULTS.compactChunk * 2 + 123;
    const old = Date.now() - users * 10 - 60_000;
    // User i typed `q<i % 7>x` then, within the pause, `q<i % 7>`: only the second counts. Users
    // start 10 ms apart, so each compaction transaction sees a window of the log.
    await s.analytics.pending.db.transaction(() => {
      for (let i = 0; i < users; i++) {
        s.analytics.pending.db.put([SEARCH, old + i * 10, 1, 2 * i], [`u:${i}`, [[rule.id, `q${i % 7}x`]]]);
        s.analytics.pending.db.put([SEARCH, old + i * 10 + 3000, 1, 2 * i + 1], [`u:${i}`, [[rule.id, `q${i % 7}`]]]);
      }
    });
    expect(await s.analytics.compact()).toBe(users * 2);
    const report = await s.analytics.flush();
    expect(report.queries).toBe(7);
    const expected: Record<string, number> = {};
    for (let i = 0; i < users; i++) expected[`q${i % 7}`] = (expected[`q${i % 7}`] ?? 0) + 1;
    expect(queryCounts(s.engine)).toEqual(expected);
  });

  it('folds a busy log, more searches a pause than a transaction holds, a chunk per transaction', async () => {
    const s = await setup(100_000);
    opened.push(s);
    const rule = ruleIndex(s.engine.store).bySource.get('products')![0]!;
    const chunk = ANALYTICS_DEFAULTS.compactChunk;
    // six chunks of searches, 4 a millisecond: a chunk spans less than the pause, the log more
    const n = chunk * 6;
    const old = Date.now() - 60_000;
    await s.analytics.pending.db.transaction(() => {
      for (let i = 0; i < n; i++) s.analytics.pending.db.put([SEARCH, old + Math.floor(i / 4), 1, i], [`u:${i % 500}`, [[rule.id, `q${i % 3}`]]]);
    });
    const db = s.analytics.pending.db;
    const childTransaction = db.childTransaction.bind(db);
    let transactions = 0;
    db.childTransaction = ((fn: () => unknown) => {
      if (++transactions > 20) throw new Error('compaction took more than 20 transactions');
      return childTransaction(fn);
    }) as typeof db.childTransaction;
    expect(await s.analytics.compact()).toBe(n);
    // (one per chunk at most, one for the rest, one for the empty event log)
    expect(transactions).toBeLessThanOrEqual(8);
  });

  it('adds event weights to the counter field and skips documents that no longer exist', async () => {
    const s = await setup();
    opened.push(s);
    for (const id of ['1', '1', '2', 'gone']) await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: id, user_id: 'u' } });
    const report = await s.analytics.flush();
    expect(report).toMatchObject({ batches: 1, counters: 2, skipped_documents: 1 });
    expect(popularity(s.engine, '1')).toBe(4);
    expect(popularity(s.engine, '2')).toBe(2);
    expect(popularity(s.engine, '3')).toBeUndefined();
    // Nothing is pending any more: a second flush changes nothing.
    expect((await s.analytics.flush()).batches).toBe(0);
    expect(popularity(s.engine, '1')).toBe(4);
  });

  it('flushes on its own once the flush interval has passed', async () => {
    const s = await setup();
    opened.push(s);
    await s.analytics.close();
    // (the server's flag allows 60 seconds at least; the schedule itself takes any interval)
    s.analytics = new Analytics(s.engine, { dir: path.join(s.dir, 'analytics'), flushIntervalSec: 0.3 });
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '1', user_id: 'u' } });
    s.analytics.startTimers();
    const deadline = Date.now() + 5000;
    while (popularity(s.engine, '1') === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(popularity(s.engine, '1')).toBe(2);
  });

  it('never applies a batch twice when a flush died after writing the collections', async () => {
    const s = await setup();
    opened.push(s);
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '1', user_id: 'u' } });
    // A flush cut after step 2: sealed, applied to the data directory, not dropped.
    await s.analytics.compact();
    const id = await sealBatch(s.analytics.pending);
    expect(id).toBe(1);
    await applyBatchOnce(s.engine, s.analytics.pending, waitingBatches(s.analytics.pending)[0]!, emptyReport(), () => {});
    expect(popularity(s.engine, '1')).toBe(2);
    await s.analytics.close();
    // The next process finds the batch, sees it applied, and drops it.
    s.analytics = s.open();
    const report = await s.analytics.recover();
    expect(report.batches).toBe(0);
    expect(waitingBatches(s.analytics.pending)).toEqual([]);
    expect(popularity(s.engine, '1')).toBe(2);
    // Later events still count.
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '1', user_id: 'u' } });
    await s.analytics.flush();
    expect(popularity(s.engine, '1')).toBe(4);
  });

  it('applies a batch that was sealed when the flush died before writing the collections', async () => {
    const s = await setup();
    opened.push(s);
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '2', user_id: 'u' } });
    await s.analytics.compact();
    await sealBatch(s.analytics.pending);
    expect(popularity(s.engine, '2')).toBeUndefined();
    await s.analytics.close();
    s.analytics = s.open();
    expect((await s.analytics.recover()).batches).toBe(1);
    expect(popularity(s.engine, '2')).toBe(2);
    expect([...s.analytics.pending.db.getKeys({ start: [BATCH], end: [BATCH + 1] })]).toEqual([]);
  });

  it('keeps the `limit` most counted queries, adding to their counts flush after flush', async () => {
    const s = await setup(2);
    opened.push(s);
    const rule = ruleIndex(s.engine.store).bySource.get('products')![0]!;
    // A document the user put in the destination under an id of their own: never removed.
    await s.engine.writeDocument('queries', { id: 'pinned', q: 'pinned', count: 0 });
    const pend = async (counts: Record<string, number>) =>
      s.analytics.pending.db.transaction(() => {
        for (const [q, n] of Object.entries(counts)) s.analytics.pending.db.put([QUERY, rule.id, q], n);
      });
    await pend({ alpha: 5, beta: 3, gamma: 1 });
    expect(await s.analytics.flush()).toMatchObject({ queries: 2, trimmed: 0 });
    expect(queryCounts(s.engine)).toEqual({ alpha: 5, beta: 3, pinned: 0 });
    await pend({ gamma: 10, beta: 1 });
    expect(await s.analytics.flush()).toMatchObject({ queries: 1, trimmed: 1 });
    expect(queryCounts(s.engine)).toEqual({ gamma: 10, alpha: 5, pinned: 0 });
    expect(s.engine.getDocument('queries', queryDocId('gamma'))).toEqual({ id: queryDocId('gamma'), q: 'gamma', count: 10 });
  });

  it('drops what a deleted rule had pending and leaves what it wrote', async () => {
    const s = await setup();
    opened.push(s);
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '3', user_id: 'u' } });
    await s.analytics.flush();
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '3', user_id: 'u' } });
    await s.analytics.compact(); // (pending as a count)
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '3', user_id: 'u' } }); // (still in the log)
    const { deleteRule } = await import('../src/analytics/rules.js');
    await deleteRule(s.engine.store, 'clicks');
    expect(await s.analytics.flush()).toMatchObject({ counters: 0, dropped: 1 });
    expect(popularity(s.engine, '3')).toBe(2);
    expect([...s.analytics.pending.db.getKeys({ start: [SEARCH], end: [META] })]).toEqual([]);
    expect([...s.analytics.pending.db.getKeys({ start: [EVENT], end: [EVENT + 1] })]).toEqual([]);
    await expect(s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '3', user_id: 'u' } })).rejects.toThrow(/no analytics rule has an event named `click`/);
  });

  it('reads rules that earlier versions stored as an object keyed by name', async () => {
    const s = await setup();
    opened.push(s);
    const rules = [...storedRules(s.engine.store).values()];
    // msgpack decodes a `__proto__` key as `__proto_`: the rule inside keeps its own name
    const old = { next_id: 3, rules: Object.fromEntries(rules.map((r) => [r.name === 'popular' ? '__proto_' : r.name, r])) };
    await s.engine.store.transact(() => s.engine.store.aux.put(RULES_KEY, old));
    expect(listRules(s.engine.store).map((r) => r.name)).toEqual(['clicks', 'popular']);
    expect(getRule(s.engine.store, 'popular').type).toBe('popular_queries');
    await s.analytics.recordEvent({ type: 'click', name: 'click', data: { doc_id: '2', user_id: 'u' } });
    expect(await s.analytics.flush()).toMatchObject({ counters: 1, dropped: 0 });
    expect(popularity(s.engine, '2')).toBe(2);
    await putRule(s.engine.store, '__proto__', { type: 'nohits_queries', params: { source: { collections: ['products'] }, destination: { collection: 'queries' } } });
    expect(listRules(s.engine.store).map((r) => r.name)).toEqual(['__proto__', 'clicks', 'popular']);
    expect([...ruleIndex(s.engine.store).byId.keys()].sort()).toEqual([1, 2, 3]);
  });
});
