import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { PlaceStatus } from "../api/client";
import { PLACE_STATUS_POLL_MS, describeDatasetLoad, placeLoadingText, watchPlaceStatus } from "./placeLoading";

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
