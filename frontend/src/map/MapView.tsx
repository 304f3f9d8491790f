import {
  Map as MapLibreMap,
  NavigationControl,
  ScaleControl,
  setWorkerUrl,
  type GeoJSONSource,
  type MapMouseEvent,
  type PointLike,
  type StyleSpecification,
} from "maplibre-gl";
import "maplibre-gl/dist/maplibre-gl.css";
import workerUrl from "maplibre-gl/dist/maplibre-gl-worker.mjs?url";
import type { Feature, FeatureCollection } from "geojson";
import { useCallback, useEffect, useRef, useState } from "react";
import { useUiStore } from "../state/uiStore";
import {
  COUNTRIES_FILL_LAYER,
  COUNTRIES_SOURCE,
  COUNTRY_LABELS_SOURCE,
  loadCountries,
  offlineStyle,
  SATELLITE_STYLE_URL,
  type Countries,
  type OfflineVariant,
} from "./basemap";
import { ApiClient } from "../api/client";
import { followCityLabels } from "./cityLabels";
import { contextFeature } from "./contextGeometry";
import {
  addVertex,
  canFinish,
  drawingFeatures,
  finishDrawing,
  formatLngLat,
  idleDraw,
  startDrawing,
  undoVertex,
} from "./drawing";
import { OVERLAY_ANCHOR_LAYER, overlayBeforeId } from "./frontendTools";
import { cancelIdentify, identifyAt, IdentifyPanel, type IdentifyState } from "./IdentifyPanel";
import { FeaturePanel } from "./FeaturePanel";
import { featureInfo, type FeatureInfo } from "./featureInfo";
import { APP_LAYERS, applyBasemap, layerSpec, readBasemapOpacities, syncOverlays } from "./layerState";
import type { BasemapChoice } from "./mapBridge";
import { markStyleLoaded, markStyleLoading, registerMap, styleIsLoading, unregisterMap } from "./mapRegistry";
import { MapToolbar } from "./MapToolbar";
import { onPlaceLoadEnd } from "./placeLoading";
import { coveredBottom } from "./padding";

// MapLibre looks for its worker beside its own module, which a bundle moves: point it at the emitted file.
setWorkerUrl(new URL(workerUrl, window.location.href).toString());

const CONFIGURED_STYLE_URL = (import.meta.env.VITE_MAP_STYLE_URL as string | undefined) || null;

const EMPTY: FeatureCollection = { type: "FeatureCollection", features: [] };
const api = new ApiClient();

let countriesCache: Countries | null = null;
/** The basemap the map's style was last made from. */
let shownBasemap: BasemapChoice = "light";
/** The current basemap style's own layer opacities (see layerState.ts). */
let basemapOpacities = new Map<string, number>();

function styleFor(choice: BasemapChoice): StyleSpecification | string {
  if (typeof choice === "object") return choice.url;
  if (choice === "satellite" && SATELLITE_STYLE_URL) return SATELLITE_STYLE_URL;
  return offlineStyle(choice as OfflineVariant, window.location.href, countriesCache);
}

