/**
 * bench/geo: radius filter + distance sort over 1,000,000 generated points, against a
 * brute-force scan of the same points in the same run.
 *
 * The points: 70% around 200 "cities" (normal, sigma ~5 km), 30% uniform between
 * latitudes -60 and 70. Each query picks a city (or any point) as centre and a radius of
 * 1-20 km, filters `location:(lat, lng, R km)`, sorts `location(lat, lng):asc` and takes
 * the first 10 hits. The brute force computes the haversine distance of every point,
 * keeps those within R, and sorts them; its answers must equal the engine's (found and
 * the page's ids), which the run checks. Polygon queries (a quadrilateral of ~10 km)
 * are timed the same way.
 *
 *   node bench/run.mjs geo [--n 1000000] [--queries 300] [--keep DIR]
 */
import fs from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/engine.js';
import { haversine, inShape, polygon } from '../../src/geo/geo.js';
import { arg, dirSize, mb, median, percentile, rng, table, tmpdir } from '../common.js';

const N = Number(arg('n', '1000000'));
const NQ = Number(arg('queries', '300'));
const keep = arg('keep');
const r = rng(11);
const gauss = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());

const cities = Array.from({ length: 200 }, () => [-50 + r() * 110, -170 + r() * 340] as [number, number]);
const lats = new Float64Array(N);
const lngs = new Float64Array(N);
for (let i = 0; i < N; i++) {
  if (r() < 0.7) {
    const c = cities[Math.floor(r() * cities.length)]!;
    lats[i] = Math.max(-90, Math.min(90, c[0] + gauss() * 0.045));
    lngs[i] = Math.max(-180, Math.min(180, c[1] + (gauss() * 0.045) / Math.cos((c[0] * Math.PI) / 180)));
  } else {
    lats[i] = -60 + r() * 130;
    lngs[i] = -180 + r() * 360;
  }
}

const dir = keep ?? path.join(tmpdir('fathom-bench-geo-'), 'data');
const fresh = !fs.existsSync(path.join(dir, 'data.mdb'));
const engine = Engine.open(dir, { merges: 'inline' });
let buildMs = 0;
if (fresh) {
  const t0 = performance.now();
  await engine.createCollection({ name: 'places', fields: [{ name: 'rating', type: 'int32' }, { name: 'location', type: 'geopoint' }] });
  function* lines() {
    for (let i = 0; i < N; i += 10000) {
      let s = '';
      for (let j = i; j < Math.min(N, i + 10000); j++) s += `{"id":"${j}","rating":${j % 100},"location":[${lats[j]},${lngs[j]}]}\n`;
      yield s;
    }
  }
  let failed = 0;
  let firstError = '';
  await engine.import('places', lines(), { batchSize: 10000 }, (line, ok) => {
    if (!ok) {
      failed++;
      firstError ||= line;
    }
  });
  if (failed) throw new Error(`${failed} documents failed to import: ${firstError}`);
  await engine.optimize('places');
  buildMs = performance.now() - t0;
}

interface Q {
  lat: number;
  lng: number;
  km: number;
}
const queries: Q[] = Array.from({ length: NQ }, (_, i) => {
  const c = i % 4 === 3 ? ([lats[Math.floor(r() * N)]!, lngs[Math.floor(r() * N)]!] as [number, number]) : cities[Math.floor(r() * cities.length)]!;
  return { lat: c[0] + gauss() * 0.02, lng: c[1] + gauss() * 0.02, km: 1 + Math.floor(r() * 20) };
});

function engineRadius(q: Q) {
  return engine.searchSync('places', { q: '*', filter_by: `location:(${q.lat}, ${q.lng}, ${q.km} km)`, sort_by: `location(${q.lat}, ${q.lng}):asc`, per_page: 10 });
}
function bruteRadius(q: Q): { found: number; ids: string[] } {
  const within: Array<[number, number]> = [];
  const R = q.km * 1000;
  for (let i = 0; i < N; i++) {
    const d = haversine(q.lat, q.lng, lats[i]!, lngs[i]!);
    if (d <= R) within.push([d, i]);
  }
  // equal distances: the engine breaks ties by newest (higher seq, here higher id) first
  within.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  return { found: within.length, ids: within.slice(0, 10).map(([, i]) => String(i)) };
}
const square = (q: Q) => {
  const dLat = q.km / 111.2;
  const dLng = dLat / Math.cos((q.lat * Math.PI) / 180);
  return [q.lat + dLat, q.lng - dLng, q.lat + dLat, q.lng + dLng, q.lat - dLat, q.lng + dLng, q.lat - dLat, q.lng - dLng];
};
function enginePolygon(q: Q) {
  return engine.searchSync('places', { q: '*', filter_by: `location:(${square(q).join(', ')})`, sort_by: `location(${q.lat}, ${q.lng}):asc`, per_page: 10 });
}
function brutePolygon(q: Q): { found: number } {
  const v = square(q);
  const shape = polygon(Float64Array.from({ length: 4 }, (_, i) => v[2 * i]!), Float64Array.from({ length: 4 }, (_, i) => v[2 * i + 1]!));
  let found = 0;
  for (let i = 0; i < N; i++) if (inShape(shape, lats[i]!, lngs[i]!)) found++;
  return { found };
}

function time<T>(f: () => T): [number, T] {
  const t0 = performance.now();
  const v = f();
  return [performance.now() - t0, v];
}

// warm-up: one pass of each, then the measured passes; answers checked against the brute force
for (const q of queries.slice(0, 50)) {
  engineRadius(q);
  enginePolygon(q);
}
const eR: number[] = [];
const bR: number[] = [];
const eP: number[] = [];
const bP: number[] = [];
let mismatches = 0;
let totalFound = 0;
for (const q of queries) {
  const [te, re] = time(() => engineRadius(q));
  const [tb, rb] = time(() => bruteRadius(q));
  eR.push(te);
  bR.push(tb);
  totalFound += re.found;
  const ids = re.hits!.map((h) => h.document.id as string);
  if (re.found !== rb.found || ids.join() !== rb.ids.join()) mismatches++;
  const [tp, rp] = time(() => enginePolygon(q));
  const [tbp, rbp] = time(() => brutePolygon(q));
  eP.push(tp);
  bP.push(tbp);
  if (rp.found !== rbp.found) mismatches++;
}
const s = (xs: number[]) => [...xs].sort((a, b) => a - b);
const row = (name: string, xs: number[], base?: number[]) => {
  const a = s(xs);
  return [name, percentile(a, 50).toFixed(2), percentile(a, 99).toFixed(2), (a.at(-1) ?? 0).toFixed(2), base ? (median(base) / median(xs)).toFixed(0) + 'x' : ''];
};
console.log(`geo: ${N.toLocaleString()} points, ${NQ} queries (radius 1-20 km, mean ${(totalFound / NQ).toFixed(0)} documents found)${buildMs ? `, import + merge ${(buildMs / 1000).toFixed(1)} s` : ''}, data dir ${mb(dirSize(dir))}`);
console.log(
  table(
    ['query', 'p50 ms', 'p99 ms', 'max ms', 'brute / engine (p50)'],
    [row('engine: radius + distance sort, top 10', eR, bR), row('brute force: haversine scan + sort', bR), row('engine: polygon + distance sort, top 10', eP, bP), row('brute force: polygon scan', bP)],
  ),
);
console.log(`answers differing from the brute force: ${mismatches} (target 0); target p50 <= 5 ms, p99 <= 20 ms`);
await engine.close();
if (!keep) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
