import type { JsonObject } from "@bufbuild/protobuf";
import { useUiStore } from "../state/uiStore";
import { applyFrontendTool, type BridgeResult, type MapLike } from "./mapBridge";
import { whenMapReady } from "./mapRegistry";

/** Layers kept above raster overlays: what the user drew or picked. */
export const OVERLAY_ANCHOR_LAYER = "selection-fill";

async function fetchJson(url: string): Promise<unknown> {
  const resp = await fetch(url, { credentials: "same-origin" });
  if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
  return resp.json();
}

/** Runs a frontend-tool event from the agent against the live map and UI. */
export async function runFrontendTool(name: string, args: JsonObject | undefined): Promise<BridgeResult> {
  const map = await whenMapReady();
  const ui = useUiStore.getState();
  return applyFrontendTool(name, args, {
    map: map as unknown as MapLike,
    fetchJson,
    baseUrl: window.location.href,
    setBasemap: ui.setBasemap,
    setPanel: ui.setPanel,
    onOverlay: ui.upsertOverlay,
    overlayBeforeId: () => (map.getLayer(OVERLAY_ANCHOR_LAYER) ? OVERLAY_ANCHOR_LAYER : undefined),
  });
}
