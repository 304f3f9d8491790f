import type { JsonObject } from "@bufbuild/protobuf";
import type { CollectionMeta } from "./collectionMeta";
import type { FrontendToolName } from "./frontendToolNames";
import { colorOf, colorsFor, parseRange, type LegendInfo } from "./legend";

/** The part of maplibre-gl's Map the bridge uses; tests pass a small fake. */
export interface MapLike {
  flyTo(options: { center: [number, number]; zoom?: number; essential?: boolean }): unknown;
  fitBounds(
    bounds: [[number, number], [number, number]],
    options?: { padding?: number; maxZoom?: number; essential?: boolean },
  ): unknown;
  getCenter(): { lng: number; lat: number };
  getZoom(): number;
  getBounds(): { getWest(): number; getSouth(): number; getEast(): number; getNorth(): number };
  addSource(id: string, source: RasterSource): unknown;
  getSource(id: string): unknown;
  removeSource(id: string): unknown;
  addLayer(layer: RasterLayer, beforeId?: string): unknown;
  getLayer(id: string): unknown;
  removeLayer(id: string): unknown;
}

export interface RasterSource {
  type: "raster";
  tiles: string[];
  tileSize: number;
  bounds?: [number, number, number, number];
  minzoom?: number;
  maxzoom?: number;
  attribution?: string;
}

export interface RasterLayer {
  id: string;
  type: "raster";
  source: string;
  paint: { "raster-opacity": number };
  layout?: { visibility: "visible" | "none" };
}

/** A raster layer on the map, kept so it survives a basemap change. */
export interface RasterOverlay {
  id: string;
  source: RasterSource;
  layer: RasterLayer;
  legend: LegendInfo;
  /** Who put it there: the agent (`visualize_collection`) or the user (the layers panel). */
  origin: "agent" | "user";
  visible: boolean;
  /** 0..1 */
  opacity: number;
}

/** Opacity of a new raster layer. */
export const DEFAULT_OVERLAY_OPACITY = 0.85;

export type PanelName = "chat" | "sessions" | "activity" | "legend" | "layers";

export type BasemapChoice = "light" | "dark" | "satellite" | { url: string };

export interface BridgeEnv {
  map: MapLike;
  /** GET a JSON document (the TileJSON). */
  fetchJson: (url: string) => Promise<unknown>;
  /** Absolute URL of the page, to resolve tile URLs against. */
  baseUrl: string;
  setBasemap: (choice: BasemapChoice) => void;
  setPanel: (panel: PanelName, open: boolean | undefined) => void;
  /** The overlay was put on the map (record it for the legend and for style changes). */
  onOverlay: (overlay: RasterOverlay) => void;
  /** Layers that must stay above raster overlays (drawing, selection). */
  overlayBeforeId?: () => string | undefined;
  /** [west, south, east, north] of the part of the map not covered by a panel; the whole map if absent. */
  visibleView?: () => [number, number, number, number];
  /** Who asks for layers through this bridge (default: the agent). */
  origin?: "agent" | "user";
  /** What the conversation's tool results say about a collection (units, classes, render defaults). */
  metadata?: (collectionId: string) => CollectionMeta | undefined;
}

export interface BridgeResult {
  ok: boolean;
  message: string;
}

export class BridgeError extends Error {}

function num(args: JsonObject, names: string[]): number | undefined {
  for (const name of names) {
    const v = args[name];
    if (v === undefined || v === null || v === "") continue;
    const n = typeof v === "number" ? v : typeof v === "string" ? Number(v) : NaN;
    if (!Number.isFinite(n)) throw new BridgeError(`${name} must be a number, got ${JSON.stringify(v)}`);
    return n;
  }
  return undefined;
}

