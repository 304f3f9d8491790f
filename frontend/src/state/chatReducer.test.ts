import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../api/agentEvents";
import { ev } from "../test/events";
import { CANCELLED_TEXT, chatReducer, isRunActive, type ChatAction } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";

const RUN = "run-1";

function started(): ChatState {
  return chatReducer(initialChatState, {
    type: "send",
    userId: "u1",
    assistantId: "a1",
    text: "Show Luxembourg",
    createdAt: "2026-01-01T00:00:00Z",
  });
}

function apply(state: ChatState, events: AgentEvent[]): ChatState {
  return events.reduce((s, e, i) => chatReducer(s, { type: "event", event: e, eventId: `${i + 1}-0` }), state);
}

function assistant(state: ChatState) {
  const m = state.messages.find((x) => x.id === "a1");
  if (!m) throw new Error("no assistant message");
  return m;
}

const FULL_RUN = [
  ev(RUN, 1, 0, { runStarted: { sessionId: "s-9", model: "qwen3" } }),
  ev(RUN, 2, 1, { thinking: { text: "The user wants " } }),
  ev(RUN, 3, 1, { thinking: { text: "a map." } }),
  ev(RUN, 4, 1, { toolStart: { callId: "c1", toolName: "get_raster_info", arguments: { collection_id: "luxembourg-dem" }, server: "raster-tools" } }),
  ev(RUN, 5, 1, { toolResult: { callId: "c1", toolName: "get_raster_info", result: "{\"crs\":\"EPSG:4326\"}", durationMs: "234" } }),
  ev(RUN, 6, 2, { toolStart: { callId: "c2", toolName: "query_raster_point" } }),
  ev(RUN, 7, 2, { toolError: { callId: "c2", toolName: "query_raster_point", error: "point outside", durationMs: "12" } }),
  ev(RUN, 8, 3, { frontendTool: { callId: "c3", name: "zoom_to_location", arguments: { lat: 49.6, lon: 6.1 } } }),
  ev(RUN, 9, 4, { content: { text: "Luxembourg is " } }),
  ev(RUN, 10, 4, { content: { text: "shown." } }),
  ev(RUN, 11, 4, { done: { content: "Luxembourg is shown.", finishReason: "completed", steps: 4, toolCalls: 3 } }),
];

