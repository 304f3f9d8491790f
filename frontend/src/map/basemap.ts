import type { StyleSpecification } from "maplibre-gl";
import type { Feature, FeatureCollection } from "geojson";
import { feature } from "topojson-client";
import type { GeometryCollection, Topology } from "topojson-specification";
import countriesUrl from "world-atlas/countries-50m.json?url";
import { fixAntimeridian } from "./antimeridian";

export type OfflineVariant = "light" | "dark" | "satellite";

/** Raster collection from the product's own tile server drawn under the borders. */
export const BASEMAP_RASTER_COLLECTION = "global-land-mask";

export const COUNTRIES_SOURCE = "countries";
export const COUNTRIES_FILL_LAYER = "countries-fill";

interface Palette {
  water: string;
  land: string;
  border: string;
  rasterOpacity: number;
}

const PALETTES: Record<OfflineVariant, Palette> = {
  light: { water: "#cfe3ef", land: "#f3efe6", border: "#8c8577", rasterOpacity: 0.25 },
  dark: { water: "#14202c", land: "#2a323c", border: "#7d8a99", rasterOpacity: 0.2 },
  satellite: { water: "#0d2b45", land: "#3d5a36", border: "#d8d2b0", rasterOpacity: 0.45 },
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
}

let countriesPromise: Promise<Countries> | null = null;

/** Natural Earth 1:50m country outlines, bundled with the app (npm world-atlas). */
export function loadCountries(fetchFn: typeof fetch = fetch): Promise<Countries> {
  countriesPromise ??= fetchFn(countriesUrl)
    .then((resp) => {
      if (!resp.ok) throw new Error(`country outlines: HTTP ${resp.status}`);
      return resp.json() as Promise<Topology<{ countries: GeometryCollection<{ name: string }> }>>;
    })
    .then((topology) => {
      const fc = feature(topology, topology.objects.countries) as FeatureCollection;
      // Stable numeric ids let the map report which country was clicked.
      fc.features.forEach((f, i) => {
        f.properties = { ...(f.properties ?? {}), iso_n3: f.id ?? null, source: "Natural Earth 1:50m" };
        f.id = i + 1;
      });
      const byId = new Map(fc.features.map((f) => [f.id as number, f]));
      return { display: fixAntimeridian(fc), byId };
    })
    .catch((err: unknown) => {
      countriesPromise = null;
      throw err;
    });
  return countriesPromise;
}

/**
 * A style needing no internet: country outlines bundled with the app and the
 * land mask raster served by the product's own tile endpoint. No text labels,
 * since glyphs would need a font server.
 */
export function offlineStyle(
  variant: OfflineVariant,
  baseUrl: string,
  countries: FeatureCollection | null,
): StyleSpecification {
  const p = PALETTES[variant];
  return {
    version: 8,
    name: `stacgis-offline-${variant}`,
    sources: {
      [COUNTRIES_SOURCE]: { type: "geojson", data: countries ?? EMPTY },
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
    ],
  };
}
