import { ApiClient } from "../api/client";
import type { AgentEvent } from "../api/agentEvents";
import { followRun, streamChat } from "../api/chatStream";
import {
  ActiveRunError,
  GatewayUnreachableError,
  HttpError,
  QueueFullError,
  StreamLostError,
} from "../api/errors";
import { QueueAbortedError, sendWithQueue } from "../api/queue";
import { speak } from "../lib/speech";
import { runFrontendTool } from "../map/frontendTools";
import { forgetActiveRun, readActiveRun, rememberActiveRun } from "./activeRun";
import { isRunActive } from "./chatReducer";
import { useChatStore } from "./chatStore";
import { messagesFromHistory } from "./history";
import { restoreMapState, restoringMap, saveMapNow, startMapSaver } from "./mapSaver";
import { spatialContext, useUiStore } from "./uiStore";

/** Ties the gateway API, the chat state, the map and speech together. */

const api = new ApiClient();
let runAbort: AbortController | null = null;
let cancelTimer: ReturnType<typeof setTimeout> | undefined;

/** If the gateway confirms no cancellation within this time, stop following the run anyway. */
const CANCEL_GRACE_MS = 10_000;

function dispatch(...args: Parameters<ReturnType<typeof useChatStore.getState>["dispatch"]>) {
  useChatStore.getState().dispatch(...args);
}

function chat() {
  return useChatStore.getState().chat;
}

