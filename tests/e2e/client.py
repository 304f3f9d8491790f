"""Clients of the running stack: a browser-like chat user, the scripted model's controls, readiness."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from .sse import TERMINAL, RunStream, SSEEvent, iter_sse

INGRESS = "http://localhost:8080"
GATEWAY_DIRECT = "http://127.0.0.1:8000"
ORCHESTRATOR = "http://127.0.0.1:8001"
MODEL_SERVER = "http://127.0.0.1:11434"
VECTOR_TOOLS = "http://127.0.0.1:8012"
RASTER_TOOLS = "http://127.0.0.1:8011"


@dataclass(frozen=True)
class Component:
    name: str
    url: str  # answers 200 when the component is ready

    async def ready(self, http: httpx.AsyncClient) -> str | None:
        """None when ready, else what is wrong."""
        try:
            response = await http.get(self.url, timeout=5.0)
        except httpx.HTTPError as error:
            return f"{self.url} does not answer ({type(error).__name__})"
        if response.status_code != 200:
            return f"{self.url} answers HTTP {response.status_code}: {response.text[:200]}"
        return None


COMPONENTS = {
    component.name: component
    for component in (
        Component("ingress", f"{INGRESS}/"),
        Component("chat-gateway", f"{GATEWAY_DIRECT}/readyz"),
        Component("agent-orchestrator", f"{ORCHESTRATOR}/readyz"),
        Component("raster-tools", f"{RASTER_TOOLS}/readyz"),
        Component("vector-tools", f"{VECTOR_TOOLS}/readyz"),
        Component("knowledge-tools", "http://127.0.0.1:8013/readyz"),
        Component("memory-tools", "http://127.0.0.1:8014/readyz"),
        Component("model-server", f"{MODEL_SERVER}/readyz"),
    )
}
# What every chat scenario goes through.
CHAT_PATH = ("ingress", "chat-gateway", "agent-orchestrator", "model-server")


async def missing_components(names: list[str]) -> dict[str, str]:
    async with httpx.AsyncClient() as http:
        problems = await asyncio.gather(*(COMPONENTS[name].ready(http) for name in names))
    return {name: problem for name, problem in zip(names, problems, strict=True) if problem is not None}


def nonce() -> str:
    """A tag no other scenario's message contains (scripted rules match on it)."""
    return "e2e" + uuid.uuid4().hex[:10]


EventHook = Callable[[SSEEvent], Awaitable[None]]


class ChatUser:
    """One browser: its own cookie jar (so its own anonymous user id) against one base URL."""

    def __init__(self, base_url: str = INGRESS) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(120.0, connect=5.0), headers={"Accept": "text/event-stream"}
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def info(self) -> dict[str, Any]:
        response = await self.http.get("/api/v1/info", headers={"Accept": "application/json"})
        response.raise_for_status()
        body = response.json()
        assert isinstance(body, dict)
        return body

    @asynccontextmanager
    async def open_stream(self, message: str, session_id: str | None = None) -> AsyncIterator[AsyncIterator[SSEEvent]]:
        body: dict[str, Any] = {"message": message}
        if session_id is not None:
            body["session_id"] = session_id
        async with self.http.stream("POST", "/api/v1/chat/stream", json=body) as response:
            yield iter_sse(response)

    @asynccontextmanager
    async def open_resume(self, run_id: str, last_event_id: str | None) -> AsyncIterator[AsyncIterator[SSEEvent]]:
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        async with self.http.stream("GET", f"/api/v1/chat/runs/{run_id}/events", headers=headers) as response:
            yield iter_sse(response)

    async def chat(
        self,
        message: str,
        session_id: str | None = None,
        on_event: EventHook | None = None,
        timeout: float = 90.0,
    ) -> RunStream:
        """Send a message and read its stream to the final event."""
        run = RunStream()
        async with asyncio.timeout(timeout):
            async with self.open_stream(message, session_id) as events:
                async for event in events:
                    run.add(event)
                    if on_event is not None and not event.is_comment:
                        await on_event(event)
                    if event.event in TERMINAL:
                        break
        return run


@asynccontextmanager
async def chat_users(count: int, base_url: str = INGRESS) -> AsyncIterator[list[ChatUser]]:
    users = [ChatUser(base_url) for _ in range(count)]
    try:
        yield users
    finally:
        await asyncio.gather(*(user.aclose() for user in users))


class ScriptedModel:
    """The local model server's scripted back end: rules in, request log out.

    Rules are prepended (they win over the default file) and removed again by name afterwards, so
    scenarios running one after the other, or beside a browser suite, do not see each other's rules.
    """

    def __init__(self, base_url: str = MODEL_SERVER) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, timeout=30.0)
        self.added: list[str] = []

    async def add(self, *rules: dict[str, Any]) -> None:
        response = await self.http.post("/_scripted/rules", json={"rules": list(rules), "position": "prepend"})
        assert response.status_code == 200, f"the model server refused the rules: {response.text}"
        self.added.extend(str(rule["name"]) for rule in rules)

    async def remove_added(self) -> None:
        if not self.added:
            return
        listing = (await self.http.get("/_scripted/rules")).json()
        keep = [rule for rule in listing["rules"] if rule.get("name") not in self.added]
        response = await self.http.put("/_scripted/rules", json={"rules": keep})
        assert response.status_code == 200, response.text
        self.added.clear()

    async def requests(self, contains: str) -> list[dict[str, Any]]:
        response = await self.http.get("/_scripted/requests", params={"contains": contains})
        response.raise_for_status()
        entries = response.json()["requests"]
        assert isinstance(entries, list)
        return entries

    async def aclose(self) -> None:
        await self.remove_added()
        await self.http.aclose()


def system_text(request: dict[str, Any]) -> str:
    """The system messages of a recorded chat request, joined."""
    messages = request["body"].get("messages", [])
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")


def context_text(request: dict[str, Any]) -> str:
    """The user-role messages of a recorded chat request, joined: the run's context message is one of them."""
    messages = request["body"].get("messages", [])
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def user_text(request: dict[str, Any]) -> str:
    messages = request["body"].get("messages", [])
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return users[-1] if users else ""


async def wait_until(
    predicate: Callable[[], Awaitable[bool]], what: str, timeout: float, interval: float = 0.5
) -> float:
    """Poll until true; seconds it took. Fails naming `what` after `timeout`."""
    started = time.monotonic()
    while True:
        if await predicate():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        await asyncio.sleep(interval)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
