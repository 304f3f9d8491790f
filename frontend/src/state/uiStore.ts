import type { Feature } from "geojson";
import { create } from "zustand";
import { idleDraw, type DrawnGeometry, type DrawState } from "../map/drawing";
import type { BasemapChoice, PanelName, RasterOverlay } from "../map/mapBridge";
import { readStorage, writeStorage } from "./storage";

export interface Panels {
  chat: boolean;
  sessions: boolean;
  activity: boolean;
  /** The compact legend shown while the layers panel is closed. */
  legend: boolean;
  layers: boolean;
}

export interface UiState {
  panels: Panels;
  /** Map view, kept current by the map for the spatial context. */
  center: { lat: number; lon: number };
  zoom: number;
  /** Degrees clockwise from north. */
  bearing: number;
  selectedFeature: Feature | null;
  drawnGeometry: DrawnGeometry | null;
  draw: DrawState;
  basemap: BasemapChoice;
  /** Raster layers from the bottom to the top. */
  overlays: RasterOverlay[];
  basemapVisible: boolean;
  /** 0..1, applied on top of each basemap layer's own opacity. */
  basemapOpacity: number;
  speakAnswers: boolean;
  setPanel: (panel: PanelName, open?: boolean) => void;
  setView: (center: { lat: number; lon: number }, zoom: number, bearing?: number) => void;
  setSelectedFeature: (feature: Feature | null) => void;
  setDraw: (draw: DrawState) => void;
  setDrawnGeometry: (geometry: DrawnGeometry | null) => void;
  /** Drops the clicked feature, the drawn area and any drawing in progress. */
  clearSelection: () => void;
  setBasemap: (choice: BasemapChoice) => void;
  upsertOverlay: (overlay: RasterOverlay) => void;
  removeOverlay: (id: string) => void;
  setOverlayVisible: (id: string, visible: boolean) => void;
  setOverlayOpacity: (id: string, opacity: number) => void;
  /** Moves a layer `by` places up (towards the top) or down. */
  moveOverlay: (id: string, by: number) => void;
  setBasemapVisible: (visible: boolean) => void;
  setBasemapOpacity: (opacity: number) => void;
  setSpeakAnswers: (on: boolean) => void;
}

const SPEAK_KEY = "stacgis.speakAnswers";

function narrowScreen(): boolean {
  return typeof window !== "undefined" && window.matchMedia?.("(max-width: 720px)").matches === true;
}

export const useUiStore = create<UiState>()((set) => ({
  panels: { chat: true, sessions: !narrowScreen(), activity: true, legend: true, layers: false },
  center: { lat: 49.61, lon: 6.13 },
  zoom: 3,
  bearing: 0,
  selectedFeature: null,
  drawnGeometry: null,
  draw: idleDraw,
  basemap: "light",
  overlays: [],
  basemapVisible: true,
  basemapOpacity: 1,
  speakAnswers: readStorage(SPEAK_KEY) === "1",
  setPanel: (panel, open) =>
    set((s) => {
      const next = { ...s.panels, [panel]: open ?? !s.panels[panel] };
      // On a narrow screen the sidebar and the chat share the space above the map, and the
      // layers panel needs the map the chat sheet covers.
      if (narrowScreen() && next[panel]) {
        if (panel === "sessions" || panel === "chat") next[panel === "sessions" ? "chat" : "sessions"] = false;
        if (panel === "chat") next.layers = false;
        if (panel === "layers") next.chat = false;
      }
      return { panels: next };
    }),
  setView: (center, zoom, bearing = 0) => set({ center, zoom, bearing }),
  setSelectedFeature: (selectedFeature) => set({ selectedFeature }),
  setDraw: (draw) => set({ draw }),
  setDrawnGeometry: (drawnGeometry) => set({ drawnGeometry }),
  clearSelection: () => set({ selectedFeature: null, drawnGeometry: null, draw: idleDraw }),
  setBasemap: (basemap) => set({ basemap }),
  upsertOverlay: (overlay) =>
    set((s) => ({ overlays: [...s.overlays.filter((o) => o.id !== overlay.id), overlay] })),
  removeOverlay: (id) => set((s) => ({ overlays: s.overlays.filter((o) => o.id !== id) })),
  setOverlayVisible: (id, visible) =>
    set((s) => ({ overlays: s.overlays.map((o) => (o.id === id ? { ...o, visible } : o)) })),
  setOverlayOpacity: (id, opacity) =>
    set((s) => ({ overlays: s.overlays.map((o) => (o.id === id ? { ...o, opacity: Math.min(1, Math.max(0, opacity)) } : o)) })),
  moveOverlay: (id, by) =>
    set((s) => {
      const from = s.overlays.findIndex((o) => o.id === id);
      const to = Math.min(s.overlays.length - 1, Math.max(0, from + by));
      if (from === -1 || from === to) return {};
      const overlays = s.overlays.slice();
      const [moved] = overlays.splice(from, 1);
      overlays.splice(to, 0, moved);
      return { overlays };
    }),
  setBasemapVisible: (basemapVisible) => set({ basemapVisible }),
  setBasemapOpacity: (opacity) => set({ basemapOpacity: Math.min(1, Math.max(0, opacity)) }),
  setSpeakAnswers: (on) => {
    writeStorage(SPEAK_KEY, on ? "1" : "0");
    set({ speakAnswers: on });
  },
}));

/** The spatial context sent with every message. */
export function spatialContext() {
  const s = useUiStore.getState();
  return {
    map_center: { lat: round(s.center.lat), lon: round(s.center.lon) },
    zoom: Math.round(s.zoom * 100) / 100,
    selected_feature: s.selectedFeature,
    drawn_geometry: s.drawnGeometry,
  };
}

function round(v: number): number {
  return Math.round(v * 1e5) / 1e5;
}
