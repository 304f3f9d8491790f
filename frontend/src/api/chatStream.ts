import { decodeAgentEvent, isTerminal, type AgentEvent } from "./agentEvents";
import { API_BASE, type FetchFn } from "./client";
import { GatewayUnreachableError, StreamLostError, errorFromResponse } from "./errors";
import { SseParser } from "./sse";

/** Body of POST /api/v1/chat/stream. */
export interface ChatRequest {
  message: string;
  session_id: string | null;
  spatial_context: {
    map_center: { lat: number; lon: number };
    zoom: number;
    selected_feature: unknown;
    drawn_geometry: unknown;
  };
  /** The stored question this message replaces (0-based among the conversation's questions). */
  replace_turn?: number;
  /** The model chosen in the picker (one of GET /models); absent: the default. */
  model?: string;
}

export interface StreamHandlers {
  /** Every decoded event, in order; `eventId` is the SSE id (for Last-Event-ID). */
  onEvent(event: AgentEvent, eventId: string | null): void;
  /** The connection dropped; reconnecting (attempt counts from 1). */
  onResuming?(attempt: number): void;
  /** The stream is flowing again after a resume. */
  onResumed?(): void;
  /** A malformed event was skipped. */
  onProtocolError?(error: Error): void;
}

export interface StreamOptions {
  fetch?: FetchFn;
  signal?: AbortSignal;
  /** Reconnection attempts in a row before giving up. */
  maxResumeAttempts?: number;
  /** Delay before reconnection attempt n (from 1). */
  resumeDelayMs?: (attempt: number) => number;
  /** With no byte (not even a heartbeat) for this long, the connection counts as dead. */
  idleTimeoutMs?: number;
}

export type StreamOutcome = "finished" | "aborted";

interface Cursor {
  runId: string | null;
  lastEventId: string | null;
  finished: boolean;
  /** Events received so far, over all connections. */
  received: number;
}

const defaultFetch: FetchFn = (input, init) => globalThis.fetch(input, init);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function isAbort(err: unknown, signal?: AbortSignal): boolean {
  return Boolean(signal?.aborted) || (err instanceof Error && err.name === "AbortError");
}

/** After a terminal event, what a stream still holds. */
export const DRAIN_GRACE_MS = 5_000;

/** Reads a finished stream to its end in the background; cancels it only if the server keeps it open. */
function drain(reader: ReadableStreamDefaultReader<Uint8Array>, signal?: AbortSignal): void {
  const stop = () => void reader.cancel("finished").catch(() => undefined);
  const timer = setTimeout(stop, DRAIN_GRACE_MS);
  signal?.addEventListener("abort", stop, { once: true });
  void (async () => {
    try {
      for (;;) if ((await reader.read()).done) break;
    } catch {
      // Cancelled or broken after the end: nothing of the run is lost.
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
    }
  })();
}

/**
 * Reads one SSE response body until it ends, errors, or goes idle. Returns normally
 * in all those cases; the caller decides from the cursor whether to resume.
 */
