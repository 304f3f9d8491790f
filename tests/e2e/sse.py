"""A Server-Sent Events reader over httpx that records when each event arrived.

Parsing follows the HTML living standard's event-stream rules (fields `event`, `data`, `id`,
comment lines starting with ':'), applied to the (decoded) bytes as they come off the socket, so arrival
times show whether a proxy passed events on at once or held them back.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from stacgis_common.answer import answer_text


@dataclass
class SSEEvent:
    event: str
    data: str
    id: str | None
    # time.monotonic() when the blank line ending the event arrived.
    at: float
    comment: str | None = None

    @property
    def is_comment(self) -> bool:
        return self.comment is not None

    def json(self) -> dict[str, Any]:
        value = json.loads(self.data)
        assert isinstance(value, dict), f"event {self.event!r} data is not a JSON object: {self.data[:200]}"
        return value

    def payload(self) -> dict[str, Any]:
        """The AgentEvent's payload object (proto3 JSON: `content` -> {"text": ...} and so on)."""
        data = self.json()
        key = PAYLOAD_KEYS.get(self.event, self.event)
        assert key in data, f"{self.event} event has no {key!r} payload: {self.data[:300]}"
        payload = data[key]
        assert isinstance(payload, dict)
        return payload


# SSE event name -> payload field of stacgis.v1.AgentEvent in proto3 JSON.
PAYLOAD_KEYS = {
    "session": "runStarted",
    "thinking": "thinking",
    "tool_start": "toolStart",
    "tool_result": "toolResult",
    "tool_error": "toolError",
    "content": "content",
    "approval_required": "approvalRequired",
    "frontend_tool": "frontendTool",
    "done": "done",
    "error": "error",
}
TERMINAL = {"done", "error"}


class StreamError(AssertionError):
    """The server answered something other than an event stream."""


async def iter_sse(response: httpx.Response) -> AsyncIterator[SSEEvent]:
    """Events (and comments) of an open streaming response, each stamped with its arrival time."""
    if response.status_code != 200:
        body = (await response.aread()).decode(errors="replace")[:1000]
        raise StreamError(f"{response.request.method} {response.request.url} -> HTTP {response.status_code}: {body}")
    content_type = response.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        raise StreamError(f"{response.request.url} answered {content_type!r}, not text/event-stream")
    buffer = b""
    event, last_id, comment = "", None, None
    data: list[str] = []
    async for chunk in response.aiter_bytes():
        arrived = time.monotonic()
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            raw, buffer = buffer[:end], buffer[end + 1 :]
            line = raw.rstrip(b"\r").decode("utf-8")
            if line == "":
                if data or event:
                    yield SSEEvent(event or "message", "\n".join(data), last_id, arrived)
                elif comment is not None:
                    yield SSEEvent("", "", last_id, arrived, comment=comment)
                event, data, comment = "", [], None
                continue
            if line.startswith(":"):
                comment = line[1:].strip()
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                last_id = value


@dataclass
class RunStream:
    """Everything one chat stream delivered, in order."""

    events: list[SSEEvent] = field(default_factory=list)
    comments: list[SSEEvent] = field(default_factory=list)
    started_at: float = field(default_factory=time.monotonic)

    def add(self, item: SSEEvent) -> None:
        (self.comments if item.is_comment else self.events).append(item)

    @property
    def names(self) -> list[str]:
        return [event.event for event in self.events]

    def of(self, name: str) -> list[SSEEvent]:
        return [event for event in self.events if event.event == name]

    @property
    def run_id(self) -> str:
        assert self.events, "no events received"
        return str(self.events[0].json()["runId"])

    @property
    def session_id(self) -> str:
        sessions = self.of("session")
        assert sessions, f"no session event among {self.names}"
        return str(sessions[0].payload()["sessionId"])

    @property
    def content(self) -> str:
        return answer_text(event.payload() for event in self.of("content"))

    @property
    def final(self) -> SSEEvent:
        assert self.events and self.events[-1].event in TERMINAL, f"the stream did not end:\n{self.describe()}"
        return self.events[-1]

    def done(self) -> dict[str, Any]:
        """The Done payload; fails when the run ended otherwise."""
        final = self.final
        assert final.event == "done", f"the run ended with {final.event}: {final.data[:500]}\n{self.describe()}"
        return final.payload()

    def tools(self, name: str) -> list[dict[str, Any]]:
        return [event.payload() for event in self.events if event.event == name]

    def describe(self) -> str:
        lines = []
        for event in self.events:
            lines.append(f"  {event.event:18} {event.data[:240]}")
        return "\n".join(lines)
