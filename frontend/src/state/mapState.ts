import type { Feature } from "geojson";
import type { SavedMapLayer, SavedMapState } from "../api/client";
import type { DrawnGeometry } from "../map/drawing";
import type { LegendInfo } from "../map/legend";
import { idleDraw } from "../map/drawing";
import type { BasemapChoice, RasterOverlay } from "../map/mapBridge";
import type { UiState } from "./uiStore";

/**
 * A conversation's map (view, basemap, raster layers, selection) in the shape the gateway keeps
 * (`/chat/session/{id}/map-state`), and back. Pure: the controller saves and applies it.
 */

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function basemapName(choice: BasemapChoice): string {
  return typeof choice === "object" ? choice.url : choice;
}

function basemapChoice(name: string): BasemapChoice {
  return name === "light" || name === "dark" || name === "satellite" ? name : { url: name };
}

export function savedLayer(overlay: RasterOverlay): SavedMapLayer {
  return {
    id: overlay.id,
    source: overlay.source,
    legend: { ...overlay.legend },
    origin: overlay.origin,
    visible: overlay.visible,
    opacity: overlay.opacity,
  };
}

function legendOf(id: string, raw: Record<string, unknown> | null): LegendInfo {
  const collectionId = id.replace(/^raster:/, "");
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  const range = Array.isArray(raw?.range) && raw.range.length === 2 && raw.range.every((v) => typeof v === "number")
    ? (raw.range as [number, number])
    : null;
  return {
    collectionId,
    title: text(raw?.title) ?? collectionId,
    colors: Array.isArray(raw?.colors) ? raw.colors.filter((c): c is string => typeof c === "string") : [],
    range,
    units: text(raw?.units),
    colormapName: text(raw?.colormapName),
    classes: Array.isArray(raw?.classes) ? (raw.classes as LegendInfo["classes"]) : [],
  };
}

export function overlayFromSaved(layer: SavedMapLayer): RasterOverlay {
  return {
    id: layer.id,
    source: { ...layer.source, tileSize: layer.source.tileSize ?? 256 },
    layer: { id: layer.id, type: "raster", source: layer.id, paint: { "raster-opacity": layer.opacity } },
    legend: legendOf(layer.id, layer.legend),
    origin: layer.origin,
    visible: layer.visible,
    opacity: layer.opacity,
  };
}

/** What to save of the UI's map state. */
export function mapStateFromUi(ui: UiState): SavedMapState {
  return {
    view: {
      center: { lat: round(ui.center.lat, 6), lon: round(ui.center.lon, 6) },
      zoom: round(Math.min(24, Math.max(0, ui.zoom)), 3),
      bearing: round(ui.bearing, 2),
    },
    basemap: basemapName(ui.basemap),
    basemap_visible: ui.basemapVisible,
    basemap_opacity: round(ui.basemapOpacity, 3),
    layers: ui.overlays.map(savedLayer),
    selected_feature: (ui.selectedFeature as unknown as Record<string, unknown> | null) ?? null,
    drawn_geometry: (ui.drawnGeometry as unknown as Record<string, unknown> | null) ?? null,
  };
}

/** The UI fields a saved map state sets (the map itself follows the store; the view is jumped to). */
export function uiFromMapState(state: SavedMapState): Partial<UiState> {
  return {
    center: { ...state.view.center },
    zoom: state.view.zoom,
    bearing: state.view.bearing ?? 0,
    basemap: basemapChoice(state.basemap),
    basemapVisible: state.basemap_visible,
    basemapOpacity: state.basemap_opacity,
    overlays: state.layers.map(overlayFromSaved),
    selectedFeature: (state.selected_feature as unknown as Feature | null) ?? null,
    drawnGeometry: (state.drawn_geometry as unknown as DrawnGeometry | null) ?? null,
    draw: idleDraw,
  };
}
