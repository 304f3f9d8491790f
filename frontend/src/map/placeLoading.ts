import { useEffect, useState } from "react";
import { ApiClient, type PlaceDatasetStatus, type PlaceStatus } from "../api/client";

/**
 * Whether the place names are still loading (GET /places/status): on a first start vector-tools serves
 * before its names are all in, and until then the place search and the city names find only what is
 * loaded. Asked once at start, then every PLACE_STATUS_POLL_MS while loading; once nothing is loading
 * it is not asked again.
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

const api = new ApiClient();

/** The place names' load status while the component is mounted (null until known, or after a failure). */
export function usePlaceLoading(): PlaceStatus | null {
  const [status, setStatus] = useState<PlaceStatus | null>(null);
  useEffect(() => watchPlaceStatus({ fetchStatus: () => api.placeStatus(), onStatus: setStatus }), []);
  return status;
}
