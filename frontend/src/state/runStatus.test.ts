import { describe, expect, it } from "vitest";
import { ev } from "../test/events";
import { chatReducer } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";
import { formatElapsed, runStatus } from "./runStatus";

function sent(): ChatState {
  return chatReducer(initialChatState, { type: "send", userId: "u", assistantId: "a", text: "Hi", createdAt: "2026-01-01T00:00:00Z" });
}

function label(state: ChatState): string {
  return runStatus(state.run!, Date.now()).label;
}

describe("run status", () => {
  it("names each phase from the events", () => {
    let s = sent();
    expect(label(s)).toBe("Sending your message");
    s = chatReducer(s, { type: "queued", capacity: { active: 2, max: 2, available: 0 } });
    expect(label(s)).toBe("Waiting for a free model slot");
    s = chatReducer(s, { type: "queue_retry" });
    const steps: [Record<string, unknown>, string][] = [
      [{ runStarted: { sessionId: "s", model: "m" } }, "Waiting for the model"],
      [{ thinking: { text: "Waiting for the model (connection refused); trying again in 1 s.\n" } }, "Waiting for the model to come back"],
      [{ thinking: { text: "Look it up." } }, "Thinking"],
      [{ toolStart: { callId: "c1", toolName: "get_raster_info" } }, "Calling get_raster_info"],
      [{ toolResult: { callId: "c1", toolName: "get_raster_info", result: "{}" } }, "Waiting for the model"],
      [{ approvalRequired: { approvalId: "p", callId: "c2", toolName: "add_knowledge" } }, "Waiting for your approval of add_knowledge"],
      [{ toolError: { callId: "c2", toolName: "add_knowledge", error: "no", kind: "rejected" } }, "Waiting for the model"],
      [{ content: { text: "Done" } }, "Writing the answer"],
    ];
    steps.forEach(([payload, expected], i) => {
      s = chatReducer(s, { type: "event", event: ev("r", i + 1, 1, payload), eventId: null });
      expect(label(s)).toBe(expected);
    });
    expect(label(chatReducer(s, { type: "cancel_requested" }))).toBe("Stopping");
    expect(label(chatReducer(s, { type: "resuming", attempt: 1 }))).toBe("Reconnecting to the answer");
  });

  it("keeps an activity's start while it goes on and restarts it for the next", () => {
    let s = chatReducer(sent(), { type: "event", event: ev("r", 1, 1, { thinking: { text: "a" } }), eventId: null });
    const since = s.run!.activity.since;
    s = chatReducer(s, { type: "event", event: ev("r", 2, 1, { thinking: { text: "b" } }), eventId: null });
    expect(s.run!.activity.since).toBe(since);
    const run = { ...s.run!, startedAt: 1_000, activity: { kind: "writing" as const, since: 61_000 } };
    expect(runStatus(run, 66_500)).toMatchObject({ activityMs: 5_500, totalMs: 65_500 });
  });

  it("writes elapsed time in seconds, then minutes", () => {
    expect(formatElapsed(0)).toBe("0 s");
    expect(formatElapsed(59_999)).toBe("59 s");
    expect(formatElapsed(125_000)).toBe("2 min 05 s");
  });
});

describe("following a run again after a reload", () => {
  it("adds the question unless the history has it, and folds the run's events from the first", () => {
    const history: ChatState = { ...initialChatState, sessionId: "s" };
    const s = chatReducer(history, { type: "reattach", userId: "u", assistantId: "a", question: "Mean elevation?", runId: "r" });
    expect(s.messages.map((m) => [m.role, m.content, m.status])).toEqual([
      ["user", "Mean elevation?", "complete"],
      ["assistant", "", "streaming"],
    ]);
    expect(label(s)).toBe("Reconnecting to the answer");
    const next = chatReducer(s, { type: "event", event: ev("r", 1, 1, { runStarted: { sessionId: "s", model: "m" } }), eventId: "1-0" });
    expect(label(next)).toBe("Waiting for the model");
    const asked = chatReducer(history, { type: "reattach", userId: "u", assistantId: "a", question: null, runId: "r" });
    expect(asked.messages.map((m) => m.role)).toEqual(["assistant"]);
  });
});
