import { describe, expect, it } from "vitest";
import { messagesFromHistory } from "./history";

describe("messagesFromHistory", () => {
  it("restores user and assistant bubbles and hides tool plumbing", () => {
    const chart = { type: "line", data: { labels: ["J", "F"], datasets: [{ label: "mm", data: [3, 4] }] } };
    const messages = messagesFromHistory("s1", [
      { role: "user", content: "Rain in Paris?", created_at: "2026-01-01T10:00:00Z" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c1", name: "get_timeseries", arguments: { lat: 48.8, lon: 2.3 } },
          { id: "c2", function: { name: "generate_chart", arguments: JSON.stringify({ chart }) } },
        ],
      },
      { role: "tool", content: "[3, 4]" },
      { role: "assistant", content: "It rains a little more in February." },
      { role: "user", content: "Thanks" },
      { role: "assistant", content: "You're welcome." },
    ]);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "Rain in Paris?"],
      ["assistant", "It rains a little more in February."],
      ["user", "Thanks"],
      ["assistant", "You're welcome."],
    ]);
    expect(messages[1].activities.map((a) => [a.toolName, a.status])).toEqual([
      ["get_timeseries", "ok"],
      ["generate_chart", "ok"],
    ]);
    expect(messages[1].charts).toEqual([{ id: expect.any(String), config: chart }]);
    expect(messages[3].activities).toEqual([]);
    expect(messages.every((m) => m.status === "complete")).toBe(true);
  });

  it("redraws charts from the model's own generate_chart arguments", () => {
    const [, answer] = messagesFromHistory("s2", [
      { role: "user", content: "Chart it" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: "c1",
            name: "generate_chart",
            arguments: { chart_type: "bar", title: "Rain", labels: ["Jan", "Feb"], datasets: [{ label: "mm", data: [3, 4] }] },
          },
        ],
      },
      { role: "assistant", content: "Here it is." },
    ]);
    expect(answer.charts[0].config).toEqual({
      type: "bar",
      data: { labels: ["Jan", "Feb"], datasets: [{ label: "mm", data: [3, 4] }] },
      options: { plugins: { title: { display: true, text: "Rain" } } },
    });
  });

  it("gives every message a stable unique id", () => {
    const a = messagesFromHistory("s1", [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
    ]);
    const b = messagesFromHistory("s1", [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
    ]);
    expect(a.map((m) => m.id)).toEqual(b.map((m) => m.id));
    expect(new Set(a.map((m) => m.id)).size).toBe(2);
  });

  it("shows a call rejected at approval as rejected and a failed call as failed", () => {
    const [, answer] = messagesFromHistory("s3", [
      { role: "user", content: "Save a note, then look up rain" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c1", name: "add_knowledge", arguments: { title: "Kneiff" }, status: "rejected", error: "The user rejected the call", error_kind: "rejected" },
          { id: "c2", name: "get_timeseries", arguments: {}, status: "failed", error: "catalog unreachable", error_kind: "tool_failed" },
          { id: "c3", name: "add_knowledge", arguments: {}, status: "rejected", error: "no answer in time", error_kind: "approval_timeout" },
          { id: "c4", name: "list_raster_collections", arguments: {}, status: "ok" },
        ],
      },
      { role: "assistant", content: "I did not save it." },
    ]);
    expect(answer.activities.map((a) => [a.kind, a.toolName, a.status, a.text])).toEqual([
      ["approval", "add_knowledge", "rejected", "The user rejected the call"],
      ["tool", "get_timeseries", "error", "catalog unreachable"],
      ["tool", "add_knowledge", "error", "no answer in time"],
      ["tool", "list_raster_collections", "ok", undefined],
    ]);
  });
});
