/**
 * A `geopoint` / `geopoint[]` field's data in a segment (segment format 3):
 *
 *   GEO_POINTS   f64[2p]   lat, lng of every point, document by document (ordinal order)
 *   GEO_OFFSETS  u32[n+1]  document d owns points GEO_OFFSETS[d] .. GEO_OFFSETS[d+1]
 *   GEO_LEAF     u32[1]    the k-d tree's leaf size
 *   GEO_TREE_IDS, GEO_TREE_COORDS   the k-d tree over those points (kdtree.ts), its ids
 *                 being the ordinals of the documents that own the points
 *
 * The per-document points serve distance sorts and `geo_distance_meters`; the tree
 * answers radius and polygon filters by visiting only the points in the shapes' boxes.
 */
import { GEO_DEFAULTS } from '../defaults.js';
import { type Blob, encodeBlob, type Section } from '../index/codec.js';
import { haversine, inShape, shapeBoxes, type GeoShape } from './geo.js';
import { current } from '../search/budget.js';
import { buildKdTree, kdRange, type KdArrays } from './kdtree.js';

/** Section tags of a geo field blob. Never renumber: they are part of the on-disk format. */
export const GEO_TAG = {
  POINTS: 40,
  OFFSETS: 41,
  LEAF: 42,
  TREE_IDS: 43,
  TREE_COORDS: 44,
} as const;

/** Accumulates a geo field's points while a segment is built or merged. */
export class GeoAcc {
  points: number[] = [];
  offsets: number[] = [0];

  /** Documents before `upTo` that had no value get no points. */
  pad(upTo: number): void {
    while (this.offsets.length - 1 < upTo) this.offsets.push(this.points.length);
  }

  /** Adds document `ord`'s points: [lat, lng] or [[lat, lng], ...]. */
  add(ord: number, v: unknown): void {
    this.pad(ord);
    if (Array.isArray(v) && Array.isArray(v[0])) {
      for (const p of v as number[][]) this.points.push(Number(p[0]), Number(p[1]));
    } else if (Array.isArray(v) && v.length === 2) {
      this.points.push(Number(v[0]), Number(v[1]));
    }
    this.offsets.push(this.points.length);
  }

  /** Adds raw lat/lng pairs for document `ord` (merges). */
  addPairs(ord: number, src: Float64Array, from: number, to: number): void {
    this.pad(ord);
    for (let k = from; k < to; k++) this.points.push(src[k]!);
    this.offsets.push(this.points.length);
  }

  encode(n: number): Uint8Array {
    this.pad(n);
    const points = Float64Array.from(this.points);
    // offsets count points, not numbers
    const offsets = Uint32Array.from(this.offsets, (x) => x / 2);
    const leaf = GEO_DEFAULTS.kdLeafSize;
    const tree = buildKdTree(points, leaf);
    // the tree names each point's document: a filter needs nothing else
    const owner = new Uint32Array(offsets[n]!);
    for (let d = 0; d < n; d++) owner.fill(d, offsets[d]!, offsets[d + 1]!);
    for (let i = 0; i < tree.ids.length; i++) tree.ids[i] = owner[tree.ids[i]!]!;
    return encodeBlob(
      new Map<number, Section>([
        [GEO_TAG.POINTS, points],
        [GEO_TAG.OFFSETS, offsets],
        [GEO_TAG.LEAF, Uint32Array.of(leaf)],
        [GEO_TAG.TREE_IDS, tree.ids],
        [GEO_TAG.TREE_COORDS, tree.coords],
      ]),
    );
  }
}

/** A geo field of a segment, opened for reading. */
export class GeoColumn {
  /** lat, lng pairs; document d's are [2 * offsets[d], 2 * offsets[d + 1]). */
  readonly points: Float64Array;
  readonly offsets: Uint32Array;
  private readonly tree: KdArrays;
  private readonly leaf: number;
  private readonly stack: number[] = [];

  constructor(blob: Blob) {
    this.points = blob.f64(GEO_TAG.POINTS);
    this.offsets = blob.u32(GEO_TAG.OFFSETS);
    this.leaf = blob.u32(GEO_TAG.LEAF)[0]!;
    this.tree = { ids: blob.u32(GEO_TAG.TREE_IDS), coords: blob.f64(GEO_TAG.TREE_COORDS) };
  }

  /** The documents with a point in any of the shapes: out[ord] = 1. */
  markShapes(shapes: readonly GeoShape[], out: Uint8Array): void {
    for (const shape of shapes) {
      let tested = 0;
      for (const box of shapeBoxes(shape)) {
        kdRange(
          this.tree,
          this.leaf,
          box,
          (d, lat, lng) => {
            if (out[d] !== 0) return;
            tested++;
            if (inShape(shape, lat, lng)) out[d] = 1;
          },
          this.stack,
        );
      }
      // (a polygon's exact test reads every edge: counted, never cut, as every filter's work)
      current().spend(tested * (shape.kind === 'polygon' ? shape.poly.edges : 1));
    }
  }

  /** Meters from (lat, lng) to the nearest point of document `ord`; NaN when it has none. */
  distance(ord: number, lat: number, lng: number): number {
    const a = this.offsets[ord]!;
    const b = this.offsets[ord + 1]!;
    let best = NaN;
    for (let p = a; p < b; p++) {
      const d = haversine(lat, lng, this.points[2 * p]!, this.points[2 * p + 1]!);
      if (!(d >= best)) best = d;
    }
    return best;
  }

  /** Whether document `ord` has a point. */
  has(ord: number): boolean {
    return this.offsets[ord + 1]! > this.offsets[ord]!;
  }
}