/** The layers the app owns on top of any basemap: the user's selection and drawing. */
function addSupportLayers(map: MapLibreMap): void {
  const ui = useUiStore.getState();
  basemapOpacities = readBasemapOpacities(map);
  if (!ui.basemapVisible || ui.basemapOpacity !== 1) applyBasemap(map, basemapOpacities, ui.basemapVisible, ui.basemapOpacity);
  for (const overlay of ui.overlays) {
    if (!map.getSource(overlay.id)) map.addSource(overlay.id, overlay.source);
    if (!map.getLayer(overlay.id)) map.addLayer(layerSpec(overlay), overlayBeforeId(map));
  }
  if (!map.getSource("selection")) {
    map.addSource("selection", { type: "geojson", data: selectionData(ui.selectedFeature) });
  }
  if (!map.getLayer(OVERLAY_ANCHOR_LAYER)) {
    map.addLayer({
      id: OVERLAY_ANCHOR_LAYER,
      type: "fill",
      source: "selection",
      paint: { "fill-color": "#f2a900", "fill-opacity": 0.25 },
    });
    map.addLayer({
      id: "selection-line",
      type: "line",
      source: "selection",
      paint: { "line-color": "#b36b00", "line-width": 2 },
    });
  }
  if (!map.getSource("drawing")) {
    map.addSource("drawing", { type: "geojson", data: drawingFeatures(ui.draw, ui.drawnGeometry) });
    map.addLayer({
      id: "draw-fill",
      type: "fill",
      source: "drawing",
      filter: ["==", ["get", "role"], "area"],
      paint: { "fill-color": "#2f6db5", "fill-opacity": 0.2 },
    });
    map.addLayer({
      id: "draw-line",
      type: "line",
      source: "drawing",
      filter: ["in", ["get", "role"], ["literal", ["area", "line", "sketch"]]],
      paint: { "line-color": "#1d4f8f", "line-width": 2, "line-dasharray": [2, 1] },
    });
    map.addLayer({
      id: "draw-vertex",
      type: "circle",
      source: "drawing",
      filter: ["in", ["get", "role"], ["literal", ["vertex", "point"]]],
      paint: {
        "circle-radius": ["case", ["==", ["get", "role"], "point"], 6, 4],
        "circle-color": ["case", ["==", ["get", "role"], "point"], "#2f6db5", "#ffffff"],
        "circle-stroke-color": "#1d4f8f",
        "circle-stroke-width": 2,
      },
    });
  }
  if (countriesCache) (map.getSource(COUNTRIES_SOURCE) as GeoJSONSource | undefined)?.setData(countriesCache.display);
}

/** Adds the store's layers the map lacks: those put there without the bridge (a conversation's saved map). */
function addMissingOverlays(map: MapLibreMap): void {
  if (styleIsLoading()) return; // the new style's load adds them (addSupportLayers)
  for (const overlay of useUiStore.getState().overlays) {
    if (!map.getSource(overlay.id)) map.addSource(overlay.id, overlay.source);
    if (!map.getLayer(overlay.id)) map.addLayer(layerSpec(overlay), overlayBeforeId(map));
  }
}

/** What the map highlights: a country's flat-map outline, or the feature itself. */
function selectionData(feature: Feature | null): FeatureCollection {
  if (!feature) return EMPTY;
  const country = typeof feature.id === "number" && feature.properties?.source === "Natural Earth 1:50m"
    ? countriesCache?.display.features.find((f) => f.id === feature.id)
    : undefined;
  return { type: "FeatureCollection", features: [country ?? feature] };
}

function pickFeature(map: MapLibreMap, point: PointLike): Feature | null {
  const hits = map.queryRenderedFeatures(point).filter((f) => !APP_LAYERS.has(f.layer.id) && f.geometry);
  if (hits.length === 0) return null;
  const country = hits.find((f) => f.layer.id === COUNTRIES_FILL_LAYER);
  const full = country && typeof country.id === "number" ? countriesCache?.byId.get(country.id) : undefined;
  if (full) return contextFeature(full);
  const hit = hits[0];
  return contextFeature({
    type: "Feature",
    id: hit.id,
    properties: { ...hit.properties, layer: hit.layer.id },
    geometry: hit.geometry,
  });
}

