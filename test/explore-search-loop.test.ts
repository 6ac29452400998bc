import { afterEach, describe, expect, it, vi } from 'vitest';
import { Sequencer } from '../commands/explore/sequencer.js';
import { SearchLoop } from '../commands/explore/search-loop.js';
import type { SearchClient, SearchParams, SearchResponse } from '../commands/explore/client.js';
import type { SearchPlan } from '../commands/explore/params.js';

function answer(q: string): SearchResponse {
  return {
    found: q.length,
    out_of: 10,
    page: 1,
    search_time_ms: 1,
    search_cutoff: false,
    request_params: { collection_name: 'c', first_q: q, per_page: 10, q },
    facet_counts: [],
    hits: [],
  };
}

/** A client whose searches wait until the test settles them, in any order. */
class ScriptedClient implements SearchClient {
  readonly source = { kind: 'local' as const, dataDir: 'x', defaultDataDir: true };
  pending: Array<{ params: SearchParams; signal?: AbortSignal; resolve: (r: SearchResponse) => void; reject: (e: Error) => void }> = [];
  async schema() {
    return { name: 'c', fields: [] };
  }
  search(_c: string, params: SearchParams, signal?: AbortSignal): Promise<SearchResponse> {
    return new Promise((resolve, reject) => this.pending.push({ params, signal, resolve, reject }));
  }
  settle(q: string) {
    const p = this.pending.find((x) => x.params.q === q)!;
    p.resolve(answer(q));
  }
  async close() {}
}

function plan(q: string): SearchPlan {
  return { main: { q }, facetQueries: [] };
}

function recorder() {
  const shown: string[] = [];
  const errors: string[] = [];
  return {
    shown,
    errors,
    events: {
      onSearching: () => {},
      onResults: (r: SearchResponse) => shown.push(r.request_params.q),
      onError: (m: string) => errors.push(m),
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('the sequencer', () => {
  it('makes every earlier ticket stale and aborts it', () => {
    const s = new Sequencer();
    const a = s.next();
    const b = s.next();
    expect(s.isCurrent(a)).toBe(false);
    expect(a.signal.aborted).toBe(true);
    expect(s.isCurrent(b)).toBe(true);
    s.cancel();
    expect(s.isCurrent(b)).toBe(false);
  });
});

describe('the search loop', () => {
  it('never shows a slow answer over a newer one', async () => {
    const client = new ScriptedClient();
    const r = recorder();
    const loop = new SearchLoop(client, 'c', r.events, 0);
    loop.request(plan('har'));
    loop.request(plan('harry'));
    client.settle('harry');
    await tick();
    client.settle('har'); // the slow, older query answers last
    await tick();
    expect(r.shown).toEqual(['harry']);
  });

  it('drops an older answer that arrives first while a newer search is running', async () => {
    const client = new ScriptedClient();
    const r = recorder();
    const loop = new SearchLoop(client, 'c', r.events, 0);
    loop.request(plan('har'));
    loop.request(plan('harry'));
    client.settle('har');
    await tick();
    expect(r.shown).toEqual([]);
    client.settle('harry');
    await tick();
    expect(r.shown).toEqual(['harry']);
  });

  it('cancels the older request through its signal', () => {
    const client = new ScriptedClient();
    const loop = new SearchLoop(client, 'c', recorder().events, 0);
    loop.request(plan('a'));
    loop.request(plan('ab'));
    expect(client.pending.map((p) => p.signal?.aborted)).toEqual([true, false]);
  });

  it('ignores the error of a superseded search and reports the current one', async () => {
    const client = new ScriptedClient();
    const r = recorder();
    const loop = new SearchLoop(client, 'c', r.events, 0);
    loop.request(plan('a'));
    loop.request(plan('b'));
    client.pending[0]!.reject(new Error('aborted'));
    client.pending[1]!.reject(new Error('filter_by: bad\nmore detail'));
    await tick();
    expect(r.errors).toEqual(['filter_by: bad']);
  });

  it('waits for typing to pause, then searches once for the last text', async () => {
    vi.useFakeTimers();
    const client = new ScriptedClient();
    const loop = new SearchLoop(client, 'c', recorder().events, 100);
    for (const q of ['h', 'ha', 'har', 'harr', 'harry']) {
      loop.request(plan(q));
      vi.advanceTimersByTime(50);
    }
    expect(client.pending).toHaveLength(0);
    vi.advanceTimersByTime(100);
    expect(client.pending.map((p) => p.params.q)).toEqual(['harry']);
  });

  it('does not search again for an unchanged plan', () => {
    const client = new ScriptedClient();
    const loop = new SearchLoop(client, 'c', recorder().events, 0);
    loop.request(plan('a'));
    loop.request(plan('a'));
    expect(client.pending).toHaveLength(1);
  });

  it('shows nothing after it is disposed', async () => {
    const client = new ScriptedClient();
    const r = recorder();
    const loop = new SearchLoop(client, 'c', r.events, 0);
    loop.request(plan('a'));
    loop.dispose();
    client.settle('a');
    await tick();
    expect(r.shown).toEqual([]);
  });

  it('runs the facet-only searches under the same ticket and merges their counts', async () => {
    const client = new ScriptedClient();
    const got: string[] = [];
    const loop = new SearchLoop(client, 'c', { onSearching() {}, onResults: (_r, f) => got.push(...f.map((x) => `${x.field_name}:${x.counts.length}`)), onError() {} }, 0);
    loop.request({ main: { q: 'a', facet_by: 'author,tags' }, facetQueries: [{ field: 'author', params: { q: 'a', facet_by: 'author', per_page: '0' } }] });
    const [main, own] = client.pending;
    main!.resolve({ ...answer('a'), facet_counts: [{ field_name: 'author', sampled: false, stats: {}, counts: [{ value: 'x', count: 1, highlighted: 'x' }] }, { field_name: 'tags', sampled: false, stats: {}, counts: [] }] });
    own!.resolve({ ...answer('a'), facet_counts: [{ field_name: 'author', sampled: false, stats: {}, counts: [{ value: 'x', count: 1, highlighted: 'x' }, { value: 'y', count: 2, highlighted: 'y' }] }] });
    await tick();
    expect(got).toEqual(['author:2', 'tags:0']);
  });
});
