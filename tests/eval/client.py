"""Talking to a running stack through its public API, as a browser does.

Each task gets a fresh HTTP client, so a fresh cookie jar and a new anonymous user: memories and
sessions of one task never reach another. A run is read from `POST /chat/stream` (SSE) until its
`done` or `error` event, within the task's time limit; a run still going then is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from stacgis_common.answer import answer_text

TERMINAL = ("done", "error")
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


class StackError(RuntimeError):
    """The stack did not answer as its API says (unreachable, HTTP error, broken stream)."""


@dataclass
class Event:
    name: str
    payload: dict[str, Any]
    step: int = 0


@dataclass
class RunRecord:
    """Everything one chat run delivered, and how long it took."""

    message: str
    events: list[Event] = field(default_factory=list)
    seconds: float = 0.0
    run_id: str | None = None
    timed_out: bool = False

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e.payload for e in self.events if e.name == name]

    @property
    def final(self) -> Event | None:
        return self.events[-1] if self.events and self.events[-1].name in TERMINAL else None

    @property
    def answer(self) -> str:
        final = self.final
        if final is not None and final.name == "done" and "content" in final.payload:
            return str(final.payload["content"])
        return answer_text(self.of("content"))

    def to_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "run_id": self.run_id,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "events": [{"event": e.name, "step": e.step, "data": e.payload} for e in self.events],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        record = cls(str(data.get("message", "")), seconds=float(data.get("seconds", 0.0)))
        record.run_id = data.get("run_id")
        record.timed_out = bool(data.get("timed_out", False))
        record.events = [Event(e["event"], e["data"], int(e.get("step", 0))) for e in data.get("events", [])]
        return record


async def iter_sse(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs of an event stream; comments (`: ping`) are skipped."""
    event, data = "", list[str]()
    async for line in response.aiter_lines():
        if line == "":
            if data or event:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)


class ChatClient:
    """One anonymous user of the public API at `base_url` (ending in /api/v1)."""

    def __init__(self, base_url: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=5.0))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def info(self) -> dict[str, Any]:
        try:
            response = await self.http.get(f"{self.base_url}/info")
        except httpx.HTTPError as error:
            raise StackError(f"{self.base_url}/info does not answer: {type(error).__name__}: {error}") from error
        if response.status_code != 200:
            raise StackError(f"{self.base_url}/info answered HTTP {response.status_code}: {response.text[:300]}")
        body = response.json()
        if not isinstance(body, dict):
            raise StackError(f"{self.base_url}/info answered {body!r}")
        return body

    async def chat(self, message: str, timeout: float) -> RunRecord:
        """Send a message in a new session; read its events until the run ends or `timeout` passes."""
        record = RunRecord(message)
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                await self._stream(message, record)
        except TimeoutError:
            record.timed_out = True
            await self._cancel(record.run_id)
        record.seconds = time.monotonic() - started
        return record

    async def _stream(self, message: str, record: RunRecord) -> None:
        for attempt in range(6):
            try:
                async with self.http.stream(
                    "POST",
                    f"{self.base_url}/chat/stream",
                    json={"message": message},
                    headers={"Accept": "text/event-stream"},
                ) as response:
                    if response.status_code in (429, 503) and attempt < 5:
                        # Rate limit or a full gate: wait as told, then ask again.
                        await response.aread()
                        await asyncio.sleep(min(30.0, float(response.headers.get("Retry-After", "2"))))
                        continue
                    if response.status_code != 200:
                        body = (await response.aread()).decode(errors="replace")[:500]
                        raise StackError(f"POST {self.base_url}/chat/stream -> HTTP {response.status_code}: {body}")
                    record.run_id = response.headers.get("X-Run-Id")
                    async for name, data in iter_sse(response):
                        try:
                            event = json.loads(data)
                        except ValueError as error:
                            raise StackError(f"event {name!r} is not JSON: {data[:200]}") from error
                        key = PAYLOAD_KEYS.get(name, name)
                        payload = event.get(key, {}) if isinstance(event, dict) else {}
                        record.events.append(
                            Event(name, payload if isinstance(payload, dict) else {}, event.get("step", 0))
                        )
                        record.run_id = record.run_id or event.get("runId")
                        if name in TERMINAL:
                            return
                    raise StackError(f"the event stream of run {record.run_id} ended without done or error")
            except httpx.HTTPError as error:
                raise StackError(f"POST {self.base_url}/chat/stream failed: {type(error).__name__}: {error}") from error
        raise StackError(f"POST {self.base_url}/chat/stream kept answering 429/503")

    async def _cancel(self, run_id: str | None) -> None:
        if run_id is None:
            return
        # Best effort: the run ends on its own step budget anyway.
        with contextlib.suppress(httpx.HTTPError):
            await self.http.post(f"{self.base_url}/chat/runs/{run_id}/cancel", timeout=10.0)
