/**
 * Sorting by distance: `location(48.85, 2.34):asc` in `sort_by`, on a geopoint field, with
 * options after the point:
 *
 *   exclude_radius: 2 mi   every document within it counts as distance 0, so the next
 *                          sort clause orders them (popularity near me, then distance)
 *   precision: 1 km        distances fall into 1 km buckets, ties broken by the next clause
 *
 * A document with several points (geopoint[]) is as far as its nearest one; one with none
 * sorts last. Hits of such a search carry `geo_distance_meters: {field: meters}`.
 */
import { FathomError } from '../errors.js';
import { setOwn } from '../json.js';
import type { Field } from '../schema/schema.js';
import type { LiveSegment } from '../index/manifest.js';
import { parseDistance, validLatLng } from './geo.js';

export interface GeoSort {
  kind: 'geo';
  field: Field;
  lat: number;
  lng: number;
  /** Meters within which every document counts as distance 0 (0: none). */
  excludeRadius: number;
  /** Bucket width in meters (0: exact). */
  precision: number;
  dir: 1 | -1;
}

function bad(msg: string): never {
  throw new FathomError('BAD_SORT', `sort_by: ${msg}`);
}

/** `args`: what stands between the parentheses of `field(...)`. */
export function parseGeoSort(field: Field, args: string, dir: 1 | -1): GeoSort {
  const parts = args.split(',').map((s) => s.trim());
  const usage = `\`${field.name}(lat, lng):asc\`, optionally with \`exclude_radius: 2 mi\` or \`precision: 1 km\` after lat, lng`;
  if (parts.length < 2) bad(`sort by distance as ${usage}`);
  const lat = Number(parts[0]);
  const lng = Number(parts[1]);
  if (parts[0] === '' || parts[1] === '' || !validLatLng(lat, lng)) bad(`\`${field.name}(${parts[0]}, ${parts[1]})\`: not a valid latitude (-90..90) and longitude (-180..180); sort by distance as ${usage}`);
  let excludeRadius = 0;
  let precision = 0;
  for (const p of parts.slice(2)) {
    const colon = p.indexOf(':');
    const key = colon > 0 ? p.slice(0, colon).trim() : '';
    const d = colon > 0 ? parseDistance(p.slice(colon + 1)) : undefined;
    if (key !== 'exclude_radius' && key !== 'precision') bad(`\`${p}\`: unknown option of a distance sort (known: exclude_radius, precision)`);
    if (d === undefined) bad(`\`${key}\` must be a distance such as \`2 mi\`, \`1 km\` or \`500 m\``);
    if (key === 'exclude_radius') excludeRadius = d;
    else {
      if (d <= 0) bad('`precision` must be more than 0');
      precision = d;
    }
  }
  return { kind: 'geo', field, lat, lng, excludeRadius, precision, dir };
}

/** The sort key of document `ord`: its distance, bucketed and excluded as the clause says (NaN without a point). */
export function geoSortKey(c: GeoSort, seg: LiveSegment, ord: number): number {
  const col = seg.reader.geo(c.field.id);
  if (!col) return NaN;
  const d = col.distance(ord, c.lat, c.lng);
  if (d !== d) return NaN;
  if (d <= c.excludeRadius) return 0;
  return c.precision > 0 ? Math.floor(d / c.precision) : d;
}

/** `geo_distance_meters` of a hit: meters (rounded) to each distance sort's point, by field. */
export function geoDistances(clauses: readonly { kind: string }[] | undefined, seg: LiveSegment, ord: number): Record<string, number> | undefined {
  let out: Record<string, number> | undefined;
  for (const c of clauses ?? []) {
    if (c.kind !== 'geo') continue;
    const g = c as GeoSort;
    const d = seg.reader.geo(g.field.id)?.distance(ord, g.lat, g.lng);
    if (d === undefined || d !== d) continue;
    setOwn((out ??= {}), g.field.name, Math.round(d));
  }
  return out;
}
