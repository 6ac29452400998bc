/**
 * Bit matching (search/bitmatch.ts) scores only the documents that can still reach the
 * page; these tests hold it to the strategies that score every match (match.ts): the same
 * found, hits, scores and facet counts, on random collections whose words are common
 * enough for it to be chosen.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dataDirPath, openEngine, rng } from './helpers.js';
import type { Engine } from '../src/engine.js';
import { snapshot } from '../src/index/manifest.js';
import { clearTermBits, termBitsLimits } from '../src/index/termbits.js';
import { bitMatching } from '../src/search/match.js';
import { impactLimits } from '../src/search/bitmatch.js';

// a few words held by most documents, some rare ones, near misses for typos and prefixes,
// and words glued by punctuation (also found by their parts)
const COMMON = ['linux', 'kernel', 'driver', 'data', 'lib', 'tools'];
const RARE = ['libre', 'linus', 'kernels', 'drivers', 'dat', 'toolkit', 'tool', 'lynx', 'colonel', 'gnome-data', 'lib/linux', 'x'];

function words(r: () => number, n: number): string {
  return Array.from({ length: n }, () => (r() < 0.75 ? COMMON[Math.floor(r() * r() * COMMON.length)]! : RARE[Math.floor(r() * RARE.length)]!)).join(' ');
}

function query(r: () => number): string {
  const T = 1 + Math.floor(r() * 3);
  return Array.from({ length: T }, () => {
    const w = r() < 0.8 ? COMMON[Math.floor(r() * COMMON.length)]! : RARE[Math.floor(r() * RARE.length)]!;
    if (r() < 0.2 && w.length > 4) return w.slice(0, 2) + w[3] + w[2] + w.slice(4); // a transposition
    if (r() < 0.15 && w.length > 3) return w.slice(0, w.length - 1); // a prefix
    if (r() < 0.05) return '-' + w;
    return w;
  }).join(' ');
}

/** What a search answers that bit matching must not change. */
function answer(res: any): string {
  return JSON.stringify({
    found: res.found,
    hits: res.hits?.map((h: any) => [h.document.id, h.text_match, h.text_match_info]),
    groups: res.grouped_hits?.map((g: any) => [g.group_key, g.found, g.hits.map((h: any) => h.document.id)]),
    facets: res.facet_counts,
    cutoff: res.search_cutoff,
  });
}

