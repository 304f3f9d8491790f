import type { FeatureCollection, Geometry, Position } from "geojson";

/**
 * world-atlas is made for spherical renderers: rings of Russia, Fiji and
 * Antarctica jump from +180 to -180. A flat (Web Mercator) map draws such a
 * jump as a band across the world. Unwrapping longitudes keeps each ring
 * continuous (MapLibre draws longitudes beyond ±180 on the next world copy);
 * a ring around a pole is closed along the map's edge at that pole.
 */

const MERCATOR_MAX_LAT = 85.051129;

export function unwrapRing(ring: Position[]): Position[] {
  if (ring.length === 0) return ring;
  const out: Position[] = [[...ring[0]]];
  let offset = 0;
  for (let i = 1; i < ring.length; i++) {
    const delta = ring[i][0] - ring[i - 1][0];
    if (delta > 180) offset -= 360;
    else if (delta < -180) offset += 360;
    out.push([ring[i][0] + offset, ...ring[i].slice(1)]);
  }
  if (offset !== 0) {
    // The ring circles a pole: go along the map's edge at that pole and back to the start.
    const meanLat = ring.reduce((sum, p) => sum + p[1], 0) / ring.length;
    const poleLat = meanLat < 0 ? -MERCATOR_MAX_LAT : MERCATOR_MAX_LAT;
    const last = out[out.length - 1];
    out.push([last[0], poleLat], [out[0][0], poleLat], [...out[0]]);
  }
  return out;
}

/**
 * Natural Earth's Antarctica is the area between a ring at the pole and the
 * coast; on a flat map the pole ring is a line, so the coast (closed along
 * the pole edge) becomes the outer ring.
 */
export function fixPolygon(rings: Position[][]): Position[][] {
  const poleRing = (r: Position[]) => r.length > 0 && r.every((p) => Math.abs(p[1]) >= 89.9);
  const kept = rings.length > 1 && poleRing(rings[0]) ? rings.slice(1) : rings;
  return kept.map(unwrapRing);
}

function fixGeometry(geometry: Geometry): Geometry {
  switch (geometry.type) {
    case "Polygon":
      return { ...geometry, coordinates: fixPolygon(geometry.coordinates) };
    case "MultiPolygon":
      return { ...geometry, coordinates: geometry.coordinates.map(fixPolygon) };
    default:
      return geometry;
  }
}

export function fixAntimeridian(fc: FeatureCollection): FeatureCollection {
  return {
    ...fc,
    features: fc.features.map((f) => (f.geometry ? { ...f, geometry: fixGeometry(f.geometry) } : f)),
  };
}
