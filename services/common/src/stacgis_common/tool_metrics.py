"""Per-tool call counters and latency histograms of an MCP tool server (default registry, served
at /metrics): `<prefix>_tool_calls_total{tool,outcome}` and `<prefix>_tool_duration_seconds{tool}`.
The outcome is `ok`, or what `outcome_of` calls the exception (`error` unless a server tells apart
e.g. timeouts from its own bugs).

`MeteredMCPServer` (what `mcp_app.create_mcp_server(..., tool_metrics=...)` builds) counts every call
of every tool registered on it, so no tool body names itself and a new tool cannot be left out."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.lowlevel.server import LifespanResultT
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from prometheus_client import Counter, Histogram

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ToolMetrics:
    """Create once per process (the registry refuses a metric name twice)."""

    def __init__(self, prefix: str, outcome_of: Callable[[Exception], str] | None = None) -> None:
        self.outcome_of = outcome_of or (lambda _: "error")
        self.calls = Counter(f"{prefix}_tool_calls_total", "MCP tool calls by tool and outcome", ["tool", "outcome"])
        self.duration = Histogram(
            f"{prefix}_tool_duration_seconds", "Time to answer an MCP tool call", ["tool"], buckets=DURATION_BUCKETS
        )

    @contextmanager
    def observe(self, tool: str) -> Iterator[None]:
        """Count the call under `tool` by outcome and time it; the exception goes on unchanged."""
        started = time.perf_counter()
        outcome = "error"  # also for a cancelled call
        try:
            yield
            outcome = "ok"
        except Exception as exc:
            outcome = self.outcome_of(exc)
            raise
        finally:
            self.calls.labels(tool, outcome).inc()
            self.duration.labels(tool).observe(time.perf_counter() - started)


def caused_by(exc: BaseException, *types: type[BaseException]) -> bool:
    """Whether `exc` or an exception it was raised from (`raise ... from`) is one of `types`: for an
    `outcome_of` that names the SDK's wrapped errors by what the tool raised."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, types):
            return True
        seen = seen.__cause__
    return False


class MeteredMCPServer(MCPServer[LifespanResultT]):
    """An MCPServer whose every registered tool is counted and timed under its own name in `tool_metrics`.

    The SDK's whole `call_tool` is measured, its argument validation included: a call it refuses for its
    arguments counts as that tool's error. `outcome_of` gets what the SDK raises: a ToolError (arguments
    refused, or the tool raised ToolError) or an UnexpectedToolError (the tool crashed), each with what
    was raised as its `__cause__` (see `caused_by`), or an MCPError the tool raised, unchanged. Tools are
    registered and their schemas derived exactly as on an MCPServer: no function is wrapped."""

    def __init__(self, tool_metrics: ToolMetrics, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_metrics = tool_metrics

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[LifespanResultT, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        # A name no tool has (a client may send any) is refused uncounted: it must not become a label.
        # (The public list: a few tools' descriptions, microseconds beside any call.)
        if name not in {tool.name for tool in await self.list_tools()}:
            return await super().call_tool(name, arguments, context)
        with self.tool_metrics.observe(name):
            return await super().call_tool(name, arguments, context)
