"""All MCP tool servers as one pool of tools: cached listings, collisions, breakers, retries, timeouts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_types import Tool
from opentelemetry import propagate, trace

from .. import metrics
from ..settings import OrchestratorSettings
from .breaker import STATE_VALUES, CircuitBreaker, State
from .mcp_client import ToolServerClient, ToolServerError, result_text
from .registry import RegisteredTool

log = logging.getLogger(__name__)
tracer = trace.get_tracer("stacgis_orchestrator.tools")

# A server that could not be listed is asked again after this long (at most the refresh interval).
RELIST_FAILED_AFTER_SECONDS = 5.0
APPROVAL_SCHEMA_KEY = "x_requires_approval"


@dataclass
class ToolOutcome:
    """A tool that ran: its text for the model, whether it reported an error, and how long it took."""

    text: str
    is_error: bool
    duration_s: float
    attempts: int = 1


class ToolUnavailable(Exception):
    """The tool could not be run at all (server down, circuit open, timeout, rejected token)."""

    def __init__(self, kind: str, message: str, duration_s: float, attempts: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.duration_s = duration_s
        self.attempts = attempts


@dataclass
class ServerState:
    name: str
    url: str
    client: ToolServerClient
    breaker: CircuitBreaker
    tools: list[Tool] = field(default_factory=list)
    resources: set[str] = field(default_factory=set)
    listed_at: float = 0.0
    last_attempt: float = 0.0
    last_error: str | None = None


class ToolPool:
    def __init__(self, settings: OrchestratorSettings, service_headers: Callable[[], Mapping[str, str]]) -> None:
        self.settings = settings
        self._service_headers = service_headers
        self.servers: dict[str, ServerState] = {}
        for name, url in settings.mcp_servers.items():
            self.servers[name] = ServerState(
                name=name,
                url=url,
                client=ToolServerClient(name, url, connect_timeout=min(5.0, settings.tool_timeout_seconds)),
                breaker=CircuitBreaker(
                    settings.breaker_failure_threshold,
                    settings.breaker_reset_seconds,
                    on_change=self._breaker_gauge(name),
                ),
            )
            metrics.BREAKER_STATE.labels(name).set(0)
        self._registry: dict[str, RegisteredTool] = {}
        self.version = 0
        self._refresher: asyncio.Task[None] | None = None
        self._refresh_lock = asyncio.Lock()

    @staticmethod
    def _breaker_gauge(server: str) -> Callable[[State], None]:
        def update(state: State) -> None:
            metrics.BREAKER_STATE.labels(server).set(STATE_VALUES[state])
            log.warning("circuit breaker of %s is now %s", server, state, extra={"server": server, "state": state})

        return update

    # Listing.

    async def start(self) -> None:
        await self.refresh()
        self._refresher = asyncio.create_task(self._refresh_forever(), name="tool-pool-refresh")

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.tool_refresh_seconds)
            try:
                await self.refresh()
            except Exception:
                log.exception("tool list refresh failed")

    async def refresh(self, only: list[str] | None = None) -> None:
        """List the tools (and resources) of every server, or of `only`; keep old lists on failure."""
        async with self._refresh_lock:
            names = only if only is not None else list(self.servers)
            await asyncio.gather(*(self._list_server(self.servers[name]) for name in names))
            self._rebuild()

    async def refresh_stale(self) -> None:
        """Re-list servers whose last listing failed, at most every few seconds (called per run)."""
        now = time.monotonic()
        wait = min(RELIST_FAILED_AFTER_SECONDS, self.settings.tool_refresh_seconds)
        stale = [
            s.name
            for s in self.servers.values()
            if s.last_error is not None and now - s.last_attempt >= wait and s.breaker.state != "open"
        ]
        if stale:
            await self.refresh(only=stale)

    async def _list_server(self, server: ServerState) -> None:
        server.last_attempt = time.monotonic()
        with tracer.start_as_current_span("list_tools", attributes={"stacgis.tool.server": server.name}):
            headers = dict(self._service_headers())
            propagate.inject(headers)
            await self._list_with(server, headers)

    async def _list_with(self, server: ServerState, headers: dict[str, str]) -> None:
        try:
            async with asyncio.timeout(self.settings.tool_timeout_seconds):
                tools = await server.client.list_tools(headers)
                try:
                    resources = await server.client.list_resources(headers)
                except ToolServerError as error:
                    log.info("no resources from %s: %s", server.name, error.message)
                    resources = []
        except (ToolServerError, TimeoutError) as error:
            message = error.message if isinstance(error, ToolServerError) else "listing timed out"
            server.last_error = message
            log.warning("cannot list the tools of %s: %s", server.name, message, extra={"server": server.name})
            return
        server.tools = tools
        server.resources = set(resources)
        server.listed_at = time.monotonic()
        server.last_error = None

    def _rebuild(self) -> None:
        registry: dict[str, RegisteredTool] = {}
        for server in self.servers.values():
            for tool in server.tools:
                name = tool.name
                if name in registry:
                    qualified = f"{server.name}__{tool.name}"
                    log.warning(
                        "tool %s exists on %s and %s: the second is offered as %s",
                        name,
                        registry[name].server,
                        server.name,
                        qualified,
                    )
                    name = qualified
                registry[name] = self._register(server.name, name, tool)
        if set(registry) != set(self._registry) or any(registry[name] != self._registry.get(name) for name in registry):
            self.version += 1
        self._registry = registry

    def _register(self, server: str, name: str, tool: Tool) -> RegisteredTool:
        schema: dict[str, Any] = dict(tool.input_schema or {"type": "object", "properties": {}})
        meta = tool.meta or {}
        annotations = tool.annotations
        requires_approval = (
            bool(schema.get(APPROVAL_SCHEMA_KEY))
            or bool(meta.get(APPROVAL_SCHEMA_KEY))
            or tool.name in self.settings.approval_tools
            or name in self.settings.approval_tools
        )
        return RegisteredTool(
            name=name,
            description=(tool.description or tool.title or tool.name).strip(),
            input_schema=schema,
            kind="mcp",
            server=server,
            remote_name=tool.name,
            read_only=bool(annotations is not None and annotations.read_only_hint),
            requires_approval=requires_approval,
        )

    def tools(self) -> list[RegisteredTool]:
        return list(self._registry.values())

    def get(self, name: str) -> RegisteredTool | None:
        return self._registry.get(name)

    def available(self, tool: RegisteredTool) -> bool:
        """False while the tool's server has an open circuit."""
        return self.servers[tool.server].breaker.state != "open"

    def servers_with_resource(self, uri: str) -> list[str]:
        return [s.name for s in self.servers.values() if uri in s.resources]

    # Calls.

    async def call(self, tool: RegisteredTool, arguments: dict[str, Any], headers: Mapping[str, str]) -> ToolOutcome:
        """Run an MCP tool; transient failures of read-only tools are retried with backoff."""
        server = self.servers[tool.server]
        attempts_allowed = 1 + (self.settings.tool_retries if tool.read_only else 0)
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            if not server.breaker.allow():
                raise ToolUnavailable(
                    "unavailable",
                    f"tool server {server.name!r} is unavailable (circuit open after repeated failures; "
                    f"next try in {server.breaker.retry_in():.0f} s)",
                    time.perf_counter() - started,
                    attempt - 1,
                )
            try:
                async with asyncio.timeout(self.settings.tool_timeout_seconds):
                    result = await server.client.call_tool(tool.remote_name, arguments, headers)
            except TimeoutError:
                server.breaker.record_failure()
                raise ToolUnavailable(
                    "timeout",
                    f"{tool.name} did not answer within {self.settings.tool_timeout_seconds:g} s",
                    time.perf_counter() - started,
                    attempt,
                ) from None
            except ToolServerError as error:
                if error.counts_as_failure:
                    server.breaker.record_failure()
                else:
                    server.breaker.record_success()
                server.last_error = error.message
                if error.transient and attempt < attempts_allowed and server.breaker.state == "closed":
                    delay = self.settings.tool_retry_backoff_seconds * 2 ** (attempt - 1)
                    log.info("retrying %s in %.2f s after: %s", tool.name, delay, error.message)
                    await asyncio.sleep(delay)
                    continue
                kind = "unavailable" if error.kind != "protocol" else "tool_failed"
                raise ToolUnavailable(kind, error.message, time.perf_counter() - started, attempt) from None
            except BaseException:
                server.breaker.release_probe()
                raise
            server.breaker.record_success()
            return ToolOutcome(
                text=result_text(result),
                is_error=bool(result.is_error),
                duration_s=time.perf_counter() - started,
                attempts=attempt,
            )

    async def read_resource(self, uri: str, headers: Mapping[str, str]) -> str | None:
        """Text of a resource from the first server that lists it, or None."""
        for name in self.servers_with_resource(uri):
            server = self.servers[name]
            if not server.breaker.allow():
                continue
            try:
                async with asyncio.timeout(self.settings.context_timeout_seconds):
                    text = await server.client.read_resource(uri, headers)
            except (ToolServerError, TimeoutError) as error:
                server.breaker.record_failure()
                log.warning("cannot read %s from %s: %s", uri, name, getattr(error, "message", "timed out"))
                continue
            except BaseException:
                server.breaker.release_probe()
                raise
            server.breaker.record_success()
            return text
        return None

    def status(self) -> list[dict[str, Any]]:
        return [
            {
                "name": s.name,
                "url": s.url,
                "breaker_state": s.breaker.state,
                "tool_count": len(s.tools),
                "last_error": s.last_error or "",
            }
            for s in self.servers.values()
        ]

    async def aclose(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await asyncio.gather(*(s.client.aclose() for s in self.servers.values()), return_exceptions=True)
