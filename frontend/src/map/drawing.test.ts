import { describe, expect, it } from "vitest";
import { addVertex, canFinish, describeDrawn, drawingFeatures, finishDrawing, formatLngLat, idleDraw, startDrawing, undoVertex } from "./drawing";

describe("polygon drawing", () => {
  it("ignores clicks until drawing starts", () => {
    expect(addVertex(idleDraw, [1, 1])).toBe(idleDraw);
  });

  it("closes the ring of three or more corners into a GeoJSON polygon", () => {
    let s = startDrawing();
    s = addVertex(s, [6.0, 49.5]);
    s = addVertex(s, [6.3, 49.5]);
    expect(canFinish(s)).toBe(false);
    expect(finishDrawing(s)).toBeNull();
    s = addVertex(s, [6.15, 49.8]);
    expect(canFinish(s)).toBe(true);
    expect(finishDrawing(s)).toEqual({
      type: "Polygon",
      coordinates: [
        [
          [6.0, 49.5],
          [6.3, 49.5],
          [6.15, 49.8],
          [6.0, 49.5],
        ],
      ],
    });
  });

  it("does not count a double-clicked corner twice", () => {
    let s = startDrawing();
    for (const v of [[0, 0], [1, 0], [1, 0], [1, 1], [1, 1]] as [number, number][]) s = addVertex(s, v);
    expect(finishDrawing(s)?.coordinates[0]).toEqual([[0, 0], [1, 0], [1, 1], [0, 0]]);
    let t = startDrawing();
    for (const v of [[0, 0], [1, 0], [1, 0]] as [number, number][]) t = addVertex(t, v);
    expect(canFinish(t)).toBe(false);
  });

  it("removes the last corner on undo", () => {
    let s = addVertex(addVertex(startDrawing(), [0, 0]), [1, 1]);
    s = undoVertex(s);
    expect(s.vertices).toEqual([[0, 0]]);
  });

  it("shows the sketch while drawing and the area once finished", () => {
    let s = startDrawing();
    s = addVertex(addVertex(s, [0, 0]), [1, 0]);
    const sketch = drawingFeatures(s, null).features.map((f) => f.properties?.role);
    expect(sketch).toEqual(["sketch", "vertex", "vertex"]);
    const area = drawingFeatures(idleDraw, { type: "Polygon", coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] });
    expect(area.features.map((f) => f.properties?.role)).toEqual(["area"]);
  });
});

describe("point and line drawing", () => {
  it("a point is one position", () => {
    const s = addVertex(startDrawing("point"), [6.1234567, 49.6]);
    expect(canFinish(s)).toBe(true);
    expect(finishDrawing(s)).toEqual({ type: "Point", coordinates: [6.123457, 49.6] });
  });

  it("a line needs two distinct positions and drops repeated clicks", () => {
    let s = addVertex(startDrawing("line"), [6, 49]);
    s = addVertex(s, [6, 49]);
    expect(canFinish(s)).toBe(false);
    s = addVertex(s, [6.5, 49.5]);
    s = addVertex(s, [6.5, 49.5]);
    expect(finishDrawing(s)).toEqual({ type: "LineString", coordinates: [[6, 49], [6.5, 49.5]] });
    expect(drawingFeatures(idleDraw, finishDrawing(s)).features[0].properties).toEqual({ role: "line" });
  });

  it("names what was drawn", () => {
    expect(describeDrawn({ type: "Point", coordinates: [-6.5, -49.25] })).toEqual({ text: "Drawn point (49.2500° S, 6.5000° W)", noun: "point" });
    expect(describeDrawn({ type: "LineString", coordinates: [[0, 0], [1, 1], [2, 2]] }).text).toBe("Drawn line (3 points)");
    expect(formatLngLat(6.13, 49.61)).toBe("49.61000° N, 6.13000° E");
  });
});
