import type { Feature, FeatureCollection, Polygon } from "geojson";

/** State of the polygon drawing tool: clicks add vertices, finishing closes the ring. */
export interface DrawState {
  active: boolean;
  vertices: [number, number][];
}

export const idleDraw: DrawState = { active: false, vertices: [] };

export function startDrawing(): DrawState {
  return { active: true, vertices: [] };
}

export function addVertex(state: DrawState, lngLat: [number, number]): DrawState {
  if (!state.active) return state;
  return { ...state, vertices: [...state.vertices, lngLat] };
}

export function undoVertex(state: DrawState): DrawState {
  return { ...state, vertices: state.vertices.slice(0, -1) };
}

/** A polygon needs three distinct corners. */
export function canFinish(state: DrawState): boolean {
  const distinct = new Set(state.vertices.map(([x, y]) => `${x},${y}`));
  return state.active && distinct.size >= 3;
}

/** Closes the ring; null when there are too few corners. */
export function finishDrawing(state: DrawState): Polygon | null {
  if (!canFinish(state)) return null;
  const ring = state.vertices.filter((v, i, all) => i === 0 || v[0] !== all[i - 1][0] || v[1] !== all[i - 1][1]);
  const first = ring[0];
  const last = ring[ring.length - 1];
  if (first[0] !== last[0] || first[1] !== last[1]) ring.push([first[0], first[1]]);
  return { type: "Polygon", coordinates: [ring.map(([x, y]) => [round(x), round(y)])] };
}

function round(v: number): number {
  return Math.round(v * 1e6) / 1e6;
}

/** What the map shows: the finished polygon, or the sketch (corners and edges) while drawing. */
export function drawingFeatures(state: DrawState, finished: Polygon | null): FeatureCollection {
  const features: Feature[] = [];
  if (finished) features.push({ type: "Feature", properties: { role: "area" }, geometry: finished });
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
