/**
 * search/hybrid.ts: hybrid execution, keyword and vector results fused by reciprocal rank
 * (as the reference: (1 - alpha) / keyword_rank + alpha / vector_rank, alpha 0.3 by default).
 * The keyword side keeps its best max(k, page end, 100) hits; every document of the union
 * is collected once, with the fused score in place of text_match.
 */
import type { Store } from '../storage/store.js';
import type { Schema } from '../schema/schema.js';
import { locate, type IndexSnapshot } from '../index/manifest.js';
import type { SearchPlan } from '../query/plan.js';
import { getVector } from '../vector/vecstore.js';
import { distance as vecDistance, norm, type VectorHit } from '../vector/vsearch.js';
import { TopHits, type Extra } from './collectors.js';
import { runRounds, type SegmentMasks } from './keyword.js';
import { Sorter, type Hit } from './topk.js';
import type { CandidateTable } from './candidates.js';
import type { VectorRun } from './vector.js';

/** Runs the keyword side, fuses it with the vector hits, and collects the union. Returns the keyword side's candidates (for highlighting). */
export function runHybrid(
  plan: SearchPlan,
  snap: IndexSnapshot,
  masks: SegmentMasks,
  run: VectorRun,
  vhits: VectorHit[],
  collect: (segIndex: number, ord: number, score: number, extra: Extra) => void,
  shouldStop: () => boolean,
): CandidateTable {
  const segs = snap.segments;
  const keyword = new TopHits(segs, new Sorter([{ kind: 'text_match', dir: -1 }, { kind: 'seq', dir: -1 }]), 0, Math.max(run.k, plan.offset + plan.limit, 100));
  const candidates = runRounds(
    plan,
    segs,
    masks,
    { collect: (s, o, score) => keyword.collect(s, o, score, NO_INFO), found: () => keyword.size, threshold: keyword.threshold },
    shouldStop,
  );
  fuse(plan.store, plan.schema, snap, run, keyword.harvest(), vhits, collect);
  return candidates;
}

const NO_INFO: Extra = {};

/** Reciprocal-rank fusion of keyword and vector results; calls `collect` once per document of the union. */
function fuse(store: Store, schema: Schema, snap: IndexSnapshot, run: VectorRun, kw: Hit[], vec: VectorHit[], collect: (segIndex: number, ord: number, score: number, extra: Extra) => void): void {
  const alpha = run.alpha;
  const bySeq = new Map<number, { k?: number; v?: number; dist?: number; score?: number }>();
  kw.forEach((h, i) => bySeq.set(h.seq, { k: i + 1, score: h.score }));
  vec.forEach((h, i) => {
    const e = bySeq.get(h.seq) ?? {};
    e.v = i + 1;
    e.dist = h.distance;
    bySeq.set(h.seq, e);
  });
  const space = run.field.vec_dist === 'ip' ? 'ip' : 'cosine';
  const qn = norm(run.query);
  const threshold = run.vq?.distanceThreshold;
  for (const [seq, e] of bySeq) {
    const at = locate(snap, seq);
    if (!at) continue;
    const score = (e.k ? (1 - alpha) / e.k : 0) + (e.v ? alpha / e.v : 0);
    let dist = e.dist;
    if (dist === undefined) {
      const v = getVector(store, schema.id, run.field.id, seq);
      if (v) dist = vecDistance(space, run.query, qn, v);
    }
    if (threshold !== undefined && dist !== undefined && dist > threshold) continue;
    collect(snap.segments.indexOf(at.seg), at.ord, score, { vectorDistance: dist, fusion: score, keyword: e.score });
  }
}
