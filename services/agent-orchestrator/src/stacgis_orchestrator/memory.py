"""Short-term memory of a conversation: a sliding window that never separates a tool call from its result."""

from __future__ import annotations

from typing import Any

from .llm.types import Message, ToolCall
from .result_shaping import shape_result


def truncate_result(text: str, limit: int) -> tuple[str, bool]:
    """A tool result that fits `limit` characters: JSON shaped as JSON, text cut with a notice."""
    return shape_result(text, limit)


class ConversationMemory:
    """System messages are pinned; the others slide in a window of `window` messages."""

    def __init__(self, window: int = 50, max_tool_result_chars: int = 4_000) -> None:
        self.window = window
        self.max_tool_result_chars = max_tool_result_chars
        self.system: list[Message] = []
        self.messages: list[Message] = []

    def add_system(self, content: str) -> None:
        self.system.append(Message(role="system", content=content))

    def add_user(self, content: str) -> Message:
        return self._add(Message(role="user", content=content))

    def add_assistant(self, content: str, tool_calls: list[ToolCall] | None = None) -> Message:
        return self._add(Message(role="assistant", content=content, tool_calls=list(tool_calls or [])))

    def add_tool_result(self, call_id: str, name: str, content: str) -> tuple[Message, bool]:
        text, truncated = truncate_result(content, self.max_tool_result_chars)
        return self._add(Message(role="tool", content=text, tool_call_id=call_id, name=name)), truncated

    def add(self, message: Message) -> Message:
        if message.role == "system":
            self.system.append(message)
            return message
        if message.role == "tool":
            message.content, _ = truncate_result(message.content, self.max_tool_result_chars)
        return self._add(message)

    def _add(self, message: Message) -> Message:
        self.messages.append(message)
        self._slide()
        return message

    def _slide(self) -> None:
        if len(self.messages) <= self.window:
            return
        start = len(self.messages) - self.window
        # The request being answered stays, however many tool steps follow it (the context guard
        # compacts those instead).
        last_user = max((i for i, m in enumerate(self.messages) if m.role == "user"), default=start)
        start = min(start, last_user)
        # Never begin the window with tool results whose call was cut off.
        while start < len(self.messages) and self.messages[start].role == "tool":
            start += 1
        self.messages = self.messages[start:]

    def get_messages(self) -> list[Message]:
        return [*self.system, *self.messages]

    def current_request_index(self) -> int:
        """Index in get_messages() of the latest user message (the request being answered)."""
        messages = self.get_messages()
        return max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "max_tool_result_chars": self.max_tool_result_chars,
            "messages": [message_to_dict(m) for m in [*self.system, *self.messages]],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationMemory:
        memory = cls(int(data.get("window", 50)), int(data.get("max_tool_result_chars", 4_000)))
        for item in data.get("messages", []):
            memory.add(message_from_dict(item))
        return memory


def message_to_dict(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    if message.tool_call_id:
        data["tool_call_id"] = message.tool_call_id
    if message.name:
        data["name"] = message.name
    return data


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=str(data.get("content") or ""),
        tool_calls=[
            ToolCall(id=str(c.get("id") or ""), name=str(c["name"]), arguments=dict(c.get("arguments") or {}))
            for c in data.get("tool_calls") or []
        ],
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def consistent_history(messages: list[Message]) -> list[Message]:
    """History as models accept it: every tool call answered by a result and every result answering
    a call (an interrupted run can leave either alone)."""
    answered = {m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id}
    requested: set[str] = set()
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = [c for c in message.tool_calls if c.id in answered]
            requested.update(c.id for c in calls)
            if not calls and not message.content:
                continue
            out.append(Message(role="assistant", content=message.content, tool_calls=calls))
        elif message.role == "tool":
            if message.tool_call_id in requested:
                out.append(message)
        else:
            out.append(message)
    return out
