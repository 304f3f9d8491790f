import { describe, expect, it } from "vitest";
import { formatNumber, identifyError, identifyTarget, identifyUrl, parseIdentify, type IdentifyTarget } from "./identify";
import type { RasterOverlay } from "./mapBridge";

function overlay(collectionId: string, tiles: string, visible = true, opacity = 0.85): RasterOverlay {
  const id = `raster:${collectionId}`;
  return {
    id,
    source: { type: "raster", tiles: [tiles], tileSize: 256 },
    layer: { id, type: "raster", source: id, paint: { "raster-opacity": opacity } },
    legend: { collectionId, title: `Title of ${collectionId}`, colors: [], range: null, units: null, colormapName: null, classes: [] },
    origin: "agent",
    visible,
    opacity,
  };
}

const DEM: IdentifyTarget = { collectionId: "luxembourg-dem", title: "DEM of Luxembourg", params: {} };

describe("identify", () => {
  it("asks about the top visible layer, with the time step and expression its tiles show", () => {
    const bottom = overlay("luxembourg-dem", "http://h/tiles/luxembourg-dem/{z}/{x}/{y}.png");
    const top = overlay("bcsd-precipitation-1999", "http://h/tiles/bcsd-precipitation-1999/{z}/{x}/{y}.png?datetime=1999-03&rescale=0,300");
    expect(identifyTarget([bottom, top])).toEqual({
      collectionId: "bcsd-precipitation-1999",
      title: "Title of bcsd-precipitation-1999",
      params: { datetime: "1999-03" },
    });
    expect(identifyTarget([bottom, { ...top, visible: false }])?.collectionId).toBe("luxembourg-dem");
    expect(identifyTarget([bottom, { ...top, opacity: 0 }])?.collectionId).toBe("luxembourg-dem");
    expect(identifyTarget([{ ...bottom, visible: false }])).toBeNull();
    expect(identifyTarget([])).toBeNull();
    const scenes = overlay("landsat7-olinda-scenes", "/tiles/landsat7-olinda-scenes/{z}/{x}/{y}.png?expression=ndvi&rescale=-1,1");
    expect(identifyTarget([scenes])?.params).toEqual({ expression: "ndvi" });
  });

  it("builds the endpoint's URL beside the tiles", () => {
    expect(identifyUrl({ ...DEM, params: { datetime: "1999-03" } }, 6.1, 49.75)).toBe(
      "/tiles/luxembourg-dem/point?lon=6.100000&lat=49.750000&datetime=1999-03",
    );
  });

  it("shows values with units, classes by name and no data as such", () => {
    const result = parseIdentify(
      {
        collection_id: "luxembourg-dem",
        title: "Digital elevation model of Luxembourg",
        pixel_center: [6.10012, 49.74996],
        item: "luxembourg-dem",
        inside: true,
        values: [
          { band: "elevation", value: 412.123456, unit: "m" },
          { band: "land_cover", value: 42, unit: null, class: "Evergreen forest" },
          { band: "other", value: null, unit: "m" },
        ],
      },
      DEM,
      6.1,
      49.75,
    );
    expect(result.title).toBe("Digital elevation model of Luxembourg");
    expect(result.lines).toEqual([
      { label: "elevation", text: "412.12 m" },
      { label: "land_cover", text: "42: Evergreen forest" },
      { label: "other", text: "no data" },
    ]);
    expect([result.lng, result.lat]).toEqual([6.10012, 49.74996]);
    expect(result.source).toBe("item luxembourg-dem");
    expect(result.note).toBeNull();
    const outside = parseIdentify({ inside: false, values: [], note: "no data here: outside" }, DEM, 20, 0);
    expect(outside).toMatchObject({ title: "DEM of Luxembourg", lines: [], note: "no data here: outside", lng: 20, lat: 0 });
    expect(() => parseIdentify("nope", DEM, 0, 0)).toThrow();
  });

  it("formats numbers and errors for people", () => {
    expect(formatNumber(0.123456)).toBe("0.1235");
    expect(formatNumber(12.5)).toBe("12.5");
    expect(formatNumber(1234.56)).toBe("1234.6");
    expect(formatNumber(7)).toBe("7");
    expect(identifyError(504, { message: "took longer than 20 s" })).toMatch(/too long/);
    expect(identifyError(400, { field: "lon", message: "lon: ...", code: "invalid_argument" })).toBe("lon: ...");
    expect(identifyError(404, null)).toMatch(/not known/);
    expect(identifyError(500, null)).toBe("The value could not be read (HTTP 500).");
  });
});
