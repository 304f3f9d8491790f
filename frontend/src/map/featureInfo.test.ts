import { describe, expect, it } from "vitest";
import { MAX_ROWS, featureInfo } from "./featureInfo";

const point = { type: "Point" as const, coordinates: [6.13, 49.61] };

describe("featureInfo", () => {
  it("titles a feature by its name and lists its own properties as text", () => {
    const properties = { name: "Luxembourg", population: 660809.5, capital: true, tags: { a: 1 }, note: null, layer: "agent:places" };
    const info = featureInfo({ type: "Feature", geometry: point, properties });
    expect(info.title).toBe("Luxembourg");
    expect(info.layer).toBe("agent:places");
    expect(info.rows).toEqual([
      { key: "name", value: "Luxembourg" },
      { key: "population", value: "660809.5" },
      { key: "capital", value: "yes" },
      { key: "tags", value: JSON.stringify(properties.tags) },
      { key: "note", value: "—" },
    ]);
  });

  it("names a feature without a name by its layer, and cuts long lists and long text", () => {
    const properties: Record<string, unknown> = { layer: "roads", simplified: true, text: "x".repeat(500) };
    for (let i = 0; i < MAX_ROWS + 3; i++) properties[`p${i}`] = i;
    const info = featureInfo({ type: "Feature", geometry: point, properties });
    expect(info.title).toBe("Feature of roads");
    expect(info.rows).toHaveLength(MAX_ROWS);
    expect(info.more).toBe(Object.keys(properties).length - 2 - MAX_ROWS);
    expect(info.rows.map((r) => r.key)).not.toContain("simplified");
    expect(info.rows[0].value.length).toBeLessThan(500);
    expect(info.rows[0].value.endsWith("…")).toBe(true);
  });
});
