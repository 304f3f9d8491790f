import type { Map as MapLibreMap } from "maplibre-gl";

declare global {
  interface Window {
    /** The app's map (see src/map/mapRegistry.ts). */
    __stacgisMap?: MapLibreMap;
    /** Content-Security-Policy violations seen since the page loaded (see e2e/support.ts). */
    __cspViolations?: string[];
  }
}

export {};
