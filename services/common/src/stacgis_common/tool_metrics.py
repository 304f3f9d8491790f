"""Per-tool call counters and latency histograms of an MCP tool server (default registry, served
at /metrics): `<prefix>_tool_calls_total{tool,outcome}` and `<prefix>_tool_duration_seconds{tool}`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ToolMetrics:
    """Create once per process (the registry refuses a metric name twice)."""

    def __init__(self, prefix: str) -> None:
        self.calls = Counter(f"{prefix}_tool_calls_total", "MCP tool calls by tool and outcome", ["tool", "outcome"])
        self.duration = Histogram(
            f"{prefix}_tool_duration_seconds", "Time to answer an MCP tool call", ["tool"], buckets=DURATION_BUCKETS
        )

    @contextmanager
    def observe(self, tool: str) -> Iterator[None]:
        """Count the call under `tool` as ok or error and time it."""
        started = time.perf_counter()
        outcome = "error"
        try:
            yield
            outcome = "ok"
        finally:
            self.calls.labels(tool, outcome).inc()
            self.duration.labels(tool).observe(time.perf_counter() - started)
