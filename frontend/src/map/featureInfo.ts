import type { Feature } from "geojson";
import { formatNumber } from "./identify";

/**
 * What a clicked vector feature says about itself: a title and its properties as rows, for the
 * feature popup. Properties the app adds for its own bookkeeping are left out.
 */

/** Added by the app (which layer was hit, a geometry thinned for the spatial context). */
const BOOKKEEPING = new Set(["layer", "simplified"]);
/** Properties that name a feature, most telling first. */
const NAME_KEYS = ["name", "NAME", "name_en", "title", "label", "id"];
/** A popup is a glance, not a table: longer lists are cut. */
export const MAX_ROWS = 40;
const MAX_TEXT = 200;

export interface FeatureRow {
  key: string;
  value: string;
}

export interface FeatureInfo {
  title: string;
  /** The map layer the feature was drawn by. */
  layer: string | null;
  rows: FeatureRow[];
  /** Properties left out of `rows` beyond MAX_ROWS. */
  more: number;
}

function text(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number") return Number.isFinite(value) ? formatNumber(value) : String(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  const raw = typeof value === "string" ? value : JSON.stringify(value);
  return raw.length > MAX_TEXT ? `${raw.slice(0, MAX_TEXT - 1)}…` : raw;
}

export function featureInfo(feature: Feature): FeatureInfo {
  const properties = feature.properties ?? {};
  const layer = typeof properties.layer === "string" ? properties.layer : null;
  const entries = Object.entries(properties).filter(([key]) => !BOOKKEEPING.has(key));
  const named = NAME_KEYS.map((key) => properties[key]).find(
    (value) => (typeof value === "string" && value.trim() !== "") || typeof value === "number",
  );
  const title = named !== undefined ? String(named) : layer ? `Feature of ${layer}` : "Feature";
  return {
    title,
    layer,
    rows: entries.slice(0, MAX_ROWS).map(([key, value]) => ({ key, value: text(value) })),
    more: Math.max(0, entries.length - MAX_ROWS),
  };
}
