import { describe, expect, it } from "vitest";
import { ev } from "../test/events";
import { chatReducer } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";
import { messagesFromHistory } from "./history";

/** Regenerate and edit-and-resend: the question replaced and what followed leave the conversation; each
 * question whose run started knows its place among the stored questions (sent as `replace_turn`). */

function ask(state: ChatState, n: number, text: string, replaceFrom?: string): ChatState {
  return chatReducer(state, { type: "send", userId: `u${n}`, assistantId: `a${n}`, text, createdAt: "2026-01-01T00:00:00Z", replaceFrom });
}

function answer(state: ChatState, n: number, text: string): ChatState {
  const run = `run-${n}`;
  return [
    ev(run, 1, 0, { runStarted: { sessionId: "s-1" } }),
    ev(run, 2, 1, { done: { content: text, finishReason: "completed", steps: 1 } }),
  ].reduce((s, e, i) => chatReducer(s, { type: "event", event: e, eventId: `${n}-${i}` }), state);
}

const questions = (s: ChatState) => s.messages.filter((m) => m.role === "user").map((m) => [m.content, m.turn]);

describe("replacing a turn", () => {
  it("numbers each question once its run starts, skipping one that was refused", () => {
    let s = answer(ask(initialChatState, 1, "first"), 1, "one");
    s = ask(s, 2, "refused");
    expect(s.messages.find((m) => m.id === "u2")?.turn).toBeUndefined();
    s = chatReducer(s, { type: "run_failed", reason: "http", message: "no" });
    s = answer(ask(s, 3, "third"), 3, "three");
    expect(questions(s)).toEqual([
      ["first", 0],
      ["refused", undefined],
      ["third", 1],
    ]);
  });

  it("drops the replaced question and everything after it, and numbers the new one in its place", () => {
    let s = answer(ask(initialChatState, 1, "first"), 1, "one");
    s = answer(ask(s, 2, "second"), 2, "two");
    s = answer(ask(s, 3, "third"), 3, "three");
    s = ask(s, 4, "second, edited", "u2");
    expect(s.messages.map((m) => m.content)).toEqual(["first", "one", "second, edited", ""]);
    s = answer(s, 4, "two again");
    expect(questions(s)).toEqual([
      ["first", 0],
      ["second, edited", 1],
    ]);
  });

  it("restored history numbers the questions in order", () => {
    const at = "2026-01-01T00:00:00Z";
    const messages = messagesFromHistory("s-1", [
      { role: "user", content: "first", created_at: at },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "get_raster_info", arguments: {} }], created_at: at },
      { role: "tool", content: "{}", created_at: at },
      { role: "assistant", content: "one", created_at: at },
      { role: "user", content: "second", created_at: at },
      { role: "assistant", content: "two", created_at: at },
    ]);
    expect(messages.filter((m) => m.role === "user").map((m) => m.turn)).toEqual([0, 1]);
  });
});

describe("a replacement the gateway refuses", () => {
  const conversation = () => answer(ask(answer(ask(initialChatState, 1, "first"), 1, "one"), 2, "second"), 2, "two");

  it.each(["busy", "http", "unreachable"] as const)("(%s) puts the replaced turns back as they were", (reason) => {
    const before = conversation();
    let s = ask(before, 3, "second, edited", "u2");
    expect(s.messages.map((m) => m.content)).toEqual(["first", "one", "second, edited", ""]);
    s = chatReducer(s, { type: "run_failed", reason, message: "refused" });
    expect(s.messages).toEqual(before.messages);
    expect(s.run).toBeNull();
    expect(s.notice?.text).toBe("refused");
  });

  it("leaving the queue puts them back too", () => {
    const before = conversation();
    const s = chatReducer(ask(before, 3, "first, edited", "u1"), { type: "run_failed", reason: "queue_left", message: "" });
    expect(s.messages).toEqual(before.messages);
    expect(s.notice).toEqual({ kind: "info", text: "You left the queue." });
  });

  it("once the run began, the replaced turns stay gone (the gateway dropped them)", () => {
    let s = ask(conversation(), 3, "second, edited", "u2");
    s = chatReducer(s, { type: "event", event: ev("run-3", 1, 0, { runStarted: { sessionId: "s-1" } }), eventId: "3-0" });
    s = chatReducer(s, { type: "run_failed", reason: "stream_lost", message: "lost" });
    expect(s.messages.map((m) => m.content)).toEqual(["first", "one", "second, edited", ""]);
  });

  it("a refused plain question stays with its error, as before", () => {
    const s = chatReducer(ask(conversation(), 3, "third"), { type: "run_failed", reason: "http", message: "no" });
    expect(s.messages.map((m) => [m.content, m.status])).toEqual([
      ["first", "complete"],
      ["one", "complete"],
      ["second", "complete"],
      ["two", "complete"],
      ["third", "complete"],
      ["", "error"],
    ]);
  });
});
