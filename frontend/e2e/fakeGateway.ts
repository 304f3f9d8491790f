import { create, toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SSE_EVENT_NAMES } from "../src/api/agentEvents";
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

export interface ScriptedAnswer {
  content: string;
  tools?: ScriptedTool[];
  grounding?: MessageInitShape<typeof GroundingSchema>;
}

interface StoredMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  tool_calls?: { id: string; name: string; arguments: JsonObject }[];
  tool_call_id?: string;
  created_at: string;
}

interface Session {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  messages: StoredMessage[];
}

type Payload = NonNullable<MessageInitShape<typeof AgentEventSchema>["payload"]>;

export class FakeGateway {
  readonly sessions = new Map<string, Session>();
  /** Answers handed out in order, one per message sent. */
  readonly answers: ScriptedAnswer[] = [];
  private server: Server | null = null;
  url = "";

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => json(res, 500, { detail: String(err) }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const method = req.method ?? "GET";
    if (method === "GET" && path === "/api/v1/info") return json(res, 200, { model: "fake-model", provider: "test", auth_mode: "none" });
    if (method === "GET" && path === "/api/v1/chat/capacity") return json(res, 200, { active: 0, max: 4, available: 4 });
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
      if (!session) return json(res, 404, { detail: "session not found" });
      return json(res, 200, { session_id: session.id, title: session.title, messages: session.messages });
    }
    if (method === "POST" && path === "/api/v1/chat/stream") return this.stream(req, res);
    json(res, 404, { detail: `no route ${method} ${path}` });
  }

  private async stream(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(req)) as { message?: unknown; session_id?: unknown };
    if (typeof body.message !== "string" || !body.message.trim()) return json(res, 422, { detail: [{ loc: ["body", "message"], msg: "message is required" }] });
    const answer = this.answers.shift();
    if (!answer) return json(res, 503, { detail: "no scripted answer left" });
    const now = new Date().toISOString();
    let session = typeof body.session_id === "string" ? this.sessions.get(body.session_id) : undefined;
    if (!session) {
      session = { id: randomUUID(), title: body.message.slice(0, 40), created_at: now, updated_at: now, messages: [] };
      this.sessions.set(session.id, session);
    }
    const runId = randomUUID();
    const events: Payload[] = [{ case: "runStarted", value: { sessionId: session.id, model: "fake-model", maxSteps: 8 } }];
    const tools = answer.tools ?? [];
    tools.forEach((tool, i) => {
      const callId = `call-${i + 1}`;
      events.push({ case: "toolStart", value: { callId, toolName: tool.name, arguments: tool.arguments, server: "raster-tools" } });
      events.push({ case: "toolResult", value: { callId, toolName: tool.name, result: tool.result, durationMs: BigInt(40 + i) } });
    });
    // The answer arrives in pieces, as a model streams it.
    for (const piece of answer.content.match(/[\s\S]{1,12}/g) ?? []) events.push({ case: "content", value: { text: piece } });
    events.push({
      case: "done",
      value: {
        content: answer.content,
        finishReason: "completed",
        steps: tools.length + 1,
        toolCalls: tools.length,
        ...(answer.grounding ? { grounding: answer.grounding } : {}),
      },
    });

    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Run-Id": runId });
    let seq = 0;
    for (const payload of events) {
      seq += 1;
      const event = create(AgentEventSchema, { runId, seq: BigInt(seq), step: 1, payload });
      const name = payload.case ? SSE_EVENT_NAMES[payload.case] : "message";
      res.write(`id: ${Date.now()}-${seq}\nevent: ${name}\ndata: ${JSON.stringify(toJson(AgentEventSchema, event))}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    res.end();

    session.messages.push({ role: "user", content: body.message, created_at: now });
    if (tools.length > 0) {
      session.messages.push({
        role: "assistant",
        content: "",
        tool_calls: tools.map((t, i) => ({ id: `call-${i + 1}`, name: t.name, arguments: t.arguments })),
        created_at: now,
      });
      tools.forEach((t, i) => session.messages.push({ role: "tool", content: t.result, tool_call_id: `call-${i + 1}`, created_at: now }));
    }
    session.messages.push({ role: "assistant", content: answer.content, created_at: new Date().toISOString() });
    session.updated_at = new Date().toISOString();
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
