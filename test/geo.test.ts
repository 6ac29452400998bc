/**
 * Geo search: geopoint fields, radius and polygon filters, distance sorts, the k-d tree in
 * each segment checked against a brute-force haversine scan, and the same through
 * `fathom serve` with the official typesense client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Client } from 'typesense';
import { open } from 'lmdb';
import { GeoAcc, GeoColumn } from '../src/geo/column.js';
import { Blob } from '../src/index/codec.js';
import { haversine, inShape, parseDistance, polygon } from '../src/geo/geo.js';
import { SphericalPolygon } from '../src/geo/polygon.js';
import { SEGMENT_FORMAT, TAG } from '../src/index/segment.js';
import { snapshot } from '../src/index/manifest.js';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { dataDirPath, openEngine, rng } from './helpers.js';

/** The reference: great-circle distance written out independently (spherical law of haversines). */
function refDistance(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const r = Math.PI / 180;
  const h = Math.sin(((lat2 - lat1) * r) / 2) ** 2 + Math.cos(lat1 * r) * Math.cos(lat2 * r) * Math.sin(((lng2 - lng1) * r) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(h)));
}

const PARIS = [48.8566, 2.3522] as const;
const PLACES = [
  { id: 'louvre', title: 'Louvre Museum', points: 10, location: [48.86093, 2.33698] },
  { id: 'eiffel', title: 'Eiffel Tower', points: 9, location: [48.85837, 2.29448] },
  { id: 'versailles', title: 'Palace of Versailles', points: 8, location: [48.80486, 2.12037] },
  { id: 'sacre', title: 'Sacre Coeur', points: 7, location: [48.88671, 2.34311] },
  { id: 'london', title: 'Tower of London', points: 6, location: [51.50814, -0.07594] },
  { id: 'fiji', title: 'Suva harbour', points: 5, location: [-18.1416, 178.4419] },
  { id: 'taveuni', title: 'Taveuni, across the antimeridian', points: 4, location: [-16.85, -179.97] },
];

describe('geo math', () => {
  it('measures Paris to London as about 343.6 km', () => {
    expect(haversine(PARIS[0], PARIS[1], 51.5074, -0.1278) / 1000).toBeCloseTo(343.6, 0);
  });

  it('reads distances in m, km and mi', () => {
    expect(parseDistance('5.1 km')).toBe(5100);
    expect(parseDistance('2mi')).toBeCloseTo(3218.688, 6);
    expect(parseDistance('300 m')).toBe(300);
    expect(parseDistance('5 parsecs')).toBeUndefined();
  });
});

