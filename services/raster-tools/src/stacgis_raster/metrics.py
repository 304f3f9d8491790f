"""Prometheus metrics of raster-tools (default registry, served at /metrics): the common per-tool
metrics, and the tiles' and overview reads' own."""

from mcp.server.mcpserver.exceptions import UnexpectedToolError
from prometheus_client import Counter, Histogram

from stacgis_common.tool_metrics import ToolMetrics, caused_by
from stacgis_raster.workers import DeadlineExceeded


def tool_outcome(exc: Exception) -> str:
    """What the server (MeteredMCPServer) saw a tool call end with: a read past its deadline is a
    timeout; an exception other than a ToolError our own bug (a crash; the SDK wraps it in
    UnexpectedToolError); a refused call or unreadable data (tools.py turns RasterioError into a
    ToolError) an error."""
    if caused_by(exc, DeadlineExceeded, TimeoutError):
        return "timeout"
    if isinstance(exc, UnexpectedToolError):
        return "crash"
    return "error"


# raster_tool_calls_total{tool,outcome} and raster_tool_duration_seconds{tool}
TOOLS = ToolMetrics("raster", outcome_of=tool_outcome)
TILE_REQUESTS = Counter("raster_tiles_total", "Map tile requests by outcome", ["outcome"])
TILE_DURATION = Histogram(
    "raster_tile_duration_seconds",
    "Time to render a map tile",
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
OVERVIEW_READS = Counter(
    "raster_overview_reads_total", "Area reads answered from an overview instead of full resolution"
)
