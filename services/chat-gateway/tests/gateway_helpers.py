"""Helpers of the gateway tests: process settings, an SSE client that keeps comments, contract checks."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
from google.protobuf import json_format

from stacgis_common.answer import answer_text
from stacgis_common.testing import RunningService, checked_error_body, run_service
from stacgis_proto.v1 import events_pb2

PAYLOAD_EVENT = {
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


def gateway_env(port: int, pg_dsn: str, redis_url: str, orchestrator_url: str, **extra: str) -> dict[str, str]:
    env = {
        "GATEWAY_PORT": str(port),
        "GATEWAY_DATABASE_URL": pg_dsn,
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_ORCHESTRATOR_URL": orchestrator_url,
        # The scripted orchestrator stands in for vector-tools' place search too.
        "GATEWAY_VECTOR_TOOLS_URL": orchestrator_url,
        "GATEWAY_PLACE_SEARCH_TIMEOUT_SECONDS": "1",
        "GATEWAY_AUTH_MODE": "trusted-header",
        "GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32",
        "GATEWAY_TRUSTED_USER_HEADER": "X-Forwarded-User",
        "GATEWAY_MAX_CONCURRENT_RUNS": "10",
        "GATEWAY_SLOT_TTL_SECONDS": "6",
        "GATEWAY_HEARTBEAT_SECONDS": "0.5",
        "GATEWAY_RATE_LIMIT_PER_MINUTE": "0",
        "GATEWAY_MODEL_LABEL": "scripted",
        "GATEWAY_PROVIDER_LABEL": "ollama",
        "GATEWAY_SHUTDOWN_GRACE_SECONDS": "2",
        "GATEWAY_LOG_LEVEL": "WARNING",
    }
    env.update({f"GATEWAY_{key.removeprefix('GATEWAY_')}": value for key, value in extra.items()})
    return env


@dataclass
class Gateways:
    a: RunningService
    b: RunningService
    orchestrator: RunningService
    prefix: str


@contextlib.contextmanager
def services(*specs: tuple[str, dict[str, str], int]) -> Iterator[list[RunningService]]:
    """Start several `(module, env, port)` processes at once (start-up is mostly imports) and stop them all."""
    managers = [run_service(module, env, port) for module, env, port in specs]
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(len(managers)) as pool:
        futures = [pool.submit(manager.__enter__) for manager in managers]
        started: list[RunningService] = []
        failure: BaseException | None = None
        for manager, future in zip(managers, futures, strict=True):
            try:
                started.append(future.result())
                stack.push(manager.__exit__)
            except Exception as error:  # noqa: BLE001 - raised below, once every started replica has its cleanup
                failure = failure or error
        if failure is not None:
            raise failure
        yield started


def user(name: str) -> dict[str, str]:
    return {"X-Forwarded-User": name}


def new_user() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


@dataclass
class Event:
    id: str | None
    event: str
    data: dict[str, Any]


@dataclass
class Stream:
    status: int
    headers: httpx.Headers
    events: list[Event] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    body: Any = None

    @property
    def names(self) -> list[str]:
        return [event.event for event in self.events]

    @property
    def run_id(self) -> str:
        return str(self.events[0].data["runId"])

    @property
    def session_id(self) -> str:
        return str(self.events[0].data["runStarted"]["sessionId"])

    def content(self) -> str:
        return answer_text(e.data["content"] for e in self.events if e.event == "content")

    def seqs(self) -> list[int]:
        return [int(e.data["seq"]) for e in self.events]

    def error(self, status: int, field: str | None = None) -> dict[str, Any]:
        """The refusal's body, checked as the one error body naming `field`."""
        assert self.status == status, (self.status, self.body)
        return checked_error_body(self.body, field)


def check_event(name: str, data: str) -> dict[str, Any]:
    """Parse `data` strictly as stacgis.v1.AgentEvent and check the SSE name matches its payload."""
    message = events_pb2.AgentEvent()
    json_format.Parse(data, message)  # raises on any unknown field or wrong type
    payload = message.WhichOneof("payload")
    assert payload is not None, f"event without payload: {data}"
    assert PAYLOAD_EVENT[payload] == name, f"event name {name!r} for payload {payload!r}"
    decoded: dict[str, Any] = json.loads(data)
    return decoded


async def read_stream(response: httpx.Response, stream: Stream, stop_after: int | None = None) -> None:
    """Parse SSE from `response` into `stream` (events validated, comments kept) until it ends."""
    fields: dict[str, str] = {}
    data_lines: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data_lines:
                name = fields.get("event", "message")
                stream.events.append(Event(fields.get("id"), name, check_event(name, "\n".join(data_lines))))
                if stop_after is not None and len(stream.events) >= stop_after:
                    return
            fields, data_lines = {}, []
            continue
        if line.startswith(":"):
            stream.comments.append(line[1:].strip())
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "data":
            data_lines.append(value)
        else:
            fields[key] = value


async def chat(
    client: httpx.AsyncClient,
    base: str,
    message: str,
    headers: dict[str, str] | None = None,
    session_id: str | None = None,
    spatial_context: dict[str, Any] | None = None,
    stop_after: int | None = None,
    replace_turn: int | None = None,
    model: str | None = None,
) -> Stream:
    """POST /chat/stream and read the whole stream (or its first `stop_after` events, then drop it)."""
    body: dict[str, Any] = {"message": message, "session_id": session_id, "spatial_context": spatial_context}
    if replace_turn is not None:
        body["replace_turn"] = replace_turn
    if model is not None:
        body["model"] = model
    async with client.stream(
        "POST", f"{base}/api/v1/chat/stream", json=body, headers=headers or {}, timeout=60
    ) as response:
        stream = Stream(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            stream.body = response.json()
            return stream
        await read_stream(response, stream, stop_after)
    return stream


async def resume(
    client: httpx.AsyncClient, base: str, run_id: str, last_event_id: str | None, headers: dict[str, str]
) -> Stream:
    extra = {"Last-Event-ID": last_event_id} if last_event_id else {}
    async with client.stream(
        "GET", f"{base}/api/v1/chat/runs/{run_id}/events", headers={**headers, **extra}, timeout=60
    ) as response:
        stream = Stream(response.status_code, response.headers)
        if response.status_code != 200:
            await response.aread()
            stream.body = response.json()
            return stream
        await read_stream(response, stream)
    return stream


def stream_id_key(entry_id: str) -> tuple[int, int]:
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence)


@asynccontextmanager
async def database(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(dsn)
    try:
        yield connection
    finally:
        await connection.close()
