/**
 * Bounded searches: whatever a request asks, a search's work stays within a fixed multiple
 * of the collection's size and the query's length (counted by search/budget.ts, not timed),
 * proximity over repeated words is exact and polynomial, and the deadline
 * (`search_cutoff_ms`, the server's `--search-cutoff-ms`) stops every phase.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Budget, runWith } from '../src/search/budget.js';
import { DocPositions, windowSpan } from '../src/search/positions.js';
import { FathomError } from '../src/errors.js';
import { SEARCH_LIMITS } from '../src/defaults.js';
import { startServer } from '../src/server/serve.js';
import type { Engine } from '../src/engine.js';
import { dataDirPath, openEngine, rng } from './helpers.js';

// ---------------------------------------------------------------------------
// Proximity: the smallest window with each token on a word of its own
// ---------------------------------------------------------------------------

/** Positions (2p for a word, 2p + 1 for a part of a glued word), one sorted list per token, as DocPositions holds them. */
function positionsOf(lists: number[][]): DocPositions {
  const pos = new DocPositions(lists.length);
  lists.forEach((l, t) => {
    pos.buf[t] = Int32Array.from([...l].sort((a, b) => a - b));
    pos.len[t] = l.length;
  });
  return pos;
}

/** The reference: every choice of one position per token, words distinct (parts may share); the smallest span. */
function bruteSpan(lists: number[][]): number {
  let best = Infinity;
  const chosen: number[] = [];
  const walk = (t: number): void => {
    if (t === lists.length) {
      const words = chosen.map((v) => v >> 1);
      best = Math.min(best, Math.max(...words) - Math.min(...words));
      return;
    }
    for (const v of new Set(lists[t]!)) {
      if ((v & 1) === 0 && chosen.includes(v)) continue;
      chosen.push(v);
      walk(t + 1);
      chosen.pop();
    }
  };
  walk(0);
  return best;
}

describe('proximity over tokens that share positions', () => {
  const list = fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 6 });

  it('finds the smallest window with each token on a word of its own, as an exhaustive search does', () => {
    fc.assert(
      fc.property(fc.array(list, { minLength: 2, maxLength: 5 }), fc.boolean(), (lists, repeat) => {
        // (a repeated query word: tokens with the very same positions)
        if (repeat) lists = [...lists, lists[0]!, lists[0]!];
        const k = lists.length;
        // (windows of k - 1 words or less are all adjacent to the caller: the sweep stops at one)
        expect(Math.max(k - 1, windowSpan(positionsOf(lists), (1 << k) - 1, 0, k, 1))).toBe(Math.max(k - 1, bruteSpan(lists)));
      }),
      { numRuns: 400, seed: 4011 },
    );
  });

  it('answers at least the cap when the smallest window is wider than what the caller tells apart', () => {
    // (positions are held as 2p: words 0, 30 and 60)
    const lists = [[0, 60, 120], [0, 60, 120], [0, 60, 120]];
    expect(bruteSpan(lists)).toBe(60);
    expect(windowSpan(positionsOf(lists), 7, 0, 3, 1, 10)).toBeGreaterThanOrEqual(10);
  });

  it('takes polynomial work for 32 copies of one word with 64 positions each', () => {
    const one = Array.from({ length: 64 }, (_, i) => 2 * i * 3);
    const lists = Array.from({ length: 32 }, () => one);
    const budget = new Budget();
    const span = runWith(budget, () => windowSpan(positionsOf(lists), -1, 0, 32, 1));
    // 32 distinct words among positions 0, 3, 6...: the window spans 31 gaps of 3
    expect(span).toBe(31 * 3);
    expect(budget.work).toBeLessThan(64 * 32 * 64 * 32);
  });
});

// ---------------------------------------------------------------------------
// A fixture collection with common words, facets, groups and two levels of joins
// ---------------------------------------------------------------------------

