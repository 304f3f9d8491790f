"""Prometheus metrics of memory-tools (default registry, served at /metrics)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

TOOL_CALLS = Counter("memory_tool_calls_total", "MCP tool calls by tool and outcome", ["tool", "outcome"])
TOOL_DURATION = Histogram(
    "memory_tool_duration_seconds",
    "Time to answer an MCP tool call",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
MEMORY_WRITES = Counter("memory_writes_total", "add_memory and forget_memory outcomes", ["outcome"])


@contextmanager
def observe(tool: str) -> Iterator[None]:
    started = time.perf_counter()
    outcome = "error"
    try:
        yield
        outcome = "ok"
    finally:
        TOOL_CALLS.labels(tool, outcome).inc()
        TOOL_DURATION.labels(tool).observe(time.perf_counter() - started)
