import type { Feature, FeatureCollection, LineString, Point, Polygon } from "geojson";

export type DrawMode = "point" | "line" | "area";

/** A geometry the user drew: sent as the message's `drawn_geometry`. */
export type DrawnGeometry = Point | LineString | Polygon;

/** State of the drawing tool: clicks add vertices; a point is done with its one click, a line or area when finished. */
export interface DrawState {
  active: boolean;
  mode: DrawMode;
  vertices: [number, number][];
}

export const idleDraw: DrawState = { active: false, mode: "area", vertices: [] };

export function startDrawing(mode: DrawMode = "area"): DrawState {
  return { active: true, mode, vertices: [] };
}

export function addVertex(state: DrawState, lngLat: [number, number]): DrawState {
  if (!state.active) return state;
  return { ...state, vertices: [...state.vertices, lngLat] };
}

export function undoVertex(state: DrawState): DrawState {
  return { ...state, vertices: state.vertices.slice(0, -1) };
}

const NEEDED: Record<DrawMode, number> = { point: 1, line: 2, area: 3 };

/** A point needs one position, a line two distinct ones, an area three distinct corners. */
export function canFinish(state: DrawState): boolean {
  const distinct = new Set(state.vertices.map(([x, y]) => `${x},${y}`));
  return state.active && distinct.size >= NEEDED[state.mode];
}

/** The drawn geometry (an area's ring closed); null when there are too few positions. */
export function finishDrawing(state: DrawState): DrawnGeometry | null {
  if (!canFinish(state)) return null;
  const rounded = (v: [number, number]) => [round(v[0]), round(v[1])];
  if (state.mode === "point") return { type: "Point", coordinates: rounded(state.vertices[state.vertices.length - 1]) };
  const ring = state.vertices.filter((v, i, all) => i === 0 || v[0] !== all[i - 1][0] || v[1] !== all[i - 1][1]);
  if (state.mode === "line") return { type: "LineString", coordinates: ring.map(rounded) };
  const first = ring[0];
  const last = ring[ring.length - 1];
  if (first[0] !== last[0] || first[1] !== last[1]) ring.push([first[0], first[1]]);
  return { type: "Polygon", coordinates: [ring.map(rounded)] };
}

function round(v: number): number {
  return Math.round(v * 1e6) / 1e6;
}

const ROLE: Record<DrawnGeometry["type"], string> = { Point: "point", LineString: "line", Polygon: "area" };

/** What the map shows: the finished geometry, or the sketch (corners and edges) while drawing. */
export function drawingFeatures(state: DrawState, finished: DrawnGeometry | null): FeatureCollection {
  const features: Feature[] = [];
  if (finished) features.push({ type: "Feature", properties: { role: ROLE[finished.type] }, geometry: finished });
  if (state.active && state.vertices.length > 0) {
    if (state.vertices.length >= 2) {
      features.push({
        type: "Feature",
        properties: { role: "sketch" },
        geometry: { type: "LineString", coordinates: state.vertices },
      });
    }
    for (const v of state.vertices) {
      features.push({ type: "Feature", properties: { role: "vertex" }, geometry: { type: "Point", coordinates: v } });
    }
  }
  return { type: "FeatureCollection", features };
}

/** "49.61230° N, 6.13000° E" */
export function formatLngLat(lng: number, lat: number, digits = 5): string {
  const ns = lat >= 0 ? "N" : "S";
  const ew = lng >= 0 ? "E" : "W";
  return `${Math.abs(lat).toFixed(digits)}° ${ns}, ${Math.abs(lng).toFixed(digits)}° ${ew}`;
}

/** The chip that names a drawn geometry, and the thing its clear button clears. */
export function describeDrawn(geometry: DrawnGeometry): { text: string; noun: string } {
  switch (geometry.type) {
    case "Point":
      return { text: `Drawn point (${formatLngLat(geometry.coordinates[0], geometry.coordinates[1], 4)})`, noun: "point" };
    case "LineString":
      return { text: `Drawn line (${geometry.coordinates.length} points)`, noun: "line" };
    case "Polygon":
      return { text: `Drawn area (${geometry.coordinates[0].length - 1} corners)`, noun: "area" };
  }
}
