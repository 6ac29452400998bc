/**
 * The merge policy (index/merge.ts): tiered merges and a bulk import's full merge never
 * make a segment of more live documents than policy.maxDocs.
 */
import { describe, expect, it } from 'vitest';
import { planFullMerge, planMerge } from '../src/index/merge.js';
import type { SegmentInfo } from '../src/index/manifest.js';

const policy = { factor: 8, base: 64, maxDeletedRatio: 0.3, maxDocs: 1000 };

/** Segments of these sizes, in seq order. */
function segments(sizes: number[], del: number[] = []): SegmentInfo[] {
  let seq = 0;
  return sizes.map((n, i) => {
    const s = { id: i + 1, n, del: del[i] ?? 0, min: seq, max: seq + n - 1 };
    seq += n;
    return s;
  });
}

/** Runs a plan to the end, merging as the engine would; returns the live sizes left. */
function settle(list: SegmentInfo[], plan: (s: SegmentInfo[]) => SegmentInfo[] | undefined): number[] {
  let next = 100;
  for (let step = 0; step < 1000; step++) {
    const p = plan(list);
    if (!p) return list.map((s) => s.n - s.del);
    const ids = new Set(p.map((s) => s.id));
    const live = p.reduce((sum, s) => sum + s.n - s.del, 0);
    expect(live).toBeLessThanOrEqual(Math.max(policy.maxDocs, ...p.map((s) => s.n - s.del)));
    const merged = { id: next++, n: live, del: 0, min: Math.min(...p.map((s) => s.min)), max: Math.max(...p.map((s) => s.max)) };
    list = [...list.filter((s) => !ids.has(s.id)), merged].sort((a, b) => a.min - b.min);
  }
  throw new Error('the plan never settles');
}

describe('merge policy', () => {
  it('never merges a tier into more live documents than maxDocs', () => {
    const left = settle(segments(Array.from({ length: 64 }, () => 100)), (s) => planMerge(s, policy));
    expect(Math.max(...left)).toBeLessThanOrEqual(1000);
    expect(left.reduce((a, b) => a + b, 0)).toBe(6400);
  });

  it('packs a full merge into runs of at most maxDocs, in seq order', () => {
    const left = settle(segments([400, 300, 200, 500, 450, 100, 900, 50]), (s) => planFullMerge(s, policy));
    expect(left).toEqual([900, 950, 1000, 50]);
  });

  it('leaves a full segment alone, unless it has deleted documents', () => {
    expect(planFullMerge(segments([1500]), policy)).toBeUndefined();
    expect(planFullMerge(segments([1500], [10]), policy)?.map((s) => s.id)).toEqual([1]);
    expect(planMerge(segments([1500, 1200, ...Array.from({ length: 7 }, () => 2000)]), policy)).toBeUndefined();
  });
});
