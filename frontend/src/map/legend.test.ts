import { describe, expect, it } from "vitest";
import { colorsFor, cssGradient, parseRange } from "./legend";

describe("legend", () => {
  it("knows common colormap names, reversed ones too", () => {
    expect(colorsFor("viridis").colors[0]).toBe("#440154");
    expect(colorsFor("viridis_r").colors[0]).toBe("#fde725");
    expect(colorsFor("unknown-map")).toEqual({ name: "unknown-map", colors: [] });
    expect(colorsFor(null)).toEqual({ name: null, colors: [] });
  });

  it("reads explicit value-to-colour tables in value order", () => {
    expect(colorsFor({ "10": "#00ff00", "0": [255, 0, 0, 255] }).colors).toEqual(["rgba(255, 0, 0, 1.000)", "#00ff00"]);
  });

  it("parses ranges given in the forms models and tile servers use", () => {
    expect(parseRange([0, 500])).toEqual([0, 500]);
    expect(parseRange("0, 500")).toEqual([0, 500]);
    expect(parseRange([[0, 500]])).toEqual([0, 500]);
    expect(parseRange({ min: -1, max: 1 })).toEqual([-1, 1]);
    expect(parseRange("low,high")).toBeNull();
    expect(parseRange([1])).toBeNull();
  });

  it("builds a CSS gradient", () => {
    expect(cssGradient(["#000", "#fff"])).toBe("linear-gradient(to right, #000, #fff)");
  });
});
