import { ApiClient, type SavedMapState } from "../api/client";
import { HttpError } from "../api/errors";
import { whenMapReady } from "../map/mapRegistry";
import { useChatStore } from "./chatStore";
import { mapStateFromUi, uiFromMapState } from "./mapState";
import { useUiStore, type UiState } from "./uiStore";

// A conversation's map (view, layers, selection) is saved with it on the gateway, a moment after
// each change, and put back when the conversation is opened or the page reloaded.
const MAP_SAVE_DELAY_MS = 800;
let mapRestoring = false;
let mapSaveTimer: ReturnType<typeof setTimeout> | undefined;
let mapSaveFor: string | null = null;
/** What was last saved (or restored) per session, so an unchanged map is not sent again. */
const savedMaps = new Map<string, string>();

const api = new ApiClient();

function chat() {
  return useChatStore.getState().chat;
}

/** While a conversation is being opened its map is put back, not saved (loadSession). */
export function restoringMap(on: boolean): void {
  mapRestoring = on;
}

function mapChanged(s: UiState, prev: UiState): boolean {
  return (
    s.center !== prev.center ||
    s.zoom !== prev.zoom ||
    s.bearing !== prev.bearing ||
    s.overlays !== prev.overlays ||
    s.selectedFeature !== prev.selectedFeature ||
    s.drawnGeometry !== prev.drawnGeometry ||
    s.basemap !== prev.basemap ||
    s.basemapVisible !== prev.basemapVisible ||
    s.basemapOpacity !== prev.basemapOpacity
  );
}

function scheduleMapSave(): void {
  const sessionId = chat().sessionId;
  if (!sessionId || mapRestoring) return;
  clearTimeout(mapSaveTimer);
  mapSaveFor = sessionId;
  mapSaveTimer = setTimeout(() => void saveMapNow(), MAP_SAVE_DELAY_MS);
}

/** Saves the map of the conversation shown now, if it changed since it was last saved. */
export async function saveMapNow(): Promise<void> {
  clearTimeout(mapSaveTimer);
  const sessionId = mapSaveFor;
  mapSaveFor = null;
  if (!sessionId || sessionId !== chat().sessionId || mapRestoring) return;
  const state = mapStateFromUi(useUiStore.getState());
  const text = JSON.stringify(state);
  if (savedMaps.get(sessionId) === text) return;
  try {
    try {
      await api.saveMapState(sessionId, state);
    } catch (err) {
      // A selection the gateway refuses (too large, say) must not cost the view and the layers.
      if (!(err instanceof HttpError && err.status === 422)) throw err;
      await api.saveMapState(sessionId, { ...state, selected_feature: null, drawn_geometry: null });
    }
    savedMaps.set(sessionId, text);
  } catch {
    // Not saved (offline, conversation deleted): the next change tries again.
  }
}

let mapSaverStarted = false;

/** Saves the map with the conversation whenever it changes (started once, by initialise). */
export function startMapSaver(): void {
  if (mapSaverStarted) return;
  mapSaverStarted = true;
  useUiStore.subscribe((s, prev) => {
    if (mapChanged(s, prev)) scheduleMapSave();
  });
  // A new conversation gets its id with its first run: its map is saved from then on.
  useChatStore.subscribe((s, prev) => {
    if (s.chat.sessionId !== prev.chat.sessionId) scheduleMapSave();
  });
}

/** Puts a conversation's saved map back; one never saved keeps the map but drops the selection. */
export async function restoreMapState(sessionId: string): Promise<void> {
  let saved: SavedMapState | null;
  try {
    saved = await api.mapState(sessionId);
  } catch {
    saved = null;
  }
  if (chat().sessionId !== sessionId) return;
  if (!saved) {
    useUiStore.getState().clearSelection();
    return;
  }
  const state = saved;
  // Layers of the same id but another conversation's source are replaced, not kept.
  useUiStore.setState({ overlays: [] });
  useUiStore.setState(uiFromMapState(state));
  savedMaps.set(sessionId, JSON.stringify(mapStateFromUi(useUiStore.getState())));
  void whenMapReady().then((map) => {
    if (chat().sessionId !== sessionId) return;
    const { center, zoom, bearing } = state.view;
    map.jumpTo({ center: [center.lon, center.lat], zoom, bearing: bearing ?? 0 });
  });
}
