import type { AgentEvent } from "../api/agentEvents";
import type { Capacity } from "../api/errors";
import type { Activity, ChatState, MessageStatus, NoticeKind, RunActivity, UiMessage } from "./chatTypes";
import { chartConfigFrom } from "./chartArguments";
import { groundingFromEvent, rememberGrounding, restoreGrounding } from "./grounding";

export type RunFailure = "unreachable" | "busy" | "http" | "stream_lost" | "queue_left";

export type ChatAction =
  /** `replaceFrom`: regenerate or edit and resend; that question and all after it leave the conversation. */
  | { type: "send"; userId: string; assistantId: string; text: string; createdAt: string; replaceFrom?: string }
  /** Following again a run started before a reload; `question` is added unless the history has it. */
  | { type: "reattach"; userId: string; assistantId: string; question: string | null; runId: string }
  | { type: "event"; event: AgentEvent; eventId: string | null }
  | { type: "queued"; capacity: Capacity }
  | { type: "queue_poll"; capacity: Capacity }
  | { type: "queue_retry" }
  | { type: "resuming"; attempt: number }
  | { type: "resumed" }
  | { type: "cancel_requested" }
  | { type: "cancelled_locally" }
  | { type: "run_failed"; reason: RunFailure; message: string }
  | { type: "approval_answered"; approvalId: string; approved: boolean }
  | { type: "history_loaded"; sessionId: string; title: string | null; messages: UiMessage[] }
  | { type: "new_conversation" }
  | { type: "session_renamed"; sessionId: string; title: string }
  | { type: "set_model"; model: string; provider?: string | null }
  | { type: "notice"; kind: NoticeKind; text: string }
  | { type: "dismiss_notice" };

/** The banner's text after a stop; its title ("Stopped") says the rest. */
export const CANCELLED_TEXT = "The answer was cancelled before it finished.";

const FINISH_STATUS: Record<string, MessageStatus> = {
  completed: "complete",
  cancelled: "cancelled",
  step_budget: "step_budget",
};

function updateMessage(state: ChatState, id: string, fn: (m: UiMessage) => UiMessage): ChatState {
  return { ...state, messages: state.messages.map((m) => (m.id === id ? fn(m) : m)) };
}

function durationOf(value: bigint): number {
  return Number(value);
}

/** Folds one agent event into the assistant message it belongs to. */
function applyPayload(message: UiMessage, event: AgentEvent, key: string): UiMessage {
  const step = event.step;
  const p = event.payload;
  switch (p.case) {
    case "runStarted":
      return { ...message, runId: event.runId };
    case "thinking": {
      const last = message.activities[message.activities.length - 1];
      if (last && last.kind === "thinking" && last.step === step) {
        const merged: Activity = { ...last, text: (last.text ?? "") + p.value.text };
        return { ...message, activities: [...message.activities.slice(0, -1), merged] };
      }
      return {
        ...message,
        activities: [...message.activities, { id: key, kind: "thinking", step, text: p.value.text }],
      };
    }
    case "toolStart":
      return {
        ...message,
        activities: [
          ...settleApproval(message.activities, p.value.callId, "approved"),
          {
            id: key,
            kind: "tool",
            step,
            toolName: p.value.toolName,
            callId: p.value.callId,
            status: "running",
            arguments: p.value.arguments,
            server: p.value.server || undefined,
          },
        ],
      };
    case "toolResult":
    case "toolError": {
      const isError = p.case === "toolError";
      const { callId, toolName } = p.value;
      const patch: Partial<Activity> = {
        status: isError ? "error" : "ok",
        durationMs: durationOf(p.value.durationMs),
        ...(isError ? { text: p.value.error } : { result: p.value.result, truncated: p.value.truncated }),
      };
      const refused = isError && (p.value.kind === "rejected" || p.value.kind === "approval_timeout");
      const settled = settleApproval(message.activities, callId, refused ? "rejected" : "approved");
      const idx = findToolActivity(settled, callId, toolName);
      if (idx === -1) {
        return {
          ...message,
          activities: [...settled, { id: key, kind: "tool", step, toolName, callId, ...patch }],
        };
      }
      const activities = settled.slice();
      activities[idx] = { ...activities[idx], ...patch };
      return { ...message, activities };
    }
    case "content":
      // `replace`: the draft shown so far was withdrawn (it quoted numbers no tool gave).
      return { ...message, content: p.value.replace ? p.value.text : message.content + p.value.text };
    case "approvalRequired":
      return {
        ...message,
        activities: [
          ...message.activities,
          {
            id: key,
            kind: "approval",
            step,
            toolName: p.value.toolName,
            callId: p.value.callId,
            approvalId: p.value.approvalId,
            status: "pending",
            arguments: p.value.arguments,
          },
        ],
      };
    case "frontendTool": {
      const activity: Activity = {
        id: key,
        kind: "frontend",
        step,
        toolName: p.value.name,
        callId: p.value.callId,
        status: "ok",
        arguments: p.value.arguments,
      };
      const chart = p.value.name === "generate_chart" ? chartConfigFrom(p.value.arguments) : null;
      return {
        ...message,
        activities: [...message.activities, activity],
        charts: chart ? [...message.charts, { id: key, config: chart }] : message.charts,
      };
    }
    case "done": {
      const status = FINISH_STATUS[p.value.finishReason] ?? "complete";
      return {
        ...message,
        // The final text is authoritative: it repairs any delta lost on the way.
        content: p.value.content || message.content,
        status,
        grounding: p.value.grounding ? groundingFromEvent(p.value.grounding) : message.grounding,
        activities: message.activities.map((a) =>
          a.status === "running" ? { ...a, status: status === "complete" ? "ok" : "error" } : a,
        ),
      };
    }
    case "error": {
      const cancelled = p.value.code === "cancelled";
      return {
        ...message,
        status: cancelled ? "cancelled" : "error",
        error: { code: p.value.code, message: p.value.message },
        activities: [
          ...message.activities.map((a) => (a.status === "running" ? { ...a, status: "error" as const } : a)),
          ...(cancelled ? [] : [{ id: key, kind: "error" as const, step, text: p.value.message || p.value.code }]),
        ],
      };
    }
    default:
      return message;
  }
}

