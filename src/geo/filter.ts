/**
 * Geo conditions of `filter_by`, on a geopoint field:
 *
 *   location:(48.85, 2.34, 5.1 km)                    within 5.1 km (also `mi`, `m`)
 *   location:(48.86, 2.32, 48.85, 2.32, 48.85, 2.34)  within the polygon of these lat, lng vertices
 *   location:[(48.85, 2.34, 2 km), (50.1, 8.6, 3 mi)] within any of them (OR)
 *
 * A shape may end with options (`exact_filter_for_n_points: 5`): accepted, since every
 * point is always tested exactly. Each condition is answered from the segment's k-d tree
 * (column.ts); `&&`, `||` and parentheses combine it with any other condition.
 */
import { GEO_DEFAULTS } from '../defaults.js';
import { FathomError } from '../errors.js';
import { parseDistance, polygon, validLatLng, type GeoShape } from './geo.js';
import { polygonError } from './polygon.js';

function bad(pos: number, msg: string): never {
  throw new FathomError('BAD_FILTER', `filter_by: ${msg} (at position ${pos})`);
}

const OPTIONS = new Set(['exact_filter_for_n_points']);

/** One parenthesised shape, `(` and `)` included. */
export function parseGeoShape(field: string, text: string, pos: number): GeoShape {
  const inner = text.trim().replace(/^\(/, '').replace(/\)$/, '');
  const parts = inner.split(',').map((p) => p.trim());
  const numbers: number[] = [];
  let radius: number | undefined;
  for (const p of parts) {
    const colon = p.indexOf(':');
    if (colon > 0) {
      const key = p.slice(0, colon).trim();
      if (!OPTIONS.has(key)) bad(pos, `unknown geo filter option \`${key}\` on \`${field}\` (known: ${[...OPTIONS].join(', ')})`);
      if (!/^\s*\d+\s*$/.test(p.slice(colon + 1))) bad(pos, `\`${key}\` must be a whole number`);
      continue;
    }
    if (radius !== undefined) bad(pos, `\`${field}\`: the radius must come last in \`(lat, lng, radius)\``);
    const d = /[a-z]/i.test(p) ? parseDistance(p) : undefined;
    if (d !== undefined) {
      radius = d;
      continue;
    }
    const x = Number(p);
    if (p === '' || !Number.isFinite(x)) {
      bad(pos, `\`${field}\`: \`${p}\` is neither a coordinate nor a distance such as \`5 km\` or \`2 mi\``);
    }
    numbers.push(x);
  }
  if (radius !== undefined) {
    if (numbers.length !== 2) bad(pos, `\`${field}\`: a radius filter is \`(lat, lng, radius)\`, e.g. \`(48.85, 2.34, 5 km)\``);
    const [lat, lng] = numbers as [number, number];
    if (!validLatLng(lat, lng)) bad(pos, `\`${field}\`: (${lat}, ${lng}) is not a valid latitude (-90..90) and longitude (-180..180)`);
    return { kind: 'circle', lat, lng, radius };
  }
  if (numbers.length < 6 || numbers.length % 2 !== 0) {
    bad(pos, `\`${field}\`: a polygon needs at least three lat, lng vertices; a radius filter is \`(lat, lng, 5 km)\``);
  }
  if (numbers.length / 2 > GEO_DEFAULTS.maxPolygonPoints) bad(pos, `\`${field}\`: a polygon may have at most ${GEO_DEFAULTS.maxPolygonPoints} vertices`);
  const lats = new Float64Array(numbers.length / 2);
  const lngs = new Float64Array(numbers.length / 2);
  for (let i = 0; i < lats.length; i++) {
    lats[i] = numbers[2 * i]!;
    lngs[i] = numbers[2 * i + 1]!;
    if (!validLatLng(lats[i]!, lngs[i]!)) bad(pos, `\`${field}\`: polygon vertex (${lats[i]}, ${lngs[i]}) is not a valid latitude and longitude`);
  }
  const error = polygonError(lats, lngs);
  if (error) bad(pos, `\`${field}\`: ${error}`);
  return polygon(lats, lngs);
}

/** The shapes of a geo condition's values (each a parenthesised shape). */
export function parseGeoShapes(field: string, values: Array<{ value?: string; paren?: boolean }>, pos: number): GeoShape[] {
  if (values.length > GEO_DEFAULTS.maxShapes) bad(pos, `\`${field}\`: at most ${GEO_DEFAULTS.maxShapes} shapes in one condition`);
  return values.map((v) => {
    if (!v.paren || v.value === undefined) bad(pos, `\`${field}\` is a geopoint field: filter it with \`${field}:(lat, lng, 5 km)\` or a polygon \`${field}:(lat1, lng1, lat2, lng2, lat3, lng3)\``);
    return parseGeoShape(field, v.value, pos);
  });
}