const VOCAB = ['a', 'the', 'of', 'an', 'and', 'apple', 'apply', 'applet', 'banana', 'band', 'bandit', 'cat', 'cart', 'card', 'linux', 'library', 'libre', 'data', 'date', 'dart'];
let engine: Engine;
/** Documents and text tokens in the fixture: the size the work bound scales with. */
let size = 0;

beforeAll(async () => {
  engine = openEngine();
  const r = rng(40);
  await engine.createCollection({
    name: 'docs',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'body', type: 'string' },
      { name: 'tags', type: 'string[]', facet: true },
      { name: 'section', type: 'string', facet: true },
      { name: 'size', type: 'int32', facet: true },
    ],
  });
  const words = (n: number) => Array.from({ length: n }, () => VOCAB[Math.floor(r() * r() * VOCAB.length)]!).join(' ');
  const docs = Array.from({ length: 300 }, (_, i) => ({
    id: `d${i}`,
    title: words(3 + (i % 5)),
    body: words(20 + (i % 40)),
    tags: [VOCAB[i % VOCAB.length]!, `t${i % 7}`],
    section: `s${i % 9}`,
    size: i * 13,
  }));
  for (const d of docs) size += 1 + d.title.split(' ').length + d.body.split(' ').length;
  await engine.import('docs', docs.map((d) => JSON.stringify(d)).join('\n'), { batchSize: 50 }, () => {});
  await engine.createCollection({ name: 'notes', fields: [{ name: 'doc_ref', type: 'string', reference: 'docs.id' }, { name: 'text', type: 'string' }, { name: 'rank', type: 'int32' }] });
  await engine.import('notes', docs.map((_, i) => JSON.stringify({ id: `n${i}`, doc_ref: `d${i}`, text: words(4), rank: i % 17 })).join('\n'), {}, () => {});
  await engine.createCollection({ name: 'labels', fields: [{ name: 'note_ref', type: 'string', reference: 'notes.id' }, { name: 'name', type: 'string' }] });
  await engine.import('labels', docs.map((_, i) => JSON.stringify({ id: `l${i}`, note_ref: `n${i}`, name: `x${i % 5}` })).join('\n'), {}, () => {});
  size += 2 * docs.length * 5;
});

/** A search's work (and its answer, or the 4xx it was refused with). */
function measured(params: Record<string, unknown>, budget = new Budget()): { work: number; res?: Awaited<ReturnType<Engine['search']>>; refused?: FathomError } {
  try {
    const res = runWith(budget, () => engine.searchSync('docs', { query_by: 'title,body', ...params }));
    return { work: budget.work, res };
  } catch (e) {
    if (e instanceof FathomError && e.status < 500) return { work: budget.work, refused: e };
    throw e;
  }
}

const word = fc.constantFrom(...VOCAB, 'x', 'appl', 'ba', 'l', 'aple', 'bnana', 'libary');
const letter = fc.constantFrom(...'abcdlt'.split(''));
const rep = (w: string, n: number) => Array.from({ length: n }, () => w).join(' ');

