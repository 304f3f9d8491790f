"""Conversation messages and their three shapes: proto3 JSON (orchestrator), Postgres rows, API history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool"})


def _get(source: dict[str, Any], camel: str, snake: str) -> Any:
    # The proto3 JSON mapping emits lowerCamelCase but parsers must accept the proto field names too.
    return source[camel] if camel in source else source.get(snake)


@dataclass
class ChatMessage:
    role: str
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # The answer's grounding check (stacgis.v1.Grounding, proto3 JSON): kept for the history, never sent to the model.
    grounding: dict[str, Any] | None = None

    @classmethod
    def from_proto_json(cls, data: dict[str, Any]) -> ChatMessage:
        role = str(data.get("role") or "")
        if role not in ROLES:
            raise ValueError(f"message role {role!r} is not one of {sorted(ROLES)}")
        calls = []
        for call in _get(data, "toolCalls", "tool_calls") or []:
            arguments = call.get("arguments")
            calls.append(
                {
                    "id": str(call.get("id") or ""),
                    "name": str(call.get("name") or ""),
                    "arguments": arguments if isinstance(arguments, dict) else {},
                }
            )
        return cls(
            role=role,
            content=str(data.get("content") or ""),
            tool_calls=calls,
            tool_call_id=_get(data, "toolCallId", "tool_call_id") or None,
            name=data.get("name") or None,
        )

    def to_proto_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["toolCalls"] = [
                {"id": call["id"], "name": call["name"], "arguments": call.get("arguments") or {}}
                for call in self.tool_calls
            ]
        if self.tool_call_id:
            out["toolCallId"] = self.tool_call_id
        if self.name:
            out["name"] = self.name
        return out

    def to_cache(self) -> dict[str, Any]:
        return self.to_proto_json()


def trim_history(messages: list[ChatMessage], limit: int) -> list[ChatMessage]:
    """The last `limit` messages, starting at a user message so no tool result loses its call."""
    if limit <= 0:
        return []
    window = messages[-limit:]
    for index, message in enumerate(window):
        if message.role == "user":
            return window[index:]
    return []
