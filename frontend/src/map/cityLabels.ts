import type { Feature, FeatureCollection, Point } from "geojson";
import type { PlaceLabel, PlaceLabels } from "../api/client";

/**
 * City names on the offline basemaps: the most populous cities of the view (GeoNames, from vector-tools
 * through the gateway's GET /places/labels), asked for after each move. The layer itself is in the
 * style (basemap.ts), with the basemap's colours and bundled font.
 */
export const CITY_LABELS_SOURCE = "city-labels";
export const CITY_LABELS_LAYER = "city-labels";
/** The dot beside each name: a signed-distance image, coloured by the layer's paint (icon-color). */
export const CITY_DOT_IMAGE = "city-dot";
/** Below this zoom the map shows only country names, and no city names are asked for. */
export const CITY_LABELS_MIN_ZOOM = 4;
/** Wait after the last move before asking (a scroll zoom ends several moves). */
export const CITY_LABELS_DEBOUNCE_MS = 300;
/** The gateway's most names per request. */
const MAX_LABELS = 250;

export type Box = [west: number, south: number, east: number, north: number];

/** Longitude into [-180, 180). */
function wrapLon(lon: number): number {
  return ((((lon + 180) % 360) + 360) % 360) - 180;
}

/**
 * The box the gateway is asked for: the view's bounds with longitudes wrapped into ±180 (a view over the
 * antimeridian gives west > east, as the endpoint takes it), the whole width when the view spans a turn
 * of the globe, latitudes clamped to ±90.
 */
export function viewBox(west: number, south: number, east: number, north: number): Box {
  const lat = (value: number) => Math.max(-90, Math.min(90, value));
  if (east - west >= 360) return [-180, lat(south), 180, lat(north)];
  const w = wrapLon(west);
  let e = wrapLon(east);
  if (e === -180 && east > west) e = 180; // a view ending exactly at the antimeridian
  const round = (value: number) => Math.round(value * 1e4) / 1e4;
  return [round(w), round(lat(south)), round(e), round(lat(north))];
}

/** How many names to ask for: more as the view closes in and smaller towns get room; none below the minimum zoom. */
export function labelLimit(zoom: number): number {
  if (zoom < CITY_LABELS_MIN_ZOOM) return 0;
  return Math.min(MAX_LABELS, Math.round(40 * (zoom - CITY_LABELS_MIN_ZOOM + 1)));
}

/** The labels as points; the sort key puts larger cities first where names collide. */
export function labelFeatures(labels: PlaceLabel[]): FeatureCollection<Point> {
  const features: Feature<Point>[] = labels.map((label) => ({
    type: "Feature",
    geometry: { type: "Point", coordinates: [label.lon, label.lat] },
    properties: { name: label.name, population: label.population, country: label.country ?? null, sort: -label.population },
  }));
  return { type: "FeatureCollection", features };
}

/**
 * A round dot as a signed-distance image (alpha 0.75 at the edge, 1/8 per pixel, as MapLibre's SDF
 * icons expect), so one image takes each basemap's colour and halo.
 */
export function cityDotImage(size = 24, radius = 5): { width: number; height: number; data: Uint8Array } {
  const data = new Uint8Array(size * size * 4);
  const centre = (size - 1) / 2;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const outside = Math.hypot(x - centre, y - centre) - radius;
      data[(y * size + x) * 4 + 3] = Math.round(255 * Math.max(0, Math.min(1, 0.75 - outside / 8)));
    }
  }
  return { width: size, height: size, data };
}

/** What of maplibre-gl's Map the labels use. */
export interface LabelledMap {
  getZoom(): number;
  getBounds(): { getWest(): number; getSouth(): number; getEast(): number; getNorth(): number };
  getSource(id: string): unknown;
  addImage(id: string, image: { width: number; height: number; data: Uint8Array }, options: { sdf: boolean; pixelRatio: number }): unknown;
  hasImage(id: string): boolean;
  on(type: "moveend" | "style.load", listener: () => void): unknown;
  off(type: "moveend" | "style.load", listener: () => void): unknown;
}

export type FetchLabels = (bbox: Box, limit: number, signal: AbortSignal) => Promise<PlaceLabels>;

const EMPTY: FeatureCollection<Point> = { type: "FeatureCollection", features: [] };

export interface FollowOptions {
  debounceMs?: number;
  /**
   * Subscribes the view's names to be asked again at once, without a move (e.g. when the place names'
   * load ends, as what was asked during it may lack names); returns the unsubscribe.
   */
  refreshOn?: (refresh: () => void) => () => void;
}

/**
 * Keeps the city-labels source filled for the view: after each move (debounced), and at once on each
 * `refreshOn` call, the names of the view's largest cities are asked for, the request before aborted.
 * A failed request (no endpoint, rate limit, place index down) changes nothing: the map simply has
 * fewer names. A style without the source (a configured style URL) is not asked for. Returns the
 * function that stops it.
 */
export function followCityLabels(
  map: LabelledMap,
  fetchLabels: FetchLabels,
  { debounceMs = CITY_LABELS_DEBOUNCE_MS, refreshOn }: FollowOptions = {},
): () => void {
  let shown: FeatureCollection<Point> = EMPTY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending: AbortController | null = null;

  const show = (data: FeatureCollection<Point>) => {
    shown = data;
    (map.getSource(CITY_LABELS_SOURCE) as { setData(data: FeatureCollection): unknown } | undefined)?.setData(data);
  };

  const refresh = () => {
    pending?.abort();
    pending = null;
    if (!map.getSource(CITY_LABELS_SOURCE)) return;
    const limit = labelLimit(map.getZoom());
    if (limit === 0) {
      if (shown.features.length) show(EMPTY);
      return;
    }
    const b = map.getBounds();
    const request = new AbortController();
    pending = request;
    fetchLabels(viewBox(b.getWest(), b.getSouth(), b.getEast(), b.getNorth()), limit, request.signal).then(
      (found) => {
        if (request.signal.aborted) return;
        pending = null;
        show(labelFeatures(found.labels));
      },
      () => {
        if (pending === request) pending = null;
      },
    );
  };

  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, debounceMs);
  };
  // The dot is added before any name needs it: an image added only when MapLibre reports it missing
  // comes too late for the tile that asked, whose names are then drawn without their dot.
  const addDot = () => {
    if (!map.hasImage(CITY_DOT_IMAGE)) map.addImage(CITY_DOT_IMAGE, cityDotImage(), { sdf: true, pixelRatio: 2 });
  };
  // A new style starts without the image and with an empty source: give it both, then ask again.
  const restyled = () => {
    addDot();
    if (shown.features.length) show(shown);
    schedule();
  };

  // At once: a move still in its debounce is covered too, as the view asked for is the one it left.
  const refreshNow = () => {
    clearTimeout(timer);
    refresh();
  };

  map.on("moveend", schedule);
  map.on("style.load", restyled);
  const unsubscribe = refreshOn?.(refreshNow);
  addDot();
  schedule();
  return () => {
    unsubscribe?.();
    clearTimeout(timer);
    pending?.abort();
    map.off("moveend", schedule);
    map.off("style.load", restyled);
  };
}
