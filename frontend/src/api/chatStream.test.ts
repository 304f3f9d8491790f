import { describe, expect, it, vi } from "vitest";
import { chatReducer } from "../state/chatReducer";
import { initialChatState, type ChatState } from "../state/chatTypes";
import { frame } from "../test/events";
import type { AgentEvent } from "./agentEvents";
import { DRAIN_GRACE_MS, followRun, streamChat, type ChatRequest } from "./chatStream";
import { ActiveRunError, GatewayUnreachableError, HttpError, QueueFullError, StreamLostError } from "./errors";

const REQUEST: ChatRequest = {
  message: "Where is Luxembourg?",
  session_id: null,
  spatial_context: { map_center: { lat: 49.6, lon: 6.1 }, zoom: 7, selected_feature: null, drawn_geometry: null },
};

const RUN = "run-7";
const FRAMES = [
  frame("1-0", "session", { runId: RUN, seq: "1", runStarted: { sessionId: "s-1", model: "m" } }),
  frame("2-0", "tool_start", { runId: RUN, seq: "2", step: 1, toolStart: { callId: "c1", toolName: "list_raster_collections" } }),
  frame("3-0", "tool_result", { runId: RUN, seq: "3", step: 1, toolResult: { callId: "c1", toolName: "list_raster_collections", durationMs: "41" } }),
  frame("4-0", "content", { runId: RUN, seq: "4", step: 2, content: { text: "Luxembourg lies " } }),
  frame("5-0", "content", { runId: RUN, seq: "5", step: 2, content: { text: "between Belgium, " } }),
  frame("6-0", "content", { runId: RUN, seq: "6", step: 2, content: { text: "France and Germany." } }),
  frame("7-0", "done", { runId: RUN, seq: "7", step: 2, done: { content: "", finishReason: "completed" } }),
];
const ANSWER = "Luxembourg lies between Belgium, France and Germany.";

type Chunk = string | Error;

/** A response body delivering the given chunks, optionally failing or hanging at the end. */
function sseResponse(chunks: Chunk[], end: "close" | "hang" = "close"): Response {
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) {
        const c = chunks[i++];
        if (c instanceof Error) controller.error(c);
        else controller.enqueue(encoder.encode(c));
        return;
      }
      if (end === "close") controller.close();
      else return new Promise<void>(() => undefined);
    },
  });
  return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
}

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}

interface Recorded {
  url: string;
  init: RequestInit;
}

function fakeFetch(responses: (Response | Error)[]) {
  const calls: Recorded[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    calls.push({ url: String(input), init: init ?? {} });
    const next = responses.shift();
    if (!next) throw new Error("unexpected request");
    if (next instanceof Error) throw next;
    return next;
  });
  return { fn, calls };
}

/** Runs the stream through the real reducer, as the app does. */
function collector() {
  let state: ChatState = chatReducer(initialChatState, {
    type: "send",
    userId: "u",
    assistantId: "a",
    text: REQUEST.message,
    createdAt: "",
  });
  const events: AgentEvent[] = [];
  return {
    handlers: {
      onEvent(event: AgentEvent, eventId: string | null) {
        events.push(event);
        state = chatReducer(state, { type: "event", event, eventId });
      },
    },
    events,
    answer: () => state.messages[1],
  };
}

const fast = { resumeDelayMs: () => 1 };

