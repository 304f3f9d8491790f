import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { FeatureCollection } from "geojson";
import type { PlaceLabel, PlaceLabels } from "../api/client";
import { COUNTRY_LABELS_LAYER, offlineStyle } from "./basemap";
import {
  CITY_DOT_IMAGE,
  CITY_LABELS_DEBOUNCE_MS,
  CITY_LABELS_LAYER,
  CITY_LABELS_MIN_ZOOM,
  CITY_LABELS_SOURCE,
  cityDotImage,
  followCityLabels,
  labelFeatures,
  labelLimit,
  viewBox,
  type Box,
  type LabelledMap,
} from "./cityLabels";

const BERLIN: PlaceLabel = { name: "Berlin", lon: 13.41, lat: 52.52, population: 3_426_354, country: "Germany" };
const HAMBURG: PlaceLabel = { name: "Hamburg", lon: 10, lat: 53.55, population: 1_739_117, country: "Germany" };

describe("the box asked for", () => {
  it("is the view's bounds when they lie within ±180", () => {
    expect(viewBox(5.5, 45.25, 15.125, 55)).toEqual([5.5, 45.25, 15.125, 55]);
  });

  it("wraps a view over the antimeridian to west > east, and a world copy back into ±180", () => {
    expect(viewBox(170, -20, 190, 10)).toEqual([170, -20, -170, 10]);
    expect(viewBox(-190, -20, -170, 10)).toEqual([170, -20, -170, 10]);
    expect(viewBox(370, 40, 380, 50)).toEqual([10, 40, 20, 50]);
    expect(viewBox(170, 0, 180, 10)).toEqual([170, 0, 180, 10]);
  });

  it("is the whole width when the view spans a turn of the globe, latitudes clamped", () => {
    expect(viewBox(-250, -95, 130, 95)).toEqual([-180, -90, 180, 90]);
  });
});

describe("how many names", () => {
  it("asks for none below the minimum zoom, more as the view closes in, never past the gateway's 250", () => {
    expect(labelLimit(CITY_LABELS_MIN_ZOOM - 0.1)).toBe(0);
    const limits = [CITY_LABELS_MIN_ZOOM, 6, 8, 10].map(labelLimit);
    expect(limits[0]).toBeGreaterThan(0);
    expect([...limits].sort((a, b) => a - b)).toEqual(limits);
    expect(new Set(limits).size).toBe(limits.length);
    expect(labelLimit(22)).toBe(250);
  });
});

describe("the labels' features", () => {
  it("are points whose sort key puts the larger city first", () => {
    const { features } = labelFeatures([BERLIN, HAMBURG, { name: "Nowhere", lon: 1, lat: 2, population: 0 }]);
    expect(features.map((f) => f.geometry.coordinates)).toEqual([
      [13.41, 52.52],
      [10, 53.55],
      [1, 2],
    ]);
    const sort = features.map((f) => f.properties!.sort as number);
    expect(sort[0]).toBeLessThan(sort[1]);
    expect(sort[1]).toBeLessThan(sort[2]);
    expect(features[2].properties).toMatchObject({ name: "Nowhere", country: null });
  });
});

describe("the dot", () => {
  it("is a signed-distance circle: opaque inside, 0.75 at the edge, clear in the corners", () => {
    const size = 24;
    const radius = 5;
    const image = cityDotImage(size, radius);
    expect(image.data.length).toBe(size * size * 4);
    const alpha = (x: number, y: number) => image.data[(y * size + x) * 4 + 3];
    expect(alpha(12, 12)).toBe(255);
    // Pixel 17 lies 5.5 from the centre (11.5): half a pixel outside the edge.
    expect(alpha(17, 12) / 255).toBeCloseTo(0.75 - 0.5 / 8, 2);
    expect(alpha(0, 0)).toBe(0);
  });
});