describe('the k-d tree of a segment against a brute-force haversine scan', () => {
  const lat = fc.double({ min: -90, max: 90, noNaN: true });
  const lng = fc.double({ min: -180, max: 180, noNaN: true });
  // points clustered somewhere (a city), spread over the globe, and near the poles and the antimeridian
  const point = fc.oneof(
    fc.tuple(lat, lng),
    fc.tuple(fc.double({ min: 48, max: 49, noNaN: true }), fc.double({ min: 2, max: 3, noNaN: true })),
    fc.tuple(fc.double({ min: -20, max: 20, noNaN: true }), fc.oneof(fc.double({ min: 178, max: 180, noNaN: true }), fc.double({ min: -180, max: -178, noNaN: true }))),
    fc.tuple(fc.double({ min: 85, max: 90, noNaN: true }), lng),
  );
  const docs = fc.array(fc.array(point, { minLength: 0, maxLength: 3 }), { minLength: 1, maxLength: 400 });
  const circle = fc.record({ lat: fc.oneof(lat, fc.double({ min: 48, max: 49, noNaN: true })), lng, radius: fc.oneof(fc.double({ min: 1, max: 200_000, noNaN: true }), fc.double({ min: 1, max: 25_000_000, noNaN: true })) });
  const vertices = fc.array(fc.tuple(fc.double({ min: -80, max: 80, noNaN: true }), fc.double({ min: -170, max: 170, noNaN: true })), { minLength: 3, maxLength: 8 });

  function column(points: Array<Array<[number, number]>>): GeoColumn {
    const acc = new GeoAcc();
    points.forEach((ps, d) => acc.add(d, ps));
    return new GeoColumn(new Blob(acc.encode(points.length)));
  }

  it('finds exactly the documents within a radius', () => {
    // circles around a document's point (so that they hold some) or anywhere
    const around = fc.record({ at: fc.nat(), dLat: fc.double({ min: -0.5, max: 0.5, noNaN: true }), radius: fc.oneof(fc.double({ min: 1, max: 100_000, noNaN: true }), fc.double({ min: 1, max: 3_000_000, noNaN: true })) });
    let hits = 0;
    fc.assert(
      fc.property(docs, fc.array(fc.oneof(circle, around), { minLength: 1, maxLength: 3 }), (points, shapes) => {
        const flat = points.flat();
        const circles = shapes.map((c) => {
          if (!('at' in c)) return c;
          if (flat.length === 0) return { lat: 0, lng: 0, radius: c.radius };
          const [a, b] = flat[c.at % flat.length]!;
          return { lat: Math.max(-90, Math.min(90, a + c.dLat)), lng: b, radius: c.radius };
        });
        const col = column(points);
        const out = new Uint8Array(points.length);
        col.markShapes(circles.map((c) => ({ kind: 'circle' as const, ...c })), out);
        points.forEach((ps, d) => {
          const dists = circles.flatMap((c) => ps.map(([a, b]) => refDistance(c.lat, c.lng, a, b) - c.radius));
          // points within a micrometre of a circle may fall either way by rounding
          if (dists.some((x) => Math.abs(x) < 1e-6)) return;
          if (out[d] === 1) hits++;
          expect({ d, in: out[d] === 1 }).toEqual({ d, in: dists.some((x) => x < 0) });
        });
      }),
      { numRuns: 300 },
    );
    expect(hits).toBeGreaterThan(100); // the property saw documents inside circles, not only outside
  });

  it('finds exactly the documents inside a polygon', () => {
    fc.assert(
      fc.property(docs, vertices, (points, vs) => {
        const col = column(points);
        const lats = Float64Array.from(vs, (v) => v[0]);
        const lngs = Float64Array.from(vs, (v) => v[1]);
        const out = new Uint8Array(points.length);
        const shape = polygon(lats, lngs);
        col.markShapes([shape], out);
        // the reference: every point of every document put to the exact test
        points.forEach((ps, d) => expect({ d, in: out[d] === 1 }).toEqual({ d, in: ps.some(([a, b]) => inShape(shape, a, b)) }));
      }),
      { numRuns: 300 },
    );
  });

  it('gives each document the distance to its nearest point', () => {
    fc.assert(
      fc.property(docs, fc.tuple(lat, lng), (points, [qa, qb]) => {
        const col = column(points);
        points.forEach((ps, d) => {
          const want = ps.length === 0 ? NaN : Math.min(...ps.map(([a, b]) => refDistance(qa, qb, a, b)));
          const got = col.distance(d, qa, qb);
          if (Number.isNaN(want)) expect(got).toBeNaN();
          else expect(Math.abs(got - want)).toBeLessThan(1e-6);
        });
      }),
      { numRuns: 100 },
    );
  });

  it('places a point inside a square and not outside it, whichever way its vertices turn', () => {
    for (const [lats, lngs] of [[Float64Array.of(0, 0, 10, 10), Float64Array.of(0, 10, 10, 0)], [Float64Array.of(10, 10, 0, 0), Float64Array.of(0, 10, 10, 0)]] as const) {
      const sq = new SphericalPolygon(lats, lngs);
      expect([sq.contains(5, 5), sq.contains(15, 5), sq.contains(5, -1)]).toEqual([true, false, false]);
    }
  });
});

/**
 * The reference for polygons: the gnomonic projection from the Earth's centre onto the plane
 * touching the sphere at `c`, which maps every great circle to a straight line, so that a
 * geodesic polygon in the hemisphere around `c` is a plane polygon there; a ray cast decides.
 */
