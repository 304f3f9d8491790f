import { readErrorBody } from "../api/errors";
import type { RasterOverlay } from "./mapBridge";

/**
 * Identify: the value(s) of the top visible raster layer where the map was clicked, from the
 * tile server's public `GET /tiles/{collection_id}/point?lon=..&lat=..` (beside the tiles, with
 * the tiles' own `datetime` and `expression`, so the value is the one the layer shows).
 */

/** Query parameters of a layer's tile URL that choose what the value is of. */
const CARRIED = ["datetime", "expression"] as const;

export interface IdentifyTarget {
  collectionId: string;
  title: string;
  /** The layer's time step or expression, from its tile URL. */
  params: Record<string, string>;
}

export interface IdentifyLine {
  /** Band name (or the expression). */
  label: string;
  /** The value with its unit, or its class ("42: Evergreen forest"), or "no data". */
  text: string;
}

export interface IdentifyResult {
  title: string;
  collectionId: string;
  lines: IdentifyLine[];
  /** Item and time step the value came from, when the server said. */
  source: string | null;
  /** "no data here: ..." when the point is outside the data or at a nodata pixel. */
  note: string | null;
  /** Where the value is: the pixel centre, else the clicked point. */
  lng: number;
  lat: number;
}

/** The top visible raster layer (overlays are kept bottom to top), or null when none is on. */
export function identifyTarget(overlays: readonly RasterOverlay[]): IdentifyTarget | null {
  for (let i = overlays.length - 1; i >= 0; i--) {
    const overlay = overlays[i];
    if (!overlay.visible || overlay.opacity <= 0) continue;
    const params: Record<string, string> = {};
    const template = overlay.source.tiles[0];
    if (template) {
      try {
        const query = new URL(template.replace(/\{[xyz]\}/g, "0"), "http://localhost/").searchParams;
        for (const name of CARRIED) {
          const value = query.get(name);
          if (value) params[name] = value;
        }
      } catch {
        // A tile URL that does not parse carries nothing.
      }
    }
    return { collectionId: overlay.legend.collectionId, title: overlay.legend.title, params };
  }
  return null;
}

/** The endpoint's URL (same origin, like the tiles). */
export function identifyUrl(target: IdentifyTarget, lng: number, lat: number): string {
  const query = new URLSearchParams({ lon: lng.toFixed(6), lat: lat.toFixed(6), ...target.params });
  return `/tiles/${encodeURIComponent(target.collectionId)}/point?${query.toString()}`;
}

/** A number as people read it: at most 4 significant decimals, no trailing zeros. */
export function formatNumber(value: number): string {
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs >= 1000 ? 1 : abs >= 1 ? 2 : 4;
  return String(Number(value.toFixed(digits)));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The endpoint's JSON as lines to show; throws on a body that is not one. */
export function parseIdentify(body: unknown, target: IdentifyTarget, lng: number, lat: number): IdentifyResult {
  if (!isRecord(body)) throw new Error("the answer is not a JSON object");
  const lines: IdentifyLine[] = [];
  for (const entry of Array.isArray(body.values) ? body.values : []) {
    if (!isRecord(entry)) continue;
    const label = typeof entry.band === "string" && entry.band ? entry.band : "value";
    const value = entry.value;
    const unit = typeof entry.unit === "string" && entry.unit ? ` ${entry.unit}` : "";
    let text = "no data";
    if (typeof entry.class === "string") text = `${String(value)}: ${entry.class}`;
    else if (typeof value === "number") text = `${formatNumber(value)}${unit}`;
    lines.push({ label, text });
  }
  const centre = Array.isArray(body.pixel_center) && body.pixel_center.length === 2 ? body.pixel_center : null;
  const [x, y] = centre && centre.every((v) => typeof v === "number") ? (centre as [number, number]) : [lng, lat];
  const item = typeof body.item === "string" ? body.item : null;
  const time = typeof body.time === "string" ? body.time : null;
  const source = [time ? `time ${time}` : null, item ? `item ${item}` : null].filter(Boolean).join(", ") || null;
  return {
    title: typeof body.title === "string" && body.title ? body.title : target.title,
    collectionId: typeof body.collection_id === "string" ? body.collection_id : target.collectionId,
    lines,
    source,
    note: typeof body.note === "string" ? body.note : null,
    lng: x,
    lat: y,
  };
}

/** A failed answer in words: the server's own message when it gave one. */
export function identifyError(status: number, body: unknown): string {
  // The tile server's error body: {field, message, code}, the one body of every API here.
  const message = readErrorBody(body)?.message ?? null;
  if (status === 504) return "The value took too long to read; try again or zoom in.";
  if (message) return message;
  if (status === 404) return "This layer's collection is not known to the tile server.";
  return `The value could not be read (HTTP ${status}).`;
}
