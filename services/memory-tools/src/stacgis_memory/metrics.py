"""Prometheus metrics of memory-tools (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from stacgis_common.tool_metrics import ToolMetrics

TOOLS = ToolMetrics("memory")
observe = TOOLS.observe
MEMORY_WRITES = Counter("memory_writes_total", "add_memory and forget_memory outcomes", ["outcome"])
