"""The orchestrator contract, typed: `RunRequest` built from the generated proto types, each event parsed
once into `AgentEvent`, and one fold of a run's events into its summary (used when the run finishes,
when a run whose replica died is declared lost, and by the synchronous POST /chat/).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from stacgis_proto.v1 import events_pb2, run_pb2

from .messages import ChatMessage

log = logging.getLogger(__name__)

# AgentEvent payload field -> SSE event name (`run_started` is `session` to the browser).
SSE_NAMES: dict[str, str] = {
    "run_started": "session",
    "thinking": "thinking",
    "tool_start": "tool_start",
    "tool_result": "tool_result",
    "tool_error": "tool_error",
    "content": "content",
    "approval_required": "approval_required",
    "frontend_tool": "frontend_tool",
    "done": "done",
    "error": "error",
}


# ToolError kinds that mean the user did not let the call run (refused it, or never answered).
REJECTED_KINDS = frozenset({"rejected", "approval_timeout"})
# A failed call's error as the history keeps it.
MAX_CALL_ERROR_CHARS = 500


class InvalidEvent(ValueError):
    """An orchestrator event that is not an AgentEvent with a payload."""


def parse_event(data: dict[str, Any] | str) -> tuple[str, events_pb2.AgentEvent]:
    """(SSE name, AgentEvent) of one event in proto3 JSON (either field-name style, as the mapping allows).

    Unknown fields are ignored: a newer orchestrator may add some.
    """
    message = events_pb2.AgentEvent()
    try:
        if isinstance(data, str):
            json_format.Parse(data, message, ignore_unknown_fields=True)
        else:
            json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        raise InvalidEvent(str(error)[:300]) from None
    payload = message.WhichOneof("payload")
    if payload is None:
        raise InvalidEvent("the event has no payload")
    return SSE_NAMES[payload], message


def event_json(message: events_pb2.AgentEvent) -> dict[str, Any]:
    """The proto3 JSON of an event as the browser gets it (lowerCamelCase, int64 as strings)."""
    data: dict[str, Any] = json_format.MessageToDict(message)
    return data


def run_request(
    run_id: str,
    session_id: str,
    message: str,
    history: list[ChatMessage],
    spatial: dict[str, Any] | None,
    model: str | None = None,
) -> dict[str, Any]:
    """The proto3 JSON of stacgis.v1.RunRequest, built with the generated types."""
    request = run_pb2.RunRequest(run_id=run_id, session_id=session_id, message=message)
    if model:
        request.options.model = model
    for item in history:
        json_format.ParseDict(item.to_proto_json(), request.history.add())
    if spatial:
        context = request.spatial_context
        center = spatial.get("map_center")
        if center is not None:
            context.map_center.lat = center["lat"]
            context.map_center.lon = center["lon"]
        if spatial.get("zoom") is not None:
            context.zoom = spatial["zoom"]
        if spatial.get("selected_feature") is not None:
            context.selected_feature.update(spatial["selected_feature"])
        if spatial.get("drawn_geometry") is not None:
            context.drawn_geometry.update(spatial["drawn_geometry"])
    body: dict[str, Any] = json_format.MessageToDict(request)
    return body


@dataclass
class RunSummary:
    """What a run's events add up to, folded one event at a time."""

    started: bool = False  # run_started seen (the browser has its session id)
    last_seq: int = 0
    step: int = 0
    content: list[str] = field(default_factory=list)
    tool_calls: int = 0
    # How each call ended, by call id: {"status": "ok" | "rejected" | "failed", "error"?, "error_kind"?}.
    call_outcomes: dict[str, dict[str, str]] = field(default_factory=dict)
    done: events_pb2.Done | None = None
    error: events_pb2.Error | None = None

    def add(self, message: events_pb2.AgentEvent) -> None:
        self.last_seq = max(self.last_seq, message.seq)
        self.step = message.step or self.step
        payload = message.WhichOneof("payload")
        if payload == "run_started":
            self.started = True
        elif payload == "content":
            if message.content.replace:
                self.content.clear()
            self.content.append(message.content.text)
        elif payload == "tool_start":
            self.tool_calls += 1
        elif payload == "tool_result":
            self.call_outcomes[message.tool_result.call_id] = {"status": "ok"}
        elif payload == "frontend_tool":
            self.call_outcomes[message.frontend_tool.call_id] = {"status": "ok"}
        elif payload == "tool_error":
            failure = message.tool_error
            self.call_outcomes[failure.call_id] = {
                "status": "rejected" if failure.kind in REJECTED_KINDS else "failed",
                "error": failure.error[:MAX_CALL_ERROR_CHARS],
                "error_kind": failure.kind,
            }
        elif payload == "done":
            self.done = message.done
        elif payload == "error":
            self.error = message.error

    def add_json(self, data: str) -> None:
        """Fold an event as stored in a run's stream (the gateway's own JSON: always valid)."""
        try:
            self.add(parse_event(json.loads(data))[1])
        except (InvalidEvent, ValueError):
            log.warning("skipping a stored event that does not parse")

    @property
    def partial(self) -> str:
        return "".join(self.content)

    @property
    def finished(self) -> bool:
        return self.done is not None or self.error is not None

    def record_fields(self) -> dict[str, Any]:
        """outcome, finish_reason, error_code, tokens, tool calls and steps of the finished run."""
        if self.done is not None:
            finish_reason = self.done.finish_reason or "completed"
            return {
                "outcome": "cancelled" if finish_reason == "cancelled" else "done",
                "finish_reason": finish_reason,
                "error_code": None,
                "input_tokens": self.done.usage.input_tokens,
                "output_tokens": self.done.usage.output_tokens,
                "tool_calls": self.done.tool_calls or self.tool_calls,
                "steps": self.done.steps or self.step,
            }
        code = (self.error.code if self.error is not None else "") or "internal"
        return {
            "outcome": "cancelled" if code == "cancelled" else "error",
            "finish_reason": None,
            "error_code": code,
            "input_tokens": 0,
            "output_tokens": 0,
            "tool_calls": self.tool_calls,
            "steps": self.step,
        }

    def answer_messages(self, run_id: str) -> list[ChatMessage]:
        """The assistant's messages to store: the run's newMessages, else its answer or partial answer."""
        if self.done is None:
            return [ChatMessage(role="assistant", content=self.partial)] if self.partial else []
        try:
            parsed = [ChatMessage.from_proto_json(json_format.MessageToDict(item)) for item in self.done.new_messages]
        except ValueError:
            log.warning("done event has malformed newMessages; storing its content only", extra={"run_id": run_id})
            parsed = []
        if not parsed:
            content = self.done.content
            parsed = [ChatMessage(role="assistant", content=content)] if content else []
        for item in parsed:
            for call in item.tool_calls:
                call.update(self.call_outcomes.get(call["id"], {}))
        answers = [m for m in parsed if m.role == "assistant" and m.content and not m.tool_calls]
        if self.done.HasField("grounding") and answers:
            answers[-1].grounding = json_format.MessageToDict(self.done.grounding)
        return parsed