async function consume(
  body: ReadableStream<Uint8Array>,
  cursor: Cursor,
  handlers: StreamHandlers,
  idleTimeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser(cursor.lastEventId);
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const armIdle = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => void reader.cancel("idle").catch(() => undefined), idleTimeoutMs);
  };
  const onAbort = () => void reader.cancel("aborted").catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    armIdle();
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw err;
        return; // network error mid-stream: resume
      }
      if (chunk.done) {
        parser.end();
        return;
      }
      armIdle();
      for (const message of parser.feed(decoder.decode(chunk.value, { stream: true }))) {
        if (message.type !== "event") continue;
        let event: AgentEvent;
        try {
          event = decodeAgentEvent(message.data);
        } catch (err) {
          handlers.onProtocolError?.(err as Error);
          continue;
        }
        if (event.runId) cursor.runId = event.runId;
        cursor.lastEventId = message.id;
        cursor.received += 1;
        handlers.onEvent(event, message.id);
        if (isTerminal(event)) {
          cursor.finished = true;
          // The gateway closes the stream itself right after the last event: let it, rather than
          // cancelling a request that has nothing left to send (the browser logs that as aborted).
          drain(reader, signal);
          return;
        }
      }
    }
  } finally {
    clearTimeout(idleTimer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Starts a run with POST /chat/stream and follows it to its end. A dropped
 * connection is resumed with GET /chat/runs/{run_id}/events and Last-Event-ID,
 * so the answer continues where it stopped. Rejects with the gateway's error
 * (QueueFullError, ActiveRunError, HttpError, GatewayUnreachableError) when the
 * run cannot start, and with StreamLostError when it cannot be resumed.
 */
export async function streamChat(
  request: ChatRequest,
  handlers: StreamHandlers,
  options: StreamOptions = {},
): Promise<StreamOutcome> {
  const fetchFn = options.fetch ?? defaultFetch;
  const { signal } = options;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  const cursor: Cursor = { runId: null, lastEventId: null, finished: false, received: 0 };

  let resp: Response;
  try {
    resp = await fetchFn(`${API_BASE}/chat/stream`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(request),
      signal,
    });
  } catch (err) {
    if (isAbort(err, signal)) return "aborted";
    throw new GatewayUnreachableError();
  }
  if (!resp.ok) throw await errorFromResponse(resp);
  if (!resp.body) throw new StreamLostError("The answer stream has no body");

  try {
    await consume(resp.body, cursor, handlers, idleTimeoutMs, signal);
  } catch (err) {
    if (isAbort(err, signal)) return "aborted";
    throw err;
  }

  return keepFollowing(cursor, handlers, fetchFn, options);
}

/** GET /chat/runs/{id}/events from after `cursor.lastEventId` (from the start without one). */
function runEvents(fetchFn: FetchFn, cursor: Cursor, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (cursor.lastEventId !== null) headers["Last-Event-ID"] = cursor.lastEventId;
  return fetchFn(`${API_BASE}/chat/runs/${encodeURIComponent(cursor.runId ?? "")}/events`, {
    method: "GET",
    credentials: "same-origin",
    headers,
    signal,
  });
}

/** Resumes a dropped stream until the run's final event, with back-off. */
async function keepFollowing(cursor: Cursor, handlers: StreamHandlers, fetchFn: FetchFn, options: StreamOptions): Promise<StreamOutcome> {
  const { signal } = options;
  const maxAttempts = options.maxResumeAttempts ?? 6;
  const delay = options.resumeDelayMs ?? ((n: number) => Math.min(500 * 2 ** (n - 1), 8000));
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  let attempt = 0;
  while (!cursor.finished) {
    if (signal?.aborted) return "aborted";
    if (!cursor.runId) throw new StreamLostError("The connection dropped before the run started");
    attempt += 1;
    if (attempt > maxAttempts) throw new StreamLostError("The connection dropped and could not be resumed");
    handlers.onResuming?.(attempt);
    try {
      await sleep(delay(attempt), signal);
    } catch {
      return "aborted";
    }
    let resumed: Response;
    try {
      resumed = await runEvents(fetchFn, cursor, signal);
    } catch (err) {
      if (isAbort(err, signal)) return "aborted";
      continue; // still offline: try again
    }
    if (resumed.status === 404 || resumed.status === 410) {
      throw new StreamLostError("The run's events are no longer available");
    }
    if (!resumed.ok || !resumed.body) continue;
    handlers.onResumed?.();
    const receivedBefore = cursor.received;
    try {
      await consume(resumed.body, cursor, handlers, idleTimeoutMs, signal);
    } catch (err) {
      if (isAbort(err, signal)) return "aborted";
      throw err;
    }
    // Only a connection that made progress earns a fresh set of attempts.
    if (cursor.received > receivedBefore) attempt = 0;
  }
  return "finished";
}

/**
 * Follows a run started elsewhere (before a reload, or in another tab) from its first event:
 * GET /chat/runs/{id}/events, then resumes like a stream of our own. StreamLostError when the
 * gateway no longer has the run's events.
 */
export async function followRun(runId: string, handlers: StreamHandlers, options: StreamOptions = {}): Promise<StreamOutcome> {
  const fetchFn = options.fetch ?? defaultFetch;
  const { signal } = options;
  const cursor: Cursor = { runId, lastEventId: null, finished: false, received: 0 };
  let resp: Response;
  try {
    resp = await runEvents(fetchFn, cursor, signal);
  } catch (err) {
    if (isAbort(err, signal)) return "aborted";
    throw new GatewayUnreachableError();
  }
  if (resp.status === 404 || resp.status === 410) throw new StreamLostError("The run's events are no longer available");
  if (!resp.ok || !resp.body) throw await errorFromResponse(resp);
  try {
    await consume(resp.body, cursor, handlers, options.idleTimeoutMs ?? 45_000, signal);
  } catch (err) {
    if (isAbort(err, signal)) return "aborted";
    throw err;
  }
  return keepFollowing(cursor, handlers, fetchFn, options);
}
