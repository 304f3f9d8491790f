import { describe, expect, it } from "vitest";
import { ev } from "../test/events";
import { chatReducer } from "./chatReducer";
import { initialChatState, type ChatState } from "./chatTypes";
import { GROUNDING_MEMO_LIMIT, groundingFromJson, groundingSummary, rememberGrounding } from "./grounding";
import { messagesFromHistory } from "./history";

const RUN = "run-g";
const ANSWER = "Mean elevation: 348 m (max 1929 m).";

/** The check as the orchestrator sends it inside `done` (proto3 JSON, camelCase). */
const GROUNDING_JSON = {
  numbers: [
    {
      text: "348 m",
      value: 348,
      unit: "m",
      start: ANSWER.indexOf("348"),
      end: ANSWER.indexOf("348") + 5,
      supported: true,
      callId: "c1",
      toolName: "get_raster_statistics",
      sourceValue: 348.21,
      match: "rounded",
    },
    { text: "1929 m", value: 1929, unit: "m", start: ANSWER.indexOf("1929"), end: ANSWER.indexOf("1929") + 6 },
  ],
  supportedCount: 1,
  unsupportedCount: 1,
};

function answered(sessionId: string, content: string, grounding: unknown): ChatState {
  let s = chatReducer(initialChatState, { type: "send", userId: "u", assistantId: "a", text: "q", createdAt: "" });
  const events = [
    ev(RUN, 1, 0, { runStarted: { sessionId, model: "m" } }),
    ev(RUN, 2, 1, { content: { text: content } }),
    ev(RUN, 3, 1, { done: { content, finishReason: "completed", ...(grounding ? { grounding } : {}) } }),
  ];
  events.forEach((e, i) => (s = chatReducer(s, { type: "event", event: e, eventId: `${i}` })));
  return s;
}

describe("grounding in the chat state", () => {
  it("keeps done's grounding with the answer, defaults filled in", () => {
    const s = answered("s1", ANSWER, GROUNDING_JSON);
    const g = s.messages[1].grounding;
    expect(g?.supportedCount).toBe(1);
    expect(g?.numbers.map((n) => [n.text, n.supported, n.toolName, n.sourceValue, n.start])).toEqual([
      ["348 m", true, "get_raster_statistics", 348.21, ANSWER.indexOf("348")],
      ["1929 m", false, "", 0, ANSWER.indexOf("1929")],
    ]);
    // Plain data: no generated-message fields travel with it.
    expect(Object.keys(g ?? {}).sort()).toEqual(["numbers", "supportedCount", "unsupportedCount"]);
  });

  it("leaves answers without grounding without it", () => {
    const s = answered("s1", "No numbers here.", null);
    expect(s.messages[1].grounding).toBeUndefined();
    expect(s.groundingMemo).toEqual([]);
  });

  it("gives a session's answers their grounding back when the session is loaded again", () => {
    let s = answered("s1", ANSWER, GROUNDING_JSON);
    s = chatReducer(s, { type: "new_conversation" });
    const history = messagesFromHistory("s1", [
      { role: "user", content: "q" },
      { role: "assistant", content: ANSWER },
      { role: "user", content: "again" },
      { role: "assistant", content: "Another answer with 5 m." },
    ]);
    s = chatReducer(s, { type: "history_loaded", sessionId: "s1", title: null, messages: history });
    expect(s.messages[1].grounding?.numbers).toHaveLength(2);
    expect(s.messages[3].grounding).toBeUndefined();
    // Another session with the same text does not borrow it.
    s = chatReducer(s, {
      type: "history_loaded",
      sessionId: "s2",
      title: null,
      messages: messagesFromHistory("s2", [{ role: "assistant", content: ANSWER }]),
    });
    expect(s.messages[0].grounding).toBeUndefined();
  });

  it("reads a grounding stored in history (camelCase or snake_case) and ignores anything else", () => {
    const [camel] = messagesFromHistory("s", [{ role: "assistant", content: ANSWER, grounding: GROUNDING_JSON }]);
    expect(camel.grounding?.numbers[0].toolName).toBe("get_raster_statistics");
    const snake = groundingFromJson({
      numbers: [{ text: "5 m", start: 0, end: 3, supported: true, tool_name: "t", call_id: "c", source_value: "5" }],
      supported_count: 1,
      unsupported_count: 0,
    });
    expect(snake?.numbers[0]).toMatchObject({ toolName: "t", callId: "c", sourceValue: 5 });
    expect(snake?.supportedCount).toBe(1);
    for (const junk of [null, "x", 3, [], { numbers: "no" }]) expect(groundingFromJson(junk)).toBeUndefined();
    const [plain] = messagesFromHistory("s", [{ role: "assistant", content: ANSWER }]);
    expect("grounding" in plain).toBe(false);
  });

  it("keeps a bounded memo, newest last", () => {
    const g = groundingFromJson(GROUNDING_JSON)!;
    let memo = rememberGrounding([], { sessionId: "s", content: "0", grounding: g });
    for (let i = 1; i <= GROUNDING_MEMO_LIMIT + 5; i++) memo = rememberGrounding(memo, { sessionId: "s", content: String(i), grounding: g });
    expect(memo).toHaveLength(GROUNDING_MEMO_LIMIT);
    expect(memo[memo.length - 1].content).toBe(String(GROUNDING_MEMO_LIMIT + 5));
    // The same answer again replaces its entry.
    expect(rememberGrounding(memo, { sessionId: "s", content: "100", grounding: g })).toHaveLength(GROUNDING_MEMO_LIMIT);
  });

  it("summarises the check in one line", () => {
    const g = groundingFromJson(GROUNDING_JSON)!;
    expect(groundingSummary(g)).toEqual({ text: "1 number not found in the tool results", warning: true });
    const ok = { ...g, numbers: g.numbers.map((n) => ({ ...n, supported: true })), supportedCount: 2, unsupportedCount: 0 };
    expect(groundingSummary(ok)).toEqual({ text: "2 numbers checked against tool results", warning: false });
    // Counts missing (older sender): the list decides.
    expect(groundingSummary({ ...g, supportedCount: 0, unsupportedCount: 0 })?.text).toBe("1 number not found in the tool results");
    expect(groundingSummary({ numbers: [], supportedCount: 0, unsupportedCount: 0 })).toBeNull();
  });
});