/** The call moved on: its approval entry, if still pending, says how it was decided. */
function settleApproval(activities: Activity[], callId: string, status: "approved" | "rejected"): Activity[] {
  if (!callId || !activities.some((a) => a.kind === "approval" && a.callId === callId && a.status === "pending")) {
    return activities;
  }
  return activities.map((a) =>
    a.kind === "approval" && a.callId === callId && a.status === "pending" ? { ...a, status } : a,
  );
}

function findToolActivity(activities: Activity[], callId: string, toolName: string): number {
  for (let i = activities.length - 1; i >= 0; i--) {
    const a = activities[i];
    if (a.kind !== "tool") continue;
    if (callId ? a.callId === callId : a.toolName === toolName && a.status === "running") return i;
  }
  return -1;
}

function noticeForError(code: string, message: string): { kind: NoticeKind; text: string } | null {
  switch (code) {
    case "cancelled":
      return { kind: "cancelled", text: CANCELLED_TEXT };
    case "model_unavailable":
    case "model_timeout":
      return { kind: "model_unavailable", text: "The model is unavailable right now. Try again in a moment." };
    default:
      return { kind: "error", text: message || `The run failed (${code}).` };
  }
}

/** The orchestrator's note while it waits for a model server that is (re)starting. */
const MODEL_RETRY_NOTE = /^Waiting for the model\b/;

/** What the run does after `event`; the time it began is kept while the subject stays the same. */
export function activityAfter(current: RunActivity, event: AgentEvent, now: number): RunActivity {
  const p = event.payload;
  let next: Omit<RunActivity, "since">;
  switch (p.case) {
    case "runStarted":
    case "toolResult":
    case "toolError":
    case "frontendTool":
      // The model is asked (again): until its first token it reads the prompt or waits its turn.
      next = { kind: "model" };
      break;
    case "thinking":
      next = { kind: MODEL_RETRY_NOTE.test(p.value.text) ? "model_retry" : "thinking" };
      break;
    case "toolStart":
      next = { kind: "tool", toolName: p.value.toolName };
      break;
    case "approvalRequired":
      next = { kind: "approval", toolName: p.value.toolName };
      break;
    case "content":
      next = { kind: "writing" };
      break;
    default:
      return current;
  }
  if (next.kind === current.kind && next.toolName === current.toolName) return current;
  return { ...next, since: now };
}

/** The messages before `id` (all of them without an id, or when it is not there). */
function messagesBefore(messages: UiMessage[], id: string | undefined): UiMessage[] {
  const at = id === undefined ? -1 : messages.findIndex((m) => m.id === id);
  return at < 0 ? messages : messages.slice(0, at);
}

/**
 * The run answering the question before `assistantId` started: the gateway stores that
 * question, after every question stored before it.
 */
function numberQuestion(messages: UiMessage[], assistantId: string): UiMessage[] {
  const at = messages.findIndex((m) => m.id === assistantId) - 1;
  const question = messages[at];
  if (!question || question.role !== "user" || question.turn !== undefined) return messages;
  const turn = messages.slice(0, at).filter((m) => m.role === "user" && m.turn !== undefined).length;
  return messages.map((m, index) => (index === at ? { ...m, turn } : m));
}

