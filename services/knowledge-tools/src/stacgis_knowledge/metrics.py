"""Prometheus metrics of knowledge-tools (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from stacgis_common.tool_metrics import ToolMetrics

# Counts every tool's calls: given to create_mcp_server in server.py.
TOOLS = ToolMetrics("knowledge")
DOCUMENTS_ADDED = Counter("knowledge_documents_added_total", "add_knowledge calls by outcome", ["status"])