describe("the city names layer of the offline maps", () => {
  for (const variant of ["light", "dark", "satellite"] as const) {
    it(`(${variant}) has the basemap's colours and font, the dot, and sorts by population under the country names`, () => {
      const style = offlineStyle(variant, "http://localhost/", null);
      expect(style.sources[CITY_LABELS_SOURCE]).toEqual({ type: "geojson", data: { type: "FeatureCollection", features: [] } });
      const ids = style.layers.map((l) => l.id);
      expect(ids.indexOf(CITY_LABELS_LAYER)).toBeLessThan(ids.indexOf(COUNTRY_LABELS_LAYER));
      const cities = style.layers.find((l) => l.id === CITY_LABELS_LAYER)!;
      const countries = style.layers.find((l) => l.id === COUNTRY_LABELS_LAYER)!;
      if (cities.type !== "symbol" || countries.type !== "symbol") throw new Error("both are symbol layers");
      expect(cities.minzoom).toBe(CITY_LABELS_MIN_ZOOM);
      expect(cities.layout).toMatchObject({ "symbol-sort-key": ["get", "sort"], "icon-image": CITY_DOT_IMAGE, "text-field": ["get", "name"] });
      expect(cities.layout!["text-font"]).toEqual(countries.layout!["text-font"]);
      expect(cities.paint!["text-color"]).toBe(countries.paint!["text-color"]);
      expect(cities.paint!["icon-color"]).toBe(countries.paint!["text-color"]);
      expect(cities.paint!["text-halo-color"]).toBe(countries.paint!["text-halo-color"]);
    });
  }

  it("differs in colour between the light and dark maps", () => {
    const colour = (variant: "light" | "dark") => {
      const layer = offlineStyle(variant, "http://localhost/", null).layers.find((l) => l.id === CITY_LABELS_LAYER)!;
      return layer.type === "symbol" ? layer.paint!["text-color"] : null;
    };
    expect(colour("light")).not.toBe(colour("dark"));
  });
});

type Listener = () => void;

/** The part of a map the labels use, with a source that records what it is given. */
class FakeMap implements LabelledMap {
  zoom = 6;
  bounds: Box = [5, 45, 15, 55];
  hasSource = true;
  readonly data: FeatureCollection[] = [];
  readonly images = new Map<string, { sdf: boolean; pixelRatio: number }>();
  readonly listeners = new Map<string, Set<Listener>>();

  getZoom(): number {
    return this.zoom;
  }
  getBounds() {
    const [w, s, e, n] = this.bounds;
    return { getWest: () => w, getSouth: () => s, getEast: () => e, getNorth: () => n };
  }
  getSource(id: string): unknown {
    if (id !== CITY_LABELS_SOURCE || !this.hasSource) return undefined;
    return { setData: (data: FeatureCollection) => this.data.push(data) };
  }
  addImage(id: string, _image: unknown, options: { sdf: boolean; pixelRatio: number }): void {
    this.images.set(id, options);
  }
  hasImage(id: string): boolean {
    return this.images.has(id);
  }
  on(type: string, listener: Listener): void {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type)!.add(listener);
  }
  off(type: string, listener: Listener): void {
    this.listeners.get(type)?.delete(listener);
  }
  fire(type: string): void {
    this.listeners.get(type)?.forEach((listener) => listener());
  }
  names(): string[][] {
    return this.data.map((fc) => fc.features.map((f) => f.properties!.name as string));
  }
}

interface Asked {
  bbox: Box;
  limit: number;
  signal: AbortSignal;
  answer: (labels: PlaceLabel[]) => void;
  fail: (error: Error) => void;
}

