import { describe, expect, it } from "vitest";
import { coveredBottom } from "./padding";

const MAP = { top: 80, bottom: 844, left: 0, right: 390 };

describe("coveredBottom", () => {
  it("is the height of a sheet over the map's lower part", () => {
    expect(coveredBottom(MAP, { top: 370, bottom: 844, left: 0, right: 390 })).toBe(474);
  });

  it("is nothing for a panel beside the map, a hidden panel or none", () => {
    const wide = { top: 46, bottom: 900, left: 264, right: 1000 };
    expect(coveredBottom(wide, { top: 46, bottom: 900, left: 1000, right: 1440 })).toBe(0);
    expect(coveredBottom(MAP, { top: 0, bottom: 0, left: 0, right: 0 })).toBe(0);
    expect(coveredBottom(MAP, null)).toBe(0);
  });

  it("is nothing for a panel covering the whole map (the conversation list on a phone)", () => {
    expect(coveredBottom(MAP, { top: 80, bottom: 844, left: 0, right: 390 })).toBe(0);
  });
});
