import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { PlaceStatus } from "../api/client";
import {
  PLACE_STATUS_POLL_MS,
  describeDatasetLoad,
  onPlaceLoadEnd,
  placeLoadingText,
  sharedPlaceStatusWatch,
  usePlaceStatusStore,
  watchPlaceStatus,
} from "./placeLoading";

const LOADING: PlaceStatus = {
  loading: true,
  datasets: [
    { id: "countries", state: "loaded", features: 258 },
    { id: "cities", state: "loading", stage: "embedding", done: 12288, total: 33602 },
  ],
};
const LOADED: PlaceStatus = {
  loading: false,
  datasets: [
    { id: "countries", state: "loaded", features: 258 },
    { id: "cities", state: "loaded", features: 33602 },
  ],
};

describe("the place loading notice's words", () => {
  it("names each unfinished dataset with its counts", () => {
    expect(placeLoadingText(LOADING)).toBe(
      "Place names are still loading — cities: 12,288 of 33,602 embedded. Search finds loaded places only until then.",
    );
    const two: PlaceStatus = {
      loading: true,
      datasets: [...LOADING.datasets, { id: "us_counties", state: "stalled", stage: "embedding", done: 100, total: 3143 }],
    };
    expect(placeLoadingText(two)).toContain("— cities: 12,288 of 33,602 embedded; us counties: stalled (100 of 3,143 embedded).");
  });

  it("says what it knows when the counts are missing", () => {
    expect(describeDatasetLoad({ id: "cities", state: "loading", stage: "writing", done: 33602, total: 33602 })).toBe(
      "cities: all 33,602 embedded, being stored",
    );
    expect(describeDatasetLoad({ id: "cities", state: "stalled", stage: "writing", done: 9, total: 9 })).toBe(
      "cities: stalled (all 9 embedded, being stored)",
    );
    expect(describeDatasetLoad({ id: "cities", state: "loading", stage: "writing" })).toBe("cities: being stored");
    expect(describeDatasetLoad({ id: "cities", state: "loading", stage: "embedding" })).toBe("cities: embedding");
    expect(describeDatasetLoad({ id: "cities", state: "loading" })).toBe("cities");
    expect(describeDatasetLoad({ id: "cities", state: "stalled" })).toBe("cities: stalled");
    expect(describeDatasetLoad({ id: "cities", state: "loading", done: 0, total: 5 })).toBe("cities: 0 of 5");
  });

  it("says nothing when nothing loads, only a stalled load is left, or the status is unknown", () => {
    expect(placeLoadingText(LOADED)).toBeNull();
    expect(placeLoadingText({ loading: false, datasets: [{ id: "cities", state: "stalled", done: 1, total: 2 }] })).toBeNull();
    expect(placeLoadingText(null)).toBeNull();
  });
});

describe("watching the place loading status", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("asks at once, every 5 s while loading, and stops when nothing loads", async () => {
    const answers = [LOADING, LOADING, LOADED];
    const fetchStatus = vi.fn(async () => answers.shift()!);
    const onStatus = vi.fn();
    const stop = watchPlaceStatus({ fetchStatus, onStatus });
    await vi.advanceTimersByTimeAsync(0);
    expect(fetchStatus).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS - 1);
    expect(fetchStatus).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(fetchStatus).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS);
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 4);
    expect(fetchStatus).toHaveBeenCalledTimes(3);
    expect(onStatus.mock.calls.map((call) => call[0])).toEqual([LOADING, LOADING, LOADED]);
    stop();
  });

  it("asks once when nothing is loading", async () => {
    const fetchStatus = vi.fn(async () => LOADED);
    const stop = watchPlaceStatus({ fetchStatus, onStatus: () => undefined });
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 5);
    expect(fetchStatus).toHaveBeenCalledTimes(1);
    stop();
  });

  it("shows nothing after a failed request and asks again on the next tick", async () => {
    const fetchStatus = vi
      .fn<() => Promise<PlaceStatus>>()
      .mockResolvedValueOnce(LOADING)
      .mockRejectedValueOnce(new Error("HTTP 503"))
      .mockResolvedValueOnce(LOADED);
    const onStatus = vi.fn();
    const stop = watchPlaceStatus({ fetchStatus, onStatus });
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 2);
    expect(onStatus.mock.calls.map((call) => call[0])).toEqual([LOADING, null, LOADED]);
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 3);
    expect(fetchStatus).toHaveBeenCalledTimes(3);
    stop();
  });

  it("stopped, it neither reports an answer in flight nor asks again", async () => {
    let answer: (status: PlaceStatus) => void = () => undefined;
    const fetchStatus = vi.fn(() => new Promise<PlaceStatus>((resolve) => (answer = resolve)));
    const onStatus = vi.fn();
    const stop = watchPlaceStatus({ fetchStatus, onStatus });
    await vi.advanceTimersByTimeAsync(0);
    expect(fetchStatus).toHaveBeenCalledTimes(1);
    stop();
    answer(LOADING);
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 3);
    expect(onStatus).not.toHaveBeenCalled();
    expect(fetchStatus).toHaveBeenCalledTimes(1);
  });

  it("stopped at once (a mount undone by StrictMode), it asks nothing", async () => {
    const fetchStatus = vi.fn(async () => LOADING);
    watchPlaceStatus({ fetchStatus, onStatus: () => undefined })();
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 3);
    expect(fetchStatus).not.toHaveBeenCalled();
  });
});