describe('bit matching', () => {
  let e: Engine;
  const saved = { ...termBitsLimits };
  const savedImpact = impactLimits.minDocs;

  beforeAll(async () => {
    // (small collections: terms count as common from 16 documents on, so their bitmaps and
    // skips are used, and the threshold algorithm runs on any number of documents)
    termBitsLimits.min = 16;
    impactLimits.minDocs = 0;
    const r = rng(11);
    e = openEngine(dataDirPath(), { merges: 'off' });
    await e.createCollection({
      name: 'docs',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'body', type: 'string' },
        { name: 'tags', type: 'string[]' },
        { name: 'category', type: 'string', facet: true },
        { name: 'price', type: 'int32', facet: true },
      ],
    });
    // several segments, some documents replaced or deleted
    let id = 0;
    for (let batch = 0; batch < 5; batch++) {
      const ops = Array.from({ length: 400 }, () => ({
        kind: 'write' as const,
        action: 'upsert' as const,
        doc: {
          id: String(id++ % 1800),
          title: words(r, 1 + Math.floor(r() * 4)),
          body: words(r, 2 + Math.floor(r() * 14)),
          tags: Array.from({ length: Math.floor(r() * 3) }, () => words(r, 1 + Math.floor(r() * 2))),
          category: `c${Math.floor(r() * 5)}`,
          price: Math.floor(r() * 100),
        },
      }));
      await e.writeBatch('docs', ops);
    }
    for (const gone of ['3', '17', '400', '1201']) await e.deleteDocument('docs', gone);
  });

  afterAll(async () => {
    Object.assign(termBitsLimits, saved);
    impactLimits.minDocs = savedImpact;
    bitMatching.enabled = true;
    await e.close();
  });

  it.each([
    ['every impact class kept', 16384],
    ['few impact classes kept', 4],
  ])('answers every query as scoring every match does: found, hits, scores, facets (%s)', (_, impactMin) => {
    clearTermBits();
    termBitsLimits.impactMin = impactMin;
    termBitsLimits.impactShare = impactMin > 100 ? 32 : 1e9;
    const r = rng(impactMin);
    const snap = snapshot(e.store, (e.store.collections.get('docs') as { id: number }).id);
    expect(snap.segments.length).toBeGreaterThan(2);
    let differing = 0;
    let nonEmpty = 0;
    const before = bitMatching.used;
    for (let i = 0; i < 400; i++) {
      const raw: Record<string, string | number | boolean> = { q: query(r), query_by: r() < 0.6 ? 'title,body,tags' : r() < 0.5 ? 'title,body' : 'body' };
      if (r() < 0.3) raw.filter_by = `category:=[c${Math.floor(r() * 5)},c${Math.floor(r() * 5)}]`;
      if (r() < 0.4) raw.facet_by = r() < 0.5 ? 'category' : r() < 0.5 ? 'price' : 'category,price';
      if (r() < 0.25) raw.prioritize_exact_match = false;
      if (r() < 0.25) raw.query_by_weights = String(raw.query_by).split(',').map(() => 1 + Math.floor(r() * 4)).join(',');
      if (r() < 0.2) raw.sort_by = r() < 0.5 ? '_text_match:desc,price:desc' : 'price:asc,_text_match:desc';
      if (r() < 0.2) raw.per_page = 1 + Math.floor(r() * 30);
      if (r() < 0.15) raw.page = 2;
      if (r() < 0.1) raw.typo_tokens_threshold = 1000;
      if (r() < 0.1) raw.drop_tokens_threshold = 1000;
      if (r() < 0.1) raw.split_join_tokens = 'always';
      if (r() < 0.1) raw.prefix = false;
      if (r() < 0.05) raw.group_by = 'category';
      bitMatching.enabled = false;
      const exhaustive = answer(e.searchSync('docs', raw));
      bitMatching.enabled = true;
      const bits = answer(e.searchSync('docs', raw));
      if (bits !== exhaustive) differing++;
      expect(bits, JSON.stringify(raw)).toBe(exhaustive);
      if (JSON.parse(exhaustive).found > 0) nonEmpty++;
    }
    expect(differing).toBe(0);
    expect(nonEmpty).toBeGreaterThan(250);
    // (bit matching was chosen for most of them: the comparison is not of a path with itself)
    expect(bitMatching.used - before).toBeGreaterThan(600);
  });

  it('counts every match of a word most documents hold, and shows the newest first among equals', () => {
    const all = e.searchSync('docs', { q: '*', query_by: 'body', per_page: 0 }).found;
    const res = e.searchSync('docs', { q: 'linux', query_by: 'body', prefix: false, per_page: 250 });
    bitMatching.enabled = false;
    const exhaustive = e.searchSync('docs', { q: 'linux', query_by: 'body', prefix: false, per_page: 250 });
    bitMatching.enabled = true;
    expect(res.found).toBe(exhaustive.found);
    expect(res.found).toBeGreaterThan(all / 2);
    const hits = res.hits!;
    for (let i = 1; i < hits.length; i++) {
      const [a, b] = [hits[i - 1]!, hits[i]!];
      expect(a.text_match).toBeGreaterThanOrEqual(b.text_match as number);
    }
    expect(hits.map((h) => h.document.id)).toEqual(exhaustive.hits!.map((h) => h.document.id));
  });

  it('stops at search_cutoff_ms and says so, with what it had matched by then', () => {
    // a clock on which every reading is a second later: the budget is spent at the first check
    let now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => (now += 1000));
    const q = { q: 'linux kernel data', query_by: 'title,body,tags', facet_by: 'category' };
    let res;
    try {
      res = e.searchSync('docs', { ...q, search_cutoff_ms: 1 });
    } finally {
      clock.mockRestore();
    }
    const whole = e.searchSync('docs', q);
    expect(res.search_cutoff).toBe(true);
    expect(whole.search_cutoff).toBe(false);
    // (what was matched before the cut: a part of the whole, never more)
    expect(res.found).toBeGreaterThan(0);
    expect(res.found).toBeLessThan(whole.found);
    const counted = (r: typeof res) => r.facet_counts[0]!.counts.reduce((sum, c) => sum + c.count, 0);
    expect(counted(res)).toBe(res.found);
  });
});
