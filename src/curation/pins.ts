/**
 * src/curation/pins.ts: the curation step of a search (src/search/search.ts), around the
 * collection of hits.
 *
 *   before matching   hidden documents, and pinned ones, go into the exclusion masks: a
 *                     hidden one is never found, a pinned one is not found twice
 *   pinned            each pinned document that is live, not hidden, passes a scoped key's
 *                     filter (always: a pin never shows what the key cannot see) and, with
 *                     filter_curated_hits, the search's whole filter; the pins after one that
 *                     cannot be shown slide up into its place, as the reference's do
 *   the page          the organic ranking is collected for offset + limit hits, the pinned
 *                     documents are put at their positions (1-based, in position order; past
 *                     the end they follow the last hit), and the page is cut from that
 *
 * Pinned hits carry `curated: true`, count in `found`, and are not counted in facets.
 */
import type { IndexSnapshot, LiveSegment } from '../index/manifest.js';
import { locate } from '../index/manifest.js';
import type { SearchPlan } from '../query/plan.js';
import { evalFilter } from '../query/filter-eval.js';
import type { SegmentMasks } from '../search/keyword.js';
import type { Hit } from '../search/topk.js';

/** A pinned document, ready to be shown at `position`. */
export interface Pinned {
  hit: Hit;
  position: number;
}

/** Marks what a hit `info` holds for a pinned document (hits.ts shows `curated: true`). */
export const CURATED = Object.freeze({ curated: true as const });

function mark(masks: SegmentMasks, segs: LiveSegment[], s: number, ord: number): void {
  let ex = masks.exclude[s];
  if (!ex) masks.exclude[s] = ex = new Uint8Array(segs[s]!.reader.n);
  ex[ord] = 1;
}

/**
 * Applies the plan's curation to the masks (hidden and pinned documents excluded from
 * matching) and returns the pinned documents to place, in position order.
 */
export function curateMasks(plan: SearchPlan, snap: IndexSnapshot, masks: SegmentMasks): Pinned[] {
  const cur = plan.curation;
  if (!cur) return [];
  const { store, schema, keyFilter } = plan;
  const segs = snap.segments;
  const where = (id: string): { s: number; ord: number; seq: number } | undefined => {
    const seq = store.ids.get([schema.id, id]) as number | undefined;
    if (seq === undefined) return undefined;
    const at = locate(snap, seq);
    return at ? { s: segs.indexOf(at.seg), ord: at.ord, seq } : undefined;
  };
  for (const id of cur.hidden) {
    const at = where(id);
    if (at) mark(masks, segs, at.s, at.ord);
  }
  if (cur.pins.length === 0) return [];
  // a scoped key's filter holds for pinned documents too, whatever the rules say
  const keyAllow = new Map<number, Uint8Array>();
  const out: Pinned[] = [];
  // the pins left slide up into the places of those that cannot be shown
  let dropped = 0;
  for (const p of [...cur.pins].sort((a, b) => a.position - b.position)) {
    const at = where(p.id);
    const shown = at !== undefined && passes(at);
    if (!shown) {
      dropped++;
      continue;
    }
    mark(masks, segs, at.s, at.ord);
    out.push({ hit: { seg: at.s, ord: at.ord, seq: at.seq, score: 0, keys: [], info: CURATED }, position: Math.max(1, p.position - dropped) });
  }
  return out;

  function passes(at: { s: number; ord: number }): boolean {
    if (cur!.filterCuratedHits) {
      const a = masks.allow[at.s];
      if (a && !a[at.ord]) return false;
    }
    if (keyFilter) {
      let allow = keyAllow.get(at.s);
      if (!allow) keyAllow.set(at.s, (allow = evalFilter(keyFilter, segs[at.s]!)));
      if (!allow[at.ord]) return false;
    }
    return true;
  }
}

/**
 * The ranking with pinned documents at their positions, cut to [offset, offset + limit).
 * `organic` must hold the first offset + limit hits of the organic ranking.
 */
export function placePinned<T>(organic: T[], pinned: Array<{ item: T; position: number }>, offset: number, limit: number): T[] {
  const want = offset + limit;
  const out: T[] = [];
  let oi = 0;
  let pi = 0;
  while (out.length < want && (oi < organic.length || pi < pinned.length)) {
    if (pi < pinned.length && (pinned[pi]!.position <= out.length + 1 || oi >= organic.length)) out.push(pinned[pi++]!.item);
    else out.push(organic[oi++]!);
  }
  return out.slice(offset);
}
