"""Prometheus metrics of knowledge-tools (default registry, served at /metrics)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

TOOL_CALLS = Counter("knowledge_tool_calls_total", "MCP tool calls by tool and outcome", ["tool", "outcome"])
TOOL_DURATION = Histogram(
    "knowledge_tool_duration_seconds",
    "Time to answer an MCP tool call",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
DOCUMENTS_ADDED = Counter("knowledge_documents_added_total", "add_knowledge calls by outcome", ["status"])


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