describe("the page's place status", () => {
  const report = (...answers: (PlaceStatus | null)[]) => answers.forEach((status) => usePlaceStatusStore.getState().report(status));
  const loadsEnded = () => usePlaceStatusStore.getState().loadsEnded;

  beforeEach(() => usePlaceStatusStore.setState({ status: null, loading: false, loadsEnded: 0 }));

  it("counts a load's end when an answer saying loading is followed by one saying nothing loads", () => {
    report(LOADING, LOADING);
    expect(loadsEnded()).toBe(0);
    report(LOADED);
    expect(loadsEnded()).toBe(1);
    report(LOADED, LOADING, LOADED);
    expect(loadsEnded()).toBe(2);
    expect(usePlaceStatusStore.getState().status).toBe(LOADED);
  });

  it("sees no end when nothing was loading at start, and none in a failed request", () => {
    report(LOADED, null, LOADED);
    expect(loadsEnded()).toBe(0);
    report(LOADING, null);
    expect(loadsEnded()).toBe(0);
    expect(usePlaceStatusStore.getState().status).toBeNull();
    report(LOADED);
    expect(loadsEnded()).toBe(1);
  });
});

describe("sharing the watch of the place status", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    usePlaceStatusStore.setState({ status: null, loading: false, loadsEnded: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("asks once for all its holders, goes on while one holds it, and stops with the last", async () => {
    const fetchStatus = vi.fn(async () => LOADING);
    const onStatus = vi.fn();
    const hold = sharedPlaceStatusWatch({ fetchStatus }, onStatus);
    const releaseNotice = hold();
    const releaseLabels = hold();
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS);
    expect(fetchStatus).toHaveBeenCalledTimes(2);
    releaseNotice();
    releaseNotice(); // a second release of the same hold lets go of nothing more
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS);
    expect(fetchStatus).toHaveBeenCalledTimes(3);
    releaseLabels();
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 3);
    expect(fetchStatus).toHaveBeenCalledTimes(3);
    expect(onStatus).toHaveBeenCalledTimes(3);
  });

  it("held, let go and held again at once (StrictMode's mounts), it asks once", async () => {
    const fetchStatus = vi.fn(async () => LOADED);
    const hold = sharedPlaceStatusWatch({ fetchStatus }, () => undefined);
    const releases = [hold(), hold()];
    releases.forEach((release) => release());
    const again = [hold(), hold()];
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS * 3);
    expect(fetchStatus).toHaveBeenCalledTimes(1);
    again.forEach((release) => release());
  });

  it("tells each subscriber when the load ends, asking GET /places/status once for them all", async () => {
    const answers = [LOADING, LOADED];
    const fetch = vi.fn(async (_url: string) => new Response(JSON.stringify(answers.shift() ?? LOADED)));
    vi.stubGlobal("fetch", fetch);
    const labels = vi.fn();
    const other = vi.fn();
    const stopLabels = onPlaceLoadEnd(labels);
    const stopOther = onPlaceLoadEnd(other);
    await vi.advanceTimersByTimeAsync(0);
    expect(usePlaceStatusStore.getState().status).toEqual(LOADING);
    expect(labels).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(PLACE_STATUS_POLL_MS);
    expect(labels).toHaveBeenCalledTimes(1);
    expect(other).toHaveBeenCalledTimes(1);
    expect(fetch.mock.calls.map((call) => call[0])).toEqual(["/api/v1/places/status", "/api/v1/places/status"]);
    stopLabels();
    stopOther();
    // Unsubscribed, a later end is not told.
    usePlaceStatusStore.getState().report(LOADING);
    usePlaceStatusStore.getState().report(LOADED);
    expect(labels).toHaveBeenCalledTimes(1);
  });
});
