/**
 * src/geo/polygon.ts: here are a polygon's vertices, which points of the Earth does it hold?
 *
 * A polygon is a loop on the sphere whose edges are geodesics (the shorter great-circle arc
 * between two vertices), as the reference engine builds it (S2 loops): an edge between two
 * cities bulges towards the pole from the straight line in latitude and longitude, by
 * about 0.4° of latitude between Salt Lake City and New York. The loop splits the sphere
 * in two; the polygon is the smaller part, whichever way its vertices turn (the reference
 * normalises its loops so), so vertices may be given clockwise or anticlockwise, and a
 * polygon may cross the antimeridian or hold a pole.
 *
 * Containment, from the signed solid angles of the triangles (q, a, b) over the edges
 * a -> b, each by Van Oosterom and Strackee ("The Solid Angle of a Plane Triangle", 1983:
 * tan(Ω/2) = q·(a×b) / (1 + q·a + a·b + b·q), in (-2π, 2π]): their sum is the area A to the
 * loop's left, less 4π when the antipode of q lies to the left (the sum jumps where the
 * triangles' arcs from q pass through -q, not where q crosses an edge). So p is to the
 * left when the sum from q = -p is A - 4π (SphericalPolygon.antipodeSum). The two values
 * are 4π apart, so rounding never confuses them; a point on an edge may fall either way.
 */

const RAD = Math.PI / 180;
const FOUR_PI = 4 * Math.PI;

/** A box of latitudes and longitudes (degrees), as the k-d tree is asked for (geo.ts GeoBox). */
export interface LatLngBox {
  minLng: number;
  minLat: number;
  maxLng: number;
  maxLat: number;
}

export class SphericalPolygon {
  /** Per edge i (vertex a = i to vertex b = i + 1): a's unit vector, n = a x b, e = b - a and |e|². */
  private readonly ax: Float64Array;
  private readonly ay: Float64Array;
  private readonly az: Float64Array;
  private readonly nx: Float64Array;
  private readonly ny: Float64Array;
  private readonly nz: Float64Array;
  private readonly ex: Float64Array;
  private readonly ey: Float64Array;
  private readonly ez: Float64Array;
  private readonly ee: Float64Array;
  /** The area to the left of the loop as given, in steradians (0..4π). */
  private readonly leftArea: number;
  /** The polygon is the region to the loop's right (its vertices turn clockwise). */
  private readonly flipped: boolean;
  /** Boxes holding every point of the polygon (one, or two across the antimeridian). */
  readonly boxes: LatLngBox[];

  /**
   * `lats` and `lngs`: the vertices in order, at least three distinct, no two adjacent ones
   * antipodal (polygonError says which); a vertex equal to the one before it, and a last
   * vertex equal to the first (closing the loop), are dropped.
   */
  constructor(lats: Float64Array, lngs: Float64Array) {
    const vs = distinctVertices(lats, lngs);
    const n = vs.length;
    const f = () => new Float64Array(n);
    [this.ax, this.ay, this.az, this.nx, this.ny, this.nz, this.ex, this.ey, this.ez, this.ee] = [f(), f(), f(), f(), f(), f(), f(), f(), f(), f()];
    const units = vs.map(([lat, lng]) => unit(lat, lng));
    for (let i = 0; i < n; i++) {
      const a = units[i]!;
      const b = units[(i + 1) % n]!;
      const e = [b[0] - a[0], b[1] - a[1], b[2] - a[2]] as const;
      this.ax[i] = a[0];
      this.ay[i] = a[1];
      this.az[i] = a[2];
      // a x b = a x (b - a): the difference keeps short edges' normals accurate
      this.nx[i] = a[1] * e[2] - a[2] * e[1];
      this.ny[i] = a[2] * e[0] - a[0] * e[2];
      this.nz[i] = a[0] * e[1] - a[1] * e[0];
      this.ex[i] = e[0];
      this.ey[i] = e[1];
      this.ez[i] = e[2];
      this.ee[i] = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
    }
    // the left area, from any point: here the vertices' mean direction
    let mx = 0;
    let my = 0;
    let mz = 0;
    for (const u of units) {
      mx += u[0];
      my += u[1];
      mz += u[2];
    }
    const len = Math.hypot(mx, my, mz);
    const s = len > 1e-9 ? this.antipodeSum(mx / len, my / len, mz / len) : this.antipodeSum(0.5773502691896258, 0.5773502691896258, 0.5773502691896258);
    this.leftArea = ((s % FOUR_PI) + FOUR_PI) % FOUR_PI;
    this.flipped = this.leftArea > 2 * Math.PI;
    this.boxes = this.bounds(vs, units);
  }

