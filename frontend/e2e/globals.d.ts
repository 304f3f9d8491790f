import type { Map as MapLibreMap } from "maplibre-gl";

declare global {
  interface Window {
    /** The app's map (see src/map/mapRegistry.ts). */
    __stacgisMap?: MapLibreMap;
  }
}

export {};