function zoomTo(args: JsonObject, env: BridgeEnv): BridgeResult {
  const lat = num(args, ["lat", "latitude"]);
  const lon = num(args, ["lon", "lng", "longitude"]);
  if (lat === undefined) throw new BridgeError("lat is required");
  if (lon === undefined) throw new BridgeError("lon is required");
  if (lat < -90 || lat > 90) throw new BridgeError(`lat must be between -90 and 90, got ${lat}`);
  if (lon < -180 || lon > 180) throw new BridgeError(`lon must be between -180 and 180, got ${lon}`);
  const zoom = Math.min(Math.max(num(args, ["zoom"]) ?? 10, 0), 22);
  env.map.flyTo({ center: [lon, lat], zoom, essential: true });
  return { ok: true, message: `Moved the map to ${lat.toFixed(4)}, ${lon.toFixed(4)} (zoom ${zoom})` };
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function rescaleParam(value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  const range = parseRange(value);
  if (!range) throw new BridgeError(`rescale must be [min, max], got ${JSON.stringify(value)}`);
  return `${range[0]},${range[1]}`;
}

function absoluteHttpUrl(raw: unknown, base: string): string | null {
  if (typeof raw !== "string") return null;
  try {
    const url = new URL(raw, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.toString() : null;
  } catch {
    return null;
  }
}

function boundsOf(value: unknown): [number, number, number, number] | undefined {
  if (!Array.isArray(value) || value.length !== 4 || !value.every((v) => typeof v === "number" && Number.isFinite(v))) {
    return undefined;
  }
  return value as [number, number, number, number];
}

/** Template URLs like `.../{z}/{x}/{y}.png` must not be percent-encoded by URL(). */
function keepTemplate(url: string): string {
  return url.replace(/%7B/gi, "{").replace(/%7D/gi, "}");
}

/**
 * Move to the data when the view is not on it, or when it would be a speck in
 * the view; leave a view already looking at it alone.
 */
export function needsFit(view: [number, number, number, number], data: [number, number, number, number]): boolean {
  const cx = (view[0] + view[2]) / 2;
  const cy = (view[1] + view[3]) / 2;
  const centred = cx >= data[0] && cx <= data[2] && cy >= data[1] && cy <= data[3];
  if (!centred) return true;
  const small = data[2] - data[0] < 0.25 * (view[2] - view[0]) && data[3] - data[1] < 0.25 * (view[3] - view[1]);
  return small;
}

// What the tile server's expression grammar and periods can hold (raster-tools expressions.py).
const EXPRESSION = /^[A-Za-z0-9_ .+*/()-]{1,200}$/;
const DATETIME = /^[0-9TZ:/.-]{1,64}$/;

function optionalText(args: JsonObject, key: string, allowed: RegExp): string | null {
  const value = args[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || !allowed.test(value.trim())) {
    throw new BridgeError(`${key} is not a valid ${key}: ${JSON.stringify(value)}`);
  }
  return value.trim();
}

export function overlayId(collectionId: string): string {
  return `raster:${collectionId}`;
}

async function visualize(args: JsonObject, env: BridgeEnv): Promise<BridgeResult> {
  const collectionId = args.collection_id ?? args.collection;
  if (typeof collectionId !== "string" || !SAFE_ID.test(collectionId)) {
    throw new BridgeError(`collection_id must be a collection name, got ${JSON.stringify(collectionId ?? null)}`);
  }
  const colormap = args.colormap;
  if (colormap !== undefined && colormap !== null && (typeof colormap !== "string" || !SAFE_ID.test(colormap))) {
    throw new BridgeError(`colormap must be a colormap name, got ${JSON.stringify(colormap)}`);
  }
  const rescale = rescaleParam(args.rescale);
  const expression = optionalText(args, "expression", EXPRESSION);
  const datetime = optionalText(args, "datetime", DATETIME);
  const params = new URLSearchParams();
  // Tile server convention (titiler, raster-tools): a named colormap is `colormap_name`.
  if (typeof colormap === "string") params.set("colormap_name", colormap);
  if (rescale) params.set("rescale", rescale);
  // Scene collections and cubes: the band math and the period the mosaic shows.
  if (expression) params.set("expression", expression);
  if (datetime) params.set("datetime", datetime);
  const query = params.toString();
  const tilejsonUrl = new URL(
    `/tiles/${encodeURIComponent(collectionId)}/tilejson.json${query ? `?${query}` : ""}`,
    env.baseUrl,
  ).toString();

  let tilejson: Record<string, unknown>;
  try {
    const body = await env.fetchJson(tilejsonUrl);
    if (!body || typeof body !== "object") throw new Error("not a JSON object");
    tilejson = body as Record<string, unknown>;
  } catch (err) {
    throw new BridgeError(`No tiles for ${collectionId}: ${(err as Error).message}`);
  }
  const tiles = Array.isArray(tilejson.tiles)
    ? tilejson.tiles.map((t) => absoluteHttpUrl(t, tilejsonUrl)).filter((t): t is string => t !== null)
    : [];
  if (tiles.length === 0) throw new BridgeError(`The TileJSON of ${collectionId} lists no tile URL`);

  const bounds = boundsOf(tilejson.bounds);
  const minzoom = typeof tilejson.minzoom === "number" ? tilejson.minzoom : undefined;
  const maxzoom = typeof tilejson.maxzoom === "number" ? tilejson.maxzoom : undefined;
  const source: RasterSource = {
    type: "raster",
    tiles: tiles.map(keepTemplate),
    tileSize: typeof tilejson.tileSize === "number" ? tilejson.tileSize : 256,
    ...(bounds ? { bounds } : {}),
    ...(minzoom !== undefined ? { minzoom } : {}),
    ...(maxzoom !== undefined ? { maxzoom } : {}),
    ...(typeof tilejson.attribution === "string" ? { attribution: tilejson.attribution } : {}),
  };
  const id = overlayId(collectionId);
  const layer: RasterLayer = { id, type: "raster", source: id, paint: { "raster-opacity": DEFAULT_OVERLAY_OPACITY } };

  // The legend: the call's own choices first, then the TileJSON, then what the conversation's
  // tool results said about the collection (units, classes, render defaults).
  const meta = env.metadata?.(collectionId);
  const tableColormap = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? v : null);
  const colormapTable = tableColormap(tilejson.colormap) ?? meta?.colormap ?? null;
  const { name, colors } = colorsFor(
    colormap ?? tilejson.colormap_name ?? tilejson.colormap ?? meta?.colormapName ?? meta?.colormap ?? null,
  );
  const text = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : null);
  const categorical = meta?.kind === "categorical" || (meta?.classes.length ?? 0) > 0;
  const legend: LegendInfo = {
    collectionId,
    title: text(tilejson.description) ?? meta?.title ?? text(tilejson.name) ?? collectionId,
    colors: categorical ? [] : colors,
    colormapName: name,
    range: categorical ? null : (parseRange(args.rescale) ?? parseRange(tilejson.rescale) ?? meta?.rescale ?? null),
    units: text(tilejson.units) ?? (meta && meta.units.length === 1 ? meta.units[0] : null),
    classes: (meta?.classes ?? []).map((c) => ({ ...c, color: colorOf(colormapTable, c.value) })),
  };

  const { map } = env;
  // Replacing a layer (new colormap or range) means a new source too.
  if (map.getLayer(id)) map.removeLayer(id);
  if (map.getSource(id)) map.removeSource(id);
  map.addSource(id, source);
  map.addLayer(layer, env.overlayBeforeId?.());
  env.onOverlay({ id, source, layer, legend, origin: env.origin ?? "agent", visible: true, opacity: DEFAULT_OVERLAY_OPACITY });

  const lat = num(args, ["lat"]);
  const lon = num(args, ["lon"]);
  if (lat !== undefined && lon !== undefined && Math.abs(lat) <= 90 && Math.abs(lon) <= 180) {
    // The agent named a place (resolved to a view by the orchestrator): show the layer there.
    const zoom = Math.min(Math.max(num(args, ["zoom"]) ?? 10, 0), 22);
    map.flyTo({ center: [lon, lat], zoom, essential: true });
  } else if (bounds) {
    const v = map.getBounds();
    const view = env.visibleView?.() ?? [v.getWest(), v.getSouth(), v.getEast(), v.getNorth()];
    if (needsFit(view, bounds)) {
      map.fitBounds(
        [
          [bounds[0], bounds[1]],
          [bounds[2], bounds[3]],
        ],
        { padding: 40, essential: true, ...(maxzoom !== undefined ? { maxZoom: maxzoom } : {}) },
      );
    }
  }
  return { ok: true, message: `Showing ${legend.title} on the map` };
}

