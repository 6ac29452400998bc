/**
 * src/search/visible.ts: how many documents of a collection may this search's key see?
 *
 * `out_of` is the collection's size as the caller may know it: all its live documents, or,
 * under a scoped key with a filter, those the key's filter lets through (a key that sees 20 of
 * 60 documents is told 20, not 60). The count is one pass of the key's filter over the
 * snapshot's segments, the same work as evaluating any filter, and none when the key's filter
 * is the search's whole filter (its masks are already there). A key filter without joins
 * depends on nothing but the collection, so its count is kept with the collection's shared
 * state object (a write by any process replaces that object) and reused until then.
 */
import { isDeleted, type CollectionState, type IndexSnapshot } from '../index/manifest.js';
import { evalFilter } from '../query/filter-eval.js';
import type { SearchPlan } from '../query/plan.js';
import type { Schema } from '../schema/schema.js';

/** Counts per state object: the schema they were made with, and per key filter text the count. */
const counts = new WeakMap<CollectionState, { schema: Schema; byFilter: Map<string, number> }>();
/** Distinct key filters remembered per collection state (beyond it, counts are not kept). */
const MAX_FILTERS = 64;

/**
 * The documents the search's key may see. `allow`: the search's filter masks, per segment
 * (reused when the key's filter is the whole filter).
 */
export function visibleCount(plan: SearchPlan, snap: IndexSnapshot, allow: (Uint8Array | null)[]): number {
  const keyFilter = plan.keyFilter;
  if (!keyFilter) return snap.state.count;
  const text = plan.scope?.filter_by;
  const memo = text !== undefined && !plan.joins?.bounded ? remembered(snap.state, plan.schema) : undefined;
  const known = memo?.get(text!);
  if (known !== undefined) return known;
  let n = 0;
  snap.segments.forEach((seg, i) => {
    const a = plan.filter === keyFilter && allow[i] ? allow[i]! : evalFilter(keyFilter, seg);
    for (let o = 0; o < seg.reader.n; o++) if (a[o] && !isDeleted(seg.deleted, o)) n++;
  });
  if (memo && memo.size < MAX_FILTERS) memo.set(text!, n);
  return n;
}

function remembered(state: CollectionState, schema: Schema): Map<string, number> {
  let entry = counts.get(state);
  if (!entry || entry.schema !== schema) {
    entry = { schema, byFilter: new Map() };
    counts.set(state, entry);
  }
  return entry.byFilter;
}
