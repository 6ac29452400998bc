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
import { haversine, inPolygon, inShape, parseDistance, polygon } from '../src/geo/geo.js';
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

  it('places a point inside a square and not outside it', () => {
    const lats = Float64Array.of(0, 0, 10, 10);
    const lngs = Float64Array.of(0, 10, 10, 0);
    expect(inPolygon(5, 5, lats, lngs)).toBe(true);
    expect(inPolygon(15, 5, lats, lngs)).toBe(false);
    expect(inPolygon(5, -1, lats, lngs)).toBe(false);
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
});
