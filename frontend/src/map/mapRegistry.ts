import type { Map as MapLibreMap } from "maplibre-gl";

declare global {
  interface Window {
    /** The live map, exposed so browser tests can read its centre and layers. */
    __stacgisMap?: MapLibreMap;
  }
}

let current: MapLibreMap | null = null;
let waiters: ((map: MapLibreMap) => void)[] = [];

/** Called by the map view once the map and its style have loaded. */
export function registerMap(map: MapLibreMap): void {
  current = map;
  window.__stacgisMap = map;
  const pending = waiters;
  waiters = [];
  pending.forEach((resolve) => resolve(map));
}

export function unregisterMap(map: MapLibreMap): void {
  if (current !== map) return;
  current = null;
  if (window.__stacgisMap === map) delete window.__stacgisMap;
}

/** Resolves with the map as soon as it is ready (map commands may arrive before). */
export function whenMapReady(): Promise<MapLibreMap> {
  if (current) return Promise.resolve(current);
  return new Promise((resolve) => waiters.push(resolve));
}
