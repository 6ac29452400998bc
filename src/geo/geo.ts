/**
 * src/geo: here are points on the Earth, how far apart are they, and which lie in this
 * circle or polygon?
 *
 * Coordinates are degrees, [lat, lng] as documents hold them. Distances are great-circle
 * distances on a sphere of the Earth's mean radius (haversine), in meters. A polygon's
 * edges are geodesics, as the reference engine's (polygon.ts).
 */
import { GEO_DEFAULTS } from '../defaults.js';
import { SphericalPolygon } from './polygon.js';

const RAD = Math.PI / 180;

/** Great-circle distance in meters between two [lat, lng] points in degrees. */
export function haversine(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLng = (lng2 - lng1) * RAD;
  const s1 = Math.sin(dLat / 2);
  const s2 = Math.sin(dLng / 2);
  const a = s1 * s1 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * s2 * s2;
  return 2 * GEO_DEFAULTS.earthRadiusMeters * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** An axis-aligned box in degrees: lng in [minLng, maxLng], lat in [minLat, maxLat]. */
export interface GeoBox {
  minLng: number;
  minLat: number;
  maxLng: number;
  maxLat: number;
}

export type GeoShape = { kind: 'circle'; lat: number; lng: number; radius: number } | { kind: 'polygon'; poly: SphericalPolygon };

/** A polygon shape from its vertices' latitudes and longitudes (polygon.ts polygonError says whether they make one). */
export function polygon(lats: Float64Array, lngs: Float64Array): GeoShape {
  return { kind: 'polygon', poly: new SphericalPolygon(lats, lngs) };
}

/**
 * Boxes (one, or two where the circle crosses the antimeridian) that hold every point
 * within `radius` meters of (lat, lng). They may hold more: the exact test decides.
 */
export function circleBoxes(lat: number, lng: number, radius: number): GeoBox[] {
  const d = radius / GEO_DEFAULTS.earthRadiusMeters; // angular radius, radians
  // a hair of slack so that rounding in the box never loses a point on the circle
  const pad = 1e-9;
  if (d >= Math.PI) return [{ minLng: -180, minLat: -90, maxLng: 180, maxLat: 90 }];
  const minLat = lat - d / RAD - pad;
  const maxLat = lat + d / RAD + pad;
  if (minLat <= -90 || maxLat >= 90) {
    // the circle holds a pole: every longitude
    return [{ minLng: -180, minLat: Math.max(-90, minLat), maxLng: 180, maxLat: Math.min(90, maxLat) }];
  }
  // the widest longitude spread of a circle on a sphere: asin(sin d / cos lat)
  const s = Math.sin(d) / Math.cos(lat * RAD);
  if (s >= 1) return [{ minLng: -180, minLat, maxLng: 180, maxLat }];
  const dLng = Math.asin(s) / RAD + pad;
  const minLng = lng - dLng;
  const maxLng = lng + dLng;
  if (minLng < -180) return [{ minLng: minLng + 360, minLat, maxLng: 180, maxLat }, { minLng: -180, minLat, maxLng, maxLat }];
  if (maxLng > 180) return [{ minLng, minLat, maxLng: 180, maxLat }, { minLng: -180, minLat, maxLng: maxLng - 360, maxLat }];
  return [{ minLng, minLat, maxLng, maxLat }];
}

/** Whether a point lies in a shape (the exact test after the index's boxes). */
export function inShape(shape: GeoShape, lat: number, lng: number): boolean {
  if (shape.kind === 'circle') return haversine(shape.lat, shape.lng, lat, lng) <= shape.radius;
  return shape.poly.contains(lat, lng);
}

/** The boxes to look a shape up with. */
export function shapeBoxes(shape: GeoShape): GeoBox[] {
  return shape.kind === 'circle' ? circleBoxes(shape.lat, shape.lng, shape.radius) : shape.poly.boxes;
}

const UNITS: Record<string, number> = { m: 1, km: 1000, mi: 1609.344 };

/** A distance such as `5.1 km`, `2mi`, `300 m` in meters; undefined when it is not one. */
export function parseDistance(s: string): number | undefined {
  const m = /^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(km|mi|m)\s*$/.exec(s);
  if (!m) return undefined;
  const v = Number(m[1]) * UNITS[m[2]!]!;
  return Number.isFinite(v) ? v : undefined;
}

/** Whether a latitude and a longitude are valid degrees. */
export function validLatLng(lat: number, lng: number): boolean {
  return Number.isFinite(lat) && Number.isFinite(lng) && lat >= -90 && lat <= 90 && lng >= -180 && lng <= 180;
}
