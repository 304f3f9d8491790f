"""The harness's API client against a stand-in gateway speaking the real wire protocol over HTTP
(SSE events as the gateway sends them, 429 with Retry-After, X-Run-Id, cancel), so the failure
paths that a healthy stack never shows are exercised: rate limits, broken streams, slow runs."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .client import ChatClient, StackError


class StandIn:
    """What the stand-in gateway does for each message, and what it saw."""

    def __init__(self) -> None:
        self.refusals_left = 0
        self.cancelled: list[str] = []
        self.messages: list[str] = []


def sse(name: str, data: dict[str, Any], event_id: int) -> bytes:
    return f"id: {event_id}-0\nevent: {name}\ndata: {json.dumps(data)}\n\n".encode()


def app(state: StandIn) -> Starlette:
    async def chat(request: Request) -> Response:
        message = (await request.json())["message"]
        state.messages.append(message)
        if state.refusals_left > 0:
            state.refusals_left -= 1
            return JSONResponse({"detail": "rate limited"}, status_code=429, headers={"Retry-After": "0"})

        async def events() -> AsyncIterator[bytes]:
            yield sse("session", {"runId": "r1", "seq": "1", "runStarted": {"sessionId": "s1"}}, 1)
            yield b": ping\n\n"
            if message == "slow":
                await asyncio.sleep(30)
            yield sse("content", {"runId": "r1", "seq": "2", "step": 1, "content": {"text": "It is 3"}}, 2)
            yield sse("content", {"runId": "r1", "seq": "3", "step": 1, "content": {"text": "50 m."}}, 3)
            if message == "broken":
                return
            done = {"content": "It is 350 m.", "steps": 1, "finishReason": "completed"}
            yield sse("done", {"runId": "r1", "seq": "4", "step": 1, "done": done}, 4)

        return StreamingResponse(events(), media_type="text/event-stream", headers={"X-Run-Id": "r1"})

    async def info(request: Request) -> Response:
        return JSONResponse({"model": "stand-in", "provider": "test", "auth_mode": "anonymous"})

    async def cancel(request: Request) -> Response:
        state.cancelled.append(request.path_params["run_id"])
        return JSONResponse({"run_id": request.path_params["run_id"], "status": "cancelling"}, status_code=202)

    return Starlette(
        routes=[
            Route("/api/v1/chat/stream", chat, methods=["POST"]),
            Route("/api/v1/info", info),
            Route("/api/v1/chat/runs/{run_id}/cancel", cancel, methods=["POST"]),
        ]
    )


@pytest.fixture
def gateway() -> Iterator[tuple[str, StandIn]]:
    state = StandIn()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app(state), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the stand-in gateway did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/api/v1", state
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.asyncio
async def test_a_run_is_read_to_its_done_event(gateway: tuple[str, StandIn]) -> None:
    base, _ = gateway
    client = ChatClient(base, 10.0)
    try:
        assert (await client.info())["model"] == "stand-in"
        record = await client.chat("hello", 10.0)
    finally:
        await client.aclose()
    assert [e.name for e in record.events] == ["session", "content", "content", "done"]
    assert record.run_id == "r1" and record.answer == "It is 350 m." and not record.timed_out
    assert record.events[1].step == 1


@pytest.mark.asyncio
async def test_rate_limits_are_waited_out(gateway: tuple[str, StandIn]) -> None:
    base, state = gateway
    state.refusals_left = 2
    client = ChatClient(base, 10.0)
    try:
        record = await client.chat("hello", 10.0)
    finally:
        await client.aclose()
    assert record.final is not None and record.final.name == "done"
    assert state.messages == ["hello"] * 3


@pytest.mark.asyncio
async def test_a_stream_ending_without_done_or_error_is_a_stack_error(gateway: tuple[str, StandIn]) -> None:
    base, _ = gateway
    client = ChatClient(base, 10.0)
    try:
        with pytest.raises(StackError, match="ended without done or error"):
            await client.chat("broken", 10.0)
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_a_run_past_its_time_is_cancelled_and_marked(gateway: tuple[str, StandIn]) -> None:
    base, state = gateway
    client = ChatClient(base, 10.0)
    try:
        started = time.monotonic()
        record = await client.chat("slow", 1.0)
    finally:
        await client.aclose()
    assert record.timed_out and record.final is None and time.monotonic() - started < 5
    assert [e.name for e in record.events] == ["session"]
    assert state.cancelled == ["r1"]
