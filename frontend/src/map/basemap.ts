import type { StyleSpecification } from "maplibre-gl";
import type { Feature, FeatureCollection, Point, Position } from "geojson";
import latinFontUrl from "@fontsource/noto-sans/files/noto-sans-latin-400-normal.woff2?url";
import latinExtFontUrl from "@fontsource/noto-sans/files/noto-sans-latin-ext-400-normal.woff2?url";
import polylabel from "polylabel";
import { feature } from "topojson-client";
import type { GeometryCollection, Topology } from "topojson-specification";
import countriesUrl from "world-atlas/countries-50m.json?url";
import { fixAntimeridian } from "./antimeridian";
import { CITY_DOT_IMAGE, CITY_LABELS_LAYER, CITY_LABELS_MIN_ZOOM, CITY_LABELS_SOURCE } from "./cityLabels";

export type OfflineVariant = "light" | "dark" | "satellite";

/** Raster collection from the product's own tile server drawn under the borders. */
export const BASEMAP_RASTER_COLLECTION = "global-land-mask";

export const COUNTRIES_SOURCE = "countries";
export const COUNTRIES_FILL_LAYER = "countries-fill";
export const COUNTRY_LABELS_SOURCE = "country-labels";
export const COUNTRY_LABELS_LAYER = "country-labels";

/**
 * Labels are drawn in the browser from a font file bundled with the app (style `font-faces`, Noto
 * Sans from npm @fontsource), so the offline maps need no glyph server. Ranges as in the font's CSS.
 */
export const LABEL_FONT = "Noto Sans Regular";
const LABEL_FONT_FACES = {
  [LABEL_FONT]: [
    {
      url: latinFontUrl,
      "unicode-range": ["U+0000-00FF", "U+0131", "U+0152-0153", "U+02BB-02BC", "U+02C6", "U+02DA", "U+02DC", "U+2000-206F", "U+20AC", "U+2122", "U+2212", "U+FEFF", "U+FFFD"],
    },
    {
      url: latinExtFontUrl,
      "unicode-range": ["U+0100-0130", "U+0132-0151", "U+0154-02BA", "U+02BD-02C5", "U+02C7-02CC", "U+02CE-02D7", "U+02DD-02FF", "U+0304", "U+0308", "U+1E00-1E9F", "U+1EF2-1EFF", "U+A720-A7FF"],
    },
  ],
};

interface Palette {
  water: string;
  land: string;
  border: string;
  label: string;
  halo: string;
  rasterOpacity: number;
}

const PALETTES: Record<OfflineVariant, Palette> = {
  light: { water: "#cfe3ef", land: "#f3efe6", border: "#8c8577", label: "#3d3a33", halo: "#f3efe6", rasterOpacity: 0.25 },
  dark: { water: "#14202c", land: "#2a323c", border: "#7d8a99", label: "#e4e8ee", halo: "#1b232c", rasterOpacity: 0.2 },
  satellite: { water: "#0d2b45", land: "#3d5a36", border: "#d8d2b0", label: "#f6f3e4", halo: "#22331f", rasterOpacity: 0.45 },
};

/** A satellite imagery style, when the deployment has one; without it "satellite" is the green offline map. */
export const SATELLITE_STYLE_URL = (import.meta.env.VITE_SATELLITE_STYLE_URL as string | undefined) || null;

/**
 * What each basemap is called in the picker. The offline maps are flat colours
 * under country outlines, and are named for that: only real imagery is "Satellite".
 */
export function basemapLabel(variant: OfflineVariant, satelliteImagery: boolean = SATELLITE_STYLE_URL !== null): string {
  switch (variant) {
    case "light":
      return "Light outlines";
    case "dark":
      return "Dark outlines";
    case "satellite":
      return satelliteImagery ? "Satellite imagery" : "Green outlines";
  }
}

const EMPTY: FeatureCollection = { type: "FeatureCollection", features: [] };

export interface Countries {
  /** Outlines for drawing on the flat map (rings unwrapped across the antimeridian). */
  display: FeatureCollection;
  /** The same countries in plain WGS84, by feature id, for the spatial context. */
  byId: Map<number, Feature>;
  /** One point per named country, inside its largest part, for its name on the map. */
  labels: FeatureCollection<Point>;
}

/** Area of a ring in square degrees (shoelace): only to rank a country's parts and countries. */
function ringArea(ring: Position[]): number {
  let sum = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) sum += (ring[j][0] - ring[i][0]) * (ring[j][1] + ring[i][1]);
  return Math.abs(sum / 2);
}

/**
 * From which zoom a country's name is shown: small countries wait until there is room, since names
 * from different tiles do not compete by size (Luxembourg would otherwise push Belgium out at zoom 3).
 */
function labelMinZoom(area: number): number {
  if (area >= 30) return 0;
  if (area >= 3) return 2;
  if (area >= 0.3) return 4;
  return 5;
}

/**
 * Where a country's name goes: the point of its largest part farthest from that part's edges
 * (polylabel), so a name sits inside the country even for shapes like Chile's or Norway's. Bigger
 * countries get a lower sort key: where names collide, theirs is kept.
 */
