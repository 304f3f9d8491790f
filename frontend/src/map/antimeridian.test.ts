import { describe, expect, it } from "vitest";
import { fixPolygon, unwrapRing } from "./antimeridian";

describe("unwrapRing", () => {
  it("leaves ordinary rings alone", () => {
    const ring = [[5, 49], [6, 49], [6, 50], [5, 49]];
    expect(unwrapRing(ring)).toEqual(ring);
  });

  it("keeps a ring crossing the antimeridian continuous", () => {
    // An island straddling 180°: 179 -> -179 is 2° east, not 358° west.
    const ring = [[179, -17], [-179, -17], [-179, -16], [179, -16], [179, -17]];
    expect(unwrapRing(ring)).toEqual([[179, -17], [181, -17], [181, -16], [179, -16], [179, -17]]);
  });

  it("closes a ring around the south pole along the map's bottom edge", () => {
    const ring = [[-180, -70], [-90, -75], [0, -70], [90, -72], [180, -70], [-180, -70]];
    const out = unwrapRing(ring);
    const lons = out.map((p) => p[0]);
    for (let i = 1; i < lons.length; i++) expect(Math.abs(lons[i] - lons[i - 1])).toBeLessThanOrEqual(360);
    expect(out.slice(-3)).toEqual([[180, -85.051129], [-180, -85.051129], [-180, -70]]);
  });

  it("makes the coast the outer ring of a polygon bounded by a pole ring", () => {
    const pole = [[-180, -89.999], [0, -89.999], [180, -89.999], [-180, -89.999]];
    const coast = [[-180, -70], [0, -70], [180, -70], [-180, -70]];
    const rings = fixPolygon([pole, coast]);
    expect(rings).toHaveLength(1);
    expect(rings[0][0]).toEqual([-180, -70]);
    expect(rings[0].at(-2)).toEqual([-180, -85.051129]);
  });
});
