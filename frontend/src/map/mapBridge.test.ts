import { describe, expect, it, vi } from "vitest";
import { applyFrontendTool, type BridgeEnv, type MapLike, type RasterLayer, type RasterSource } from "./mapBridge";

/** The smallest map that records what the bridge asks of it. */
class FakeMap implements MapLike {
  center = { lng: 0, lat: 0 };
  zoom = 2;
  sources = new Map<string, RasterSource>();
  layers: { layer: RasterLayer; beforeId?: string }[] = [];
  calls: string[] = [];

  flyTo(o: { center: [number, number]; zoom?: number }) {
    this.calls.push("flyTo");
    this.center = { lng: o.center[0], lat: o.center[1] };
    if (o.zoom !== undefined) this.zoom = o.zoom;
  }
  fitBounds(b: [[number, number], [number, number]], o?: { maxZoom?: number }) {
    this.calls.push(`fitBounds:${JSON.stringify(b)}:${o?.maxZoom ?? ""}`);
  }
  getCenter() {
    return this.center;
  }
  getZoom() {
    return this.zoom;
  }
  /** A view of 360/2^zoom degrees around the centre, like a 512 px map. */
  getBounds() {
    const half = 180 / 2 ** this.zoom;
    const { lng, lat } = this.center;
    return {
      getWest: () => lng - half,
      getEast: () => lng + half,
      getSouth: () => lat - half / 2,
      getNorth: () => lat + half / 2,
    };
  }
  addSource(id: string, s: RasterSource) {
    if (this.sources.has(id)) throw new Error(`source ${id} exists`);
    this.sources.set(id, s);
  }
  getSource(id: string) {
    return this.sources.get(id);
  }
  removeSource(id: string) {
    if (this.layers.some((l) => l.layer.source === id)) throw new Error("source in use");
    this.sources.delete(id);
  }
  addLayer(layer: RasterLayer, beforeId?: string) {
    if (!this.sources.has(layer.source)) throw new Error("missing source");
    this.layers.push({ layer, beforeId });
  }
  getLayer(id: string) {
    return this.layers.find((l) => l.layer.id === id);
  }
  removeLayer(id: string) {
    this.layers = this.layers.filter((l) => l.layer.id !== id);
  }
}

const TILEJSON = {
  tilejson: "3.0.0",
  name: "luxembourg-dem",
  description: "Luxembourg elevation",
  tiles: ["/tiles/luxembourg-dem/{z}/{x}/{y}.png?colormap_name=terrain"],
  bounds: [5.7, 49.4, 6.6, 50.2],
  minzoom: 6,
  maxzoom: 14,
  rescale: [150, 560],
  units: "m",
};

function env(map: FakeMap, overrides: Partial<BridgeEnv> = {}): BridgeEnv & { [k: string]: unknown } {
  return {
    map,
    baseUrl: "http://app.test/",
    fetchJson: vi.fn(async () => TILEJSON),
    setBasemap: vi.fn(),
    setPanel: vi.fn(),
    onOverlay: vi.fn(),
    ...overrides,
  };
}

