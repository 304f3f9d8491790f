import { describe, expect, it } from "vitest";
// @ts-expect-error -- plain ESM script without type declarations
import { diffGenerated } from "../scripts/check-gen.mjs";
import { decodeAgentEvent, SSE_EVENT_NAMES } from "./api/agentEvents";
import { AgentEventSchema } from "./gen/stacgis/v1/events_pb";

describe("event contract", () => {
  it("the committed TypeScript types are what proto/ generates", () => {
    expect((diffGenerated as () => string[])()).toEqual([]);
  }, 30_000);

  it("knows an SSE name for every payload of AgentEvent", () => {
    const oneof = AgentEventSchema.oneofs.find((o) => o.name === "payload");
    const cases = oneof?.fields.map((f) => f.localName).sort();
    expect(cases).toEqual(Object.keys(SSE_EVENT_NAMES).sort());
  });

  it("decodes proto3 JSON: int64 as string, Struct as object, unknown fields tolerated", () => {
    const event = decodeAgentEvent(
      JSON.stringify({
        runId: "r",
        seq: "12",
        step: 2,
        toolResult: { callId: "c", toolName: "t", durationMs: "1500", result: "ok" },
        futureField: 1,
      }),
    );
    expect(event.seq).toBe(12n);
    expect(event.payload.case).toBe("toolResult");
    if (event.payload.case === "toolResult") expect(event.payload.value.durationMs).toBe(1500n);
    const withArgs = decodeAgentEvent(
      JSON.stringify({ runId: "r", seq: "1", frontendTool: { name: "zoom_to_location", arguments: { lat: 1, lon: 2 } } }),
    );
    expect(withArgs.payload.case === "frontendTool" && withArgs.payload.value.arguments).toEqual({ lat: 1, lon: 2 });
  });

  it("rejects data that is not an AgentEvent", () => {
    expect(() => decodeAgentEvent("not json")).toThrow(/not JSON/);
    expect(() => decodeAgentEvent(JSON.stringify({ seq: "abc" }))).toThrow(/not an AgentEvent/);
  });
});