export function countryLabels(countries: FeatureCollection): FeatureCollection<Point> {
  const features: Feature<Point>[] = [];
  for (const country of countries.features) {
    const name = country.properties?.name as string | undefined;
    const geometry = country.geometry;
    if (!name || !geometry || (geometry.type !== "Polygon" && geometry.type !== "MultiPolygon")) continue;
    const parts = geometry.type === "Polygon" ? [geometry.coordinates] : geometry.coordinates;
    const largest = parts.reduce((best, part) => (ringArea(part[0]) > ringArea(best[0]) ? part : best));
    // Precision a fiftieth of the part's size: tight enough for Monaco, cheap for Russia.
    const [x, y] = polylabel(largest as [number, number][][], Math.sqrt(ringArea(largest[0])) / 50);
    const lon = ((((x + 180) % 360) + 360) % 360) - 180;
    const area = parts.reduce((sum, part) => sum + ringArea(part[0]), 0);
    features.push({
      type: "Feature",
      id: country.id,
      geometry: { type: "Point", coordinates: [lon, y] },
      properties: { name, area, sort: -area, minzoom: labelMinZoom(area) },
    });
  }
  return { type: "FeatureCollection", features };
}

let countriesPromise: Promise<Countries> | null = null;

type CountryTopology = Topology<{ countries: GeometryCollection<{ name: string }> }>;

export function countriesFrom(topology: CountryTopology): Countries {
  const fc = feature(topology, topology.objects.countries) as FeatureCollection;
  // Stable numeric ids let the map report which country was clicked (several have no ISO code).
  fc.features.forEach((f, i) => {
    f.properties = { ...(f.properties ?? {}), iso_n3: f.id ?? null, source: "Natural Earth 1:50m" };
    f.id = i + 1;
  });
  const byId = new Map(fc.features.map((f) => [f.id as number, f]));
  const display = fixAntimeridian(fc);
  return { display, byId, labels: countryLabels(display) };
}

/** Natural Earth 1:50m country outlines, bundled with the app (npm world-atlas). */
export function loadCountries(fetchFn: typeof fetch = fetch): Promise<Countries> {
  countriesPromise ??= fetchFn(countriesUrl)
    .then((resp) => {
      if (!resp.ok) throw new Error(`country outlines: HTTP ${resp.status}`);
      return resp.json() as Promise<CountryTopology>;
    })
    .then(countriesFrom)
    .catch((err: unknown) => {
      countriesPromise = null;
      throw err;
    });
  return countriesPromise;
}

/**
 * A style needing no internet: country outlines and names bundled with the app and the
 * land mask raster served by the product's own tile endpoint.
 */
export function offlineStyle(
  variant: OfflineVariant,
  baseUrl: string,
  countries: Pick<Countries, "display" | "labels"> | null,
): StyleSpecification {
  const p = PALETTES[variant];
  return {
    version: 8,
    name: `stacgis-offline-${variant}`,
    "font-faces": LABEL_FONT_FACES,
    sources: {
      [COUNTRIES_SOURCE]: { type: "geojson", data: countries?.display ?? EMPTY },
      [COUNTRY_LABELS_SOURCE]: { type: "geojson", data: countries?.labels ?? EMPTY },
      // Filled after each move with the view's largest cities (cityLabels.ts).
      [CITY_LABELS_SOURCE]: { type: "geojson", data: EMPTY },
      "land-mask": {
        type: "raster",
        url: new URL(`/tiles/${BASEMAP_RASTER_COLLECTION}/tilejson.json`, baseUrl).toString(),
        tileSize: 256,
      },
    },
    layers: [
      { id: "background", type: "background", paint: { "background-color": p.water } },
      {
        id: COUNTRIES_FILL_LAYER,
        type: "fill",
        source: COUNTRIES_SOURCE,
        paint: { "fill-color": p.land, "fill-opacity": 1 },
      },
      {
        id: "land-mask",
        type: "raster",
        source: "land-mask",
        paint: { "raster-opacity": p.rasterOpacity },
      },
      {
        id: "countries-line",
        type: "line",
        source: COUNTRIES_SOURCE,
        paint: { "line-color": p.border, "line-width": ["interpolate", ["linear"], ["zoom"], 1, 0.4, 6, 1.2] },
      },
      {
        // Under the country names (a later symbol layer is placed first); bigger cities win collisions.
        id: CITY_LABELS_LAYER,
        type: "symbol",
        source: CITY_LABELS_SOURCE,
        minzoom: CITY_LABELS_MIN_ZOOM,
        layout: {
          "symbol-sort-key": ["get", "sort"],
          "icon-image": CITY_DOT_IMAGE,
          "text-field": ["get", "name"],
          "text-font": [LABEL_FONT],
          "text-size": ["step", ["get", "population"], 11, 1_000_000, 12.5, 5_000_000, 14],
          "text-variable-anchor": ["left", "right", "top", "bottom"],
          "text-radial-offset": 0.5,
          "text-justify": "auto",
          "text-max-width": 8,
          "text-padding": 3,
        },
        paint: {
          "icon-color": p.label,
          "icon-halo-color": p.halo,
          "icon-halo-width": 1,
          "text-color": p.label,
          "text-halo-color": p.halo,
          "text-halo-width": 1.2,
          "text-halo-blur": 0.5,
        },
      },
      {
        id: COUNTRY_LABELS_LAYER,
        type: "symbol",
        source: COUNTRY_LABELS_SOURCE,
        filter: [">=", ["zoom"], ["get", "minzoom"]],
        layout: {
          "text-field": ["get", "name"],
          "text-font": [LABEL_FONT],
          "text-size": ["interpolate", ["linear"], ["zoom"], 1, 10, 4, 13, 7, 16],
          "text-max-width": 7,
          "symbol-sort-key": ["get", "sort"],
          "text-padding": 4,
        },
        paint: { "text-color": p.label, "text-halo-color": p.halo, "text-halo-width": 1.4, "text-halo-blur": 0.5 },
      },
    ],
  };
}
