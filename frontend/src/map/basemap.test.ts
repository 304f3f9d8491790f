import { describe, expect, it } from "vitest";
import { basemapLabel } from "./basemap";

describe("basemapLabel", () => {
  it("names the offline maps for what they show: flat colours under country outlines", () => {
    expect([basemapLabel("light", false), basemapLabel("dark", false), basemapLabel("satellite", false)]).toEqual([
      "Light outlines",
      "Dark outlines",
      "Green outlines",
    ]);
  });

  it("promises imagery only when a satellite style is configured", () => {
    expect(basemapLabel("satellite", false)).not.toMatch(/satellite|imagery/i);
    expect(basemapLabel("satellite", true)).toBe("Satellite imagery");
  });
});
