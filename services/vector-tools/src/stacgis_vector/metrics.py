"""Prometheus metrics of vector-tools (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from stacgis_common.tool_metrics import ToolMetrics

# Counts every tool's calls: given to create_mcp_server in server.py.
TOOLS = ToolMetrics("vector")
FEATURE_REQUESTS = Counter(
    "vector_feature_requests_total", "Internal full-geometry feature requests by status", ["status"]
)
PLACE_REQUESTS = Counter("vector_place_requests_total", "Internal place resolutions by status", ["status"])
