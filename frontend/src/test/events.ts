import { decodeAgentEvent, type AgentEvent } from "../api/agentEvents";

/** Builds events exactly as the gateway sends them: proto3 JSON, decoded by the app's own decoder. */
export function ev(runId: string, seq: number, step: number, payload: Record<string, unknown>): AgentEvent {
  return decodeAgentEvent(JSON.stringify({ runId, seq: String(seq), step, ...payload }));
}

/** One SSE frame as the gateway writes it. */
export function frame(id: string, event: string, data: Record<string, unknown>): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