function gnomonicContains(c: [number, number], vs: Array<[number, number]>, p: [number, number]): boolean | undefined {
  const r = Math.PI / 180;
  const proj = ([lat, lng]: [number, number]): [number, number] | undefined => {
    const cosc = Math.sin(c[0] * r) * Math.sin(lat * r) + Math.cos(c[0] * r) * Math.cos(lat * r) * Math.cos((lng - c[1]) * r);
    if (cosc <= 0.05) return undefined;
    const x = (Math.cos(lat * r) * Math.sin((lng - c[1]) * r)) / cosc;
    const y = (Math.cos(c[0] * r) * Math.sin(lat * r) - Math.sin(c[0] * r) * Math.cos(lat * r) * Math.cos((lng - c[1]) * r)) / cosc;
    return [x, y];
  };
  const q = proj(p);
  const ps = vs.map(proj);
  if (!q || ps.some((v) => !v)) return undefined;
  let inside = false;
  for (let i = 0, j = ps.length - 1; i < ps.length; j = i++) {
    const [xi, yi] = ps[i]!;
    const [xj, yj] = ps[j]!;
    // (a point within rounding of an edge may fall either way: no verdict)
    const cross = (xj - xi) * (q[1] - yi) - (yj - yi) * (q[0] - xi);
    const len = Math.hypot(xj - xi, yj - yi);
    const t = ((q[0] - xi) * (xj - xi) + (q[1] - yi) * (yj - yi)) / (len * len);
    if (Math.abs(cross / len) < 1e-9 && t >= 0 && t <= 1) return undefined;
    if (yi > q[1] !== yj > q[1] && q[0] < xi + ((q[1] - yi) * (xj - xi)) / (yj - yi)) inside = !inside;
  }
  return inside;
}

/** The point `dist` degrees of arc from (lat, lng) along `bearing` degrees. */
function destination(lat: number, lng: number, bearing: number, dist: number): [number, number] {
  const r = Math.PI / 180;
  const la = Math.asin(Math.sin(lat * r) * Math.cos(dist * r) + Math.cos(lat * r) * Math.sin(dist * r) * Math.cos(bearing * r));
  const lo = lng * r + Math.atan2(Math.sin(bearing * r) * Math.sin(dist * r) * Math.cos(lat * r), Math.cos(dist * r) - Math.sin(lat * r) * Math.sin(la));
  return [la / r, ((((lo / r + 180) % 360) + 360) % 360) - 180];
}

