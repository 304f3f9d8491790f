"""A browser-like chat client for the load, fault and benchmark runs: POST /api/v1/chat/stream and
resume with GET /api/v1/chat/runs/{id}/events, read as SSE (httpx-sse), every event time-stamped."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from stacgis_common.answer import answer_text

API = "/api/v1"
FINAL = ("done", "error")


@dataclass
class Event:
    id: str | None
    event: str
    data: dict[str, Any]
    at: float  # time.monotonic() when it arrived


@dataclass
class ChatResult:
    """One request and what came back: its status, its events, or why it never finished."""

    kind: str  # "chat" or "resume"
    status: int | None
    started: float
    ended: float = 0.0
    retry_after: str | None = None
    body: Any = None
    events: list[Event] = field(default_factory=list)
    failure: str | None = None  # transport failure, broken stream or no answer in time
    message: str = ""

    @property
    def final(self) -> Event | None:
        return next((e for e in reversed(self.events) if e.event in FINAL), None)

    @property
    def complete(self) -> bool:
        """A whole answer: HTTP 200, a `done` event that is the last one, and some content."""
        final = self.final
        return (
            self.status == 200
            and self.failure is None
            and final is not None
            and final.event == "done"
            and final is self.events[-1]
            and bool(self.content or final.data.get("done", {}).get("content"))
        )

    @property
    def refused(self) -> bool:
        """Refused by the gate as documented: 503 with a usable Retry-After."""
        return self.status == 503 and self.retry_after is not None and self.retry_after.isdigit()

    @property
    def run_id(self) -> str | None:
        for event in self.events:
            if event.data.get("runId"):
                return str(event.data["runId"])
        return None

    @property
    def session_id(self) -> str | None:
        for event in self.events:
            started = event.data.get("runStarted")
            if started and started.get("sessionId"):
                return str(started["sessionId"])
        return None

    @property
    def last_event_id(self) -> str | None:
        return next((e.id for e in reversed(self.events) if e.id), None)

    @property
    def content(self) -> str:
        return answer_text(e.data.get("content", {}) for e in self.events if e.event == "content")

    @property
    def error(self) -> dict[str, Any] | None:
        final = self.final
        return final.data.get("error") if final is not None and final.event == "error" else None

    def first(self, name: str) -> Event | None:
        return next((e for e in self.events if e.event == name), None)

    def describe(self) -> str:
        final = self.final
        tail = f"final={final.event}:{json.dumps(final.data.get(final.event))[:200]}" if final else "no final event"
        return (
            f"{self.kind} status={self.status} events={len(self.events)} {tail} failure={self.failure} "
            f"body={str(self.body)[:200]} after {self.ended - self.started:.1f}s"
        )


async def _read(result: ChatResult, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> None:
    async with aconnect_sse(client, method, url, **kwargs) as source:
        response = source.response
        result.status = response.status_code
        result.retry_after = response.headers.get("retry-after")
        if response.status_code != 200:
            await response.aread()
            try:
                result.body = response.json()
            except ValueError:
                result.body = response.text[:500]
            return
        async for sse in source.aiter_sse():
            try:
                data = json.loads(sse.data) if sse.data else {}
            except ValueError:
                result.failure = f"event data is not JSON: {sse.data[:200]!r}"
                return
            result.events.append(Event(sse.id or None, sse.event, data, time.monotonic()))
            if sse.event in FINAL:
                return
    if result.status == 200 and result.final is None:
        result.failure = "the stream ended without a final event"


async def _run(result: ChatResult, timeout: float, coro: Any) -> ChatResult:
    try:
        async with asyncio.timeout(timeout):
            await coro
    except TimeoutError:
        result.failure = f"no final event within {timeout:g}s"
    except httpx.HTTPError as error:
        result.failure = f"{type(error).__name__}: {error}"
    result.ended = time.monotonic()
    return result


async def chat(
    client: httpx.AsyncClient,
    base: str,
    message: str,
    *,
    session_id: str | None = None,
    spatial_context: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 90.0,
) -> ChatResult:
    body: dict[str, Any] = {"message": message}
    if session_id:
        body["session_id"] = session_id
    if spatial_context:
        body["spatial_context"] = spatial_context
    result = ChatResult("chat", None, time.monotonic(), message=message)
    request = _read(result, client, "POST", f"{base}{API}/chat/stream", json=body, headers=dict(headers or {}))
    return await _run(result, timeout, request)


async def resume(
    client: httpx.AsyncClient,
    base: str,
    run_id: str,
    last_event_id: str | None,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 90.0,
) -> ChatResult:
    extra = dict(headers or {})
    if last_event_id:
        extra["Last-Event-ID"] = last_event_id
    result = ChatResult("resume", None, time.monotonic())
    request = _read(result, client, "GET", f"{base}{API}/chat/runs/{run_id}/events", headers=extra)
    return await _run(result, timeout, request)


def new_client(timeout: float = 90.0) -> httpx.AsyncClient:
    """One browser: its own cookie jar (the anonymous identity) and connections."""
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0), limits=httpx.Limits(max_connections=4))


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Conversation:
    """A chat and the resumes it took to reach its final event (as a browser whose connection broke)."""

    attempts: list[ChatResult]

    @property
    def first(self) -> ChatResult:
        return self.attempts[0]

    @property
    def events(self) -> list[Event]:
        return [event for attempt in self.attempts for event in attempt.events]

    @property
    def final(self) -> Event | None:
        return next((e for e in reversed(self.events) if e.event in FINAL), None)

    @property
    def started(self) -> float:
        return self.first.started

    @property
    def ended(self) -> float:
        return self.attempts[-1].ended

    @property
    def resumed(self) -> bool:
        return len(self.attempts) > 1

    @property
    def content(self) -> str:
        return answer_text(e.data.get("content", {}) for e in self.events if e.event == "content")

    @property
    def succeeded(self) -> bool:
        """A whole answer with no tool failure on the way."""
        final = self.final
        return (
            final is not None
            and final.event == "done"
            and bool(self.content)
            and not any(e.event == "tool_error" for e in self.events)
        )

    def gaps(self) -> list[str]:
        """Event ids must strictly increase and `seq` must count up without gaps across resumes."""
        problems = []
        previous_id: tuple[int, int] | None = None
        previous_seq = 0
        for event in self.events:
            if event.id:
                millis, _, serial = event.id.partition("-")
                key = (int(millis), int(serial or 0))
                if previous_id is not None and key <= previous_id:
                    problems.append(f"event id {event.id} repeats or goes back")
                previous_id = key
            seq = int(event.data.get("seq") or 0)
            if seq and seq != previous_seq + 1:
                problems.append(f"seq {previous_seq} then {seq}")
            previous_seq = seq or previous_seq
        return problems


async def chat_with_resume(
    client: httpx.AsyncClient,
    base: str,
    message: str,
    *,
    timeout: float = 90.0,
    drop_after: int | None = None,
    max_resumes: int = 20,
) -> Conversation:
    """Chat; when the stream breaks (or after `drop_after` events, on purpose) resume until the final event."""
    started = time.monotonic()
    result = ChatResult("chat", None, started, message=message)
    if drop_after is None:
        first = await chat(client, base, message, timeout=timeout)
    else:

        async def partial() -> None:
            async with aconnect_sse(client, "POST", f"{base}{API}/chat/stream", json={"message": message}) as source:
                result.status = source.response.status_code
                result.retry_after = source.response.headers.get("retry-after")
                if result.status != 200:
                    await source.response.aread()
                    result.body = source.response.text[:500]
                    return
                async for sse in source.aiter_sse():
                    data = json.loads(sse.data) if sse.data else {}
                    result.events.append(Event(sse.id or None, sse.event, data, time.monotonic()))
                    if sse.event in FINAL or len(result.events) >= drop_after:
                        return  # leaving the block closes the connection: the browser went away

        first = await _run(result, timeout, partial())
    conversation = Conversation([first])
    while (
        conversation.final is None
        and first.status == 200
        and first.run_id
        and len(conversation.attempts) <= max_resumes
        and time.monotonic() - started < timeout
    ):
        last_id = next((e.id for e in reversed(conversation.events) if e.id), None)
        attempt = await resume(client, base, first.run_id, last_id, timeout=timeout - (time.monotonic() - started))
        conversation.attempts.append(attempt)
        if attempt.status is not None and 400 <= attempt.status < 500:
            break  # e.g. 404: the run is gone
        if attempt.final is None:
            await asyncio.sleep(0.5)
    return conversation