describe("chatReducer", () => {
  it("adds the user message and an empty streaming answer on send", () => {
    const s = started();
    expect(s.messages.map((m) => [m.role, m.status, m.content])).toEqual([
      ["user", "complete", "Show Luxembourg"],
      ["assistant", "streaming", ""],
    ]);
    expect(s.run?.phase).toBe("connecting");
    expect(isRunActive(s)).toBe(true);
  });

  it("takes the session id and the model from the session event", () => {
    const s = apply(started(), FULL_RUN.slice(0, 1));
    expect(s.sessionId).toBe("s-9");
    expect(s.model).toBe("qwen3");
    expect(s.run?.runId).toBe(RUN);
    expect(s.run?.phase).toBe("streaming");
  });

  it("keeps the model's label with its provider when a run of the same model starts", () => {
    const named = chatReducer(started(), { type: "set_model", model: "qwen3", provider: "ollama" });
    const s = apply(named, FULL_RUN.slice(0, 1));
    expect([s.model, s.provider]).toEqual(["qwen3", "ollama"]);
    // Another model answering is shown as such, without a provider it was not named with.
    const other = apply(chatReducer(started(), { type: "set_model", model: "llama3", provider: "ollama" }), FULL_RUN.slice(0, 1));
    expect([other.model, other.provider]).toEqual(["qwen3", null]);
    // A new conversation keeps the label.
    const fresh = chatReducer(s, { type: "new_conversation" });
    expect([fresh.model, fresh.provider]).toEqual(["qwen3", "ollama"]);
  });

  it("streams thinking of one step into one feed entry", () => {
    const s = apply(started(), FULL_RUN.slice(0, 3));
    expect(assistant(s).activities).toEqual([
      expect.objectContaining({ kind: "thinking", step: 1, text: "The user wants a map." }),
    ]);
  });

  it("shows a tool call as running, then completed with its duration", () => {
    let s = apply(started(), FULL_RUN.slice(0, 4));
    expect(assistant(s).activities[1]).toMatchObject({
      kind: "tool",
      toolName: "get_raster_info",
      status: "running",
      arguments: { collection_id: "luxembourg-dem" },
      server: "raster-tools",
    });
    s = apply(started(), FULL_RUN.slice(0, 5));
    expect(assistant(s).activities[1]).toMatchObject({ status: "ok", durationMs: 234, result: '{"crs":"EPSG:4326"}' });
    expect(assistant(s).activities).toHaveLength(2);
  });

  it("marks a failed tool call as an error with its message", () => {
    const s = apply(started(), FULL_RUN.slice(0, 7));
    expect(assistant(s).activities[2]).toMatchObject({
      toolName: "query_raster_point",
      status: "error",
      text: "point outside",
      durationMs: 12,
    });
  });

  it("records frontend tools in the feed", () => {
    const s = apply(started(), FULL_RUN.slice(0, 8));
    expect(assistant(s).activities[3]).toMatchObject({ kind: "frontend", toolName: "zoom_to_location", arguments: { lat: 49.6, lon: 6.1 } });
  });

  it("appends content deltas to the answer and finishes on done", () => {
    let s = apply(started(), FULL_RUN.slice(0, 10));
    expect(assistant(s).content).toBe("Luxembourg is shown.");
    expect(assistant(s).status).toBe("streaming");
    s = apply(started(), FULL_RUN);
    expect(assistant(s).status).toBe("complete");
    expect(s.run?.phase).toBe("finished");
    expect(isRunActive(s)).toBe(false);
  });

  it("replaces a withdrawn draft with the text that follows it", () => {
    const s = apply(started(), [
      FULL_RUN[0],
      ev(RUN, 2, 1, { content: { text: "It is about 1,929 m high." } }),
      ev(RUN, 3, 1, { content: { replace: true } }),
      ev(RUN, 4, 2, { content: { text: "The mean is " } }),
    ]);
    expect(assistant(s).content).toBe("The mean is ");
    expect(assistant(s).status).toBe("streaming");
  });

  it("takes done's full text as the answer when deltas were lost", () => {
    const s = apply(started(), [FULL_RUN[0], FULL_RUN[8], FULL_RUN[10]]);
    expect(assistant(s).content).toBe("Luxembourg is shown.");
  });

  it("turns generate_chart into a chart in the answer", () => {
    const chart = { type: "bar", data: { labels: ["a"], datasets: [{ label: "x", data: [1] }] } };
    const s = apply(started(), [ev(RUN, 1, 1, { frontendTool: { callId: "c9", name: "generate_chart", arguments: { chart } } })]);
    expect(assistant(s).charts).toEqual([{ id: expect.any(String), config: chart }]);
  });

  it("opens the approval dialog and closes it when answered", () => {
    let s = apply(started(), [
      ev(RUN, 1, 0, { runStarted: { sessionId: "s" } }),
      ev(RUN, 2, 1, {
        approvalRequired: {
          approvalId: "ap1",
          callId: "c5",
          toolName: "add_knowledge",
          arguments: { text: "x" },
          timeoutSeconds: 60,
          server: "knowledge-tools",
          description: "Adds an entry to the knowledge base.",
        },
      }),
    ]);
    expect(s.approval).toMatchObject({
      approvalId: "ap1",
      toolName: "add_knowledge",
      arguments: { text: "x" },
      timeoutSeconds: 60,
      runId: RUN,
      server: "knowledge-tools",
      description: "Adds an entry to the knowledge base.",
    });
    expect(assistant(s).activities.at(-1)).toMatchObject({ kind: "approval", status: "pending" });
    s = chatReducer(s, { type: "approval_answered", approvalId: "ap1", approved: true });
    expect(s.approval).toBeNull();
    expect(assistant(s).activities.at(-1)).toMatchObject({ kind: "approval", status: "approved" });
  });

  it("records the decision even when the stream moved on before the answer was confirmed", () => {
    let s = apply(started(), [
      ev(RUN, 1, 1, { approvalRequired: { approvalId: "ap1", callId: "c5", toolName: "add_knowledge" } }),
    ]);
    s = chatReducer(s, { type: "event", event: ev(RUN, 2, 1, { toolStart: { callId: "c5", toolName: "add_knowledge" } }), eventId: "2" });
    s = chatReducer(s, { type: "approval_answered", approvalId: "ap1", approved: true });
    expect(assistant(s).activities.find((a) => a.kind === "approval")?.status).toBe("approved");
  });

  it("shows a rejected or timed-out approval as rejected", () => {
    const s = apply(started(), [
      ev(RUN, 1, 1, { approvalRequired: { approvalId: "ap1", callId: "c5", toolName: "add_knowledge" } }),
      ev(RUN, 2, 1, { toolError: { callId: "c5", toolName: "add_knowledge", error: "the user said no", kind: "rejected" } }),
    ]);
    expect(assistant(s).activities.find((a) => a.kind === "approval")?.status).toBe("rejected");
    expect(assistant(s).activities.find((a) => a.kind === "tool")).toMatchObject({ status: "error", text: "the user said no" });
  });

  it("closes a stale approval dialog when the call proceeds", () => {
    const s = apply(started(), [
      ev(RUN, 1, 1, { approvalRequired: { approvalId: "ap1", callId: "c5", toolName: "add_knowledge" } }),
      ev(RUN, 2, 1, { toolStart: { callId: "c5", toolName: "add_knowledge" } }),
    ]);
    expect(s.approval).toBeNull();
  });

  it("reports an error event in red and names a model outage", () => {
    const s = apply(started(), [
      ev(RUN, 1, 0, { runStarted: { sessionId: "s" } }),
      ev(RUN, 2, 1, { error: { code: "model_unavailable", message: "Ollama is down" } }),
    ]);
    expect(assistant(s).status).toBe("error");
    expect(assistant(s).error).toEqual({ code: "model_unavailable", message: "Ollama is down" });
    expect(assistant(s).activities.at(-1)).toMatchObject({ kind: "error", text: "Ollama is down" });
    expect(s.notice?.kind).toBe("model_unavailable");
    expect(isRunActive(s)).toBe(false);
  });

  it("shows a cancelled run as cancelled, not failed", () => {
    const viaDone = apply(started(), [ev(RUN, 1, 1, { done: { content: "Part", finishReason: "cancelled" } })]);
    expect(assistant(viaDone).status).toBe("cancelled");
    expect(viaDone.notice?.kind).toBe("cancelled");
    const viaError = apply(started(), [ev(RUN, 1, 1, { error: { code: "cancelled", message: "" } })]);
    expect(assistant(viaError).status).toBe("cancelled");
    expect(viaError.notice?.kind).toBe("cancelled");
    // Under the banner's title "Stopped" the text says something new, not "Stopped. … cancelled." again.
    for (const notice of [viaDone.notice, viaError.notice]) {
      expect(notice?.text).toBe(CANCELLED_TEXT);
      expect(notice?.text).not.toMatch(/^stopped/i);
    }
  });

  it("marks a run stopped by the step budget", () => {
    const s = apply(started(), [ev(RUN, 1, 5, { done: { content: "Partial answer", finishReason: "step_budget" } })]);
    expect(assistant(s).status).toBe("step_budget");
  });

  describe("resume de-duplication", () => {
    it("ignores events replayed after a reconnect (same seq)", () => {
      const first = apply(started(), FULL_RUN.slice(0, 9));
      // A resumed stream repeats 7..9 before new events.
      const replay = [...FULL_RUN.slice(6, 9), ...FULL_RUN.slice(9)];
      const s = replay.reduce(
        (st, e) => chatReducer(st, { type: "event", event: e, eventId: `${Number(e.seq)}-0` }),
        first,
      );
      expect(assistant(s).content).toBe("Luxembourg is shown.");
      expect(assistant(s).activities.filter((a) => a.kind === "frontend")).toHaveLength(1);
      expect(assistant(s).activities.filter((a) => a.toolName === "query_raster_point")).toHaveLength(1);
    });

    it("returns the same state object for a duplicate, so side effects are not repeated", () => {
      const s = apply(started(), FULL_RUN.slice(0, 9));
      const again = chatReducer(s, { type: "event", event: FULL_RUN[7], eventId: "8-0" });
      expect(again).toBe(s);
    });

    it("falls back to the SSE id for events without seq", () => {
      const noSeq = ev(RUN, 0, 1, { content: { text: "x" } });
      let s = chatReducer(started(), { type: "event", event: noSeq, eventId: "abc" });
      s = chatReducer(s, { type: "event", event: noSeq, eventId: "abc" });
      expect(assistant(s).content).toBe("x");
    });

    it("ignores events of another run", () => {
      const s = apply(started(), FULL_RUN.slice(0, 1));
      const other = chatReducer(s, { type: "event", event: ev("run-2", 5, 1, { content: { text: "stray" } }), eventId: "x" });
      expect(assistant(other).content).toBe("");
    });

    it("keeps the last SSE id for Last-Event-ID", () => {
      const s = apply(started(), FULL_RUN.slice(0, 3));
      expect(s.run?.lastEventId).toBe("3-0");
      expect(s.run?.lastSeq).toBe(3);
    });
  });

  describe("connection and queue states", () => {
    it("shows queued with the gate's numbers, then connecting on retry", () => {
      let s = chatReducer(started(), { type: "queued", capacity: { active: 1, max: 1, available: 0 } });
      expect(s.run?.phase).toBe("queued");
      expect(s.notice).toMatchObject({ kind: "queued", capacity: { active: 1, max: 1, available: 0 } });
      expect(s.notice?.text).toMatch(/queued/i);
      s = chatReducer(s, { type: "queue_retry" });
      expect(s.run?.phase).toBe("connecting");
      s = apply(s, FULL_RUN.slice(0, 1));
      expect(s.notice).toBeNull();
    });

    it("takes the message back out when the user leaves the queue", () => {
      let s = chatReducer(started(), { type: "queued", capacity: { active: 1, max: 1, available: 0 } });
      s = chatReducer(s, { type: "run_failed", reason: "queue_left", message: "" });
      expect(s.messages).toEqual([]);
      expect(s.run).toBeNull();
    });

    it("shows resuming while reconnecting and clears it when events flow", () => {
      let s = apply(started(), FULL_RUN.slice(0, 2));
      s = chatReducer(s, { type: "resuming", attempt: 1 });
      expect(s.run?.phase).toBe("resuming");
      expect(s.notice?.kind).toBe("resuming");
      s = chatReducer(s, { type: "resumed" });
      expect(s.notice).toBeNull();
      expect(s.run?.phase).toBe("streaming");
    });

    it("marks the answer failed and names the gateway when unreachable", () => {
      const s = chatReducer(started(), { type: "run_failed", reason: "unreachable", message: "The chat service cannot be reached" });
      expect(assistant(s).status).toBe("error");
      expect(s.notice).toEqual({ kind: "unreachable", text: "The chat service cannot be reached" });
      expect(isRunActive(s)).toBe(false);
    });

    it("cancels locally when the stream is dropped before the run has an id", () => {
      const s = chatReducer(started(), { type: "cancelled_locally" });
      expect(assistant(s).status).toBe("cancelled");
      expect(s.notice?.kind).toBe("cancelled");
    });

    it("keeps the cancelling phase while the last events arrive", () => {
      let s = apply(started(), FULL_RUN.slice(0, 2));
      s = chatReducer(s, { type: "cancel_requested" });
      s = apply(s, [FULL_RUN[2]]);
      expect(s.run?.phase).toBe("cancelling");
    });
  });

  it("replaces the conversation on history load and on a new conversation", () => {
    const loaded = chatReducer(apply(started(), FULL_RUN), {
      type: "history_loaded",
      sessionId: "s-2",
      title: "Trip",
      messages: [],
    } satisfies ChatAction);
    expect(loaded).toMatchObject({ sessionId: "s-2", title: "Trip", messages: [], run: null, model: "qwen3" });
    const fresh = chatReducer(loaded, { type: "new_conversation" });
    expect(fresh).toMatchObject({ sessionId: null, title: null, messages: [] });
  });
});
