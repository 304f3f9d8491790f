import type { Feature, MultiPolygon, Polygon } from "geojson";
import { describe, expect, it } from "vitest";
import { contextFeature, wrapLon } from "./contextGeometry";

function circle(n: number, cx = 0, cy = 0, r = 10): Polygon {
  const ring = Array.from({ length: n }, (_, i) => [cx + r * Math.cos((2 * Math.PI * i) / n), cy + r * Math.sin((2 * Math.PI * i) / n)]);
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

describe("contextFeature", () => {
  it("wraps longitudes into -180..180", () => {
    expect(wrapLon(181)).toBe(-179);
    expect(wrapLon(-541)).toBe(179);
    expect(wrapLon(12.5)).toBe(12.5);
    const f: Feature = { type: "Feature", properties: {}, geometry: { type: "Point", coordinates: [190.123456789, 10] } };
    expect(f.geometry && contextFeature(f).geometry).toEqual({ type: "Point", coordinates: [-169.87654, 10] });
  });

  it("leaves small features whole", () => {
    const f: Feature = { type: "Feature", properties: { name: "x" }, geometry: circle(50) };
    const out = contextFeature(f);
    expect((out.geometry as Polygon).coordinates[0]).toHaveLength(51);
    expect(out.properties).toEqual({ name: "x" });
  });

  it("thins a large outline until it fits, keeping rings closed", () => {
    const geometry: MultiPolygon = { type: "MultiPolygon", coordinates: [circle(20000).coordinates, circle(5, 50, 50, 1).coordinates] };
    const f: Feature = { type: "Feature", properties: { name: "Big" }, geometry };
    expect(JSON.stringify(f).length).toBeGreaterThan(200_000);
    const out = contextFeature(f, 50_000);
    expect(JSON.stringify(out).length).toBeLessThanOrEqual(50_000);
    const rings = (out.geometry as MultiPolygon).coordinates.map((p) => p[0]);
    for (const ring of rings) {
      expect(ring.length).toBeGreaterThanOrEqual(4);
      expect(ring[0]).toEqual(ring[ring.length - 1]);
    }
    expect(out.properties).toMatchObject({ name: "Big", simplified: true });
  });
});
