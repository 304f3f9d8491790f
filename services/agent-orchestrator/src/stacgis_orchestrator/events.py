"""Agent events as the contract defines them (stacgis.v1.AgentEvent), numbered per run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from stacgis_proto.v1 import events_pb2, run_pb2

from .grounding import GroundingReport
from .llm.types import Message, ToolCall


def struct(value: dict[str, Any]) -> Struct:
    message = Struct()
    # Struct holds JSON only; anything else (NaN is JSON-invalid too) is passed through json first.
    message.update(json.loads(json.dumps(value, default=str, allow_nan=False)) if value else {})
    return message


def event_name(event: events_pb2.AgentEvent) -> str:
    """SSE event name: the snake_case name of the payload field."""
    return event.WhichOneof("payload") or "message"


def to_json(event: events_pb2.AgentEvent) -> str:
    """The proto3 JSON of an event. Struct numbers are doubles, so json_format writes a limit of 3
    as 3.0; whole numbers are written as integers instead (the same JSON value, easier to read)."""
    return json.dumps(whole_numbers(json_format.MessageToDict(event)), ensure_ascii=False)


def whole_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


def message_to_proto(message: Message) -> run_pb2.ChatMessage:
    proto = run_pb2.ChatMessage(role=message.role, content=message.content)
    for call in message.tool_calls:
        proto.tool_calls.append(run_pb2.ToolCall(id=call.id, name=call.name, arguments=struct(call.arguments)))
    if message.tool_call_id:
        proto.tool_call_id = message.tool_call_id
    if message.name:
        proto.name = message.name
    return proto


def message_from_proto(proto: run_pb2.ChatMessage) -> Message:
    role = proto.role if proto.role in ("system", "user", "assistant", "tool") else "user"
    return Message(
        role=role,  # type: ignore[arg-type]
        content=proto.content,
        tool_calls=[
            ToolCall(id=call.id, name=call.name, arguments=json_format.MessageToDict(call.arguments))
            for call in proto.tool_calls
        ],
        tool_call_id=proto.tool_call_id or None,
        name=proto.name or None,
    )


def grounding_proto(report: GroundingReport) -> events_pb2.Grounding:
    return events_pb2.Grounding(
        numbers=[
            events_pb2.GroundedNumber(
                text=checked.number.text,
                value=checked.number.value,
                unit=checked.number.unit,
                start=checked.number.start,
                end=checked.number.end,
                supported=checked.supported,
                call_id=checked.call_id,
                tool_name=checked.tool_name,
                source_value=checked.source_value,
                match=checked.match,
            )
            for checked in report.numbers
        ],
        supported_count=report.supported_count,
        unsupported_count=report.unsupported_count,
    )


class EventSink:
    """Numbers events and hands them to the response stream, keeping their order."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.queue: asyncio.Queue[events_pb2.AgentEvent | None] = asyncio.Queue()
        self.seq = 0
        self.step = 0

    def emit(self, **payload: Any) -> events_pb2.AgentEvent:
        self.seq += 1
        event = events_pb2.AgentEvent(run_id=self.run_id, seq=self.seq, step=self.step, **payload)
        self.queue.put_nowait(event)
        return event

    def close(self) -> None:
        self.queue.put_nowait(None)
