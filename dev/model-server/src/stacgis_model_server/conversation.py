"""The wire-neutral form of a chat request and the events a back end streams back.

Both HTTP dialects (Ollama and OpenAI) are converted into `ChatInput`, and both render the same
`ChatEvent`s, so the back ends know nothing of either wire format.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # For role "tool": which tool produced this result (given, or inferred from the call it answers).
    tool_name: str | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class GenerationOptions:
    num_predict: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    num_ctx: int | None = None


@dataclass(frozen=True)
class Constraint:
    """A request for constrained output (JSON format, forced tool choice): what was asked, for errors."""

    field: str
    detail: str


@dataclass(frozen=True)
class ChatInput:
    model: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    # None: the client did not ask; True/False: it did; a string is an effort level ("low", ...).
    think: bool | str | None = None
    options: GenerationOptions = GenerationOptions()
    constraints: tuple[Constraint, ...] = ()

    @property
    def wants_thinking(self) -> bool:
        return self.think not in (None, False, "none")

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.tools:
            function = tool.get("function", tool)
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.append(function["name"])
        return names


def infer_tool_names(messages: list[Message]) -> list[Message]:
    """Give every tool message a tool name: its own, the one of the call id it answers, or by position.

    Ollama clients often send tool results without a name; the n-th tool message after an assistant
    turn then answers that turn's n-th call.
    """
    result: list[Message] = []
    calls_by_id: dict[str, str] = {}
    pending: list[ToolCall] = []
    position = 0
    for message in messages:
        if message.role == "assistant":
            pending = list(message.tool_calls)
            position = 0
            for call in message.tool_calls:
                calls_by_id[call.id] = call.name
        if message.role == "tool" and message.tool_name is None:
            name = calls_by_id.get(message.tool_call_id or "")
            if name is None and position < len(pending):
                name = pending[position].name
            message = Message(role="tool", content=message.content, tool_name=name, tool_call_id=message.tool_call_id)
        if message.role == "tool":
            position += 1
        result.append(message)
    return result


# Events streamed by a back end.


@dataclass(frozen=True)
class TextDelta:
    content: str = ""
    thinking: str = ""


@dataclass(frozen=True)
class ToolCalls:
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Finish:
    done_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    load_duration_ns: int = 0
    prompt_duration_ns: int = 0


ChatEvent = TextDelta | ToolCalls | Finish


class BackendError(Exception):
    """A failure the client sees as an HTTP status and message (before streaming) or an error line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
