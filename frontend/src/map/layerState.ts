import type { RasterLayer, RasterOverlay } from "./mapBridge";

/** Layers the app draws itself on top of any basemap (selection and drawing). */
export const APP_LAYERS = new Set(["selection-fill", "selection-line", "draw-fill", "draw-line", "draw-vertex"]);

/** The part of maplibre-gl's Map this module uses. */
export interface StyledMap {
  getStyle(): { layers?: { id: string; type: string }[] } | undefined;
  getLayer(id: string): unknown;
  getPaintProperty(id: string, name: string): unknown;
  setPaintProperty(id: string, name: string, value: unknown): unknown;
  setLayoutProperty(id: string, name: string, value: unknown): unknown;
  moveLayer(id: string, beforeId?: string): unknown;
}

/** A raster overlay's layer as the map should have it now (visibility and opacity from the panel). */
export function layerSpec(overlay: RasterOverlay): RasterLayer {
  return {
    ...overlay.layer,
    paint: { ...overlay.layer.paint, "raster-opacity": overlay.opacity },
    layout: { visibility: overlay.visible ? "visible" : "none" },
  };
}

/** Puts visibility, opacity and order of the overlays on the map (bottom to top, beneath `beforeId`). */
export function syncOverlays(map: StyledMap, overlays: RasterOverlay[], beforeId: string | undefined): void {
  for (const overlay of overlays) {
    if (!map.getLayer(overlay.id)) continue;
    map.setLayoutProperty(overlay.id, "visibility", overlay.visible ? "visible" : "none");
    map.setPaintProperty(overlay.id, "raster-opacity", overlay.opacity);
    map.moveLayer(overlay.id, beforeId);
  }
}

const OPACITY_PROPS: Record<string, string[]> = {
  background: ["background-opacity"],
  fill: ["fill-opacity"],
  line: ["line-opacity"],
  raster: ["raster-opacity"],
  circle: ["circle-opacity"],
  symbol: ["text-opacity", "icon-opacity"],
  "fill-extrusion": ["fill-extrusion-opacity"],
  heatmap: ["heatmap-opacity"],
};

/** The basemap's own layers: everything in the style but the overlays and the app's layers. */
export function basemapLayers(map: StyledMap): { id: string; type: string }[] {
  return (map.getStyle()?.layers ?? []).filter((l) => !APP_LAYERS.has(l.id) && !l.id.startsWith("raster:"));
}

/** Each basemap layer's own opacity, read once per style so the panel's opacity scales it. */
export function readBasemapOpacities(map: StyledMap): Map<string, number> {
  const out = new Map<string, number>();
  for (const layer of basemapLayers(map)) {
    for (const prop of OPACITY_PROPS[layer.type] ?? []) {
      const value = map.getPaintProperty(layer.id, prop);
      // Expressions (zoom-dependent opacity) are left alone.
      if (value === undefined || typeof value === "number") out.set(`${layer.id}|${prop}`, typeof value === "number" ? value : 1);
    }
  }
  return out;
}

export function applyBasemap(map: StyledMap, base: Map<string, number>, visible: boolean, opacity: number): void {
  for (const layer of basemapLayers(map)) {
    map.setLayoutProperty(layer.id, "visibility", visible ? "visible" : "none");
    for (const prop of OPACITY_PROPS[layer.type] ?? []) {
      const own = base.get(`${layer.id}|${prop}`);
      if (own !== undefined) map.setPaintProperty(layer.id, prop, own * opacity);
    }
  }
}
