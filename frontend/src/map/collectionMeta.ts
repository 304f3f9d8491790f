import type { UiMessage } from "../state/chatTypes";
import { parseRange } from "./legend";

/** What the conversation's tool results say about a raster collection, for its legend and the catalog picker. */
export interface CollectionMeta {
  id: string;
  title: string | null;
  units: string[];
  kind: "categorical" | "continuous" | null;
  /** The render defaults' range and colormap (get_raster_info). */
  rescale: [number, number] | null;
  colormapName: string | null;
  colormap: Record<string, unknown> | null;
  /** Class names of categorical data, by value. */
  classes: { value: number; label: string }[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" && v.trim() ? v.trim() : null);

function parse(result: string | undefined): Json | null {
  if (!result) return null;
  try {
    const value: unknown = JSON.parse(result);
    return isObject(value) ? value : null;
  } catch {
    return null; // shortened or not JSON
  }
}

function empty(id: string): CollectionMeta {
  return { id, title: null, units: [], kind: null, rescale: null, colormapName: null, colormap: null, classes: [] };
}

function merge(into: Map<string, CollectionMeta>, id: string, patch: Partial<CollectionMeta>): void {
  const base = into.get(id) ?? empty(id);
  const defined = Object.fromEntries(
    Object.entries(patch).filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0)),
  );
  into.set(id, { ...base, ...defined });
}

function fromSummary(entry: Json): Partial<CollectionMeta> {
  const kind = entry.kind === "categorical" || entry.kind === "continuous" ? entry.kind : null;
  const units = Array.isArray(entry.units) ? entry.units.filter((u): u is string => typeof u === "string" && u !== "") : [];
  return { title: str(entry.title), units, kind };
}

function fromInfo(info: Json): Partial<CollectionMeta> {
  const bands = Array.isArray(info.bands) ? info.bands.filter(isObject) : [];
  const units = [...new Set(bands.map((b) => str(b.unit)).filter((u): u is string => u !== null))];
  const first = bands[0];
  const classes = first && isObject(first.classes)
    ? Object.entries(first.classes)
        .map(([k, v]) => ({ value: Number(k), label: String(v) }))
        .filter((c) => Number.isFinite(c.value))
        .sort((a, b) => a.value - b.value)
    : [];
  const render = isObject(info.render_defaults) ? info.render_defaults : {};
  return {
    ...fromSummary(info),
    units,
    rescale: parseRange(render.rescale),
    colormapName: str(render.colormap_name),
    colormap: isObject(render.colormap) ? render.colormap : null,
    classes,
  };
}

const LISTINGS = new Set(["list_raster_collections", "search_raster_collections"]);

/** Every collection the conversation's tool calls named or described, by id. */
export function collectionsFromMessages(messages: UiMessage[]): Map<string, CollectionMeta> {
  const out = new Map<string, CollectionMeta>();
  for (const message of messages) {
    for (const a of message.activities) {
      if ((a.kind !== "tool" && a.kind !== "frontend") || !a.toolName) continue;
      const named = a.arguments?.collection_id;
      if (typeof named === "string" && named) merge(out, named, {});
      if (a.status !== "ok") continue;
      const result = parse(a.result);
      if (!result) continue;
      if (LISTINGS.has(a.toolName) && Array.isArray(result.collections)) {
        for (const entry of result.collections.filter(isObject)) {
          const id = str(entry.id);
          if (id) merge(out, id, fromSummary(entry));
        }
      } else if (a.toolName === "get_raster_info") {
        const id = str(result.id) ?? (typeof named === "string" ? named : null);
        if (id) merge(out, id, fromInfo(result));
      }
    }
  }
  return out;
}
