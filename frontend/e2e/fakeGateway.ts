import { create, toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { crc32, deflateSync } from "node:zlib";
import { SSE_EVENT_NAMES } from "../src/api/agentEvents";
import type { PlaceLabel, PlaceStatus } from "../src/api/client";
import { AgentEventSchema, type GroundingSchema } from "../src/gen/stacgis/v1/events_pb";

/**
 * A stand-in for the chat gateway, for browser tests that need an answer the
 * running stack cannot be made to give (e.g. a `done` with a given grounding
 * check). It speaks the gateway's wire: `POST /api/v1/chat/stream` answers with
 * SSE frames whose data is the proto3 JSON of `stacgis.v1.AgentEvent`, built from
 * the generated schema so the contract is the app's own; sessions, history
 * (stored as the gateway stores it: no grounding), info and capacity are JSON.
 */

export interface ScriptedTool {
  name: string;
  arguments: JsonObject;
  result: string;
}

/** A call the user must approve first; approved it runs and gives `result`, rejected it fails as the gateway reports it. */
export interface ScriptedApproval {
  name: string;
  arguments: JsonObject;
  result: string;
  description?: string;
  server?: string;
  timeoutSeconds?: number;
}

/**
 * One step of a run, after the plain `tools` and before the answer's text:
 * a gated call, a command for the browser (chart, layer, zoom), some thinking, a
 * tool call, some text, or
 * `hold`: the stream stays open until the test calls `release()` or the user
 * stops the run (then it finishes as cancelled, as the orchestrator does).
 */
export type ScriptedStep =
  | { approval: ScriptedApproval }
  | { thinking: string }
  /** A tool call; with `hold` it stays running until `release()`. */
  | { tool: ScriptedTool; hold?: boolean }
  | { frontend: { name: string; arguments: JsonObject } }
  | { text: string }
  | { hold: true };

export interface ScriptedAnswer {
  content: string;
  tools?: ScriptedTool[];
  steps?: ScriptedStep[];
  grounding?: MessageInitShape<typeof GroundingSchema>;
}

/** Body of a POST /chat/stream the app sent. */
export interface ChatRequestBody {
  message: string;
  session_id: string | null;
  spatial_context?: { drawn_geometry?: unknown; selected_feature?: unknown; map_center?: unknown; zoom?: unknown };
  replace_turn?: number;
  model?: string;
}

const REJECTED = "The user rejected this call";

/** A 256×256 tile of one opaque orange: every raster tile of a scripted layer. */
const TILE_PNG = solidPng(256, [230, 120, 20]);

function solidPng(size: number, [r, g, b]: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => [r, g, b]).flat())]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

interface StoredMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  tool_calls?: { id: string; name: string; arguments: JsonObject; status?: CallStatus; error?: string; error_kind?: string }[];
  tool_call_id?: string;
  created_at: string;
}

interface Session {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  messages: StoredMessage[];
  /** The map as the app last saved it (PUT /chat/session/{id}/map-state). */
  mapState: JsonObject | null;
}

/** A place the stand-in place search knows. */
export interface FakePlace {
  name: string;
  kind: string;
  country?: string;
  ref: string;
  point?: [number, number];
  bbox?: [number, number, number, number];
}

/** The cities the stand-in knows for GET /places/labels. */
export const CITY_LABELS: readonly PlaceLabel[] = [
  { name: "Berlin", lon: 13.41, lat: 52.52, population: 3_426_354, country: "Germany" },
  { name: "Hamburg", lon: 10.0, lat: 53.55, population: 1_739_117, country: "Germany" },
  { name: "Lucerne", lon: 8.31, lat: 47.05, population: 81_691, country: "Switzerland" },
  { name: "Luxembourg", lon: 6.13, lat: 49.61, population: 76_684, country: "Luxembourg" },
];

/** GET /places/status with every place dataset loaded: nothing to say. */
export const PLACES_LOADED: PlaceStatus = {
  loading: false,
  datasets: [
    { id: "countries", state: "loaded", features: 258 },
    { id: "cities", state: "loaded", features: 33_602 },
  ],
};

/** How a call ended, as the gateway's history keeps it. */
type CallStatus = "ok" | "rejected" | "failed";

type Payload = NonNullable<MessageInitShape<typeof AgentEventSchema>["payload"]>;

