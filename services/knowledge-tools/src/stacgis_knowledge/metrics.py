"""Prometheus metrics of knowledge-tools (default registry, served at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

from stacgis_common.tool_metrics import ToolMetrics

TOOLS = ToolMetrics("knowledge")
observe = TOOLS.observe
DOCUMENTS_ADDED = Counter("knowledge_documents_added_total", "add_knowledge calls by outcome", ["status"])
