import type { JsonObject } from "@bufbuild/protobuf";
import type { GroundingMemo } from "./grounding";

export type ActivityStatus = "running" | "ok" | "error" | "pending" | "approved" | "rejected";

/** One line of the activity feed. */
export interface Activity {
  id: string;
  kind: "thinking" | "tool" | "approval" | "frontend" | "error" | "notice";
  step: number;
  /** Thinking text, error message or notice text. */
  text?: string;
  toolName?: string;
  callId?: string;
  approvalId?: string;
  status?: ActivityStatus;
  durationMs?: number;
  arguments?: JsonObject;
  result?: string;
  truncated?: boolean;
  server?: string;
}

/** A Chart.js configuration the model asked to show. */
export interface ChartSpec {
  id: string;
  config: JsonObject;
}

/** One number of an answer, checked against the tool results of its run (Done.grounding). */
export interface GroundedNumber {
  /** As written in the answer, unit included ("348 m"). */
  text: string;
  value: number;
  unit: string;
  /** Code-point offsets of `text` in the answer's content. */
  start: number;
  end: number;
  supported: boolean;
  callId: string;
  toolName: string;
  /** The value in the tool result it was matched to, and how ("exact", "rounded", "converted km->m"). */
  sourceValue: number;
  match: string;
}

/** The check of an answer's numbers; plain data so it can be kept and restored with the message. */
export interface AnswerGrounding {
  numbers: GroundedNumber[];
  supportedCount: number;
  unsupportedCount: number;
}

export type MessageStatus = "streaming" | "complete" | "cancelled" | "error" | "step_budget";

export interface UiMessage {
  id: string;
  role: "user" | "assistant";
  content: string;
  status: MessageStatus;
  activities: Activity[];
  charts: ChartSpec[];
  createdAt?: string;
  runId?: string;
  error?: { code: string; message: string };
  /** Only on answers whose `done` carried the check (older history has none). */
  grounding?: AnswerGrounding;
  /**
   * On a question the gateway has stored: its 0-based position among the conversation's
   * questions, which regenerate and edit-and-resend send as `replace_turn`. Absent while
   * its run has not started (or was refused).
   */
  turn?: number;
}

export interface PendingApproval {
  approvalId: string;
  runId: string;
  callId: string;
  toolName: string;
  arguments: JsonObject;
  timeoutSeconds: number;
  receivedAt: number;
  /** The tool's own description, so the user knows what they approve. */
  description: string;
  server: string;
}

export type RunPhase = "connecting" | "queued" | "streaming" | "resuming" | "cancelling" | "finished";

/**
 * What the run is doing now, as far as the events tell: the status line's subject.
 * `model`: the model has been asked and has not answered yet (reading the prompt, or
 * busy with another request: the events do not say which).
 */
export type RunActivityKind =
  | "sending"
  | "queued"
  | "model"
  | "model_retry"
  | "thinking"
  | "tool"
  | "approval"
  | "writing";

export interface RunActivity {
  kind: RunActivityKind;
  /** The tool being called or waiting for approval. */
  toolName?: string;
  /** When this activity began (ms since the epoch). */
  since: number;
}

/** The run the conversation is waiting on. */
export interface RunState {
  runId: string | null;
  assistantId: string;
  phase: RunPhase;
  /** Highest `seq` applied; events at or below it are replays. */
  lastSeq: number;
  /** SSE ids applied, for events that carry no seq. */
  seenIds: string[];
  lastEventId: string | null;
  /** When the message was sent (ms since the epoch). */
  startedAt: number;
  activity: RunActivity;
  /** The turns a replacing send took out, put back if the gateway refuses the run before admitting it. */
  replaced?: UiMessage[];
}

export type NoticeKind =
  | "queued"
  | "unreachable"
  | "model_unavailable"
  | "cancelled"
  | "busy"
  | "resuming"
  | "error"
  | "info";

export interface Notice {
  kind: NoticeKind;
  text: string;
  capacity?: { active: number; max: number; available: number };
}

export interface ChatState {
  sessionId: string | null;
  title: string | null;
  model: string | null;
  /** The provider serving `model`, as the gateway's info names it. */
  provider: string | null;
  messages: UiMessage[];
  run: RunState | null;
  approval: PendingApproval | null;
  notice: Notice | null;
  /** Grounding checks of this tab's answers, kept across session switches. */
  groundingMemo: GroundingMemo[];
}

export const initialChatState: ChatState = {
  sessionId: null,
  title: null,
  model: null,
  provider: null,
  messages: [],
  run: null,
  approval: null,
  notice: null,
  groundingMemo: [],
};