function newId(prefix: string): string {
  const rand = globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(16).slice(2)}`;
  return `${prefix}-${rand}`;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The models to pick from; none (no picker) when the gateway cannot say. */
async function loadModels(): Promise<void> {
  try {
    const list = await api.models();
    const names = Array.isArray(list?.models) ? list.models.filter((m): m is string => typeof m === "string") : [];
    useChatStore.getState().setModels(names);
  } catch {
    useChatStore.getState().setModels([]);
  }
}

/** The picked model, if the gateway offers it. */
function chosenModel(): string | undefined {
  const { chosenModel: chosen, models } = useChatStore.getState();
  return chosen && models.includes(chosen) ? chosen : undefined;
}

/** Checks the gateway and shows which model answers. */
export async function loadInfo(): Promise<boolean> {
  try {
    const info = await api.info();
    void loadModels();
    if (info?.model) dispatch({ type: "set_model", model: info.model, provider: info.provider || null });
    if (chat().notice?.kind === "unreachable") dispatch({ type: "dismiss_notice" });
    return true;
  } catch (err) {
    if (err instanceof GatewayUnreachableError) dispatch({ type: "notice", kind: "unreachable", text: err.message });
    return false;
  }
}

export async function refreshSessions(): Promise<void> {
  try {
    const sessions = await api.listSessions();
    useChatStore.getState().setSessions(Array.isArray(sessions) ? sessions : []);
  } catch (err) {
    useChatStore.getState().setSessions(useChatStore.getState().sessions, `Could not load conversations: ${describe(err)}`);
  }
}

/** Stops following the current stream without cancelling the run on the server. */
function detachRun(): void {
  runAbort?.abort();
  runAbort = null;
  clearTimeout(cancelTimer);
}

export async function loadSession(sessionId: string): Promise<boolean> {
  void saveMapNow(); // the conversation left keeps its latest map
  restoringMap(true);
  try {
    const history = await api.history(sessionId);
    detachRun();
    dispatch({
      type: "history_loaded",
      sessionId,
      title: history.title ?? null,
      messages: messagesFromHistory(sessionId, history.messages ?? []),
    });
    await restoreMapState(sessionId);
    return true;
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) {
      if (chat().sessionId === sessionId) dispatch({ type: "new_conversation" });
      dispatch({ type: "notice", kind: "info", text: "That conversation no longer exists." });
      void refreshSessions();
      return false;
    }
    dispatch({ type: "notice", kind: err instanceof GatewayUnreachableError ? "unreachable" : "error", text: `Could not load the conversation: ${describe(err)}` });
    return false;
  } finally {
    restoringMap(false);
  }
}

export function newConversation(): void {
  void saveMapNow();
  detachRun();
  dispatch({ type: "new_conversation" });
  // A new question starts from the map alone: the last conversation's selection would be sent with it unseen.
  useUiStore.getState().clearSelection();
}

export async function renameSession(sessionId: string, title: string): Promise<boolean> {
  const trimmed = title.trim();
  if (!trimmed) return false;
  try {
    await api.renameSession(sessionId, trimmed);
    dispatch({ type: "session_renamed", sessionId, title: trimmed });
    await refreshSessions();
    return true;
  } catch (err) {
    dispatch({ type: "notice", kind: "error", text: `Could not rename: ${describe(err)}` });
    return false;
  }
}

export async function deleteSession(sessionId: string): Promise<boolean> {
  try {
    await api.deleteSession(sessionId);
  } catch (err) {
    if (!(err instanceof HttpError && err.status === 404)) {
      dispatch({ type: "notice", kind: "error", text: `Could not delete: ${describe(err)}` });
      return false;
    }
  }
  if (chat().sessionId === sessionId) newConversation();
  await refreshSessions();
  return true;
}

/** Restores the remembered conversation after a reload. */
export async function restoreSession(): Promise<void> {
  const id = chat().sessionId;
  if (id) await loadSession(id);
}

/** Folds a run's event into the chat and carries out its map commands. */
function onRunEvent(event: AgentEvent, eventId: string | null, question: string): void {
  const before = chat();
  dispatch({ type: "event", event, eventId });
  if (chat() === before) return; // a replayed event: already handled
  if (event.payload.case === "runStarted") {
    // Remembered until the run ends, so a reload follows it again.
    rememberActiveRun({ runId: event.runId, sessionId: event.payload.value.sessionId, question });
  }
  if (event.payload.case === "frontendTool") {
    const { name, arguments: args } = event.payload.value;
    void runFrontendTool(name, args).then(
      (result) => {
        if (!result.ok) dispatch({ type: "notice", kind: "error", text: result.message });
      },
      (err: unknown) => dispatch({ type: "notice", kind: "error", text: `Map command failed: ${describe(err)}` }),
    );
  }
}

/**
 * After a reload: follows the run this tab started before, if it belongs to the conversation
 * shown, from its first event (GET /chat/runs/{id}/events), pending approval included. A run whose
 * answer the history already holds is over and is left alone.
 */
export async function resumeActiveRun(): Promise<void> {
  const active = readActiveRun();
  if (!active) return;
  const state = chat();
  if (state.sessionId !== active.sessionId || isRunActive(state)) {
    forgetActiveRun(active.runId);
    return;
  }
  const lastQuestion = state.messages.map((m) => m.role).lastIndexOf("user");
  const asked = lastQuestion >= 0 && state.messages[lastQuestion].content === active.question;
  if (asked && state.messages.slice(lastQuestion + 1).some((m) => m.role === "assistant" && m.content)) {
    forgetActiveRun(active.runId);
    return;
  }
  const abort = new AbortController();
  detachRun();
  runAbort = abort;
  dispatch({ type: "reattach", userId: newId("u"), assistantId: newId("a"), question: asked ? null : active.question, runId: active.runId });
  try {
    const outcome = await followRun(
      active.runId,
      {
        onEvent: (event, eventId) => onRunEvent(event, eventId, active.question),
        onResuming: (attempt) => dispatch({ type: "resuming", attempt }),
        onResumed: () => dispatch({ type: "resumed" }),
      },
      { signal: abort.signal },
    );
    if (outcome === "aborted" && runAbort === abort) dispatch({ type: "cancelled_locally" });
    if (outcome === "finished") forgetActiveRun(active.runId);
  } catch (err) {
    forgetActiveRun(active.runId);
    if (runAbort === abort) dispatch({ type: "run_failed", reason: "stream_lost", message: `The answer in progress could not be followed again: ${describe(err)}` });
  } finally {
    if (runAbort === abort) runAbort = null;
  }
  void refreshSessions();
}

/**
 * Sends a message. With `replace` (the id of a question of this conversation: regenerate, edit
 * and resend) that question and everything after it are replaced by the new turn, here and,
 * once the run is admitted, in the gateway's stored history.
 */
export async function sendMessage(text: string, replace?: string): Promise<void> {
  const message = text.trim();
  if (!message || isRunActive(chat())) return;
  const replaced = replace === undefined ? undefined : chat().messages.find((m) => m.id === replace && m.role === "user");
  const abort = new AbortController();
  detachRun();
  runAbort = abort;
  const sessionId = chat().sessionId;
  dispatch({
    type: "send",
    userId: newId("u"),
    assistantId: newId("a"),
    text: message,
    createdAt: new Date().toISOString(),
    replaceFrom: replaced?.id,
  });
  // A question never stored (its run was refused) is only taken out here.
  const replaceTurn = sessionId && replaced?.turn !== undefined ? replaced.turn : undefined;
  const model = chosenModel();
  const request = {
    message,
    session_id: sessionId,
    spatial_context: spatialContext(),
    ...(replaceTurn !== undefined ? { replace_turn: replaceTurn } : {}),
    ...(model ? { model } : {}),
  };

  try {
    const outcome = await sendWithQueue(
      () =>
        streamChat(
          request,
          {
            onEvent: (event, eventId) => onRunEvent(event, eventId, message),
            onResuming: (attempt) => dispatch({ type: "resuming", attempt }),
            onResumed: () => dispatch({ type: "resumed" }),
          },
          { signal: abort.signal },
        ),
      {
        getCapacity: (signal) => api.capacity(signal),
        onQueued: (capacity) => dispatch({ type: "queued", capacity }),
        onPoll: (capacity) => dispatch({ type: "queue_poll", capacity }),
        onRetry: () => dispatch({ type: "queue_retry" }),
        signal: abort.signal,
      },
    );
    if (outcome === "aborted" && runAbort === abort) dispatch({ type: "cancelled_locally" });
  } catch (err) {
    if (runAbort !== abort && !(err instanceof QueueAbortedError)) return; // superseded by another conversation
    // A refused replacement leaves the conversation as it was: the edit goes back to the box, still an edit.
    if (replaced && !(err instanceof StreamLostError)) {
      useChatStore.getState().setDraft(message);
      useChatStore.getState().setEditing(replaced.id);
    }
    if (err instanceof QueueAbortedError) {
      if (runAbort === abort || runAbort === null) {
        dispatch({ type: "run_failed", reason: "queue_left", message: "" });
        useChatStore.getState().setDraft(message);
      }
    } else if (err instanceof ActiveRunError) {
      dispatch({
        type: "run_failed",
        reason: "busy",
        message: "This conversation is still answering a previous message. Wait for it or stop it first.",
      });
    } else if (err instanceof GatewayUnreachableError) {
      dispatch({ type: "run_failed", reason: "unreachable", message: `${err.message}. Check that the service is running, then try again.` });
    } else if (err instanceof HttpError) {
      dispatch({ type: "run_failed", reason: "http", message: `The request was refused: ${err.reason}` });
    } else if (err instanceof QueueFullError) {
      dispatch({ type: "run_failed", reason: "busy", message: `${err.message}. Try again in a moment.` });
    } else if (err instanceof StreamLostError) {
      dispatch({ type: "run_failed", reason: "stream_lost", message: err.message });
    } else {
      dispatch({ type: "run_failed", reason: "http", message: `Something went wrong: ${describe(err)}` });
    }
  } finally {
    if (runAbort === abort) {
      runAbort = null;
      clearTimeout(cancelTimer);
    }
    // A run is remembered until it is over; one never started leaves nothing to follow.
    const run = chat().run;
    if (!run?.runId || run.phase === "finished") forgetActiveRun(run?.runId ?? null);
  }

  const state = chat();
  const last = state.messages[state.messages.length - 1];
  if (last?.role === "assistant" && last.status === "complete" && useUiStore.getState().speakAnswers) speak(last.content);
  void refreshSessions();
}

/** The stop button: cancels the run on the server (or leaves the queue). */
export async function stopRun(): Promise<void> {
  const state = chat();
  const run = state.run;
  if (!run || run.phase === "finished") return;
  if (!run.runId) {
    // Queued or still connecting: nothing runs on the server yet.
    runAbort?.abort();
    return;
  }
  dispatch({ type: "cancel_requested" });
  const abort = runAbort;
  clearTimeout(cancelTimer);
  cancelTimer = setTimeout(() => {
    if (runAbort === abort && isRunActive(chat())) abort?.abort();
  }, CANCEL_GRACE_MS);
  try {
    await api.cancelRun(run.runId);
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return; // already over
    dispatch({ type: "notice", kind: "error", text: `Could not stop the run: ${describe(err)}` });
  }
}

export async function answerApproval(approvalId: string, approved: boolean, reason: string | null): Promise<boolean> {
  try {
    await api.answerApproval(approvalId, approved, reason);
    dispatch({ type: "approval_answered", approvalId, approved });
    return true;
  } catch (err) {
    if (err instanceof HttpError && (err.status === 404 || err.status === 409 || err.status === 410)) {
      // Already answered, timed out or gone: the dialog has nothing left to decide.
      dispatch({ type: "approval_answered", approvalId, approved: false });
      dispatch({ type: "notice", kind: "info", text: `That request is no longer waiting for an answer (${err.reason}).` });
      return false;
    }
    dispatch({ type: "notice", kind: "error", text: `Could not send your answer: ${describe(err)}` });
    return false;
  }
}

let initialising: Promise<void> | null = null;

/**
 * First load: gateway check, remembered conversation, the conversation list, and the run this
 * tab was following. A call while one is under way joins it (React's development mode mounts twice).
 */
export function initialise(): Promise<void> {
  initialising ??= (async () => {
    const reachable = await loadInfo();
    if (!reachable) return;
    startMapSaver();
    await Promise.all([restoreSession(), refreshSessions()]);
    void resumeActiveRun();
  })().finally(() => {
    initialising = null;
  });
  return initialising;
}