describe("map bridge", () => {
  it("zoom_to_location flies to the point at the given zoom", async () => {
    const map = new FakeMap();
    const result = await applyFrontendTool("zoom_to_location", { lat: 49.61, lon: 6.13, zoom: 9 }, env(map));
    expect(result.ok).toBe(true);
    expect(map.center).toEqual({ lng: 6.13, lat: 49.61 });
    expect(map.zoom).toBe(9);
  });

  it("zoom_to_location uses zoom 10 by default and accepts numeric strings", async () => {
    const map = new FakeMap();
    await applyFrontendTool("zoom_to_location", { lat: "48.85", lon: "2.35" }, env(map));
    expect(map.center).toEqual({ lng: 2.35, lat: 48.85 });
    expect(map.zoom).toBe(10);
  });

  it("zoom_to_location refuses coordinates off the globe, naming the field", async () => {
    const map = new FakeMap();
    const result = await applyFrontendTool("zoom_to_location", { lat: 123, lon: 6 }, env(map));
    expect(result).toEqual({ ok: false, message: "lat must be between -90 and 90, got 123" });
    expect(map.calls).toEqual([]);
    const missing = await applyFrontendTool("zoom_to_location", { lat: 10 }, env(map));
    expect(missing.message).toBe("lon is required");
  });

  it("visualize_collection adds a raster layer from the TileJSON and reports its legend", async () => {
    const map = new FakeMap();
    const e = env(map, { overlayBeforeId: () => "selection-fill" });
    const result = await applyFrontendTool(
      "visualize_collection",
      { collection_id: "luxembourg-dem", colormap: "terrain", rescale: [150, 560] },
      e,
    );
    expect(result).toEqual({ ok: true, message: "Showing Luxembourg elevation on the map" });
    expect(e.fetchJson).toHaveBeenCalledWith(
      "http://app.test/tiles/luxembourg-dem/tilejson.json?colormap_name=terrain&rescale=150%2C560",
    );
    expect(map.sources.get("raster:luxembourg-dem")).toEqual({
      type: "raster",
      tiles: ["http://app.test/tiles/luxembourg-dem/{z}/{x}/{y}.png?colormap_name=terrain"],
      tileSize: 256,
      bounds: [5.7, 49.4, 6.6, 50.2],
      minzoom: 6,
      maxzoom: 14,
    });
    expect(map.layers).toEqual([
      {
        layer: { id: "raster:luxembourg-dem", type: "raster", source: "raster:luxembourg-dem", paint: { "raster-opacity": 0.85 } },
        beforeId: "selection-fill",
      },
    ]);
    expect(e.onOverlay).toHaveBeenCalledWith(
      expect.objectContaining({
        id: "raster:luxembourg-dem",
        legend: expect.objectContaining({ title: "Luxembourg elevation", range: [150, 560], units: "m", colormapName: "terrain" }),
      }),
    );
    // The map was elsewhere: it moves to the data.
    expect(map.calls).toContain("fitBounds:[[5.7,49.4],[6.6,50.2]]:14");
  });

  it("visualize_collection asks a scene collection for the agent's expression and period", async () => {
    const map = new FakeMap();
    const e = env(map);
    await applyFrontendTool(
      "visualize_collection",
      { collection_id: "landsat7-olinda-scenes", expression: " (nir08 - red) / (nir08 + red) ", datetime: "2000-01" },
      e,
    );
    const asked = new URL((e.fetchJson as ReturnType<typeof vi.fn>).mock.calls[0][0] as string);
    expect(asked.pathname).toBe("/tiles/landsat7-olinda-scenes/tilejson.json");
    expect(asked.searchParams.get("expression")).toBe("(nir08 - red) / (nir08 + red)");
    expect(asked.searchParams.get("datetime")).toBe("2000-01");
  });

  it("visualize_collection refuses an expression the tile server could not take, naming the field", async () => {
    const map = new FakeMap();
    const e = env(map);
    const result = await applyFrontendTool(
      "visualize_collection",
      { collection_id: "landsat7-olinda-scenes", expression: "red; drop" },
      e,
    );
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/^expression /);
    expect(e.fetchJson).not.toHaveBeenCalled();
    expect(map.sources.size).toBe(0);
  });

  it("visualize_collection does not move a map already looking at the data", async () => {
    const map = new FakeMap();
    map.center = { lng: 6.1, lat: 49.7 };
    map.zoom = 8;
    await applyFrontendTool("visualize_collection", { collection_id: "luxembourg-dem" }, env(map));
    expect(map.calls.filter((c) => c.startsWith("fitBounds"))).toEqual([]);
  });

  it("visualize_collection judges the view by what a panel leaves visible", async () => {
    const map = new FakeMap();
    map.center = { lng: 6.1, lat: 49.7 };
    map.zoom = 8;
    // The whole map is centred on the data, but the sheet over its lower part leaves only the north visible.
    const visibleView = (): [number, number, number, number] => [4.5, 50.5, 7.7, 51.3];
    await applyFrontendTool("visualize_collection", { collection_id: "luxembourg-dem" }, env(map, { visibleView }));
    expect(map.calls.filter((c) => c.startsWith("fitBounds"))).toHaveLength(1);
  });

  it("visualize_collection zooms in when the data would be a speck in the view", async () => {
    const map = new FakeMap();
    map.center = { lng: 6.1, lat: 49.7 };
    map.zoom = 3;
    await applyFrontendTool("visualize_collection", { collection_id: "luxembourg-dem" }, env(map));
    expect(map.calls.filter((c) => c.startsWith("fitBounds"))).toHaveLength(1);
  });

  it("visualize_collection leaves the view alone for global data", async () => {
    const map = new FakeMap();
    map.center = { lng: 6.1, lat: 49.7 };
    map.zoom = 5;
    const globalTiles = { ...TILEJSON, bounds: [-180, -90, 180, 90] };
    await applyFrontendTool("visualize_collection", { collection_id: "global-land-mask" }, env(map, { fetchJson: async () => globalTiles }));
    expect(map.calls.filter((c) => c.startsWith("fitBounds"))).toEqual([]);
  });

  it("visualize_collection centres the map on the place the agent named", async () => {
    const map = new FakeMap();
    map.center = { lng: 6.1, lat: 49.7 };
    map.zoom = 8;
    const globalTiles = { ...TILEJSON, bounds: [-180, -90, 180, 90] };
    const args = { collection_id: "global-land-mask", place: "Nairobi (places/184745)", lat: -1.28333, lon: 36.81667, zoom: 10 };
    await applyFrontendTool("visualize_collection", args, env(map, { fetchJson: async () => globalTiles }));
    expect(map.calls.filter((c) => c.startsWith("flyTo"))).toEqual(["flyTo"]);
    expect([map.center, map.zoom]).toEqual([{ lng: 36.81667, lat: -1.28333 }, 10]);
    expect(map.calls.filter((c) => c.startsWith("fitBounds"))).toEqual([]);
  });

  it("visualize_collection replaces the layer of the same collection", async () => {
    const map = new FakeMap();
    await applyFrontendTool("visualize_collection", { collection_id: "luxembourg-dem" }, env(map));
    await applyFrontendTool("visualize_collection", { collection_id: "luxembourg-dem", colormap: "viridis" }, env(map));
    expect(map.layers).toHaveLength(1);
    expect(map.sources.size).toBe(1);
  });

  it("visualize_collection refuses path tricks and reports missing tiles", async () => {
    const map = new FakeMap();
    const bad = await applyFrontendTool("visualize_collection", { collection_id: "../secrets" }, env(map));
    expect(bad.ok).toBe(false);
    expect(bad.message).toMatch(/^collection_id must be/);
    const missing = await applyFrontendTool(
      "visualize_collection",
      { collection_id: "nope" },
      env(map, { fetchJson: async () => Promise.reject(new Error("HTTP 404")) }),
    );
    expect(missing).toEqual({ ok: false, message: "No tiles for nope: HTTP 404" });
    const noTiles = await applyFrontendTool(
      "visualize_collection",
      { collection_id: "empty" },
      env(map, { fetchJson: async () => ({ tiles: ["javascript:alert(1)"] }) }),
    );
    expect(noTiles.message).toBe("The TileJSON of empty lists no tile URL");
    expect(map.layers).toEqual([]);
  });

  it("set_map_style switches between the named basemaps and style URLs", async () => {
    const map = new FakeMap();
    const e = env(map);
    await applyFrontendTool("set_map_style", { style: "dark" }, e);
    await applyFrontendTool("set_map_style", { style: "Satellite" }, e);
    await applyFrontendTool("set_map_style", { style: "https://tiles.example/style.json" }, e);
    expect(e.setBasemap).toHaveBeenNthCalledWith(1, "dark");
    expect(e.setBasemap).toHaveBeenNthCalledWith(2, "satellite");
    expect(e.setBasemap).toHaveBeenNthCalledWith(3, { url: "https://tiles.example/style.json" });
    const bad = await applyFrontendTool("set_map_style", { style: "javascript:alert(1)" }, e);
    expect(bad.ok).toBe(false);
    expect(e.setBasemap).toHaveBeenCalledTimes(3);
  });

  it("toggle_ui_panel opens, closes or toggles a panel", async () => {
    const map = new FakeMap();
    const e = env(map);
    await applyFrontendTool("toggle_ui_panel", { panel: "sessions", open: true }, e);
    await applyFrontendTool("toggle_ui_panel", { panel: "chat", open: false }, e);
    await applyFrontendTool("toggle_ui_panel", { panel: "legend" }, e);
    expect(e.setPanel).toHaveBeenNthCalledWith(1, "sessions", true);
    expect(e.setPanel).toHaveBeenNthCalledWith(2, "chat", false);
    expect(e.setPanel).toHaveBeenNthCalledWith(3, "legend", undefined);
    const bad = await applyFrontendTool("toggle_ui_panel", { panel: "kitchen" }, e);
    expect(bad.ok).toBe(false);
    expect(bad.message).toMatch(/^panel must be one of/);
  });

  it("generate_chart makes sure the conversation is visible", async () => {
    const map = new FakeMap();
    const e = env(map);
    const result = await applyFrontendTool("generate_chart", { chart: { type: "bar", data: { datasets: [] } } }, e);
    expect(result.ok).toBe(true);
    expect(e.setPanel).toHaveBeenCalledWith("chat", true);
    expect(map.calls).toEqual([]);
  });

  it("reports an unknown command without touching the map", async () => {
    const map = new FakeMap();
    const result = await applyFrontendTool("launch_rocket", {}, env(map));
    expect(result).toEqual({ ok: false, message: "Unknown map command launch_rocket" });
    expect(map.calls).toEqual([]);
  });
});
