"""AgentEvent (proto/stacgis/v1/events.proto) in its proto3 JSON form, as dicts.

The SSE event name is the snake_case name of the payload field, except `run_started`, which the browser
knows as `session` (it carries the session id).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format

from stacgis_proto.v1 import events_pb2

# proto3 JSON field name (lowerCamelCase) -> SSE event name; the proto field names are accepted too.
PAYLOADS: dict[str, str] = {
    "runStarted": "session",
    "thinking": "thinking",
    "toolStart": "tool_start",
    "toolResult": "tool_result",
    "toolError": "tool_error",
    "content": "content",
    "approvalRequired": "approval_required",
    "frontendTool": "frontend_tool",
    "done": "done",
    "error": "error",
}
_SNAKE = {
    "run_started": "runStarted",
    "tool_start": "toolStart",
    "tool_result": "toolResult",
    "tool_error": "toolError",
    "approval_required": "approvalRequired",
    "frontend_tool": "frontendTool",
}
TERMINAL = frozenset({"done", "error"})


def normalise(event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """Rewrite snake_case payload keys to camelCase; return (SSE name, payload) or None if unknown."""
    for snake, camel in _SNAKE.items():
        if snake in event and camel not in event:
            event[camel] = event.pop(snake)
    if "run_id" in event:
        event.setdefault("runId", event.pop("run_id"))
    found = [key for key in PAYLOADS if key in event]
    if len(found) != 1:
        return None
    payload = event[found[0]]
    if not isinstance(payload, dict):
        return None
    return PAYLOADS[found[0]], payload


def as_int(value: Any) -> int:
    """int64 fields arrive as strings in proto3 JSON; int32 as numbers."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def make_event(run_id: str, seq: int, step: int, field: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An event the gateway writes itself (int64 `seq` as a string, as the proto3 JSON mapping has it)."""
    return {"runId": run_id, "seq": str(seq), "step": step, field: payload}


def check(event: dict[str, Any]) -> str | None:
    """None when `event` parses as stacgis.v1.AgentEvent, else what is wrong.

    Unknown fields are allowed: a newer orchestrator may add some, and the browser ignores them too.
    """
    try:
        json_format.ParseDict(event, events_pb2.AgentEvent(), ignore_unknown_fields=True)
    except json_format.ParseError as error:
        return str(error)[:300]
    return None
