"""Per-tool call counters and latency histograms of an MCP tool server (default registry, served
at /metrics): `<prefix>_tool_calls_total{tool,outcome}` and `<prefix>_tool_duration_seconds{tool}`.
The outcome is `ok`, or what `outcome_of` calls the exception (`error` unless a server tells apart
e.g. timeouts from its own bugs)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