function applyEvent(state: ChatState, event: AgentEvent, eventId: string | null): ChatState {
  const run = state.run;
  if (!run) return state; // no run is waiting for events
  if (run.runId && event.runId && event.runId !== run.runId) return state; // another run's event
  const seq = Number(event.seq);
  if (seq > 0 ? seq <= run.lastSeq : eventId !== null && run.seenIds.includes(eventId)) {
    return state; // replayed after a resume: already applied
  }
  const key = `${event.runId || run.assistantId}:${seq || eventId || run.seenIds.length}`;
  let next: ChatState = {
    ...state,
    run: {
      ...run,
      runId: run.runId ?? (event.runId || null),
      lastSeq: seq > 0 ? seq : run.lastSeq,
      seenIds: eventId !== null && seq <= 0 ? [...run.seenIds, eventId] : run.seenIds,
      lastEventId: eventId ?? run.lastEventId,
      phase: run.phase === "cancelling" ? "cancelling" : "streaming",
      activity: activityAfter(run.activity, event, Date.now()),
    },
  };
  next = updateMessage(next, run.assistantId, (m) => applyPayload(m, event, key));
  const p = event.payload;
  switch (p.case) {
    case "runStarted":
      next = {
        ...next,
        sessionId: p.value.sessionId || next.sessionId,
        // The same model keeps its label (with its provider); only another model changes the badge.
        ...(p.value.model && p.value.model !== next.model ? { model: p.value.model, provider: null } : {}),
      };
      if (next.notice && (next.notice.kind === "queued" || next.notice.kind === "resuming")) next.notice = null;
      next = { ...next, messages: numberQuestion(next.messages, run.assistantId) };
      break;
    case "approvalRequired":
      next = {
        ...next,
        approval: {
          approvalId: p.value.approvalId,
          runId: event.runId,
          callId: p.value.callId,
          toolName: p.value.toolName,
          arguments: p.value.arguments ?? {},
          timeoutSeconds: p.value.timeoutSeconds,
          receivedAt: Date.now(),
          description: p.value.description,
          server: p.value.server,
        },
      };
      break;
    case "toolStart":
    case "toolResult":
    case "toolError":
      // The approved (or rejected) call moved on: the dialog is stale.
      if (next.approval && next.approval.callId === p.value.callId) next = { ...next, approval: null };
      break;
    case "done": {
      const cancelled = p.value.finishReason === "cancelled";
      const answer = next.messages.find((m) => m.id === run.assistantId);
      next = {
        ...next,
        groundingMemo:
          answer?.grounding && next.sessionId
            ? rememberGrounding(next.groundingMemo, {
                sessionId: next.sessionId,
                content: answer.content,
                grounding: answer.grounding,
              })
            : next.groundingMemo,
        run: { ...next.run!, phase: "finished" },
        approval: null,
        notice: cancelled
          ? { kind: "cancelled", text: CANCELLED_TEXT }
          : next.notice?.kind === "resuming"
            ? null
            : next.notice,
      };
      break;
    }
    case "error":
      next = { ...next, run: { ...next.run!, phase: "finished" }, approval: null, notice: noticeForError(p.value.code, p.value.message) };
      break;
    default:
      break;
  }
  return next;
}