describe("following the view", () => {
  let map: FakeMap;
  let asked: Asked[];
  const fetchLabels = (bbox: Box, limit: number, signal: AbortSignal) =>
    new Promise<PlaceLabels>((resolve, reject) => {
      asked.push({ bbox, limit, signal, answer: (labels) => resolve({ bbox, labels }), fail: reject });
    });
  const settle = async (ms = CITY_LABELS_DEBOUNCE_MS) => {
    await vi.advanceTimersByTimeAsync(ms);
  };

  beforeEach(() => {
    vi.useFakeTimers();
    map = new FakeMap();
    asked = [];
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("asks for the view's names once it has settled and shows them", async () => {
    const stop = followCityLabels(map, fetchLabels);
    await settle(CITY_LABELS_DEBOUNCE_MS - 1);
    expect(asked).toHaveLength(0);
    await settle(1);
    expect(asked.map((a) => [a.bbox, a.limit])).toEqual([[[5, 45, 15, 55], labelLimit(6)]]);
    asked[0].answer([BERLIN, HAMBURG]);
    await settle(0);
    expect(map.names()).toEqual([["Berlin", "Hamburg"]]);
    stop();
  });

  it("asks once for moves in quick succession, and drops an answer overtaken by a later move", async () => {
    const stop = followCityLabels(map, fetchLabels);
    await settle();
    const first = asked[0];
    map.bounds = [10, 50, 12, 54];
    map.fire("moveend");
    await settle(100);
    map.fire("moveend");
    await settle();
    expect(asked).toHaveLength(2);
    expect(first.signal.aborted).toBe(true);
    expect(asked[1].bbox).toEqual([10, 50, 12, 54]);
    first.answer([HAMBURG]);
    asked[1].answer([BERLIN]);
    await settle(0);
    expect(map.names()).toEqual([["Berlin"]]);
    stop();
  });

  it("asks for nothing below the minimum zoom and clears the names shown", async () => {
    const stop = followCityLabels(map, fetchLabels);
    await settle();
    asked[0].answer([BERLIN]);
    await settle(0);
    map.zoom = CITY_LABELS_MIN_ZOOM - 1;
    map.fire("moveend");
    await settle();
    expect(asked).toHaveLength(1);
    expect(map.names()).toEqual([["Berlin"], []]);
    stop();
  });

  it("keeps what it shows, silently, when the request fails", async () => {
    const stop = followCityLabels(map, fetchLabels);
    await settle();
    asked[0].answer([BERLIN]);
    await settle(0);
    map.fire("moveend");
    await settle();
    asked[1].fail(new Error("HTTP 404"));
    await settle(0);
    expect(map.names()).toEqual([["Berlin"]]);
    stop();
  });

  it("asks for nothing on a style without the source (a configured style URL)", async () => {
    map.hasSource = false;
    const stop = followCityLabels(map, fetchLabels);
    map.fire("moveend");
    await settle();
    expect(asked).toHaveLength(0);
    stop();
  });

  it("adds the dot before any name needs it, and gives a new style the dot and the names already known", async () => {
    const stop = followCityLabels(map, fetchLabels);
    expect(map.images.get(CITY_DOT_IMAGE)).toMatchObject({ sdf: true, pixelRatio: 2 });
    await settle();
    asked[0].answer([BERLIN]);
    await settle(0);
    map.images.clear(); // a new style has only its own images
    map.fire("style.load");
    expect(map.images.get(CITY_DOT_IMAGE)).toMatchObject({ sdf: true });
    expect(map.names()).toEqual([["Berlin"], ["Berlin"]]);
    await settle();
    expect(asked).toHaveLength(2);
    stop();
  });

  /** A refreshOn that records its subscriber, as the end of the place names' load would call it. */
  const trigger = () => {
    const subscribed: (() => void)[] = [];
    const refreshOn = (refresh: () => void) => {
      subscribed.push(refresh);
      return () => subscribed.splice(subscribed.indexOf(refresh), 1);
    };
    return { refreshOn, subscribed, fire: () => subscribed.forEach((refresh) => refresh()) };
  };

  it("asks again at once for the same view when refreshed, and shows the new answer", async () => {
    const { refreshOn, fire } = trigger();
    const stop = followCityLabels(map, fetchLabels, { refreshOn });
    await settle();
    asked[0].answer([]);
    await settle(0);
    expect(map.names()).toEqual([[]]);
    fire();
    expect(asked).toHaveLength(2);
    expect(asked[1].bbox).toEqual(asked[0].bbox);
    expect(asked[1].limit).toBe(asked[0].limit);
    asked[1].answer([BERLIN, HAMBURG]);
    await settle(0);
    expect(map.names()).toEqual([[], ["Berlin", "Hamburg"]]);
    stop();
  });

  it("refreshed, it aborts the request in flight and asks once for a move still waiting", async () => {
    const { refreshOn, fire } = trigger();
    const stop = followCityLabels(map, fetchLabels, { refreshOn });
    await settle();
    const first = asked[0];
    map.bounds = [10, 50, 12, 54];
    map.fire("moveend");
    await settle(100);
    fire();
    expect(first.signal.aborted).toBe(true);
    expect(asked.map((a) => a.bbox)).toEqual([
      [5, 45, 15, 55],
      [10, 50, 12, 54],
    ]);
    await settle(CITY_LABELS_DEBOUNCE_MS * 2);
    expect(asked).toHaveLength(2);
    first.answer([HAMBURG]);
    asked[1].answer([BERLIN]);
    await settle(0);
    expect(map.names()).toEqual([["Berlin"]]);
    stop();
  });

  it("refreshed below the minimum zoom or on a style without the source, it asks for nothing", async () => {
    const { refreshOn, fire } = trigger();
    map.zoom = CITY_LABELS_MIN_ZOOM - 1;
    const stop = followCityLabels(map, fetchLabels, { refreshOn });
    await settle();
    fire();
    map.zoom = 6;
    map.hasSource = false;
    fire();
    expect(asked).toHaveLength(0);
    stop();
  });

  it("stopped, it unsubscribes from what refreshes it", async () => {
    const { refreshOn, subscribed } = trigger();
    const stop = followCityLabels(map, fetchLabels, { refreshOn });
    expect(subscribed).toHaveLength(1);
    stop();
    expect(subscribed).toHaveLength(0);
  });

  it("stops listening and aborts the request in flight when stopped", async () => {
    const stop = followCityLabels(map, fetchLabels);
    await settle();
    stop();
    expect(asked[0].signal.aborted).toBe(true);
    expect([...map.listeners.values()].every((set) => set.size === 0)).toBe(true);
    map.fire("moveend");
    await settle();
    expect(asked).toHaveLength(1);
  });
});
