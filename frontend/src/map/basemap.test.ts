import type { Geometry, Position } from "geojson";
import countriesJson from "world-atlas/countries-50m.json?raw";
import { describe, expect, it } from "vitest";
import { basemapLabel, COUNTRY_LABELS_LAYER, countriesFrom, offlineStyle } from "./basemap";
import { CITY_LABELS_LAYER } from "./cityLabels";


describe("basemapLabel", () => {
  it("names the offline maps for what they show: flat colours under country outlines", () => {
    expect([basemapLabel("light", false), basemapLabel("dark", false), basemapLabel("satellite", false)]).toEqual([
      "Light outlines",
      "Dark outlines",
      "Green outlines",
    ]);
  });

  it("promises imagery only when a satellite style is configured", () => {
    expect(basemapLabel("satellite", false)).not.toMatch(/satellite|imagery/i);
    expect(basemapLabel("satellite", true)).toBe("Satellite imagery");
  });
});

describe("country names on the offline maps", () => {
  const { display: countries, labels } = countriesFrom(JSON.parse(countriesJson));

  /** Ray casting over the outer ring and holes of each part; x also tried a turn of the globe away. */
  function inside(geometry: Geometry, [x, y]: Position): boolean {
    const parts = geometry.type === "Polygon" ? [geometry.coordinates] : geometry.type === "MultiPolygon" ? geometry.coordinates : [];
    const inRing = (ring: Position[], px: number) => {
      let hit = false;
      for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
        const [xi, yi] = ring[i];
        const [xj, yj] = ring[j];
        if (yi > y !== yj > y && px < ((xj - xi) * (y - yi)) / (yj - yi) + xi) hit = !hit;
      }
      return hit;
    };
    return [x, x - 360, x + 360].some((px) => parts.some((rings) => inRing(rings[0], px) && !rings.slice(1).some((hole) => inRing(hole, px))));
  }

  it("gives every named country one label, inside the country", () => {
    const named = countries.features.filter((f) => f.properties?.name && f.geometry);
    expect(labels.features.map((l) => l.properties?.name).sort()).toEqual(named.map((f) => f.properties?.name).sort());
    const outside = labels.features.filter((label) => {
      const country = named.find((f) => f.id === label.id)!;
      return !inside(country.geometry, label.geometry.coordinates);
    });
    expect(outside.map((l) => l.properties?.name)).toEqual([]);
    for (const label of labels.features) expect(Math.abs(label.geometry.coordinates[0])).toBeLessThanOrEqual(180);
  });

  it("keeps the bigger country's name where two collide", () => {
    const sortOf = (name: string) => labels.features.find((l) => l.properties?.name === name)!.properties!.sort as number;
    expect(sortOf("Russia")).toBeLessThan(sortOf("France"));
    expect(sortOf("France")).toBeLessThan(sortOf("Luxembourg"));
  });

  it("shows a small country's name only from a closer zoom", () => {
    const minzoom = (name: string) => labels.features.find((l) => l.properties?.name === name)!.properties!.minzoom as number;
    expect(minzoom("Russia")).toBe(0);
    expect(minzoom("Belgium")).toBeLessThan(minzoom("Luxembourg"));
    expect(minzoom("Luxembourg")).toBeLessThan(minzoom("Vatican"));
  });

  it("draws the names from a bundled font, without a glyph server", () => {
    const style = offlineStyle("light", "http://127.0.0.1:8080/", { display: countries, labels });
    expect(style.glyphs).toBeUndefined();
    const faces = style["font-faces"] ?? {};
    const symbols = style.layers.filter((layer) => layer.type === "symbol");
    expect(symbols.map((layer) => layer.id)).toEqual([CITY_LABELS_LAYER, COUNTRY_LABELS_LAYER]);
    for (const layer of symbols) {
      for (const font of (layer.layout?.["text-font"] ?? []) as string[]) expect(Object.keys(faces)).toContain(font);
    }
    const files = Object.values(faces).flat();
    expect(files.length).toBe(2);
    for (const file of files) expect(typeof file === "object" && file.url).toMatch(/noto-sans-latin(-ext)?-400-normal\.woff2/);
  });
});