describe('polygons with geodesic edges, as the reference engine builds them', () => {
  // star-shaped polygons around a centre anywhere (over a pole, across the antimeridian), small or continent-wide
  const star = fc.record({
    lat: fc.double({ min: -90, max: 90, noNaN: true }),
    lng: fc.double({ min: -180, max: 180, noNaN: true }),
    radius: fc.oneof(fc.integer({ min: 1, max: 100 }).map((k) => k / 100), fc.integer({ min: 1, max: 60 })),
    spokes: fc.array(fc.tuple(fc.integer({ min: 0, max: 3599 }), fc.integer({ min: 20, max: 100 })), { minLength: 3, maxLength: 12 }),
    clockwise: fc.boolean(),
    points: fc.array(fc.tuple(fc.integer({ min: 0, max: 3599 }), fc.integer({ min: 0, max: 150 })), { minLength: 1, maxLength: 40 }),
  });

  it('holds exactly the points a gnomonic projection puts inside, whichever way the vertices turn', () => {
    let inside = 0;
    let outside = 0;
    fc.assert(
      fc.property(star, (s) => {
        // distinct bearings, in order: a simple polygon around the centre
        const bearings = [...new Set(s.spokes.map(([b]) => b / 10))].sort((a, b) => a - b);
        if (bearings.length < 3 || bearings.some((b, i) => (bearings[(i + 1) % bearings.length]! - b + 360) % 360 >= 170)) return;
        let vs = bearings.map((b, i) => destination(s.lat, s.lng, b, (s.radius * s.spokes[i]![1]) / 100));
        if (s.clockwise) vs = vs.reverse();
        const shape = polygon(Float64Array.from(vs, (v) => v[0]), Float64Array.from(vs, (v) => v[1]));
        const col = (() => {
          const acc = new GeoAcc();
          s.points.forEach(([b, f], d) => acc.add(d, [destination(s.lat, s.lng, b / 10, (s.radius * f) / 100)]));
          return new GeoColumn(new Blob(acc.encode(s.points.length)));
        })();
        const out = new Uint8Array(s.points.length);
        col.markShapes([shape], out);
        s.points.forEach(([b, f], d) => {
          const p = destination(s.lat, s.lng, b / 10, (s.radius * f) / 100);
          const want = gnomonicContains([s.lat, s.lng], vs, p);
          if (want === undefined) return;
          if (want) inside++;
          else outside++;
          expect({ d, p, exact: inShape(shape, p[0], p[1]), indexed: out[d] === 1 }).toEqual({ d, p, exact: want, indexed: want });
        });
      }),
      { numRuns: 400, seed: 42 },
    );
    expect(inside).toBeGreaterThan(500);
    expect(outside).toBeGreaterThan(500);
  });

  it('bends an edge between two cities towards the pole: the triangle Chicago, New York, Salt Lake City', () => {
    const tri = new SphericalPolygon(Float64Array.of(41.8781, 40.7128, 40.7608), Float64Array.of(-87.6298, -74.006, -111.891));
    // O'Hare lies north of the straight line from Salt Lake City to Chicago but south of the
    // geodesic from Salt Lake City to New York, which passes north of Chicago (42.19° there)
    expect(tri.contains(41.9786, -87.9048)).toBe(true);
    // Midway lies south of Chicago: inside the straight-edged triangle, outside the geodesic one
    expect(tri.contains(41.7868, -87.7522)).toBe(false);
    expect(tri.contains(42.3, -87.63)).toBe(false);
    expect(tri.contains(42.1, -87.63)).toBe(true);
  });

  it('refuses vertices that make no polygon, and drops a last vertex that closes the loop', async () => {
    const e = openEngine();
    await e.createCollection({ name: 'p', fields: [{ name: 'location', type: 'geopoint' }] });
    await e.writeDocument('p', { id: 'a', location: [5, 5] });
    const bad = async (f: string, msg: RegExp) => expect(e.search('p', { q: '*', filter_by: f })).rejects.toMatchObject({ status: 400, message: expect.stringMatching(msg) });
    await bad('location:(0, 0, 0, 0, 10, 10)', /at least three distinct vertices/);
    await bad('location:(0, 0, 0, 180, 10, 10)', /antipodal/);
    expect((await e.search('p', { q: '*', filter_by: 'location:(0, 0, 0, 10, 10, 10, 10, 0, 0, 0)' })).found).toBe(1);
    await e.close();
  });
});

