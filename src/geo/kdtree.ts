/**
 * A static 2-d tree over a segment's points, stored as two flat arrays and no nodes:
 *
 *   ids     u32[m]     point index (into the segment's per-document points) in tree order
 *   coords  f64[2m]    (lng, lat) of ids[i] at 2i, 2i + 1
 *
 * The tree is implicit, as in a binary heap laid out in order: the range [left, right]
 * has its median at m = (left + right) >> 1, points left of m are not greater than it on
 * the range's axis (lng at even depths, lat at odd ones), points right of it not smaller;
 * ranges of at most `leaf` points are not split further and are scanned.
 *
 * Why this structure: segments are immutable and rebuilt whole by merges, so a static
 * tree built once in O(m log m) fits, and it needs no pointers (the arrays above are the
 * whole format). A box query visits O(sqrt(m) + k) points; a radius or a polygon becomes
 * one or two boxes (geo.ts) and the points found are then tested exactly. A grid of cells
 * (geohash, S2) needs a resolution chosen in advance, which suits either small or large
 * radii; the tree adapts to the data's density, which is what a 1 km radius over a dense
 * city and a 500 km one over a sparse country both need.
 */
import type { GeoBox } from './geo.js';

export interface KdArrays {
  ids: Uint32Array;
  coords: Float64Array;
}

/** Builds the tree over points given as lat/lng pairs (`points[2i]` lat, `[2i + 1]` lng). */
export function buildKdTree(points: Float64Array, leaf: number): KdArrays {
  const m = points.length / 2;
  const ids = new Uint32Array(m);
  const coords = new Float64Array(2 * m);
  for (let i = 0; i < m; i++) {
    ids[i] = i;
    coords[2 * i] = points[2 * i + 1]!; // lng: x
    coords[2 * i + 1] = points[2 * i]!; // lat: y
  }
  // explicit stack of [left, right, axis], no recursion
  const stack: number[] = [0, m - 1, 0];
  while (stack.length > 0) {
    const axis = stack.pop()!;
    const right = stack.pop()!;
    const left = stack.pop()!;
    if (right - left <= leaf) continue;
    const mid = (left + right) >> 1;
    select(ids, coords, mid, left, right, axis);
    stack.push(left, mid - 1, 1 - axis, mid + 1, right, 1 - axis);
  }
  return { ids, coords };
}

/**
 * Puts the k-th smallest (on `axis`) of [left, right] at k, smaller ones before it and
 * larger ones after (quickselect, Hoare partition around a median of three).
 */
function select(ids: Uint32Array, c: Float64Array, k: number, left: number, right: number, axis: number): void {
  while (right > left) {
    const mid = (left + right) >> 1;
    // median of three into `left`, as the pivot
    const a = c[2 * left + axis]!;
    const b = c[2 * mid + axis]!;
    const z = c[2 * right + axis]!;
    const med = (a <= b) === (b <= z) ? mid : (b <= a) === (a <= z) ? left : right;
    swap(ids, c, left, med);
    const pivot = c[2 * left + axis]!;
    let i = left;
    let j = right + 1;
    for (;;) {
      do i++;
      while (i <= right && c[2 * i + axis]! < pivot);
      do j--;
      while (c[2 * j + axis]! > pivot);
      if (i >= j) break;
      swap(ids, c, i, j);
    }
    swap(ids, c, left, j);
    if (j === k) return;
    if (j < k) left = j + 1;
    else right = j - 1;
  }
}

function swap(ids: Uint32Array, c: Float64Array, i: number, j: number): void {
  const t = ids[i]!;
  ids[i] = ids[j]!;
  ids[j] = t;
  const x = c[2 * i]!;
  const y = c[2 * i + 1]!;
  c[2 * i] = c[2 * j]!;
  c[2 * i + 1] = c[2 * j + 1]!;
  c[2 * j] = x;
  c[2 * j + 1] = y;
}

/** Calls `visit(id, lat, lng)` (the id stored for the point) for every point of the tree inside the box. Hot. */
export function kdRange(t: KdArrays, leaf: number, box: GeoBox, visit: (point: number, lat: number, lng: number) => void, stack: number[] = []): void {
  const { ids, coords } = t;
  const m = ids.length;
  if (m === 0) return;
  const { minLng, minLat, maxLng, maxLat } = box;
  stack.length = 0;
  stack.push(0, m - 1, 0);
  while (stack.length > 0) {
    const axis = stack.pop()!;
    const right = stack.pop()!;
    const left = stack.pop()!;
    if (right - left <= leaf) {
      for (let i = left; i <= right; i++) {
        const x = coords[2 * i]!;
        const y = coords[2 * i + 1]!;
        if (x >= minLng && x <= maxLng && y >= minLat && y <= maxLat) visit(ids[i]!, y, x);
      }
      continue;
    }
    const mid = (left + right) >> 1;
    const x = coords[2 * mid]!;
    const y = coords[2 * mid + 1]!;
    if (x >= minLng && x <= maxLng && y >= minLat && y <= maxLat) visit(ids[mid]!, y, x);
    if (axis === 0 ? minLng <= x : minLat <= y) stack.push(left, mid - 1, 1 - axis);
    if (axis === 0 ? maxLng >= x : maxLat >= y) stack.push(mid + 1, right, 1 - axis);
  }
}