/** The kinds of hostile searches: each draws a request of one kind. */
const hostile = fc.oneof(
  // repeated tokens
  fc.tuple(word, fc.integer({ min: 2, max: 64 })).map(([w, n]) => ({ q: rep(w, n) })),
  // many one-letter prefixes
  fc.array(letter, { minLength: 8, maxLength: 64 }).map((ls) => ({ q: ls.join(' '), drop_tokens_threshold: 1_000_000 })),
  // 64-word queries
  fc.array(word, { minLength: 64, maxLength: 64 }).map((ws) => ({ q: ws.join(' '), drop_tokens_threshold: 1_000_000, exhaustive_search: true })),
  // long tokens with typos
  fc.array(fc.string({ unit: fc.constantFrom(...'abcdeilnprt'.split('')), minLength: 20, maxLength: 120 }), { minLength: 1, maxLength: 8 }).map((ts) => ({
    q: ts.join(' '),
    num_typos: 2,
    min_len_1typo: 1,
    min_len_2typo: 2,
    max_candidates: SEARCH_LIMITS.maxCandidates,
  })),
  // typo and prefix expansions under a filter that allows one document (each term offered is checked against it)
  fc.tuple(fc.array(word, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 299 })).map(([ws, k]) => ({
    q: ws.join(' '),
    filter_by: `size:=${k * 13}`,
    num_typos: 2,
    min_len_1typo: 1,
    min_len_2typo: 2,
    max_candidates: SEARCH_LIMITS.maxCandidates,
  })),
  // wildcards with heavy filters
  fc.array(fc.integer({ min: 0, max: 4000 }), { minLength: 1, maxLength: 60 }).map((ns) => ({
    q: '*',
    filter_by: `size:[${ns.map((n) => `${n}..${n + 50}`).join(',')}] || ${ns.slice(0, 40).map((n) => `size:!=${n}`).join(' && ')}`,
    sort_by: 'size:desc',
  })),
  // deep joins
  fc.integer({ min: 1, max: 20 }).map((k) => ({
    q: '*',
    filter_by: Array.from({ length: k }, (_, i) => `$notes(text:${VOCAB[i]} || $labels(name:x${i % 5}))`).join(' || '),
    include_fields: '$notes(*, $labels(*))',
    sort_by: '$notes(rank:desc)',
  })),
  // facet_query and group_by with high limits
  fc.tuple(word, letter).map(([w, l]) => ({ q: w, facet_by: 'tags,section,size', facet_query: `tags:${l}`, max_facet_values: 1_000_000, group_by: 'section', group_limit: 99, per_page: 250 })),
  // big pages with long highlights
  fc.tuple(word, fc.integer({ min: 1, max: 1000 })).map(([w, page]) => ({ q: rep(w, 4), per_page: 250, page, highlight_full_fields: 'body', highlight_affix_num_tokens: 1000, snippet_threshold: 1_000_000 })),
);

describe('work a search may do', () => {
  it('stays within a fixed multiple of the collection times the query length, for every kind of hostile search', () => {
    let worst = 0;
    fc.assert(
      fc.property(hostile, (params) => {
        const { work } = measured(params);
        const tokens = Math.min(String(params.q).split(' ').length, 32);
        const ratio = work / (size * (1 + tokens));
        worst = Math.max(worst, ratio);
        // a fixed multiple: the exponential proximity search of repeated words did millions of times this
        expect(ratio).toBeLessThan(WORK_PER_SIZE_AND_TOKEN);
      }),
      { numRuns: 160, seed: 4012 },
    );
    expect(worst).toBeGreaterThan(0);
  });

  it('matches a word repeated past the limit as the limit (a a a a a is a a a), and keeps quoted repeats', () => {
    const keep = rep('a', SEARCH_LIMITS.maxWordRepeats);
    const many = measured({ q: rep('a', 40), per_page: 50 }).res!;
    const few = measured({ q: keep, per_page: 50 }).res!;
    expect(many.hits!.map((h) => h.document.id)).toEqual(few.hits!.map((h) => h.document.id));
    expect(many.found).toBe(few.found);
    // repeats of another word, and a quoted phrase's words, are not capped
    expect(measured({ q: `${keep} "a a a a" the`, per_page: 50 }).res!.found).toBeLessThanOrEqual(few.found);
  });

  it(`refuses a filter_by of more than ${SEARCH_LIMITS.maxFilterOperations} operations, as the reference does`, () => {
    const clauses = (n: number) => Array.from({ length: n }, (_, i) => `size:=${i}`).join(' || ');
    // n conditions and n - 1 `||`
    expect(measured({ q: '*', filter_by: clauses(50) }).res).toBeDefined();
    const refused = measured({ q: '*', filter_by: clauses(51) }).refused!;
    expect(refused.status).toBe(400);
    expect(refused.message).toMatch(/101 operations.*more than the 100 allowed/);
    // a list of values is one condition
    expect(measured({ q: '*', filter_by: `size:=[${Array.from({ length: 5000 }, (_, i) => i).join(',')}]` }).res!.found).toBe(300);
  });

  it('filters by a thousand ranges as a scan of each range would', () => {
    const ranges = Array.from({ length: 1000 }, (_, i) => [i * 7, i * 7 + 3 - (i % 5)] as const);
    const res = measured({ q: '*', filter_by: `size:[${ranges.map(([a, b]) => `${a}..${b}`).join(',')}]`, per_page: 250 }).res!;
    const expected = Array.from({ length: 300 }, (_, i) => i * 13).filter((s) => ranges.some(([a, b]) => s >= a && s <= b));
    expect(res.found).toBe(expected.length);
  });
});

