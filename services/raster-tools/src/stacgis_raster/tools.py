"""MCP tools, resource and prompts of raster-tools."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable
from typing import Annotated, Any

import anyio
import numpy as np
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from rasterio.errors import RasterioError

from stacgis_common.auth import current_identity, mint_for
from stacgis_raster.metrics import TOOL_CALLS, TOOL_DURATION
from stacgis_raster.service import RasterService
from stacgis_raster.settings import RasterSettings

log = logging.getLogger(__name__)

# Every tool only reads, so the orchestrator may retry any of them.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

CollectionId = Annotated[str, Field(description="Collection id, e.g. 'luxembourg-dem' (see list_raster_collections)")]
Lon = Annotated[float, Field(description="Longitude in degrees east, WGS 84 (-180..180)")]
Lat = Annotated[float, Field(description="Latitude in degrees north, WGS 84 (-90..90)")]
BBoxArg = Annotated[
    list[float] | str | None,
    Field(description="Bounding box [west, south, east, north] in WGS 84 degrees"),
]
GeometryArg = Annotated[
    dict[str, Any] | str | None,
    Field(
        description=(
            "GeoJSON Polygon/MultiPolygon (or Feature) in WGS 84, or a vector feature reference "
            '{"dataset": "<vector dataset>", "id": "<feature id>"}'
        )
    ),
]
DatetimeArg = Annotated[
    str | None,
    Field(description="ISO 8601 date or interval: '1999-07', '1999-07-15', '1999-01/1999-03'"),
]
BandArg = Annotated[
    int | str | None,
    Field(description="Band number (1-based) or band name; default the first band"),
]


def _plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to null, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _result(data: dict[str, Any]) -> CallToolResult:
    data = _plain(data)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def register_tools(server: MCPServer[Any], service: RasterService, settings: RasterSettings) -> None:
    def token() -> str:
        return mint_for(settings, current_identity())

    async def call(tool: str, work: Awaitable[dict[str, Any]]) -> CallToolResult:
        started = time.perf_counter()
        outcome = "ok"
        try:
            with anyio.fail_after(settings.tool_timeout_seconds):
                return _result(await work)
        except ToolError:
            outcome = "error"
            raise
        except TimeoutError as exc:
            outcome = "timeout"
            raise ToolError(
                f"{tool} took longer than {settings.tool_timeout_seconds:.0f} s; try a smaller area or period"
            ) from exc
        except RasterioError as exc:
            outcome = "error"
            log.warning("raster read failed in %s: %s", tool, exc)
            raise ToolError(f"could not read the raster data: {exc}") from exc
        except Exception:
            outcome = "crash"
            raise
        finally:
            TOOL_CALLS.labels(tool, outcome).inc()
            TOOL_DURATION.labels(tool).observe(time.perf_counter() - started)

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "List the raster collections (id, title, extent, time range, units). Optional filters: "
            "bbox [west, south, east, north] and datetime (ISO date or interval)."
        ),
    )
    async def list_raster_collections(bbox: BBoxArg = None, datetime: DatetimeArg = None) -> CallToolResult:
        return await call("list_raster_collections", service.list_collections(bbox, datetime))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Find raster collections by keywords, e.g. 'elevation Luxembourg', 'land cover', 'rainfall 1999'."
        ),
    )
    async def search_raster_collections(
        query: Annotated[str, Field(description="Keywords describing the data wanted")],
    ) -> CallToolResult:
        return await call("search_raster_collections", service.search_collections(query))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Details of one collection: description, bands with units and class names, CRS, "
            "resolution, time steps, licence and provenance, tile URL."
        ),
    )
    async def get_raster_info(collection_id: CollectionId) -> CallToolResult:
        return await call("get_raster_info", service.info(collection_id))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Statistics of a band over a bbox or polygon: min, max, mean, std, percentiles and "
            "valid-pixel fraction (class shares for land cover). Area-weighted on geographic grids; "
            "large areas are read from overviews and the resolution used is reported. With a datetime "
            "interval covering several time steps, statistics are of their per-pixel mean."
        ),
    )
    async def get_raster_statistics(
        collection_id: CollectionId,
        bbox: BBoxArg = None,
        geometry: GeometryArg = None,
        datetime: DatetimeArg = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call(
            "get_raster_statistics", service.statistics(collection_id, bbox, geometry, datetime, band, token)
        )

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Value of every band of a collection at a point (class name for land cover). For time "
            "series, the latest time step unless datetime is given."
        ),
    )
    async def query_raster_point(
        collection_id: CollectionId, lon: Lon, lat: Lat, datetime: DatetimeArg = None
    ) -> CallToolResult:
        return await call("query_raster_point", service.point(collection_id, lon, lat, datetime))

    @server.tool(
        annotations=READ_ONLY,
        description=("Values of several collections at one point, e.g. elevation and land cover together."),
    )
    async def query_multiple_rasters_point(
        collection_ids: Annotated[list[str], Field(description="Collection ids to query")],
        lon: Lon,
        lat: Lat,
    ) -> CallToolResult:
        return await call("query_multiple_rasters_point", service.multi_point(collection_ids, lon, lat))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Time series of a time-resolved collection at a point, one value per time step, "
            "optionally limited to start/end (ISO dates)."
        ),
    )
    async def get_timeseries(
        collection_id: CollectionId,
        lon: Lon,
        lat: Lat,
        start: Annotated[str | None, Field(description="First date, e.g. '1999-03'")] = None,
        end: Annotated[str | None, Field(description="Last date, e.g. '1999-09'")] = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call("get_timeseries", service.timeseries(collection_id, lon, lat, start, end, band))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Exact area-weighted statistics of a band inside a polygon or multipolygon, using the "
            "fraction of each cell covered; land-cover collections give class fractions with names."
        ),
    )
    async def compute_zonal_stats(
        collection_id: CollectionId,
        geometry: GeometryArg,
        datetime: DatetimeArg = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call("compute_zonal_stats", service.zonal(collection_id, geometry, datetime, band, token))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Compare two periods of a time-resolved collection over a polygon or bbox: statistics of "
            "each period, of the difference (b - a), and the share of area that rose or fell by more "
            "than threshold (in the band's unit, default 0)."
        ),
    )
    async def detect_change(
        collection_id: CollectionId,
        period_a: Annotated[str, Field(description="First period, e.g. '1999-01' or '1999-01/1999-03'")],
        period_b: Annotated[str, Field(description="Second period, e.g. '1999-07'")],
        geometry: GeometryArg = None,
        bbox: BBoxArg = None,
        band: BandArg = None,
        threshold: Annotated[float | None, Field(description="Change smaller than this counts as unchanged")] = None,
    ) -> CallToolResult:
        return await call(
            "detect_change", service.change(collection_id, geometry, bbox, period_a, period_b, band, threshold, token)
        )

    @server.resource(
        "collections://list",
        name="raster_collections",
        mime_type="application/json",
        description="Every raster collection with id, title, extent, time range and units",
    )
    async def collections_resource() -> str:
        listing = await service.list_collections()
        return json.dumps(_plain(listing), separators=(",", ":"))

    @server.prompt(name="analysis_prompt", description="Plan a geospatial analysis with the raster tools")
    def analysis_prompt(task: str, location: str = "") -> str:
        where = f" The area of interest is {location}." if location else ""
        return (
            f"Task: {task}.{where}\n"
            "Work step by step with the raster tools:\n"
            "1. Find candidate data with search_raster_collections or list_raster_collections "
            "(filter by bbox and datetime).\n"
            "2. Read get_raster_info for the chosen collection: bands, units, time steps, resolution.\n"
            "3. Compute with get_raster_statistics (bbox) or compute_zonal_stats (polygon or a vector "
            'feature reference {"dataset": ..., "id": ...}); use get_timeseries for a point over time '
            "and detect_change to compare two periods.\n"
            "4. Report numbers with their units, the resolution used and any clipping or no-data share; "
            "say which collection and time step each number comes from."
        )

    @server.prompt(name="query_prompt", description="Answer a question about raster data at a place")
    def query_prompt(question: str) -> str:
        return (
            f"Question: {question}\n"
            "Identify the place (longitude/latitude or a bounding box) and the quantity asked for. "
            "Pick the collection with search_raster_collections, then use query_raster_point for a "
            "single location, query_multiple_rasters_point to combine several layers, or "
            "get_raster_statistics for an area. Answer briefly with the value, its unit and the data source."
        )
