import type { Map as MapLibreMap } from "maplibre-gl";

declare global {
  interface Window {
    /** The live map, exposed so browser tests can read its centre and layers. */
    __stacgisMap?: MapLibreMap;
  }
}

let current: MapLibreMap | null = null;
let mapWaiters: ((map: MapLibreMap) => void)[] = [];
let styleLoading = false;
let styleWaiters: (() => void)[] = [];

/** Longest wait for a new basemap style before map commands go ahead anyway. */
const STYLE_WAIT_MS = 10_000;

/** Called by the map view once the map and its style have loaded. */
export function registerMap(map: MapLibreMap): void {
  current = map;
  window.__stacgisMap = map;
  const pending = mapWaiters;
  mapWaiters = [];
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
  return new Promise((resolve) => mapWaiters.push(resolve));
}

/** A basemap change started: sources and layers cannot be added until it has loaded. */
export function markStyleLoading(): void {
  styleLoading = true;
}

export function markStyleLoaded(): void {
  styleLoading = false;
  const pending = styleWaiters;
  styleWaiters = [];
  pending.forEach((resolve) => resolve());
}

/** True between a basemap switch and its style's load (its layers are not there yet). */
export function styleIsLoading(): boolean {
  return styleLoading;
}

export function whenStyleReady(): Promise<void> {
  if (!styleLoading) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, STYLE_WAIT_MS);
    styleWaiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