/** A body sending `chunks` and then closing when `close()` is called; records whether the reader cancelled it. */
function closableResponse(chunks: string[]) {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const seen = { cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      for (const chunk of chunks) c.enqueue(encoder.encode(chunk));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  const response = new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  return { response, seen, close: () => controller.close() };
}

describe("streamChat", () => {
  it("lets the gateway close a finished stream instead of aborting the request", async () => {
    const body = closableResponse(FRAMES);
    const { fn } = fakeFetch([body.response]);
    const c = collector();
    // The run is over at `done`, before the server has closed the connection.
    await expect(streamChat(REQUEST, c.handlers, { fetch: fn })).resolves.toBe("finished");
    expect(c.answer().status).toBe("complete");
    body.close();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(body.seen.cancelled).toBe(false);
  });

  it("cancels a finished stream the server keeps open, once the grace has passed", async () => {
    vi.useFakeTimers();
    try {
      const body = closableResponse(FRAMES);
      const { fn } = fakeFetch([body.response]);
      await expect(streamChat(REQUEST, collector().handlers, { fetch: fn })).resolves.toBe("finished");
      expect(body.seen.cancelled).toBe(false);
      await vi.advanceTimersByTimeAsync(DRAIN_GRACE_MS);
      expect(body.seen.cancelled).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("posts the message with the spatial context and follows the run to done", async () => {
    const { fn, calls } = fakeFetch([sseResponse([": ping\n\n", ...FRAMES])]);
    const c = collector();
    await expect(streamChat(REQUEST, c.handlers, { fetch: fn })).resolves.toBe("finished");
    expect(calls[0].url).toBe("/api/v1/chat/stream");
    expect(calls[0].init.method).toBe("POST");
    expect(calls[0].init.credentials).toBe("same-origin");
    expect(JSON.parse(String(calls[0].init.body))).toEqual(REQUEST);
    expect(c.events.map((e) => e.payload.case)).toEqual([
      "runStarted",
      "toolStart",
      "toolResult",
      "content",
      "content",
      "content",
      "done",
    ]);
    expect(c.answer().content).toBe(ANSWER);
    expect(c.answer().activities[0]).toMatchObject({ toolName: "list_raster_collections", status: "ok", durationMs: 41 });
  });

  it("handles events split across network reads", async () => {
    const all = FRAMES.join("");
    const chunks: string[] = [];
    for (let i = 0; i < all.length; i += 5) chunks.push(all.slice(i, i + 5));
    const { fn } = fakeFetch([sseResponse(chunks)]);
    const c = collector();
    await streamChat(REQUEST, c.handlers, { fetch: fn });
    expect(c.answer().content).toBe(ANSWER);
  });

  it("resumes a dropped connection with Last-Event-ID and shows no text twice", async () => {
    // The first connection dies in the middle of event 5; the resumed one repeats event 4.
    const cut = FRAMES[4].slice(0, 30);
    const { fn, calls } = fakeFetch([
      sseResponse([...FRAMES.slice(0, 4), cut]),
      sseResponse([FRAMES[3], ...FRAMES.slice(4)]),
    ]);
    const c = collector();
    const onResuming = vi.fn();
    await expect(streamChat(REQUEST, { ...c.handlers, onResuming }, { fetch: fn, ...fast })).resolves.toBe("finished");
    expect(onResuming).toHaveBeenCalledWith(1);
    expect(calls[1].url).toBe(`/api/v1/chat/runs/${RUN}/events`);
    expect(calls[1].init.method).toBe("GET");
    expect(new Headers(calls[1].init.headers).get("Last-Event-ID")).toBe("4-0");
    expect(c.answer().content).toBe(ANSWER);
    expect(c.answer().status).toBe("complete");
  });

  it("resumes after a network error while reading", async () => {
    const { fn, calls } = fakeFetch([
      sseResponse([...FRAMES.slice(0, 2), new TypeError("network error")]),
      sseResponse(FRAMES.slice(2)),
    ]);
    const c = collector();
    await streamChat(REQUEST, c.handlers, { fetch: fn, ...fast });
    expect(new Headers(calls[1].init.headers).get("Last-Event-ID")).toBe("2-0");
    expect(c.answer().content).toBe(ANSWER);
  });

  it("treats a silent connection (no heartbeat) as dropped", async () => {
    const { fn, calls } = fakeFetch([sseResponse(FRAMES.slice(0, 3), "hang"), sseResponse(FRAMES.slice(3))]);
    const c = collector();
    await streamChat(REQUEST, c.handlers, { fetch: fn, idleTimeoutMs: 30, ...fast });
    expect(calls).toHaveLength(2);
    expect(c.answer().content).toBe(ANSWER);
  });

  it("keeps trying while the gateway is unreachable, then gives up with a clear error", async () => {
    const offline = new TypeError("Failed to fetch");
    const { fn } = fakeFetch([sseResponse(FRAMES.slice(0, 2)), offline, offline, offline]);
    const c = collector();
    const err = await streamChat(REQUEST, c.handlers, { fetch: fn, maxResumeAttempts: 3, ...fast }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamLostError);
    expect(fn).toHaveBeenCalledTimes(4);
  });

  it("stops when the run's events are gone", async () => {
    const { fn } = fakeFetch([sseResponse(FRAMES.slice(0, 2)), jsonResponse(404, { field: null, message: "run not found", code: "not_found" })]);
    await expect(streamChat(REQUEST, collector().handlers, { fetch: fn, ...fast })).rejects.toThrow(
      "The run's events are no longer available",
    );
  });

  it("cannot resume a connection dropped before the run was named", async () => {
    const { fn } = fakeFetch([sseResponse([": ping\n\n"])]);
    await expect(streamChat(REQUEST, collector().handlers, { fetch: fn, ...fast })).rejects.toBeInstanceOf(StreamLostError);
  });

  it("maps a full gate (503) to QueueFullError with the capacity", async () => {
    const { fn } = fakeFetch([
      jsonResponse(
        503,
        { field: null, message: "all model slots are busy", code: "gate_full", active: 2, max: 2, available: 0 },
        { "Retry-After": "5" },
      ),
    ]);
    const err = await streamChat(REQUEST, collector().handlers, { fetch: fn }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueueFullError);
    expect((err as QueueFullError).capacity).toEqual({ active: 2, max: 2, available: 0 });
    expect((err as QueueFullError).retryAfterSeconds).toBe(5);
  });

  it("maps 409 to ActiveRunError with the running run's id", async () => {
    const body = { field: null, message: "this session already has a run in progress", code: "conflict", run_id: "run-3" };
    const { fn } = fakeFetch([jsonResponse(409, body)]);
    const err = await streamChat(REQUEST, collector().handlers, { fetch: fn }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActiveRunError);
    expect((err as ActiveRunError).runId).toBe("run-3");
    expect((err as ActiveRunError).message).toBe("this session already has a run in progress");
  });

  it("names the invalid field of a 422", async () => {
    const message = "spatial_context.zoom: Input should be a valid number";
    const { fn } = fakeFetch([
      jsonResponse(422, { field: "spatial_context.zoom", message, code: "invalid_argument" }),
    ]);
    const err = await streamChat(REQUEST, collector().handlers, { fetch: fn }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).reason).toBe(message);
    expect((err as HttpError).field).toBe("spatial_context.zoom");
    expect((err as HttpError).code).toBe("invalid_argument");
    expect((err as HttpError).message).toBe(`HTTP 422: ${message}`);
  });

  it("reports an unreachable gateway (no answer, or 502 from the ingress)", async () => {
    const offline = fakeFetch([new TypeError("Failed to fetch")]);
    await expect(streamChat(REQUEST, collector().handlers, { fetch: offline.fn })).rejects.toBeInstanceOf(
      GatewayUnreachableError,
    );
    const badGateway = fakeFetch([new Response("<html>502</html>", { status: 502 })]);
    await expect(streamChat(REQUEST, collector().handlers, { fetch: badGateway.fn })).rejects.toBeInstanceOf(
      GatewayUnreachableError,
    );
  });

  it("skips a malformed event and carries on", async () => {
    const { fn } = fakeFetch([sseResponse([FRAMES[0], "event: content\ndata: {not json\n\n", ...FRAMES.slice(3)])]);
    const c = collector();
    const onProtocolError = vi.fn();
    await streamChat(REQUEST, { ...c.handlers, onProtocolError }, { fetch: fn });
    expect(onProtocolError).toHaveBeenCalledTimes(1);
    expect(c.answer().content).toBe(ANSWER);
  });

  it("returns 'aborted' when the user stops following", async () => {
    const abort = new AbortController();
    const { fn } = fakeFetch([sseResponse(FRAMES.slice(0, 2), "hang")]);
    const c = collector();
    const run = streamChat(REQUEST, c.handlers, { fetch: fn, signal: abort.signal });
    await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await expect(run).resolves.toBe("aborted");
    expect(fn).toHaveBeenCalledTimes(1);
  });
});

describe("followRun", () => {
  it("reads a run from its first event and resumes after a drop", async () => {
    const { fn, calls } = fakeFetch([sseResponse(FRAMES.slice(0, 3), "close"), sseResponse(FRAMES.slice(3))]);
    const events: AgentEvent[] = [];
    const outcome = await followRun(RUN, { onEvent: (e) => events.push(e) }, { fetch: fn, resumeDelayMs: () => 0 });
    expect(outcome).toBe("finished");
    expect(events.map((e) => Number(e.seq))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(calls.map((c) => c.url)).toEqual([`/api/v1/chat/runs/${RUN}/events`, `/api/v1/chat/runs/${RUN}/events`]);
    expect(new Headers(calls[0].init.headers).get("Last-Event-ID")).toBeNull();
    expect(new Headers(calls[1].init.headers).get("Last-Event-ID")).toBe("3-0");
  });

  it("says so when the gateway no longer has the run", async () => {
    const { fn } = fakeFetch([jsonResponse(404, { field: null, message: "run not found", code: "not_found" })]);
    await expect(followRun(RUN, { onEvent: () => undefined }, { fetch: fn })).rejects.toBeInstanceOf(StreamLostError);
  });
});