function mapStyle(args: JsonObject, env: BridgeEnv): BridgeResult {
  const style = args.style ?? args.name;
  if (typeof style !== "string" || !style) throw new BridgeError("style is required");
  const key = style.toLowerCase();
  if (key === "light" || key === "dark" || key === "satellite") {
    env.setBasemap(key);
    return { ok: true, message: `Basemap set to ${key}` };
  }
  const url = absoluteHttpUrl(style, env.baseUrl);
  if (!url || !/^https?:\/\//i.test(style)) {
    throw new BridgeError(`style must be light, dark, satellite or an http(s) style URL, got ${JSON.stringify(style)}`);
  }
  env.setBasemap({ url });
  return { ok: true, message: `Basemap set to ${url}` };
}

const PANEL_ALIASES: Record<string, PanelName> = {
  chat: "chat",
  conversation: "chat",
  sessions: "sessions",
  sidebar: "sessions",
  history: "sessions",
  activity: "activity",
  feed: "activity",
  legend: "legend",
  layers: "layers",
};

function togglePanel(args: JsonObject, env: BridgeEnv): BridgeResult {
  const raw = args.panel;
  const panel = typeof raw === "string" ? PANEL_ALIASES[raw.toLowerCase()] : undefined;
  if (!panel) {
    throw new BridgeError(
      `panel must be one of ${Object.keys(PANEL_ALIASES).join(", ")}, got ${JSON.stringify(raw ?? null)}`,
    );
  }
  const open = args.open;
  if (open !== undefined && open !== null && typeof open !== "boolean") {
    throw new BridgeError(`open must be true or false, got ${JSON.stringify(open)}`);
  }
  env.setPanel(panel, typeof open === "boolean" ? open : undefined);
  return { ok: true, message: `${panel} panel ${open === undefined || open === null ? "toggled" : open ? "opened" : "closed"}` };
}

/**
 * One handler per frontend tool the orchestrator offers (the names are generated from its list, so a
 * tool added there and not here fails the type check). Charts are drawn by the conversation itself;
 * here generate_chart only makes sure the chat is visible.
 */
const HANDLERS: Record<FrontendToolName, (args: JsonObject, env: BridgeEnv) => BridgeResult | Promise<BridgeResult>> = {
  zoom_to_location: zoomTo,
  visualize_collection: visualize,
  set_map_style: mapStyle,
  toggle_ui_panel: togglePanel,
  generate_chart: (_args, env) => {
    env.setPanel("chat", true);
    return { ok: true, message: "Chart shown in the conversation" };
  },
};

function isFrontendTool(name: string): name is FrontendToolName {
  return Object.hasOwn(HANDLERS, name);
}

/** Carries out one frontend-tool event on the map and the UI. */
export async function applyFrontendTool(name: string, args: JsonObject | undefined, env: BridgeEnv): Promise<BridgeResult> {
  if (!isFrontendTool(name)) return { ok: false, message: `Unknown map command ${name}` };
  try {
    return await HANDLERS[name](args ?? {}, env);
  } catch (err) {
    if (err instanceof BridgeError) return { ok: false, message: err.message };
    throw err;
  }
}
