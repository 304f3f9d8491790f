import { useEffect } from "react";
import { create } from "zustand";
import { ApiClient, type PlaceDatasetStatus, type PlaceStatus } from "../api/client";

/**
 * Whether the place names are still loading (GET /places/status): on a first start vector-tools serves
 * before its names are all in, and until then the place search and the city names find only what is
 * loaded. Asked once at start, then every PLACE_STATUS_POLL_MS while loading; once nothing is loading
 * it is not asked again. The page has one such watch, shared by the notice and the city names, which
 * are asked again when the load ends.
 */
export const PLACE_STATUS_POLL_MS = 5000;

const count = (value: number) => value.toLocaleString("en-US");

/**
 * One dataset's progress as the notice says it, e.g. "cities: 12,288 of 33,602 embedded". A load embeds
 * every name (done of total), then writes them all in at once (done = total: nothing to count).
 */
export function describeDatasetLoad(dataset: PlaceDatasetStatus): string {
  const { id, state, stage, done, total } = dataset;
  const name = id.replaceAll("_", " ");
  let progress = stage ?? "";
  if (stage === "writing") progress = total !== undefined ? `all ${count(total)} embedded, being stored` : "being stored";
  else if (done !== undefined && total !== undefined) progress = `${count(done)} of ${count(total)}${stage ? " embedded" : ""}`;
  if (state === "stalled") progress = progress ? `stalled (${progress})` : "stalled";
  return progress ? `${name}: ${progress}` : name;
}

/** What the map says while the names load, or null when nothing is loading (or the status is unknown). */
export function placeLoadingText(status: PlaceStatus | null): string | null {
  if (!status?.loading) return null;
  const unfinished = status.datasets.filter((dataset) => dataset.state !== "loaded").map(describeDatasetLoad);
  const which = unfinished.length ? ` — ${unfinished.join("; ")}` : "";
  return `Place names are still loading${which}. Search finds loaded places only until then.`;
}

export interface PlaceStatusWatch {
  fetchStatus: () => Promise<PlaceStatus>;
  /** Each answer; null when a request failed (the next tick asks again). */
  onStatus: (status: PlaceStatus | null) => void;
  intervalMs?: number;
}

/**
 * Asks at once, then again after each interval while loading or after a failure; returns the stop. The
 * first request waits for the next task, so a mount undone at once (React's StrictMode) asks nothing; a
 * request in flight when stopped is left to finish (aborting it would log a failed request) and unread.
 */
export function watchPlaceStatus({ fetchStatus, onStatus, intervalMs = PLACE_STATUS_POLL_MS }: PlaceStatusWatch): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    let status: PlaceStatus | null = null;
    try {
      status = await fetchStatus();
    } catch {
      // A failure says nothing about the load: nothing is shown, and the next tick asks again.
    }
    if (stopped) return;
    onStatus(status);
    if (status === null || status.loading) timer = setTimeout(() => void tick(), intervalMs);
  };
  timer = setTimeout(() => void tick(), 0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * The place names' load status for the whole page. Every user of it (the notice, the city names) holds
 * the one watch of GET /places/status, so the page asks once however many want to know.
 */
export interface PlaceStatusState {
  /** The last answer; null until known or after a failed request. */
  status: PlaceStatus | null;
  /** Whether the last answer known said loading (a failed request leaves it as it was). */
  loading: boolean;
  /** How often a load was seen to end: an answer saying loading, a later one saying nothing loads. */
  loadsEnded: number;
  report: (status: PlaceStatus | null) => void;
}

export const usePlaceStatusStore = create<PlaceStatusState>()((set) => ({
  status: null,
  loading: false,
  loadsEnded: 0,
  // A failure in between says nothing about the load: loading, a 503, then loaded is one end.
  report: (status) =>
    set((s) => ({
      status,
      loading: status ? status.loading : s.loading,
      loadsEnded: s.loadsEnded + (s.loading && status && !status.loading ? 1 : 0),
    })),
}));

/**
 * One watch shared by its holders: the first hold starts it, the last release stops it. Returns the
 * hold, which returns its release (a second call of a release does nothing).
 */
export function sharedPlaceStatusWatch(watch: Omit<PlaceStatusWatch, "onStatus">, onStatus: PlaceStatusWatch["onStatus"]): () => () => void {
  let holders = 0;
  let stop: (() => void) | null = null;
  return () => {
    holders += 1;
    if (holders === 1) stop = watchPlaceStatus({ ...watch, onStatus });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      holders -= 1;
      if (holders === 0) {
        stop?.();
        stop = null;
      }
    };
  };
}

const api = new ApiClient();

/** Holds the page's one watch of the place status (filling usePlaceStatusStore); returns the release. */
export const holdPlaceStatus = sharedPlaceStatusWatch({ fetchStatus: () => api.placeStatus() }, (status) =>
  usePlaceStatusStore.getState().report(status),
);

/** The place names' load status while the component is mounted (null until known, or after a failure). */
export function usePlaceLoading(): PlaceStatus | null {
  useEffect(holdPlaceStatus, []);
  return usePlaceStatusStore((s) => s.status);
}

/**
 * Calls `listener` each time a load of the place names ends (watching the status meanwhile), e.g. to
 * ask again for what was asked during the load; returns the unsubscribe.
 */
export function onPlaceLoadEnd(listener: () => void): () => void {
  const release = holdPlaceStatus();
  const unsubscribe = usePlaceStatusStore.subscribe((s, prev) => {
    if (s.loadsEnded !== prev.loadsEnded) listener();
  });
  return () => {
    unsubscribe();
    release();
  };
}
