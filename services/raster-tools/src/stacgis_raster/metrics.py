"""Prometheus metrics of raster-tools (default registry, served at /metrics)."""

from prometheus_client import Counter, Histogram

TOOL_CALLS = Counter("raster_tool_calls_total", "MCP tool calls by tool and outcome", ["tool", "outcome"])
TOOL_DURATION = Histogram(
    "raster_tool_duration_seconds",
    "Time to answer an MCP tool call",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TILE_REQUESTS = Counter("raster_tiles_total", "Map tile requests by outcome", ["outcome"])
TILE_DURATION = Histogram(
    "raster_tile_duration_seconds",
    "Time to render a map tile",
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
OVERVIEW_READS = Counter(
    "raster_overview_reads_total", "Area reads answered from an overview instead of full resolution"
)