describe('geopoint fields in a collection', () => {
  const schema = {
    name: 'places',
    fields: [
      { name: 'title', type: 'string' },
      { name: 'points', type: 'int32' },
      { name: 'location', type: 'geopoint' },
      { name: 'branches', type: 'geopoint[]', optional: true },
    ],
    default_sorting_field: 'points',
  };

  it('filters within a radius, sorts by distance and reports geo_distance_meters', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    for (const p of PLACES) await e.writeDocument('places', p);
    const r = await e.search('places', { q: '*', filter_by: `location:(${PARIS[0]}, ${PARIS[1]}, 5.1 km)`, sort_by: `location(${PARIS[0]}, ${PARIS[1]}):asc` });
    expect(r.hits!.map((h) => h.document.id)).toEqual(['louvre', 'sacre', 'eiffel']);
    const d = r.hits!.map((h) => (h.geo_distance_meters as Record<string, number>).location);
    expect(d).toEqual(['louvre', 'sacre', 'eiffel'].map((id) => Math.round(refDistance(PARIS[0], PARIS[1], ...(PLACES.find((p) => p.id === id)!.location as [number, number])))));
    const far = await e.search('places', { q: '*', filter_by: `location:(${PARIS[0]}, ${PARIS[1]}, 20 mi)`, sort_by: `location(${PARIS[0]}, ${PARIS[1]}):desc` });
    expect(far.hits!.map((h) => h.document.id)).toEqual(['versailles', 'eiffel', 'sacre', 'louvre']);
    await e.close();
  });

  it('crosses the antimeridian and ORs several shapes', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    for (const p of PLACES) await e.writeDocument('places', p);
    const fiji = await e.search('places', { q: '*', filter_by: 'location:(-17.5, 179.9, 300 km)' });
    expect(fiji.hits!.map((h) => h.document.id).sort()).toEqual(['fiji', 'taveuni']);
    const two = await e.search('places', { q: '*', filter_by: `location:[(51.5, -0.1, 10 km), (${PARIS[0]}, ${PARIS[1]}, 3 km)]` });
    expect(two.hits!.map((h) => h.document.id).sort()).toEqual(['london', 'louvre']);
    const either = await e.search('places', { q: '*', filter_by: `location:(51.5, -0.1, 10 km) || location:(${PARIS[0]}, ${PARIS[1]}, 3 km)` });
    expect(either.found).toBe(2);
    await e.close();
  });

  it('filters within a polygon and combines geo filters with every other kind', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    for (const p of PLACES) await e.writeDocument('places', p);
    // a box around central Paris, as lat, lng vertices
    const box = 'location:(48.90, 2.25, 48.90, 2.40, 48.84, 2.40, 48.84, 2.25)';
    expect((await e.search('places', { q: '*', filter_by: box })).hits!.map((h) => h.document.id).sort()).toEqual(['eiffel', 'louvre', 'sacre']);
    expect((await e.search('places', { q: '*', filter_by: `${box} && points:>=9` })).hits!.map((h) => h.document.id).sort()).toEqual(['eiffel', 'louvre']);
    expect((await e.search('places', { q: 'tower', query_by: 'title', filter_by: `(${box} || location:(51.5, -0.1, 10 km)) && points:<10` })).hits!.map((h) => h.document.id).sort()).toEqual(['eiffel', 'london']);
    expect((await e.search('places', { q: '*', filter_by: `${box} && id:!=louvre` })).found).toBe(2);
    await e.close();
  });

  it('sorts by another field within exclude_radius, and by distance buckets with precision', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    for (const p of PLACES) await e.writeDocument('places', p);
    // within 10 km everything counts as 0 m: points decide; Versailles (~17 km) comes after
    const ex = await e.search('places', { q: '*', filter_by: `location:(${PARIS[0]}, ${PARIS[1]}, 30 km)`, sort_by: `location(${PARIS[0]}, ${PARIS[1]}, exclude_radius: 10 km):asc, points:asc` });
    expect(ex.hits!.map((h) => h.document.id)).toEqual(['sacre', 'eiffel', 'louvre', 'versailles']);
    // 5 km buckets: the three central places tie, so points:desc orders them
    const pr = await e.search('places', { q: '*', filter_by: `location:(${PARIS[0]}, ${PARIS[1]}, 30 km)`, sort_by: `location(${PARIS[0]}, ${PARIS[1]}, precision: 5 km):asc, points:desc` });
    expect(pr.hits!.map((h) => h.document.id)).toEqual(['louvre', 'eiffel', 'sacre', 'versailles']);
    await e.close();
  });

  it('sorts a geopoint[] document by its nearest point and matches any of its points', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    await e.writeDocument('places', { id: 'chain', title: 'Chain', points: 1, location: [51.5, -0.1], branches: [[40.7, -74.0], [48.857, 2.352]] });
    await e.writeDocument('places', { id: 'solo', title: 'Solo', points: 1, location: [51.5, -0.1], branches: [[48.9, 2.4]] });
    const r = await e.search('places', { q: '*', filter_by: `branches:(${PARIS[0]}, ${PARIS[1]}, 10 km)`, sort_by: `branches(${PARIS[0]}, ${PARIS[1]}):asc` });
    expect(r.hits!.map((h) => h.document.id)).toEqual(['chain', 'solo']);
    expect((r.hits![0]!.geo_distance_meters as Record<string, number>).branches).toBeLessThan(100);
    expect((await e.search('places', { q: '*', filter_by: 'branches:(40.7, -74.0, 1 km)' })).hits!.map((h) => h.document.id)).toEqual(['chain']);
    expect((await e.search('places', { q: '*', filter_by: 'branches:*' })).found).toBe(2);
    await e.close();
  });

  it('checks coordinates, and coerces or drops them under dirty_values', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    const w = (doc: Record<string, unknown>, dirty?: 'coerce_or_reject' | 'coerce_or_drop' | 'drop' | 'reject') => e.writeDocument('places', { title: 't', points: 1, ...doc }, dirty ? { dirtyValues: dirty } : {});
    await expect(w({ location: [91, 2] })).rejects.toThrow(/latitude 91 out of range/);
    await expect(w({ location: [48, 181] })).rejects.toThrow(/longitude 181 out of range/);
    await expect(w({ location: [48] })).rejects.toThrow(/must be a \[lat, lng\] pair/);
    await expect(w({ location: '48,2' })).rejects.toThrow(/must be a \[lat, lng\] pair/);
    await expect(w({ location: ['48.1', '2.2'] })).rejects.toThrow(/must be a \[lat, lng\] pair/);
    await expect(w({ location: [48, 2], branches: [[1, 2], [3]] })).rejects.toThrow(/`branches` element 1 must be a \[lat, lng\] pair/);
    expect(await w({ id: 'c', location: ['48.1', '2.2'] }, 'coerce_or_reject')).toMatchObject({ location: [48.1, 2.2] });
    // an optional field that cannot be read is dropped; a required one fails the document
    expect(await w({ id: 'd', location: [1, 1], branches: [[100, 1]] }, 'coerce_or_drop')).not.toHaveProperty('branches');
    await expect(w({ location: [100, 1] }, 'drop')).rejects.toThrow(/required/);
    await expect(e.createCollection({ name: 'x', fields: [{ name: 'l', type: 'geopoint', facet: true }] })).rejects.toThrow(/cannot be a facet/);
    await e.close();
  });

  it('refuses malformed geo filters and sorts with a precise 400 message', async () => {
    const e = openEngine();
    await e.createCollection(schema);
    const bad = async (p: Record<string, string>, msg: RegExp) => expect(e.search('places', { q: '*', ...p })).rejects.toMatchObject({ status: 400, message: expect.stringMatching(msg) });
    await bad({ filter_by: 'location:(48.8, 2.3)' }, /polygon needs at least three/);
    await bad({ filter_by: 'location:(48.8, 2.3, 5 parsecs)' }, /neither a coordinate nor a distance/);
    await bad({ filter_by: 'location:(95, 2.3, 5 km)' }, /not a valid latitude/);
    await bad({ filter_by: 'location:=(48.8, 2.3, 5 km)' }, /only `location:\(...\)`/);
    await bad({ filter_by: 'location:(48.8, 2.3, 5 km' }, /expected `\)`/);
    await bad({ filter_by: 'location:48.8' }, /is a geopoint field/);
    await bad({ filter_by: 'title:(x)' }, /unexpected `\(` in a value/);
    await bad({ sort_by: 'location:asc' }, /sort by distance from a point/);
    await bad({ sort_by: 'location(48.8):asc' }, /sort by distance as/);
    await bad({ sort_by: 'location(48.8, 2.3, radius: 2 km):asc' }, /unknown option/);
    await bad({ sort_by: 'location(48.8, 2.3, precision: 0 km):asc' }, /more than 0/);
    await e.close();
  });

  it('answers the same across segments, merges and a reopen, as a brute-force scan does', async () => {
    const dir = dataDirPath();
    let e = openEngine(dir, { merges: 'off' });
    await e.createCollection(schema);
    const rand = rng(7);
    const docs = Array.from({ length: 600 }, (_, i) => ({
      id: `p${i}`,
      title: i % 3 === 0 ? 'cafe' : 'shop',
      points: i % 10,
      location: [48 + rand() * 2, 1.5 + rand() * 2] as [number, number],
      ...(i % 4 === 0 ? { branches: [[48 + rand(), 2 + rand()], [-33 + rand(), 151 + rand()]] } : {}),
    }));
    await e.import('places', [Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n'))], { batchSize: 70 }, () => {});
    await e.deleteDocument('places', 'p5');
    await e.writeDocument('places', { ...docs[7]!, location: [48.85, 2.35] }, { action: 'upsert' });
    docs[7]!.location = [48.85, 2.35];
    const live = docs.filter((d) => d.id !== 'p5');
    expect(snapshot(e.store, e.schema('places').id).segments.length).toBeGreaterThan(5);

    const check = async () => {
      for (const [lat, lng, km] of [
        [48.85, 2.35, 8],
        [49.2, 2.9, 30],
        [48.1, 1.6, 3],
      ] as const) {
        const r = await e.search('places', { q: '*', filter_by: `location:(${lat}, ${lng}, ${km} km) && points:<7`, sort_by: `location(${lat}, ${lng}):asc`, per_page: 250 });
        const want = live
          .filter((d) => d.points < 7 && refDistance(lat, lng, d.location[0], d.location[1]) <= km * 1000)
          .sort((a, b) => refDistance(lat, lng, ...a.location) - refDistance(lat, lng, ...b.location))
          .map((d) => d.id);
        expect(r.found).toBe(want.length);
        expect(r.hits!.map((h) => h.document.id)).toEqual(want.slice(0, 250));
      }
    };
    await check();
    await e.optimize('places');
    expect(snapshot(e.store, e.schema('places').id).segments.length).toBe(1);
    await check();
    await e.close();
    e = openEngine(dir);
    await check();
    await e.close();
  });

  it(`writes segments in format ${SEGMENT_FORMAT} and still reads format 2 segments`, async () => {
    const dir = dataDirPath();
    let e = openEngine(dir, { merges: 'off' });
    await e.createCollection({ name: 'old', fields: [{ name: 't', type: 'string' }, { name: 'n', type: 'int32' }] });
    await e.import('old', [Buffer.from(Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: `d${i}`, t: `word${i % 5}`, n: i })).join('\n'))], { batchSize: 20 }, () => {});
    const query = { q: 'word3', query_by: 't', sort_by: 'n:desc' };
    const before = JSON.parse(JSON.stringify({ ...(await e.search('old', query)), search_time_ms: 0 }));
    await e.close();
    // stamp every segment as format 2 wrote it (a collection without geo fields is otherwise the same bytes)
    const env = open({ path: dir });
    const segs = env.openDB({ name: 'segments', encoding: 'binary' });
    const { encodeBlob, jsonSection } = await import('../src/index/codec.js');
    for (const { key, value } of [...segs.getRange({})]) {
      const blob = new Blob(new Uint8Array(value));
      const meta = blob.json<{ v: number; fields: Array<{ id: number }> }>(TAG.META);
      expect(meta.v).toBe(SEGMENT_FORMAT);
      const sections = new Map<number, Uint8Array | Uint32Array>([[TAG.META, jsonSection({ ...meta, v: 2 })], [TAG.SEQS, blob.u32(TAG.SEQS)]]);
      for (const f of meta.fields) sections.set(TAG.FIELD + f.id, blob.u8(TAG.FIELD + f.id));
      await segs.put(key, Buffer.from(encodeBlob(sections)));
    }
    await env.close();
    e = openEngine(dir);
    expect(JSON.parse(JSON.stringify({ ...(await e.search('old', query)), search_time_ms: 0 }))).toEqual(before);
    await e.optimize('old');
    expect(JSON.parse(JSON.stringify({ ...(await e.search('old', query)), search_time_ms: 0 }))).toEqual(before);
    await e.close();
    const after = open({ path: dir });
    for (const { value } of after.openDB({ name: 'segments', encoding: 'binary' }).getRange({})) {
      expect(new Blob(new Uint8Array(value as Buffer)).json<{ v: number }>(TAG.META).v).toBe(SEGMENT_FORMAT);
    }
    await after.close();
  });
});

