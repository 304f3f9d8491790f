import { describe, expect, it } from "vitest";
import { flyToPlace } from "../map/PlaceSearch";
import type { RasterOverlay } from "../map/mapBridge";
import { mapStateFromUi, uiFromMapState } from "./mapState";
import { useUiStore } from "./uiStore";

const overlay: RasterOverlay = {
  id: "raster:dem-lux",
  source: { type: "raster", tiles: ["http://app.test/tiles/dem-lux/{z}/{x}/{y}.png"], tileSize: 256, bounds: [5.7, 49.4, 6.6, 50.2] },
  layer: { id: "raster:dem-lux", type: "raster", source: "raster:dem-lux", paint: { "raster-opacity": 0.5 } },
  legend: { collectionId: "dem-lux", title: "Elevation", colors: ["#000", "#fff"], range: [200, 560], units: "m", colormapName: "terrain", classes: [] },
  origin: "agent",
  visible: false,
  opacity: 0.5,
};

describe("a conversation's map state", () => {
  it("saves view, basemap, layers and selection, and gives the same UI back", () => {
    const selected = { type: "Feature" as const, properties: { name: "Luxembourg" }, geometry: { type: "Point" as const, coordinates: [6.13, 49.61] } };
    useUiStore.setState({
      center: { lat: 49.6123456789, lon: 6.1312345678 },
      zoom: 8.123456,
      bearing: 33.333,
      basemap: "dark",
      basemapVisible: false,
      basemapOpacity: 0.4,
      overlays: [overlay],
      selectedFeature: selected,
      drawnGeometry: { type: "Polygon", coordinates: [[[6, 49], [7, 49], [7, 50], [6, 49]]] },
    });
    const saved = mapStateFromUi(useUiStore.getState());
    expect(saved.view).toEqual({ center: { lat: 49.612346, lon: 6.131235 }, zoom: 8.123, bearing: 33.33 });
    expect(saved.basemap).toBe("dark");
    expect(saved.layers).toEqual([
      { id: "raster:dem-lux", source: overlay.source, legend: { ...overlay.legend }, origin: "agent", visible: false, opacity: 0.5 },
    ]);
    // Through JSON, as the gateway stores it.
    const ui = uiFromMapState(JSON.parse(JSON.stringify(saved)));
    expect(ui.overlays).toEqual([overlay]);
    expect(ui.selectedFeature).toEqual(selected);
    expect(ui.basemap).toBe("dark");
    expect(ui.bearing).toBe(33.33);
    expect(uiFromMapState({ ...saved, basemap: "https://styles.example/s.json" }).basemap).toEqual({ url: "https://styles.example/s.json" });
  });

  it("rebuilds a legend the gateway kept loosely", () => {
    const [restored] = uiFromMapState({
      ...mapStateFromUi(useUiStore.getState()),
      layers: [{ id: "raster:lc", source: { type: "raster", tiles: ["/tiles/lc/{z}/{x}/{y}.png"] }, legend: null, origin: "user", visible: true, opacity: 1 }],
    }).overlays!;
    expect(restored.legend).toEqual({ collectionId: "lc", title: "lc", colors: [], range: null, units: null, colormapName: null, classes: [] });
    expect(restored.source.tileSize).toBe(256);
    expect(restored.layer).toEqual({ id: "raster:lc", type: "raster", source: "raster:lc", paint: { "raster-opacity": 1 } });
  });
});

describe("flyToPlace", () => {
  const fake = () => {
    const calls: unknown[] = [];
    return { calls, map: { flyTo: (o: unknown) => calls.push(["flyTo", o]), fitBounds: (b: unknown, o: unknown) => calls.push(["fitBounds", b, o]) } };
  };

  it("fits an area, zooms to a point, and fits a box across the antimeridian eastwards", () => {
    const { calls, map } = fake();
    flyToPlace(map, { name: "Luxembourg", kind: "country", ref: "countries/LUX", bbox: [5.7, 49.4, 6.5, 50.2] });
    flyToPlace(map, { name: "Berlin", kind: "city", ref: "cities/1", point: [13.4, 52.5] });
    flyToPlace(map, { name: "Fiji", kind: "country", ref: "countries/FJI", bbox: [177, -21, -178, -12] });
    expect(calls).toEqual([
      ["fitBounds", [[5.7, 49.4], [6.5, 50.2]], { padding: 40, maxZoom: 12, essential: true }],
      ["flyTo", { center: [13.4, 52.5], zoom: 10, essential: true }],
      ["fitBounds", [[177, -21], [182, -12]], { padding: 40, maxZoom: 12, essential: true }],
    ]);
  });
});