export function MapView() {
  const containerRef = useRef<HTMLDivElement>(null);
  const [map, setMap] = useState<MapLibreMap | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  /** Where the pointer is (or was last tapped) on the map. */
  const [pointer, setPointer] = useState<{ lng: number; lat: number } | null>(null);
  /** The value of the top visible raster layer where the map was last clicked (identify). */
  const [identify, setIdentify] = useState<IdentifyState | null>(null);
  const closeIdentify = useCallback(() => {
    cancelIdentify();
    setIdentify(null);
  }, []);
  /** The properties of the vector feature last clicked. */
  const [picked, setPicked] = useState<FeatureInfo | null>(null);
  const closePicked = useCallback(() => setPicked(null), []);
  const closeAll = useCallback(() => {
    closeIdentify();
    setPicked(null);
  }, [closeIdentify]);

  useEffect(() => {
    const container = containerRef.current;
    if (!container) return;
    const ui = useUiStore.getState();
    if (CONFIGURED_STYLE_URL) ui.setBasemap({ url: CONFIGURED_STYLE_URL });
    shownBasemap = useUiStore.getState().basemap;
    const instance = new MapLibreMap({
      container,
      style: styleFor(shownBasemap),
      center: [ui.center.lon, ui.center.lat],
      zoom: ui.zoom,
      attributionControl: { compact: true, customAttribution: "Borders: Natural Earth" },
      maplibreLogo: false,
    });
    instance.addControl(new NavigationControl({ visualizePitch: false }), "top-right");
    instance.addControl(new ScaleControl({ unit: "metric" }), "bottom-right");

    instance.on("style.load", () => {
      addSupportLayers(instance);
      markStyleLoaded();
    });
    instance.once("load", () => {
      registerMap(instance);
      setMap(instance);
    });
    instance.on("moveend", () => {
      const c = instance.getCenter().wrap();
      useUiStore.getState().setView({ lat: c.lat, lon: c.lng }, instance.getZoom(), instance.getBearing());
    });
    let frame = 0;
    instance.on("mousemove", (e: MapMouseEvent) => {
      cancelAnimationFrame(frame);
      const p = e.lngLat.wrap();
      frame = requestAnimationFrame(() => setPointer({ lng: p.lng, lat: p.lat }));
    });
    instance.on("error", (e: { error?: unknown }) => {
      // Missing tiles are expected offline; only a broken style stops the map.
      const message = (e.error as Error | undefined)?.message ?? "";
      if (/style/i.test(message)) setLoadError(message);
    });
    instance.on("click", (e: MapMouseEvent) => {
      const s = useUiStore.getState();
      const p = e.lngLat.wrap();
      setPointer({ lng: p.lng, lat: p.lat });
      if (s.draw.active) {
        const next = addVertex(s.draw, [p.lng, p.lat]);
        if (next.mode === "point") {
          // A point is done with its one click.
          s.setDrawnGeometry(finishDrawing(next));
          s.setDraw(idleDraw);
        } else s.setDraw(next);
        return;
      }
      const feature = pickFeature(instance, e.point);
      s.setSelectedFeature(feature);
      setPicked(feature ? featureInfo(feature) : null);
      if (!identifyAt(s.overlays, p.lng, p.lat, setIdentify)) setIdentify(null);
    });
    instance.on("dblclick", (e: MapMouseEvent) => {
      const s = useUiStore.getState();
      if (!s.draw.active) return;
      e.preventDefault();
      const drawn = finishDrawing(s.draw);
      if (drawn) {
        s.setDrawnGeometry(drawn);
        s.setDraw(idleDraw);
      }
    });

    loadCountries()
      .then((countries) => {
        countriesCache = countries;
        (instance.getSource(COUNTRIES_SOURCE) as GeoJSONSource | undefined)?.setData(countries.display);
        (instance.getSource(COUNTRY_LABELS_SOURCE) as GeoJSONSource | undefined)?.setData(countries.labels);
      })
      .catch(() => setLoadError("Country outlines could not be loaded"));

    return () => {
      unregisterMap(instance);
      instance.remove();
    };
  }, []);

  // Keep the map's own layers in step with the store.
  useEffect(() => {
    if (!map) return;
    // What the store got before this subscription (a conversation's saved map, restored early).
    const ui = useUiStore.getState();
    addMissingOverlays(map);
    (map.getSource("selection") as GeoJSONSource | undefined)?.setData(selectionData(ui.selectedFeature));
    (map.getSource("drawing") as GeoJSONSource | undefined)?.setData(drawingFeatures(ui.draw, ui.drawnGeometry));
    const switchBasemap = (choice: BasemapChoice) => {
      shownBasemap = choice;
      markStyleLoading();
      map.setStyle(styleFor(choice), { diff: false });
    };
    if (ui.basemap !== shownBasemap) switchBasemap(ui.basemap);
    return useUiStore.subscribe((s, prev) => {
      if (s.selectedFeature !== prev.selectedFeature) {
        (map.getSource("selection") as GeoJSONSource | undefined)?.setData(selectionData(s.selectedFeature));
      }
      if (s.draw !== prev.draw || s.drawnGeometry !== prev.drawnGeometry) {
        (map.getSource("drawing") as GeoJSONSource | undefined)?.setData(drawingFeatures(s.draw, s.drawnGeometry));
        if (s.draw.active !== prev.draw.active) {
          if (s.draw.active) map.doubleClickZoom.disable();
          else map.doubleClickZoom.enable();
          map.getCanvas().style.cursor = s.draw.active ? "crosshair" : "";
        }
      }
      if (s.basemap !== shownBasemap) switchBasemap(s.basemap);
      if (s.overlays !== prev.overlays) {
        for (const removed of prev.overlays.filter((o) => !s.overlays.some((n) => n.id === o.id))) {
          if (map.getLayer(removed.id)) map.removeLayer(removed.id);
          if (map.getSource(removed.id)) map.removeSource(removed.id);
        }
        addMissingOverlays(map);
        syncOverlays(map, s.overlays, overlayBeforeId(map));
      }
      if ((s.basemapVisible !== prev.basemapVisible || s.basemapOpacity !== prev.basemapOpacity) && !styleIsLoading()) {
        applyBasemap(map, basemapOpacities, s.basemapVisible, s.basemapOpacity);
      }
    });
  }, [map]);

  // City names of the view on the offline basemaps, asked for after each move, and again when the
  // place names' load ends (those asked during it lack what was still loading).
  useEffect(() => {
    if (!map) return;
    return followCityLabels(map, (bbox, limit, signal) => api.placeLabels(bbox, limit, signal), { refreshOn: onPlaceLoadEnd });
  }, [map]);

  // The chat sheet of a narrow screen hides the map's lower part: keep the view's centre, and
  // every zoom or fit the agent asks for, in the part that stays visible.
  useEffect(() => {
    if (!map) return;
    const container = map.getContainer();
    const sheet = document.getElementById("chat-panel");
    const update = () => {
      const panel = sheet && !sheet.hidden ? sheet.getBoundingClientRect() : null;
      const bottom = coveredBottom(container.getBoundingClientRect(), panel);
      if (map.getPadding().bottom !== bottom) map.setPadding({ top: 0, left: 0, right: 0, bottom });
      // What sits at the map's foot (the coordinate readout) rises above the sheet too.
      container.parentElement?.style.setProperty("--covered-bottom", `${bottom}px`);
    };
    update();
    const observer = new ResizeObserver(update);
    observer.observe(container);
    if (sheet) observer.observe(sheet);
    // Opening or closing the chat shows or hides the sheet without resizing the map.
    const unsubscribe = useUiStore.subscribe((s, prev) => {
      if (s.panels !== prev.panels) requestAnimationFrame(update);
    });
    return () => {
      observer.disconnect();
      unsubscribe();
    };
  }, [map]);

  // Drawing shortcuts: Enter closes the polygon, Backspace removes a corner, Escape cancels.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const s = useUiStore.getState();
      if (!s.draw.active) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) return;
      if (e.key === "Escape") s.setDraw(idleDraw);
      else if (e.key === "Backspace") s.setDraw(undoVertex(s.draw));
      else if (e.key === "Enter" && s.draw.mode !== "point" && canFinish(s.draw)) {
        s.setDrawnGeometry(finishDrawing(s.draw));
        s.setDraw(idleDraw);
      } else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  return (
    <section className="map-area" aria-label="Map">
      <div ref={containerRef} className="map-container" data-testid="map" />
      <MapToolbar onStartDrawing={(mode) => useUiStore.getState().setDraw(startDrawing(mode))} />
      <p className="coord-readout" data-testid="coords" title="Position under the pointer (WGS 84)">
        {pointer ? formatLngLat(pointer.lng, pointer.lat) : "Point at the map for coordinates"}
      </p>
      {identify || picked ? (
        <div className="map-popups">
          {identify ? (
            <IdentifyPanel state={identify} feature={picked} onClose={closeAll} />
          ) : picked ? (
            <FeaturePanel info={picked} onClose={closePicked} />
          ) : null}
        </div>
      ) : null}
      {loadError ? (
        <p className="map-error" role="status">
          {loadError}
        </p>
      ) : null}
    </section>
  );
}
