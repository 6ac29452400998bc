/**
 * geopoint values in documents: `[lat, lng]` for `geopoint`, `[[lat, lng], ...]` for
 * `geopoint[]`, latitudes in [-90, 90] and longitudes in [-180, 180]. Under a coercing
 * `dirty_values` mode numeric strings become numbers; a value of the wrong shape or out
 * of range is never coerced (it fails the document, or is dropped under `coerce_or_drop`
 * and `drop`).
 */
import { validLatLng } from './geo.js';

type Outcome = { ok: true; value: number[] | number[][]; changed: boolean } | { ok: false; message: string };

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

function coord(v: unknown, coerce: boolean): number | undefined {
  if (typeof v === 'number') return v;
  if (coerce && typeof v === 'string' && NUMERIC.test(v)) return Number(v);
  return undefined;
}

/** One [lat, lng] pair, or the reason it is not one. */
function point(name: string, v: unknown, coerce: boolean, where: string): { lat: number; lng: number; changed: boolean } | string {
  if (!Array.isArray(v) || v.length !== 2) return `field \`${name}\`${where} must be a [lat, lng] pair of numbers, got ${describe(v)}`;
  const lat = coord(v[0], coerce);
  const lng = coord(v[1], coerce);
  if (lat === undefined || lng === undefined) return `field \`${name}\`${where} must be a [lat, lng] pair of numbers, got ${JSON.stringify(v)}`;
  if (!validLatLng(lat, lng)) {
    return `field \`${name}\`${where} has ${Number.isFinite(lat) && lat >= -90 && lat <= 90 ? `longitude ${lng}` : `latitude ${lat}`} out of range (latitude -90..90, longitude -180..180; the order is [lat, lng])`;
  }
  return { lat, lng, changed: lat !== v[0] || lng !== v[1] };
}

export function coerceGeo(name: string, type: 'geopoint' | 'geopoint[]', v: unknown, coerce: boolean): Outcome {
  if (type === 'geopoint') {
    const p = point(name, v, coerce, '');
    if (typeof p === 'string') return { ok: false, message: p };
    return { ok: true, value: [p.lat, p.lng], changed: p.changed };
  }
  if (!Array.isArray(v)) return { ok: false, message: `field \`${name}\` must be an array of [lat, lng] pairs, got ${describe(v)}` };
  const out: number[][] = [];
  let changed = false;
  for (let i = 0; i < v.length; i++) {
    const p = point(name, v[i], coerce, ` element ${i}`);
    if (typeof p === 'string') return { ok: false, message: p };
    out.push([p.lat, p.lng]);
    changed ||= p.changed;
  }
  return { ok: true, value: out, changed };
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}
