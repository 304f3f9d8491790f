import type { Feature, Polygon } from "geojson";
import { create } from "zustand";
import { idleDraw, type DrawState } from "../map/drawing";
import type { BasemapChoice, PanelName, RasterOverlay } from "../map/mapBridge";
import { readStorage, writeStorage } from "./storage";

export interface Panels {
  chat: boolean;
  sessions: boolean;
  activity: boolean;
  legend: boolean;
}

export interface UiState {
  panels: Panels;
  /** Map view, kept current by the map for the spatial context. */
  center: { lat: number; lon: number };
  zoom: number;
  selectedFeature: Feature | null;
  drawnGeometry: Polygon | null;
  draw: DrawState;
  basemap: BasemapChoice;
  overlays: RasterOverlay[];
  speakAnswers: boolean;
  setPanel: (panel: PanelName, open?: boolean) => void;
  setView: (center: { lat: number; lon: number }, zoom: number) => void;
  setSelectedFeature: (feature: Feature | null) => void;
  setDraw: (draw: DrawState) => void;
  setDrawnGeometry: (geometry: Polygon | null) => void;
  /** Drops the clicked feature, the drawn area and any drawing in progress. */
  clearSelection: () => void;
  setBasemap: (choice: BasemapChoice) => void;
  upsertOverlay: (overlay: RasterOverlay) => void;
  removeOverlay: (id: string) => void;
  setSpeakAnswers: (on: boolean) => void;
}

const SPEAK_KEY = "stacgis.speakAnswers";

function narrowScreen(): boolean {
  return typeof window !== "undefined" && window.matchMedia?.("(max-width: 720px)").matches === true;
}

export const useUiStore = create<UiState>()((set) => ({
  panels: { chat: true, sessions: !narrowScreen(), activity: true, legend: true },
  center: { lat: 49.61, lon: 6.13 },
  zoom: 3,
  selectedFeature: null,
  drawnGeometry: null,
  draw: idleDraw,
  basemap: "light",
  overlays: [],
  speakAnswers: readStorage(SPEAK_KEY) === "1",
  setPanel: (panel, open) =>
    set((s) => {
      const next = { ...s.panels, [panel]: open ?? !s.panels[panel] };
      // On a narrow screen the sidebar and the chat share the space above the map.
      if (narrowScreen() && next[panel] && (panel === "sessions" || panel === "chat")) {
        next[panel === "sessions" ? "chat" : "sessions"] = false;
      }
      return { panels: next };
    }),
  setView: (center, zoom) => set({ center, zoom }),
  setSelectedFeature: (selectedFeature) => set({ selectedFeature }),
  setDraw: (draw) => set({ draw }),
  setDrawnGeometry: (drawnGeometry) => set({ drawnGeometry }),
  clearSelection: () => set({ selectedFeature: null, drawnGeometry: null, draw: idleDraw }),
  setBasemap: (basemap) => set({ basemap }),
  upsertOverlay: (overlay) =>
    set((s) => ({ overlays: [...s.overlays.filter((o) => o.id !== overlay.id), overlay] })),
  removeOverlay: (id) => set((s) => ({ overlays: s.overlays.filter((o) => o.id !== id) })),
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
