import { describe, expect, it } from "vitest";
import type { UiMessage } from "../state/chatTypes";
import { collectionsFromMessages } from "./collectionMeta";
import { applyBasemap, readBasemapOpacities, syncOverlays, type StyledMap } from "./layerState";
import type { RasterOverlay } from "./mapBridge";

function answer(activities: UiMessage["activities"]): UiMessage {
  return { id: "a", role: "assistant", content: "", status: "complete", activities, charts: [] };
}

describe("collection metadata from the conversation", () => {
  it("reads listings and info results, info winning", () => {
    const listing = { collections: [{ id: "dem", title: "DEM", units: ["m"], kind: "continuous" }, { id: "lc", title: "Land cover", units: [], kind: "categorical" }] };
    const info = {
      id: "lc",
      title: "Land cover",
      kind: "categorical",
      bands: [{ band: 1, name: "class", unit: null, classes: { "42": "Forest", "11": "Water" } }],
      render_defaults: { colormap: { "11": [0, 0, 255, 255] } },
    };
    const meta = collectionsFromMessages([
      answer([
        { id: "1", kind: "tool", step: 1, toolName: "list_raster_collections", status: "ok", result: JSON.stringify(listing) },
        { id: "2", kind: "tool", step: 2, toolName: "get_raster_info", status: "ok", arguments: { collection_id: "lc" }, result: JSON.stringify(info) },
        { id: "3", kind: "tool", step: 3, toolName: "get_raster_info", status: "ok", arguments: { collection_id: "x" }, result: '{"id": "x", "ban' },
      ]),
    ]);
    expect([...meta.keys()].sort()).toEqual(["dem", "lc", "x"]);
    expect(meta.get("dem")).toMatchObject({ title: "DEM", units: ["m"], kind: "continuous" });
    expect(meta.get("lc")?.classes).toEqual([
      { value: 11, label: "Water" },
      { value: 42, label: "Forest" },
    ]);
    expect(meta.get("lc")?.colormap).toEqual({ "11": [0, 0, 255, 255] });
    // A shortened result is skipped; the id named in the call is still known.
    expect(meta.get("x")).toMatchObject({ title: null, units: [] });
  });
});

function fakeMap(layers: { id: string; type: string; opacity?: number }[]) {
  const paint = new Map<string, unknown>(layers.filter((l) => l.opacity !== undefined).map((l) => [`${l.id}|${l.type}-opacity`, l.opacity]));
  const layout = new Map<string, unknown>();
  let order = layers.map((l) => l.id);
  const map: StyledMap = {
    getStyle: () => ({ layers: order.map((id) => ({ id, type: layers.find((l) => l.id === id)!.type })) }),
    getLayer: (id) => order.includes(id),
    getPaintProperty: (id, name) => paint.get(`${id}|${name}`),
    setPaintProperty: (id, name, value) => paint.set(`${id}|${name}`, value),
    setLayoutProperty: (id, name, value) => layout.set(`${id}|${name}`, value),
    moveLayer: (id, beforeId) => {
      order = order.filter((x) => x !== id);
      order.splice(beforeId ? order.indexOf(beforeId) : order.length, 0, id);
    },
  };
  return { map, paint, layout, order: () => order };
}

describe("layer state on the map", () => {
  it("scales the basemap's own opacities and hides only its layers", () => {
    const { map, paint, layout } = fakeMap([
      { id: "background", type: "background" },
      { id: "land-mask", type: "raster", opacity: 0.25 },
      { id: "raster:dem", type: "raster", opacity: 0.85 },
      { id: "selection-fill", type: "fill" },
    ]);
    const base = readBasemapOpacities(map);
    applyBasemap(map, base, false, 0.5);
    expect(paint.get("land-mask|raster-opacity")).toBe(0.125);
    expect(paint.get("background|background-opacity")).toBe(0.5);
    expect(paint.get("raster:dem|raster-opacity")).toBe(0.85);
    expect(layout.get("background|visibility")).toBe("none");
    expect(layout.has("selection-fill|visibility")).toBe(false);
  });

  it("orders overlays bottom to top beneath the anchor", () => {
    const { map, order, layout } = fakeMap([
      { id: "raster:a", type: "raster" },
      { id: "raster:b", type: "raster" },
      { id: "countries-line", type: "line" },
    ]);
    const overlay = (id: string, visible: boolean) => ({ id, visible, opacity: 0.5 }) as RasterOverlay;
    syncOverlays(map, [overlay("raster:b", true), overlay("raster:a", false)], "countries-line");
    expect(order()).toEqual(["raster:b", "raster:a", "countries-line"]);
    expect(layout.get("raster:a|visibility")).toBe("none");
  });
});
