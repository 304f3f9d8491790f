"""Prometheus metrics of raster-tools (default registry, served at /metrics): the common per-tool
metrics, and the tiles' and overview reads' own."""

from mcp.server.mcpserver.exceptions import ToolError
from prometheus_client import Counter, Histogram
from rasterio.errors import RasterioError

from stacgis_common.tool_metrics import ToolMetrics
from stacgis_raster.workers import DeadlineExceeded


def tool_outcome(exc: Exception) -> str:
    """A read past its deadline is a timeout; a refused call or unreadable data an error; anything
    else our own bug (a crash)."""
    if isinstance(exc, DeadlineExceeded | TimeoutError):
        return "timeout"
    if isinstance(exc, ToolError | RasterioError):
        return "error"
    return "crash"


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
