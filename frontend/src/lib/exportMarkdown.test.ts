import { describe, expect, it } from "vitest";
import type { UiMessage } from "../state/chatTypes";
import { conversationMarkdown, exportFileName, titleMatches } from "./exportMarkdown";

const messages: UiMessage[] = [
  { id: "u1", role: "user", content: "Mean elevation of Luxembourg?", status: "complete", activities: [], charts: [] },
  {
    id: "a1",
    role: "assistant",
    content: "It is **348 m**.",
    status: "complete",
    activities: [
      { id: "t", kind: "tool", step: 1, toolName: "get_raster_statistics", arguments: { place: "Luxembourg" }, status: "ok", durationMs: 40 },
      { id: "c", kind: "frontend", step: 2, toolName: "generate_chart", status: "ok" },
    ],
    charts: [{ id: "c", config: { type: "bar", data: {} } }],
  },
];

describe("conversation export", () => {
  it("writes each turn, the tools called and the figures", () => {
    const md = conversationMarkdown("Elevation", messages, (id) => (id === "a1" ? [{ title: "Heights", png: "data:image/png;base64,AAA", config: null }] : []), new Date("2026-12-03T08:00:00Z"));
    expect(md).toBe(
      [
        "# Elevation",
        "",
        "_Exported 2026-12-03T08:00:00.000Z_",
        "",
        "## You",
        "",
        "Mean elevation of Luxembourg?",
        "",
        "## Assistant",
        "",
        "Tools called:",
        "",
        '- `get_raster_statistics` {"place":"Luxembourg"} (40 ms)',
        "",
        "It is **348 m**.",
        "",
        "![Heights](data:image/png;base64,AAA)",
        "",
      ].join("\n"),
    );
  });

  it("keeps a chart's configuration when it was not drawn", () => {
    expect(conversationMarkdown(null, messages, () => [])).toContain('```json\n{\n  "type": "bar"');
  });

  it("names the file after the title and finds titles without case or accents", () => {
    expect(exportFileName("Élévation du Luxembourg!", new Date("2026-12-03T08:00:00Z"))).toBe("stacgis-elevation-du-luxembourg-2026-12-03.md");
    expect(titleMatches("Élévation du Luxembourg", "elev")).toBe(true);
    expect(titleMatches(null, "untitled")).toBe(true);
    expect(titleMatches("Berlin", "paris")).toBe(false);
  });
});
