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
  fetchStatus: (signal: AbortSignal) => Promise<PlaceStatus>;
  /** Each answer; null when a request failed (the next tick asks again). */
  onStatus: (status: PlaceStatus | null) => void;
  intervalMs?: number;
}

/** Asks now, then again after each interval while loading or after a failure; returns the stop. */
export function watchPlaceStatus({ fetchStatus, onStatus, intervalMs = PLACE_STATUS_POLL_MS }: PlaceStatusWatch): () => void {
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    let status: PlaceStatus | null = null;
    try {
      status = await fetchStatus(abort.signal);
    } catch {
      // A failure says nothing about the load: nothing is shown, and the next tick asks again.
    }
    if (abort.signal.aborted) return;
    onStatus(status);
    if (status === null || status.loading) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return () => {
    abort.abort();
    clearTimeout(timer);
  };
}

const api = new ApiClient();

/** The place names' load status while the component is mounted (null until known, or after a failure). */
export function usePlaceLoading(): PlaceStatus | null {
  const [status, setStatus] = useState<PlaceStatus | null>(null);
  useEffect(() => watchPlaceStatus({ fetchStatus: (signal) => api.placeStatus(signal), onStatus: setStatus }), []);
  return status;
}
