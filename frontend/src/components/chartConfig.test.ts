import { describe, expect, it } from "vitest";
import { sanitizeChartConfig } from "./chartConfig";

describe("sanitizeChartConfig", () => {
  it("accepts a Chart.js config and fills in colours and the title", () => {
    const safe = sanitizeChartConfig({
      type: "bar",
      data: { labels: ["a", "b"], datasets: [{ label: "n", data: [1, 2] }] },
      options: { plugins: { title: { display: true, text: "Counts" } } },
    });
    expect(safe).toMatchObject({ type: "bar", title: "Counts", data: { labels: ["a", "b"] } });
    if ("error" in safe) throw new Error(safe.error);
    expect(safe.data.datasets[0]).toMatchObject({ label: "n", data: [1, 2], borderColor: expect.any(String) });
  });

  it("keeps colours the model chose", () => {
    const safe = sanitizeChartConfig({ type: "line", data: { datasets: [{ data: [1], borderColor: "#ff0000" }] } });
    expect("error" in safe ? null : safe.data.datasets[0].borderColor).toBe("#ff0000");
  });

  it("refuses unknown types and malformed data, naming the field", () => {
    expect(sanitizeChartConfig({ type: "sankey", data: { datasets: [] } })).toEqual({
      error: "chart type must be one of line, bar, scatter, pie, doughnut, radar, polarArea, bubble, got \"sankey\"",
    });
    expect(sanitizeChartConfig({ type: "bar", data: { datasets: [] } })).toEqual({
      error: "chart data.datasets must be a non-empty list",
    });
    expect(sanitizeChartConfig({ type: "bar", data: { datasets: [{ data: "x" }] } })).toEqual({
      error: "chart data.datasets[0].data must be a list",
    });
  });

  it("refuses data too large to draw", () => {
    const big = Array.from({ length: 5001 }, (_, i) => i);
    expect(sanitizeChartConfig({ type: "line", data: { datasets: [{ data: big }] } })).toEqual({
      error: "chart data.datasets[0] has more than 5000 points",
    });
  });
});