  /**
   * The sum over the edges of the signed solid angle of (-p, a, b), p a unit vector. With
   * d = p - a and unit vectors, -p·(a×b) = -d·n and 1 - p·a - p·b + a·b = (|d|² + |p-b|² -
   * |e|²) / 2: differences of nearby points instead of products near 1, so that a point
   * near a vertex (-p near its antipode, where the plain formula cancels) is exact too.
   */
  private antipodeSum(px: number, py: number, pz: number): number {
    const { ax, ay, az, nx, ny, nz, ex, ey, ez, ee } = this;
    const n = ax.length;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const dx = px - ax[i]!;
      const dy = py - ay[i]!;
      const dz = pz - az[i]!;
      const fx = dx - ex[i]!;
      const fy = dy - ey[i]!;
      const fz = dz - ez[i]!;
      const num = -(dx * nx[i]! + dy * ny[i]! + dz * nz[i]!);
      const den = (dx * dx + dy * dy + dz * dz + fx * fx + fy * fy + fz * fz - ee[i]!) / 2;
      sum += 2 * Math.atan2(num, den);
    }
    return sum;
  }

  /** How many edges the exact test reads for a point. */
  get edges(): number {
    return this.ax.length;
  }

  /** Whether the point (lat, lng), in degrees, lies in the polygon. */
  contains(lat: number, lng: number): boolean {
    const c = Math.cos(lat * RAD);
    const left = this.antipodeSum(c * Math.cos(lng * RAD), c * Math.sin(lng * RAD), Math.sin(lat * RAD)) < this.leftArea - 2 * Math.PI;
    return left !== this.flipped;
  }

  /**
   * Boxes that hold the whole polygon. Its latitudes reach from the lowest to the highest
   * point of its edges (an arc's highest point may lie between its ends), or to a pole it
   * holds; its longitudes, when it holds no pole, are those its edges sweep (a meridian
   * through an inner point meets the boundary on its way to the pole), else all of them.
   */
  private bounds(vs: Array<[number, number]>, units: Array<[number, number, number]>): LatLngBox[] {
    const n = vs.length;
    let minLat = Infinity;
    let maxLat = -Infinity;
    for (let i = 0; i < n; i++) {
      const [lo, hi] = arcLatitudes(units[i]!, units[(i + 1) % n]!, vs[i]![0], vs[(i + 1) % n]![0]);
      minLat = Math.min(minLat, lo);
      maxLat = Math.max(maxLat, hi);
    }
    const north = this.contains(90, 0);
    const south = this.contains(-90, 0);
    if (north) maxLat = 90;
    if (south) minLat = -90;
    // (a hair of slack: rounding in the box must never lose a point the exact test keeps)
    const pad = 1e-9;
    minLat = Math.max(-90, minLat - pad);
    maxLat = Math.min(90, maxLat + pad);
    const all = [{ minLng: -180, minLat, maxLng: 180, maxLat }];
    if (north || south || vs.some(([lat]) => Math.abs(lat) >= 90 - 1e-9)) return all;
    // longitudes swept, unwrapped along the loop (each edge sweeps less than 180°)
    let u = vs[0]![1];
    let lo = u;
    let hi = u;
    for (let i = 1; i <= n; i++) {
      let d = vs[i % n]![1] - vs[i - 1]![1];
      if (d > 180) d -= 360;
      else if (d < -180) d += 360;
      if (Math.abs(d) === 180) return all;
      u += d;
      lo = Math.min(lo, u);
      hi = Math.max(hi, u);
    }
    if (hi - lo >= 360) return all;
    const shift = lo < -180 ? 360 : hi > 180 && lo >= 180 ? -360 : 0;
    lo += shift - pad;
    hi += shift + pad;
    if (hi > 180) return [{ minLng: lo, minLat, maxLng: 180, maxLat }, { minLng: -180, minLat, maxLng: hi - 360, maxLat }];
    return [{ minLng: Math.max(-180, lo), minLat, maxLng: hi, maxLat }];
  }
}