/** The bound the fuzz test holds every search to: work units per (document or text token) per query token. */
const WORK_PER_SIZE_AND_TOKEN = 16;

describe('the deadline', () => {
  /** A clock that moves `step` ms each time it is read. */
  const ticking = (step: number) => {
    let t = 0;
    return () => (t += step);
  };

  it('stops a search whose deadline passes while it matches, answering what it found with search_cutoff', () => {
    // (the first look at the clock during matching finds the deadline passed)
    const budget = new Budget(1500, ticking(1000));
    const { res } = measured({ q: 'a the', facet_by: 'section' }, budget);
    expect(res!.search_cutoff).toBe(true);
    const full = measured({ q: 'a the', facet_by: 'section' }).res!;
    expect(full.search_cutoff).toBe(false);
    expect(res!.found).toBeLessThanOrEqual(full.found);
  });

  it('lets a filter that ran out of time allow nothing rather than more', () => {
    // the deadline passes before the first segment's filter: nothing passes, even through a negation
    const budget = new Budget(1, ticking(5));
    const { res } = measured({ q: '*', filter_by: 'size:!=13' }, budget);
    expect(res!.search_cutoff).toBe(true);
    expect(res!.found).toBe(0);
  });

  it('leaves highlights out of the hits placed after the deadline', () => {
    const params = { q: 'apple', per_page: 5 };
    const { work, res: full } = measured(params);
    expect(full!.hits!.every((h) => Object.keys(h.highlight).length > 0)).toBe(true);
    // a clock that runs with the work done: the deadline falls just after matching, as
    // highlighting starts (each hit's highlighting counts its fields' lengths)
    const highlighting = full!.hits!.reduce((sum, h) => sum + String(h.document.title).length + String(h.document.body).length, 0);
    const clock = { budget: undefined as Budget | undefined };
    const budget = new Budget(work - highlighting + 1, () => clock.budget?.work ?? 0);
    clock.budget = budget;
    const { res } = measured(params, budget);
    expect(res!.search_cutoff).toBe(true);
    expect(res!.hits!.map((h) => h.document.id)).toEqual(full!.hits!.map((h) => h.document.id));
    expect(res!.hits!.map((h) => Object.keys(h.highlight).length > 0)).toEqual([true, false, false, false, false]);
  });

  it("is bounded by the server's --search-cutoff-ms, which a request can lower but not lift", async () => {
    const dir = dataDirPath();
    const e = openEngine(dir);
    await e.createCollection({ name: 'docs', fields: [{ name: 'body', type: 'string' }] });
    const r = rng(41);
    const lines = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ id: `d${i}`, body: Array.from({ length: 60 }, () => VOCAB[Math.floor(r() * 4)]).join(' ') }));
    await e.import('docs', lines.join('\n'), { batchSize: 1000 }, () => {});
    await e.close();
    const server = await startServer({ dataDir: dir, apiKey: 'k', address: '127.0.0.1', port: 0, logLevel: 'silent', searchCutoffMs: 1 }, { engine: { merges: 'off' } });
    try {
      for (const extra of ['', '&search_cutoff_ms=0', '&search_cutoff_ms=100000']) {
        const res = await fetch(`${server.url}/collections/docs/documents/search?q=a+the+a+an&query_by=body&facet_by=&per_page=50${extra}`, { headers: { 'x-typesense-api-key': 'k' } });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { search_cutoff: boolean }).search_cutoff).toBe(true);
      }
    } finally {
      await server.stop();
    }
  });
});