export class FakeGateway {
  readonly sessions = new Map<string, Session>();
  /** Answers handed out in order, one per message sent. */
  readonly answers: ScriptedAnswer[] = [];
  /** Every chat request received, in order. */
  readonly requests: ChatRequestBody[] = [];
  /** Answers to approvals: approval id -> approved. */
  readonly approvals = new Map<string, boolean>();
  /** Layers the tile endpoint describes: collection id -> TileJSON fields (bounds, rescale, units…). */
  readonly layers = new Map<string, JsonObject>([["global-land-mask", { name: "Land mask", bounds: [-180, -85, 180, 85] }]]);
  /** What GET /tiles/{id}/point answers per collection (a `status` field other than 200 answers that
   * status with the rest as the body); a layer without an entry answers "no data here". */
  readonly points = new Map<string, JsonObject>();
  /** Every identify request received (path and query). */
  readonly pointRequests: string[] = [];
  /** What GET /places/search finds (names starting with the words typed), and every search received. */
  readonly places: FakePlace[] = [
    { name: "Luxembourg", kind: "country", ref: "countries/LUX", bbox: [5.73, 49.45, 6.53, 50.18] },
    { name: "Luxembourg", kind: "city", country: "Luxembourg", ref: "cities/2960316", point: [6.13, 49.61] },
    { name: "Lucerne", kind: "city", country: "Switzerland", ref: "cities/2659811", point: [8.31, 47.05] },
    { name: "Berlin", kind: "city", country: "Germany", ref: "cities/2950159", point: [13.41, 52.52] },
  ];
  readonly placeSearches: string[] = [];
  /** The cities GET /places/labels names (those in the box, largest first), and every box asked for. */
  readonly cityLabels: PlaceLabel[] = [...CITY_LABELS];
  readonly labelRequests: { bbox: number[]; limit: number }[] = [];
  /** What GET /places/status answers (null: a 503, as when vector-tools is down), and how often it was asked. */
  placeStatus: PlaceStatus | null = PLACES_LOADED;
  placeStatusRequests = 0;
  /** Every map state saved, in order: session id and body. */
  readonly mapSaves: { sessionId: string; state: JsonObject }[] = [];
  /** What GET /models offers, the default first; a message naming another model is refused (422). */
  models: string[] = ["fake-model"];
  /** While true every model slot is taken: new runs are refused with the gate's 503 and capacity shows none free. */
  busy = false;
  /** The next chat request is refused with this answer (status and JSON body), before any run starts. */
  refuseNext: { status: number; body: JsonObject } | null = null;
  private readonly waiting = new Map<string, (approved: boolean) => void>();
  private readonly cancels = new Map<string, () => void>();
  private releases: (() => void)[] = [];
  /** Every run's SSE frames, and the readers following it (GET /chat/runs/{id}/events). */
  private readonly runs = new Map<string, { frames: { id: string; text: string }[]; readers: Set<ServerResponse>; over: boolean }>();
  private server: Server | null = null;
  url = "";

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => json(res, 500, errorBody("internal", String(err))));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    return this.url;
  }

  /** Lets every held stream go on. */
  release(): void {
    const pending = this.releases;
    this.releases = [];
    pending.forEach((go) => go());
  }

  /** Waits until a stream is held, then lets it go on (a hold registers just after its last event is sent). */
  async releaseHeld(): Promise<void> {
    for (let i = 0; i < 200 && this.releases.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    if (this.releases.length === 0) throw new Error("no stream is held");
    this.release();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const method = req.method ?? "GET";
    if (method === "GET" && path === "/api/v1/info") return json(res, 200, { model: "fake-model", provider: "test", auth_mode: "none" });
    if (method === "GET" && path === "/api/v1/models") return json(res, 200, { default: this.models[0], models: this.models });
    if (method === "GET" && path === "/api/v1/chat/capacity") {
      return json(res, 200, this.busy ? { active: 4, max: 4, available: 0 } : { active: 0, max: 4, available: 4 });
    }
    if (method === "GET" && path === "/api/v1/chat/sessions") {
      const list = [...this.sessions.values()].reverse().map((s) => ({
        id: s.id,
        title: s.title,
        created_at: s.created_at,
        updated_at: s.updated_at,
        message_count: s.messages.length,
      }));
      return json(res, 200, list);
    }
    const history = /^\/api\/v1\/chat\/session\/([^/]+)\/history$/.exec(path);
    if (method === "GET" && history) {
      const session = this.sessions.get(decodeURIComponent(history[1]));
      if (!session) return json(res, 404, errorBody("not_found", "session not found"));
      return json(res, 200, { session_id: session.id, title: session.title, messages: session.messages });
    }
    const mapState = /^\/api\/v1\/chat\/session\/([^/]+)\/map-state$/.exec(path);
    if (mapState && (method === "GET" || method === "PUT")) {
      const session = this.sessions.get(decodeURIComponent(mapState[1]));
      if (!session) return json(res, 404, errorBody("not_found", "session not found"));
      if (method === "PUT") {
        session.mapState = JSON.parse(await readBody(req)) as JsonObject;
        this.mapSaves.push({ sessionId: session.id, state: session.mapState });
      }
      return json(res, 200, { map_state: session.mapState, updated_at: session.mapState ? new Date().toISOString() : null });
    }
    if (method === "GET" && path === "/api/v1/places/search") {
      const params = new URL(req.url ?? "/", "http://x").searchParams;
      const q = (params.get("q") ?? "").trim();
      if (!q) return json(res, 422, errorBody("invalid_argument", "q must not be blank", "q"));
      this.placeSearches.push(q);
      const limit = Number(params.get("limit") ?? "5");
      const results = this.places.filter((p) => p.name.toLowerCase().startsWith(q.toLowerCase())).slice(0, limit);
      return json(res, 200, { query: q, results });
    }
    if (method === "GET" && path === "/api/v1/places/labels") {
      const params = new URL(req.url ?? "/", "http://x").searchParams;
      const bbox = (params.get("bbox") ?? "").split(",").map(Number);
      if (bbox.length !== 4 || bbox.some((v) => !Number.isFinite(v))) {
        return json(res, 422, errorBody("invalid_argument", "bbox must be west,south,east,north", "bbox"));
      }
      const limit = Number(params.get("limit") ?? "100");
      this.labelRequests.push({ bbox, limit });
      const [west, south, east, north] = bbox;
      const inLon = (lon: number) => (west <= east ? west <= lon && lon <= east : lon >= west || lon <= east);
      const labels = this.cityLabels
        .filter((c) => inLon(c.lon) && south <= c.lat && c.lat <= north)
        .sort((a, b) => b.population - a.population)
        .slice(0, limit);
      return json(res, 200, { bbox, labels });
    }
    if (method === "GET" && path === "/api/v1/places/status") {
      this.placeStatusRequests += 1;
      if (!this.placeStatus) return json(res, 503, errorBody("unavailable", "the place loading status is unavailable; retry shortly"));
      return json(res, 200, this.placeStatus);
    }
    if (method === "POST" && path === "/api/v1/chat/stream") return this.stream(req, res);
    const approval = /^\/api\/v1\/chat\/approvals\/([^/]+)$/.exec(path);
    if (method === "POST" && approval) {
      const id = decodeURIComponent(approval[1]);
      const answer = this.waiting.get(id);
      if (!answer) return json(res, 404, errorBody("not_found", "approval not found"));
      const { approved } = JSON.parse(await readBody(req)) as { approved: boolean };
      this.waiting.delete(id);
      this.approvals.set(id, approved);
      answer(approved);
      return json(res, 200, { approval_id: id, approved });
    }
    const events = /^\/api\/v1\/chat\/runs\/([^/]+)\/events$/.exec(path);
    if (method === "GET" && events) {
      const run = this.runs.get(decodeURIComponent(events[1]));
      if (!run) return json(res, 404, errorBody("not_found", "run not found"));
      // As the gateway: the frames after Last-Event-ID (all without it), then the new ones until the end.
      const after = req.headers["last-event-id"];
      const from = typeof after === "string" ? run.frames.findIndex((f) => f.id === after) + 1 : 0;
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      run.frames.slice(from).forEach((f) => res.write(f.text));
      if (run.over) res.end();
      else {
        run.readers.add(res);
        res.on("close", () => run.readers.delete(res));
      }
      return;
    }
    const cancel = /^\/api\/v1\/chat\/runs\/([^/]+)\/cancel$/.exec(path);
    if (method === "POST" && cancel) {
      const stop = this.cancels.get(decodeURIComponent(cancel[1]));
      if (!stop) return json(res, 404, errorBody("not_found", "run not found"));
      stop();
      return json(res, 202, { status: "cancelling" });
    }
    const tilejson = /^\/tiles\/([^/]+)\/tilejson\.json$/.exec(path);
    if (method === "GET" && tilejson) {
      const id = decodeURIComponent(tilejson[1]);
      const layer = this.layers.get(id);
      if (!layer) return json(res, 404, errorBody("not_found", `no collection '${id}'`, "collection_id"));
      return json(res, 200, { tilejson: "3.0.0", tiles: [`/tiles/${encodeURIComponent(id)}/{z}/{x}/{y}.png`], minzoom: 0, maxzoom: 14, ...layer });
    }
    const point = /^\/tiles\/([^/]+)\/point$/.exec(path);
    if (method === "GET" && point) {
      const id = decodeURIComponent(point[1]);
      this.pointRequests.push(req.url ?? path);
      if (!this.layers.has(id)) return json(res, 404, errorBody("not_found", `no collection '${id}'`, "collection_id"));
      const query = new URL(req.url ?? path, "http://localhost").searchParams;
      const lon = Number(query.get("lon"));
      const lat = Number(query.get("lat"));
      const { status, ...body } = this.points.get(id) ?? {
        inside: false,
        values: [],
        note: `no data here: the point is outside '${id}'`,
      };
      return json(res, typeof status === "number" ? status : 200, { collection_id: id, title: this.layers.get(id)?.description ?? id, lon, lat, ...body });
    }
    if (method === "GET" && /^\/tiles\/[^/]+\/\d+\/\d+\/\d+\.png$/.test(path)) {
      res.writeHead(200, { "Content-Type": "image/png" });
      res.end(TILE_PNG);
      return;
    }
    json(res, 404, errorBody("not_found", `no route ${method} ${path}`));
  }

  private async stream(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(req)) as ChatRequestBody;
    if (typeof body.message !== "string" || !body.message.trim()) return json(res, 422, errorBody("invalid_argument", "message is required", "message"));
    this.requests.push(body);
    const refusal = this.refuseNext;
    if (refusal) {
      this.refuseNext = null;
      return json(res, refusal.status, refusal.body);
    }
    if (body.model !== undefined && !this.models.includes(body.model)) {
      return json(res, 422, errorBody("invalid_argument", `unknown model '${body.model}'`, "model"));
    }
    const replacing = typeof body.session_id === "string" ? this.sessions.get(body.session_id) : undefined;
    // As the gateway: the question to replace must be stored; it and all after it go once the run is admitted.
    const questions = (replacing?.messages ?? []).flatMap((m, index) => (m.role === "user" ? [index] : []));
    if (body.replace_turn !== undefined && (!replacing || !(body.replace_turn >= 0 && body.replace_turn < questions.length))) {
      return json(res, 422, errorBody("invalid_argument", `the session has ${questions.length} questions`, "replace_turn"));
    }
    if (this.busy) return json(res, 503, errorBody("gate_full", "all model slots are busy", null, { active: 4, max: 4, available: 0 }));
    const answer = this.answers.shift();
    if (!answer) return json(res, 503, errorBody("unavailable", "no scripted answer left"));
    const now = new Date().toISOString();
    let session = typeof body.session_id === "string" ? this.sessions.get(body.session_id) : undefined;
    if (!session) {
      session = { id: randomUUID(), title: body.message.slice(0, 40), created_at: now, updated_at: now, messages: [], mapState: null };
      this.sessions.set(session.id, session);
    }
    if (body.replace_turn !== undefined) session.messages.splice(questions[body.replace_turn]);
    const runId = randomUUID();
    let cancelled = false;
    let wake: () => void = () => undefined;
    this.cancels.set(runId, () => {
      cancelled = true;
      wake();
    });

    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Run-Id": runId });
    const run = { frames: [] as { id: string; text: string }[], readers: new Set<ServerResponse>([res]), over: false };
    this.runs.set(runId, run);
    // The run goes on when its page goes away (a reload): only the reader is dropped.
    res.on("close", () => run.readers.delete(res));
    let seq = 0;
    const send = async (payload: Payload): Promise<void> => {
      seq += 1;
      const event = create(AgentEventSchema, { runId, seq: BigInt(seq), step: 1, payload });
      const name = payload.case ? SSE_EVENT_NAMES[payload.case] : "message";
      const id = `${Date.now()}-${seq}`;
      const text = `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(toJson(AgentEventSchema, event))}\n\n`;
      run.frames.push({ id, text });
      run.readers.forEach((reader) => reader.write(text));
      await new Promise((resolve) => setTimeout(resolve, 15));
    };
    /** Waits for `ready` to be called, or for the user to cancel the run. */
    const until = <T,>(register: (ready: (value: T) => void) => void): Promise<T | null> =>
      new Promise((resolve) => {
        wake = () => resolve(null);
        register(resolve);
        if (cancelled) resolve(null);
      });

    await send({ case: "runStarted", value: { sessionId: session.id, model: body.model ?? this.models[0], maxSteps: 8 } });
    const calls: { id: string; name: string; arguments: JsonObject; result: string; status?: CallStatus; error?: string }[] = [];
    const tools = answer.tools ?? [];
    for (const tool of tools) {
      const callId = `call-${calls.length + 1}`;
      await send({ case: "toolStart", value: { callId, toolName: tool.name, arguments: tool.arguments, server: "raster-tools" } });
      await send({ case: "toolResult", value: { callId, toolName: tool.name, result: tool.result, durationMs: BigInt(40 + calls.length) } });
      calls.push({ id: callId, ...tool });
    }
    let text = "";
    for (const step of answer.steps ?? []) {
      if (cancelled) break;
      if ("tool" in step) {
        const callId = `call-${calls.length + 1}`;
        const { tool } = step;
        await send({ case: "toolStart", value: { callId, toolName: tool.name, arguments: tool.arguments, server: "raster-tools" } });
        if (step.hold) await until<void>((go) => this.releases.push(() => go()));
        if (cancelled) break;
        await send({ case: "toolResult", value: { callId, toolName: tool.name, result: tool.result, durationMs: 40n } });
        calls.push({ id: callId, ...tool });
      } else if ("hold" in step) {
        await until<void>((go) => this.releases.push(() => go()));
      } else if ("thinking" in step) {
        await send({ case: "thinking", value: { text: step.thinking } });
      } else if ("text" in step) {
        text += step.text;
        await send({ case: "content", value: { text: step.text } });
      } else if ("frontend" in step) {
        const callId = `call-${calls.length + 1}`;
        await send({ case: "frontendTool", value: { callId, name: step.frontend.name, arguments: step.frontend.arguments } });
        calls.push({ id: callId, ...step.frontend, result: "shown" });
      } else {
        const gated = step.approval;
        const callId = `call-${calls.length + 1}`;
        const approvalId = randomUUID();
        await send({
          case: "approvalRequired",
          value: {
            approvalId,
            callId,
            toolName: gated.name,
            arguments: gated.arguments,
            timeoutSeconds: gated.timeoutSeconds ?? 120,
            server: gated.server ?? "",
            description: gated.description ?? "",
          },
        });
        const approved = await until<boolean>((decide) => this.waiting.set(approvalId, decide));
        this.waiting.delete(approvalId);
        if (approved === null) break;
        if (approved) {
          await send({ case: "toolStart", value: { callId, toolName: gated.name, arguments: gated.arguments, server: gated.server ?? "" } });
          await send({ case: "toolResult", value: { callId, toolName: gated.name, result: gated.result, durationMs: 12n } });
        } else {
          await send({ case: "toolError", value: { callId, toolName: gated.name, error: REJECTED, durationMs: 0n, kind: "rejected" } });
        }
        calls.push({ id: callId, ...gated, result: approved ? gated.result : "rejected", ...(approved ? {} : { status: "rejected", error: REJECTED }) });
      }
    }
    if (!cancelled) {
      // The answer arrives in pieces, as a model streams it.
      for (const piece of answer.content.match(/[\s\S]{1,12}/g) ?? []) await send({ case: "content", value: { text: piece } });
      text += answer.content;
    }
    await send({
      case: "done",
      value: {
        content: text,
        finishReason: cancelled ? "cancelled" : "completed",
        steps: calls.length + 1,
        toolCalls: calls.length,
        ...(answer.grounding && !cancelled ? { grounding: answer.grounding } : {}),
      },
    });
    this.cancels.delete(runId);
    run.over = true;
    run.readers.forEach((reader) => reader.end());

    session.messages.push({ role: "user", content: body.message, created_at: now });
    if (calls.length > 0) {
      session.messages.push({
        role: "assistant",
        content: "",
        tool_calls: calls.map((c) => ({
          id: c.id,
          name: c.name,
          arguments: c.arguments,
          status: c.status ?? "ok",
          ...(c.error ? { error: c.error, error_kind: "rejected" } : {}),
        })),
        created_at: now,
      });
      calls.forEach((c) => session.messages.push({ role: "tool", content: c.result, tool_call_id: c.id, created_at: now }));
    }
    session.messages.push({ role: "assistant", content: text, created_at: new Date().toISOString() });
    session.updated_at = new Date().toISOString();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The gateway's one error body (stacgis_common.http_errors): a field at fault is named in the message too. */
export function errorBody(code: string, message: string, field: string | null = null, extra: JsonObject = {}): JsonObject {
  return { field, message: field ? `${field}: ${message}` : message, code, ...extra };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
