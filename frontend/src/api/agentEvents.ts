import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { AgentEventSchema, type AgentEvent } from "../gen/stacgis/v1/events_pb";

export type { AgentEvent } from "../gen/stacgis/v1/events_pb";
export type AgentPayloadCase = NonNullable<AgentEvent["payload"]["case"]>;

/** SSE event name for each payload case (the gateway's names; see proto/stacgis/v1/events.proto). */
export const SSE_EVENT_NAMES: Record<AgentPayloadCase, string> = {
  runStarted: "session",
  thinking: "thinking",
  toolStart: "tool_start",
  toolResult: "tool_result",
  toolError: "tool_error",
  content: "content",
  approvalRequired: "approval_required",
  frontendTool: "frontend_tool",
  done: "done",
  error: "error",
};

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** Parses one SSE `data:` payload as the proto3 JSON form of `stacgis.v1.AgentEvent`. */
export function decodeAgentEvent(data: string): AgentEvent {
  let json: JsonValue;
  try {
    json = JSON.parse(data) as JsonValue;
  } catch {
    throw new ProtocolError(`event data is not JSON: ${data.slice(0, 80)}`);
  }
  try {
    // Newer servers may add fields; older clients must keep working.
    return fromJson(AgentEventSchema, json, { ignoreUnknownFields: true });
  } catch (err) {
    throw new ProtocolError(`event data is not an AgentEvent: ${(err as Error).message}`);
  }
}

/** True for the events after which a run's stream has nothing more to say. */
export function isTerminal(event: AgentEvent): boolean {
  return event.payload.case === "done" || event.payload.case === "error";
}
