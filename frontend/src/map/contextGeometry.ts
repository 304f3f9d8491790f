import type { Feature, Geometry, Position } from "geojson";

/**
 * The gateway accepts spatial context in WGS84 (longitudes within ±180) and up
 * to a size limit (256 KiB by default). Large countries exceed it at full
 * detail, so their outlines are thinned until they fit: the model needs where
 * the feature is, not every bend of its coast.
 */
export const MAX_CONTEXT_BYTES = 200_000;

export function wrapLon(lon: number): number {
  if (lon >= -180 && lon <= 180) return lon;
  return ((((lon + 180) % 360) + 360) % 360) - 180;
}

function round(v: number): number {
  return Math.round(v * 1e5) / 1e5;
}

function mapPositions(geometry: Geometry, ring: (r: Position[], closed: boolean) => Position[]): Geometry {
  switch (geometry.type) {
    case "Point":
      return { ...geometry, coordinates: ring([geometry.coordinates], false)[0] };
    case "MultiPoint":
    case "LineString":
      return { ...geometry, coordinates: ring(geometry.coordinates, false) };
    case "MultiLineString":
      return { ...geometry, coordinates: geometry.coordinates.map((r) => ring(r, false)) };
    case "Polygon":
      return { ...geometry, coordinates: geometry.coordinates.map((r) => ring(r, true)) };
    case "MultiPolygon":
      return { ...geometry, coordinates: geometry.coordinates.map((p) => p.map((r) => ring(r, true))) };
    case "GeometryCollection":
      return { ...geometry, geometries: geometry.geometries.map((g) => mapPositions(g, ring)) };
  }
}

/** Keeps every `step`-th vertex (rings stay closed and keep at least four positions). */
function thin(positions: Position[], closed: boolean, step: number): Position[] {
  if (step <= 1 || positions.length <= (closed ? 4 : 2)) return positions;
  const kept = positions.filter((_, i) => i % step === 0);
  const last = positions[positions.length - 1];
  if (kept[kept.length - 1] !== last) kept.push(last);
  if (closed) {
    if (kept.length < 4) return [positions[0], positions[Math.floor(positions.length / 3)], positions[Math.floor((2 * positions.length) / 3)], positions[0]];
  }
  return kept;
}

function normalise(positions: Position[]): Position[] {
  return positions.map(([lon, lat]) => [round(wrapLon(lon)), round(Math.max(-90, Math.min(90, lat)))]);
}

/** The feature as it goes to the gateway: WGS84 ranges, rounded, thinned to fit `maxBytes`. */
export function contextFeature(feature: Feature, maxBytes = MAX_CONTEXT_BYTES): Feature {
  const base: Feature = feature.geometry
    ? { ...feature, geometry: mapPositions(feature.geometry, (r) => normalise(r)) }
    : feature;
  let out = base;
  for (let step = 2; JSON.stringify(out).length > maxBytes && step <= 4096; step *= 2) {
    out = base.geometry ? { ...base, geometry: mapPositions(base.geometry, (r, closed) => thin(r, closed, step)) } : base;
    out.properties = { ...(out.properties ?? {}), simplified: true };
  }
  return out;
}