function unit(lat: number, lng: number): [number, number, number] {
  const c = Math.cos(lat * RAD);
  return [c * Math.cos(lng * RAD), c * Math.sin(lng * RAD), Math.sin(lat * RAD)];
}

/** The vertices with repeats of the one before dropped (and a closing repeat of the first). */
function distinctVertices(lats: Float64Array, lngs: Float64Array): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let i = 0; i < lats.length; i++) {
    const prev = out[out.length - 1];
    if (prev && samePoint(prev[0], prev[1], lats[i]!, lngs[i]!)) continue;
    out.push([lats[i]!, lngs[i]!]);
  }
  while (out.length > 1 && samePoint(out[0]![0], out[0]![1], out[out.length - 1]![0], out[out.length - 1]![1])) out.pop();
  return out;
}

function samePoint(lat1: number, lng1: number, lat2: number, lng2: number): boolean {
  return lat1 === lat2 && (lng1 === lng2 || Math.abs(lat1) === 90 || Math.abs(lng1 - lng2) === 360);
}

/**
 * What makes these vertices no polygon, or undefined: fewer than three distinct vertices,
 * or two adjacent ones antipodal (no one geodesic joins them).
 */
export function polygonError(lats: Float64Array, lngs: Float64Array): string | undefined {
  const vs = distinctVertices(lats, lngs);
  if (vs.length < 3) return 'a polygon needs at least three distinct vertices';
  for (let i = 0; i < vs.length; i++) {
    const a = unit(...vs[i]!);
    const b = unit(...vs[(i + 1) % vs.length]!);
    if (a[0] * b[0] + a[1] * b[1] + a[2] * b[2] < -1 + 1e-12) return `vertices (${vs[i]!.join(', ')}) and (${vs[(i + 1) % vs.length]!.join(', ')}) are antipodal: no one edge joins them`;
  }
  return undefined;
}

/**
 * The lowest and highest latitudes (degrees) of the shorter great-circle arc from a to b
 * (unit vectors; latitudes latA, latB): its ends', or the great circle's extreme where that
 * lies on the arc.
 */
function arcLatitudes(a: [number, number, number], b: [number, number, number], latA: number, latB: number): [number, number] {
  let lo = Math.min(latA, latB);
  let hi = Math.max(latA, latB);
  const nx = a[1] * b[2] - a[2] * b[1];
  const ny = a[2] * b[0] - a[0] * b[2];
  const nz = a[0] * b[1] - a[1] * b[0];
  const nn = Math.hypot(nx, ny, nz);
  if (nn < 1e-15) return [lo, hi];
  // the great circle's highest point: the pole's direction with its component along n removed
  const k = nz / nn;
  let tx = -k * (nx / nn);
  let ty = -k * (ny / nn);
  let tz = 1 - k * (nz / nn);
  const tl = Math.hypot(tx, ty, tz);
  if (tl < 1e-15) return [lo, hi];
  tx /= tl;
  ty /= tl;
  tz /= tl;
  // t lies on the arc when a x t and t x b both point along n
  const onArc = (x: number, y: number, z: number) =>
    (a[1] * z - a[2] * y) * nx + (a[2] * x - a[0] * z) * ny + (a[0] * y - a[1] * x) * nz >= 0 && (y * b[2] - z * b[1]) * nx + (z * b[0] - x * b[2]) * ny + (x * b[1] - y * b[0]) * nz >= 0;
  if (onArc(tx, ty, tz)) hi = Math.max(hi, Math.asin(Math.min(1, tz)) / RAD);
  if (onArc(-tx, -ty, -tz)) lo = Math.min(lo, -Math.asin(Math.min(1, tz)) / RAD);
  return [lo, hi];
}
