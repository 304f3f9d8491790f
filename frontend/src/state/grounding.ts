import type { Grounding } from "../gen/stacgis/v1/events_pb";
import type { AnswerGrounding, GroundedNumber, UiMessage } from "./chatTypes";

/** The generated message as plain data (no `$typeName`), so it is stored like the rest of a message. */
export function groundingFromEvent(g: Grounding): AnswerGrounding {
  return {
    numbers: g.numbers.map((n) => ({
      text: n.text,
      value: n.value,
      unit: n.unit,
      start: n.start,
      end: n.end,
      supported: n.supported,
      callId: n.callId,
      toolName: n.toolName,
      sourceValue: n.sourceValue,
      match: n.match,
    })),
    supportedCount: g.supportedCount,
    unsupportedCount: g.unsupportedCount,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function num(value: unknown): number {
  // proto3 JSON may write doubles as strings ("NaN", "1e3").
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : NaN;
  return Number.isFinite(n) ? n : 0;
}

function int(value: unknown): number {
  return Math.trunc(num(value));
}

/**
 * Reads a grounding from proto3 JSON (camelCase, or the original snake_case names),
 * e.g. from stored history; anything that is not an object with a `numbers` list is none.
 */
export function groundingFromJson(raw: unknown): AnswerGrounding | undefined {
  if (!isRecord(raw) || !Array.isArray(raw.numbers)) return undefined;
  const numbers: GroundedNumber[] = raw.numbers.filter(isRecord).map((n) => ({
    text: str(n.text),
    value: num(n.value),
    unit: str(n.unit),
    start: int(n.start),
    end: int(n.end),
    supported: n.supported === true,
    callId: str(n.callId ?? n.call_id),
    toolName: str(n.toolName ?? n.tool_name),
    sourceValue: num(n.sourceValue ?? n.source_value),
    match: str(n.match),
  }));
  return {
    numbers,
    supportedCount: int(raw.supportedCount ?? raw.supported_count),
    unsupportedCount: int(raw.unsupportedCount ?? raw.unsupported_count),
  };
}

/** How many numbers were checked and how many were not found; the list decides when the counts are missing. */
export function groundingCounts(g: AnswerGrounding): { checked: number; unsupported: number } {
  const listed = g.numbers.length;
  const listedUnsupported = g.numbers.filter((n) => !n.supported).length;
  const counted = g.supportedCount + g.unsupportedCount;
  if (counted === 0) return { checked: listed, unsupported: listedUnsupported };
  return { checked: counted, unsupported: g.unsupportedCount };
}

/** The line under an answer, or null when nothing was checked. */
export function groundingSummary(g: AnswerGrounding): { text: string; warning: boolean } | null {
  const { checked, unsupported } = groundingCounts(g);
  if (checked <= 0) return null;
  const noun = (n: number) => (n === 1 ? "number" : "numbers");
  if (unsupported > 0) {
    return { text: `${unsupported} ${noun(unsupported)} not found in the tool results`, warning: true };
  }
  return { text: `${checked} ${noun(checked)} checked against tool results`, warning: false };
}

/**
 * Checks of answers already seen in this tab, per session. The gateway's history keeps
 * no grounding, so a session loaded again gets its answers' checks back from here,
 * matched by the answer's exact text (the offsets refer to that text).
 */
export interface GroundingMemo {
  sessionId: string;
  content: string;
  grounding: AnswerGrounding;
}

export const GROUNDING_MEMO_LIMIT = 200;

export function rememberGrounding(memo: GroundingMemo[], entry: GroundingMemo): GroundingMemo[] {
  const rest = memo.filter((m) => !(m.sessionId === entry.sessionId && m.content === entry.content));
  return [...rest, entry].slice(-GROUNDING_MEMO_LIMIT);
}

/** Gives loaded assistant messages without a check the one remembered for the same text. */
export function restoreGrounding(sessionId: string, messages: UiMessage[], memo: GroundingMemo[]): UiMessage[] {
  const mine = memo.filter((m) => m.sessionId === sessionId);
  if (mine.length === 0) return messages;
  return messages.map((m) => {
    if (m.role !== "assistant" || m.grounding) return m;
    const found = mine.find((e) => e.content === m.content);
    return found ? { ...m, grounding: found.grounding } : m;
  });
}
