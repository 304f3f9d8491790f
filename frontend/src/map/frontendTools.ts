import type { JsonObject } from "@bufbuild/protobuf";
import type { Map as MapLibreMap } from "maplibre-gl";
import { useChatStore } from "../state/chatStore";
import { useUiStore } from "../state/uiStore";
import { collectionsFromMessages } from "./collectionMeta";
import { applyFrontendTool, type BridgeResult, type MapLike } from "./mapBridge";
import { whenMapReady, whenStyleReady } from "./mapRegistry";

/** Layers kept above raster overlays: what the user drew or picked. */
export const OVERLAY_ANCHOR_LAYER = "selection-fill";
/** Country borders of the offline basemap stay readable above raster overlays. */
export const BORDERS_LAYER = "countries-line";

/** The layer a new raster overlay goes beneath. */
export function overlayBeforeId(map: { getLayer(id: string): unknown }): string | undefined {
  if (map.getLayer(BORDERS_LAYER)) return BORDERS_LAYER;
  return map.getLayer(OVERLAY_ANCHOR_LAYER) ? OVERLAY_ANCHOR_LAYER : undefined;
}

/** The part of the map outside its padding (the chat sheet on a phone covers the rest). */
function visibleView(map: MapLibreMap): [number, number, number, number] {
  const { top = 0, bottom = 0, left = 0, right = 0 } = map.getPadding();
  const canvas = map.getCanvas();
  const nw = map.unproject([left, top]);
  const se = map.unproject([canvas.clientWidth - right, canvas.clientHeight - bottom]);
  return [nw.lng, se.lat, se.lng, nw.lat];
}

async function fetchJson(url: string): Promise<unknown> {
  const resp = await fetch(url, { credentials: "same-origin" });
  if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
  return resp.json();
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs a frontend-tool event from the agent against the live map and UI. Commands
 * run one after another, each once the map (and any basemap being switched to)
 * has loaded, so "add a layer, then change the basemap" keeps the layer.
 */
export function runFrontendTool(
  name: string,
  args: JsonObject | undefined,
  origin: "agent" | "user" = "agent",
): Promise<BridgeResult> {
  const run = queue.then(async () => {
    const map = await whenMapReady();
    await whenStyleReady();
    const ui = useUiStore.getState();
    return applyFrontendTool(name, args, {
      map: map as unknown as MapLike,
      fetchJson,
      baseUrl: window.location.href,
      setBasemap: ui.setBasemap,
      setPanel: ui.setPanel,
      onOverlay: ui.upsertOverlay,
      overlayBeforeId: () => overlayBeforeId(map),
      visibleView: () => visibleView(map),
      origin,
      metadata: (id) => collectionsFromMessages(useChatStore.getState().chat.messages).get(id),
    });
  });
  queue = run.catch(() => undefined);
  return run;
}

/** The layers panel's "Add": a collection put on the map by the user, as the agent would. */
export function addCollectionByHand(collectionId: string): Promise<BridgeResult> {
  return runFrontendTool("visualize_collection", { collection_id: collectionId.trim() }, "user");
}