export function chatReducer(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case "send": {
      const kept = messagesBefore(state.messages, action.replaceFrom);
      const replaced = state.messages.slice(kept.length);
      return {
        ...state,
        messages: [
          ...kept,
          {
            id: action.userId,
            role: "user",
            content: action.text,
            status: "complete",
            activities: [],
            charts: [],
            createdAt: action.createdAt,
          },
          { id: action.assistantId, role: "assistant", content: "", status: "streaming", activities: [], charts: [] },
        ],
        run: {
          runId: null,
          assistantId: action.assistantId,
          phase: "connecting",
          lastSeq: 0,
          seenIds: [],
          lastEventId: null,
          startedAt: Date.now(),
          activity: { kind: "sending", since: Date.now() },
          ...(replaced.length ? { replaced } : {}),
        },
        approval: null,
        notice: null,
      };
    }
    case "reattach": {
      const now = Date.now();
      const question: UiMessage[] = action.question
        ? [{ id: action.userId, role: "user", content: action.question, status: "complete", activities: [], charts: [] }]
        : [];
      return {
        ...state,
        messages: [
          ...state.messages,
          ...question,
          { id: action.assistantId, role: "assistant", content: "", status: "streaming", activities: [], charts: [] },
        ],
        run: {
          runId: action.runId,
          assistantId: action.assistantId,
          phase: "resuming",
          lastSeq: 0,
          seenIds: [],
          lastEventId: null,
          startedAt: now,
          activity: { kind: "model", since: now },
        },
        approval: null,
        notice: null,
      };
    }
    case "event":
      return applyEvent(state, action.event, action.eventId);
    case "queued":
    case "queue_poll": {
      if (!state.run) return state;
      const { active, max } = action.capacity;
      return {
        ...state,
        run: {
          ...state.run,
          phase: "queued",
          activity: state.run.activity.kind === "queued" ? state.run.activity : { kind: "queued", since: Date.now() },
        },
        notice: {
          kind: "queued",
          text: `${max === 1 ? "The model's only slot is" : `All ${max} model slots are`} busy (${active} active). You are queued; your message is sent as soon as a slot frees.`,
          capacity: action.capacity,
        },
      };
    }
    case "queue_retry":
      if (!state.run) return state;
      return { ...state, run: { ...state.run, phase: "connecting", activity: { kind: "sending", since: Date.now() } } };
    case "resuming":
      if (!state.run) return state;
      return {
        ...state,
        run: { ...state.run, phase: "resuming" },
        notice: { kind: "resuming", text: `Connection lost. Resuming the answer (attempt ${action.attempt})…` },
      };
    case "resumed":
      if (!state.run) return state;
      return {
        ...state,
        run: { ...state.run, phase: "streaming" },
        notice: state.notice?.kind === "resuming" ? null : state.notice,
      };
    case "cancel_requested":
      if (!state.run || state.run.phase === "finished") return state;
      return { ...state, run: { ...state.run, phase: "cancelling" } };
    case "cancelled_locally": {
      // The stream was dropped by the user before the gateway named the run.
      const run = state.run;
      if (!run || run.phase === "finished") return state;
      const next = updateMessage(state, run.assistantId, (m) => ({
        ...m,
        status: "cancelled",
        activities: m.activities.map((a) => (a.status === "running" ? { ...a, status: "error" as const } : a)),
      }));
      return {
        ...next,
        run: { ...run, phase: "finished" },
        approval: null,
        notice: { kind: "cancelled", text: CANCELLED_TEXT },
      };
    }
    case "run_failed": {
      const run = state.run;
      if (!run) return state;
      const kind: NoticeKind =
        action.reason === "unreachable" ? "unreachable" : action.reason === "busy" ? "busy" : "error";
      if (action.reason === "queue_left" || (run.replaced && run.runId === null && action.reason !== "stream_lost")) {
        // Nothing was sent, or the gateway refused it before the run began (the stored conversation is
        // unchanged): take the message back out and put back the turns it was to replace.
        const idx = state.messages.findIndex((m) => m.id === run.assistantId);
        const messages = [...(idx > 0 ? state.messages.slice(0, idx - 1) : state.messages), ...(run.replaced ?? [])];
        const notice = action.reason === "queue_left" ? { kind: "info" as const, text: "You left the queue." } : { kind, text: action.message };
        return { ...state, messages, run: null, notice };
      }
      const next = updateMessage(state, run.assistantId, (m) => ({
        ...m,
        status: "error",
        error: { code: action.reason, message: action.message },
      }));
      return { ...next, run: { ...run, phase: "finished" }, approval: null, notice: { kind, text: action.message } };
    }
    case "approval_answered": {
      // The dialog may already be gone (the stream moved on first): the feed entry is updated anyway.
      const next: ChatState =
        state.approval?.approvalId === action.approvalId ? { ...state, approval: null } : state;
      const run = state.run;
      if (!run) return next;
      return updateMessage(next, run.assistantId, (m) => ({
        ...m,
        activities: m.activities.map((a) =>
          a.kind === "approval" && a.approvalId === action.approvalId && a.status === "pending"
            ? { ...a, status: action.approved ? "approved" : "rejected" }
            : a,
        ),
      }));
    }
    case "history_loaded":
      return {
        ...initialStateFor(action.sessionId, action.title, state),
        messages: restoreGrounding(action.sessionId, action.messages, state.groundingMemo),
      };
    case "new_conversation":
      return initialStateFor(null, null, state);
    case "session_renamed":
      return state.sessionId === action.sessionId ? { ...state, title: action.title } : state;
    case "set_model":
      return { ...state, model: action.model, provider: action.provider ?? null };
    case "notice":
      return { ...state, notice: { kind: action.kind, text: action.text } };
    case "dismiss_notice":
      return { ...state, notice: null };
    default:
      return state;
  }
}

/** A fresh conversation; what belongs to the tab (model, grounding memo) carries over. */
function initialStateFor(sessionId: string | null, title: string | null, previous: ChatState): ChatState {
  const { model, provider, groundingMemo } = previous;
  return { sessionId, title, model, provider, messages: [], run: null, approval: null, notice: null, groundingMemo };
}

/** True while a run is being started, queued, streamed or resumed. */
export function isRunActive(state: ChatState): boolean {
  return state.run !== null && state.run.phase !== "finished";
}
