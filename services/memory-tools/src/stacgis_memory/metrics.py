"""Prometheus metrics of memory-tools (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from stacgis_common.tool_metrics import ToolMetrics

# Counts every tool's calls: given to create_mcp_server in server.py.
TOOLS = ToolMetrics("memory")
MEMORY_WRITES = Counter("memory_writes_total", "add_memory and forget_memory outcomes", ["outcome"])
