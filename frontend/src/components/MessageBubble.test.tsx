import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { UiMessage } from "../state/chatTypes";
import { MessageBubble } from "./MessageBubble";

const CONTENT = "Mean 348 m, highest 1929 m.";

function answer(extra: Partial<UiMessage> = {}): UiMessage {
  return { id: "a", role: "assistant", content: CONTENT, status: "complete", activities: [], charts: [], ...extra };
}

function number(text: string, supported: boolean) {
  const start = CONTENT.indexOf(text);
  return { text, value: 0, unit: "m", start, end: start + text.length, supported, callId: "", toolName: "t", sourceValue: 0, match: "" };
}

describe("MessageBubble grounding line", () => {
  it("warns when numbers were not found in the tool results", () => {
    const out = renderToStaticMarkup(
      <MessageBubble
        message={answer({ grounding: { numbers: [number("348 m", true), number("1929 m", false)], supportedCount: 1, unsupportedCount: 1 } })}
      />,
    );
    expect(out).toMatch(/<p class="grounding-summary grounding-warning"[^>]*><span aria-hidden="true">⚠ <\/span>1 number not found in the tool results<\/p>/);
    expect(out).toContain('data-grounding="unsupported"');
  });

  it("says how many numbers were checked when all were found", () => {
    const out = renderToStaticMarkup(
      <MessageBubble message={answer({ grounding: { numbers: [number("348 m", true)], supportedCount: 1, unsupportedCount: 0 } })} />,
    );
    expect(out).toMatch(/<p class="grounding-summary"[^>]*>1 number checked against tool results<\/p>/);
  });

  it("adds nothing to an answer without grounding", () => {
    const out = renderToStaticMarkup(<MessageBubble message={answer()} />);
    expect(out).not.toMatch(/grounding|grounded/);
    expect(out).toContain(CONTENT);
  });
});
