import type { JsonObject } from "@bufbuild/protobuf";
import type { HistoryMessage, HistoryToolCall } from "../api/client";
import { chartConfigFrom } from "./chartArguments";
import type { Activity, ChartSpec, UiMessage } from "./chatTypes";
import { groundingFromJson } from "./grounding";

function callName(call: HistoryToolCall): string {
  return call.name ?? call.function?.name ?? "tool";
}

function callArguments(call: HistoryToolCall): JsonObject | undefined {
  let raw = call.arguments ?? call.function?.arguments;
  if (typeof raw === "string") {
    try {
      raw = JSON.parse(raw);
    } catch {
      return undefined;
    }
  }
  return raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as JsonObject) : undefined;
}

/**
 * The activity entry of a stored call: a call the user rejected at approval reads as
 * rejected, a failed one (or one not approved in time) as failed with its reason.
 */
function callActivity(call: HistoryToolCall, id: string): Activity {
  const base = { id, step: 0, toolName: callName(call), callId: call.id, arguments: callArguments(call) };
  if (call.status === "rejected" && call.error_kind !== "approval_timeout") {
    return { ...base, kind: "approval", status: "rejected", text: call.error };
  }
  if (call.status === "rejected" || call.status === "failed") {
    return { ...base, kind: "tool", status: "error", text: call.error || "the call did not run" };
  }
  return { ...base, kind: "tool", status: "ok" };
}

/**
 * Turns stored history into conversation bubbles: user and assistant messages
 * with text; the tool calls an assistant made on the way to its answer become
 * that answer's activity entries, and `generate_chart` calls its charts again.
 */
export function messagesFromHistory(sessionId: string, history: HistoryMessage[]): UiMessage[] {
  const out: UiMessage[] = [];
  let turn = 0;
  let pendingActivities: Activity[] = [];
  let pendingCharts: ChartSpec[] = [];
  history.forEach((msg, index) => {
    const id = `${sessionId}:h${index}`;
    if (msg.role === "user") {
      pendingActivities = [];
      pendingCharts = [];
      out.push({
        id,
        role: "user",
        content: msg.content,
        status: "complete",
        activities: [],
        charts: [],
        createdAt: msg.created_at ?? undefined,
        turn: turn++,
      });
      return;
    }
    if (msg.role !== "assistant") return; // tool results and system prompts stay hidden
    (msg.tool_calls ?? []).forEach((call, callIndex) => {
      const activity = callActivity(call, `${id}:c${callIndex}`);
      pendingActivities.push(activity);
      if (activity.toolName === "generate_chart" && activity.status === "ok") {
        const config = chartConfigFrom(activity.arguments);
        if (config) pendingCharts.push({ id: activity.id, config });
      }
    });
    if (!msg.content) return;
    const grounding = groundingFromJson(msg.grounding);
    out.push({
      id,
      role: "assistant",
      content: msg.content,
      status: "complete",
      activities: pendingActivities,
      charts: pendingCharts,
      createdAt: msg.created_at ?? undefined,
      ...(grounding ? { grounding } : {}),
    });
    pendingActivities = [];
    pendingCharts = [];
  });
  return out;
}