describe('geo search through fathom serve and the typesense client', () => {
  let server: RunningServer;
  let client: Client;
  beforeAll(async () => {
    server = await startServer({ dataDir: dataDirPath(), apiKey: 'k', address: '127.0.0.1', port: 0, logLevel: 'silent' }, { engine: { merges: 'inline' } });
    client = new Client({ nodes: [{ host: '127.0.0.1', port: server.port, protocol: 'http' }], apiKey: 'k', connectionTimeoutSeconds: 5, logLevel: 'silent' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('creates a geopoint collection, imports, and searches by radius with a distance sort', async () => {
    await client.collections().create({
      name: 'places',
      fields: [
        { name: 'title', type: 'string' },
        { name: 'points', type: 'int32' },
        { name: 'location', type: 'geopoint' },
      ],
      default_sorting_field: 'points',
    });
    const created = await client.collections('places').retrieve();
    expect(created.fields.find((f) => f.name === 'location')).toMatchObject({ type: 'geopoint' });
    const results = await client.collections('places').documents().import(PLACES, { action: 'create' });
    expect(results.every((r) => r.success)).toBe(true);
    const r = await client.collections('places').documents().search({
      q: '*',
      query_by: 'title',
      filter_by: `location:(${PARIS[0]}, ${PARIS[1]}, 5.1 km)`,
      sort_by: `location(${PARIS[0]}, ${PARIS[1]}):asc`,
    });
    expect(r.found).toBe(3);
    expect(r.hits!.map((h) => (h.document as { id: string }).id)).toEqual(['louvre', 'sacre', 'eiffel']);
    expect(r.hits![0]!.geo_distance_meters).toEqual({ location: Math.round(refDistance(PARIS[0], PARIS[1], 48.86093, 2.33698)) });
  });

  it('answers a polygon filter in multi_search and refuses a bad one with 400', async () => {
    const r = await client.multiSearch.perform({
      searches: [{ collection: 'places', q: '*', filter_by: 'location:(48.90, 2.25, 48.90, 2.40, 48.84, 2.40, 48.84, 2.25)' }],
    });
    expect((r.results[0] as unknown as { found: number }).found).toBe(3);
    await expect(client.collections('places').documents().search({ q: '*', filter_by: 'location:(48.8, 2.3, 5 lightyears)' })).rejects.toMatchObject({ httpStatus: 400 });
    await expect(client.collections('places').documents().create({ title: 'x', points: 1, location: [200, 1] })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('finds the airports of the geodesic triangle Chicago, New York, Salt Lake City, as the reference does', async () => {
    // airports of the midwest and northeast (IATA code, [lat, lng])
    const AIRPORTS: Record<string, [number, number]> = {
      ORD: [41.9786, -87.9048], MDW: [41.7868, -87.7522], DTW: [42.2124, -83.3534], CLE: [41.4117, -81.8498], TOL: [41.5868, -83.8078],
      PIT: [40.4915, -80.2329], EWR: [40.6895, -74.1745], LGA: [40.7769, -73.874], JFK: [40.6413, -73.7781], SLC: [40.7899, -111.9791],
      DEN: [39.8561, -104.6737], OMA: [41.3032, -95.8941], DSM: [41.534, -93.6631], CID: [41.8847, -91.7108], MLI: [41.4485, -90.5075],
      RFD: [42.1954, -89.0972], MKE: [42.9472, -87.8966], SBN: [41.7087, -86.3173], FWA: [40.9785, -85.1951], CAK: [40.9161, -81.4422],
      ERI: [42.0831, -80.1739], BUF: [42.9405, -78.7322], ELM: [42.1599, -76.8916], ABE: [40.6521, -75.4408], LNK: [40.851, -96.7592],
      CYS: [41.1557, -104.8118], RKS: [41.5942, -109.0652], IND: [39.7173, -86.2944], AVP: [41.3385, -75.7234], MSN: [43.1399, -89.3375],
      MSP: [44.8848, -93.2223], SUX: [42.4026, -96.3844], DBQ: [42.402, -90.7095], ALO: [42.5571, -92.4003], GRI: [40.9675, -98.3096],
    };
    await client.collections().create({ name: 'airports', fields: [{ name: 'iata_code', type: 'string' }, { name: 'location', type: 'geopoint' }] });
    await client.collections('airports').documents().import(Object.entries(AIRPORTS).map(([iata_code, location]) => ({ id: iata_code, iata_code, location })), { action: 'create' });
    const triangle = 'location:(41.8781, -87.6298, 40.7128, -74.006, 40.7608, -111.891)';
    const r = await client.collections('airports').documents().search({ q: '*', filter_by: triangle, per_page: 50 });
    // the geodesic from Salt Lake City to New York passes north of Chicago: the triangle is a
    // sliver north of the edges through Chicago (straight edges in lat/lng would hold MDW,
    // OMA, DSM, MLI, SBN, FWA, CAK, LNK and GRI instead)
    expect(r.hits!.map((h) => (h.document as { id: string }).id).sort()).toEqual(['ORD', 'RFD']);
    // the reference's answer whichever way the vertices turn
    const reversed = await client.collections('airports').documents().search({ q: '*', filter_by: 'location:(40.7608, -111.891, 40.7128, -74.006, 41.8781, -87.6298)', per_page: 50 });
    expect(reversed.found).toBe(2);
  });
});
