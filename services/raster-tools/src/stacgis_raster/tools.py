"""MCP tools, resource and prompts of raster-tools.

Each tool parses its raw arguments into typed values (`tool_args`) inside its work, so a refusal is
counted as that tool's error, in the order its checks have always been reported (keyword
arguments are evaluated as written).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from rasterio.errors import RasterioError

from stacgis_common.auth import current_identity, mint_for
from stacgis_common.mcp_app import compact_result
from stacgis_raster import tool_args
from stacgis_raster.results import plain
from stacgis_raster.scene_service import SceneService
from stacgis_raster.service import RasterService
from stacgis_raster.settings import RasterSettings
from stacgis_raster.workers import DeadlineExceeded

log = logging.getLogger(__name__)

# Every tool only reads, so the orchestrator may retry any of them.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

CollectionId = Annotated[str, Field(description="Collection id, e.g. 'luxembourg-dem'")]
Lon = Annotated[float | None, Field(description="Only if no place: longitude, degrees east")]
Lat = Annotated[float | None, Field(description="Only if no place: latitude, degrees north")]
PointPlace = Annotated[
    str | None, Field(description="City name, e.g. 'Nairobi', or a ref 'cities/184745'; better than lon/lat")
]
AreaPlace = Annotated[
    str | None,
    Field(description="Place name, e.g. 'Luxembourg', or a ref; better than numbers"),
]
BBoxArg = Annotated[
    list[float] | str | None,
    Field(description="Only if no place: [west, south, east, north] in degrees"),
]
GeometryArg = Annotated[
    dict[str, Any] | str | None,
    Field(description="Only if no place: GeoJSON Polygon or MultiPolygon"),
]
DatetimeArg = Annotated[
    str | None,
    Field(description="ISO date or interval: '1999-07', '1999-01/1999-03'"),
]
BandArg = Annotated[
    int | str | None,
    Field(description="Band number or name; default the first"),
]
SceneCollectionId = Annotated[str, Field(description="Scene collection id, e.g. 'landsat7-olinda-scenes'")]
ExpressionArg = Annotated[
    str,
    Field(description="Index (ndvi, ndwi, nbr, ndmi, ndbi), an asset ('tas') or math: '(nir - red) / (nir + red)'"),
]
CloudArg = Annotated[float | None, Field(description="Only items with at most this cloud cover, percent")]
CloudMaskArg = Annotated[bool, Field(description="Leave out pixels the items' own cloud masks flag (default true)")]


def register_tools(server: MCPServer[Any], service: RasterService, settings: RasterSettings) -> None:
    def token() -> str:
        return mint_for(settings, current_identity())

    scenes = SceneService(service)

    def area(place: object, bbox: object, geometry: object) -> tool_args.AreaArg | None:
        return tool_args.area(place, bbox, geometry, max_vertices=settings.max_geometry_vertices)

    async def call(tool: str, work: Callable[[], Awaitable[dict[str, Any]]]) -> CallToolResult:
        """Run a tool's work within the tool deadline (the server counts each call: metrics.TOOLS)."""
        try:
            with anyio.fail_after(settings.tool_timeout_seconds):
                return compact_result(plain(await work()))
        except DeadlineExceeded as exc:
            raise ToolError(f"{tool}: {exc}; try a smaller area or period") from exc
        except TimeoutError as exc:
            raise ToolError(
                f"{tool} took longer than {settings.tool_timeout_seconds:g} s (the limit "
                "RASTER_TOOL_TIMEOUT_SECONDS); its read was stopped. Try a smaller area or period"
            ) from exc
        except RasterioError as exc:
            log.warning("raster read failed in %s: %s", tool, exc)
            raise ToolError(f"could not read the raster data: {exc}") from exc

    @server.tool(annotations=READ_ONLY, description="Use for listing all raster collections (id, extent, time, units).")
    async def list_raster_collections(bbox: BBoxArg = None, datetime: DatetimeArg = None) -> CallToolResult:
        return await call(
            "list_raster_collections", lambda: service.list_collections(*tool_args.listing_filter(bbox, datetime))
        )

    @server.tool(
        annotations=READ_ONLY,
        description="Use for finding the collection id for a topic, e.g. 'elevation', 'rainfall'.",
    )
    async def search_raster_collections(
        query: Annotated[str, Field(description="Keywords, e.g. 'land cover'")],
    ) -> CallToolResult:
        return await call("search_raster_collections", lambda: service.search_collections(tool_args.search_text(query)))

    @server.tool(
        annotations=READ_ONLY, description="Use for one collection's bands, units, classes, resolution and dates."
    )
    async def get_raster_info(collection_id: CollectionId) -> CallToolResult:
        return await call("get_raster_info", lambda: service.info(tool_args.collection_id(collection_id)))

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Use for a whole area's mean, min and max, e.g. 'mean elevation of Peru' (place: 'Peru'); "
            "no place: the whole collection."
        ),
    )
    async def get_raster_statistics(
        collection_id: CollectionId,
        place: AreaPlace = None,
        bbox: BBoxArg = None,
        geometry: GeometryArg = None,
        datetime: DatetimeArg = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call(
            "get_raster_statistics",
            lambda: scenes.area_statistics(
                tool_args.collection_id(collection_id),
                area(place, bbox, geometry),
                tool_args.period(datetime),
                band,
                token,
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description="Use for a value at one point, e.g. 'temperature at 35.6 N, 83.5 W' or at a city.",
    )
    async def query_raster_point(
        collection_id: CollectionId,
        place: PointPlace = None,
        lon: Lon = None,
        lat: Lat = None,
        datetime: DatetimeArg = None,
    ) -> CallToolResult:
        return await call(
            "query_raster_point",
            lambda: scenes.point(
                tool_args.collection_id(collection_id),
                tool_args.point(place, lon, lat),
                token,
                period=tool_args.period(datetime),
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description="Use for two or more collections at one point, e.g. 'land cover and elevation at a spot'.",
    )
    async def query_multiple_rasters_point(
        collection_ids: Annotated[list[str], Field(description="Collection ids")],
        place: PointPlace = None,
        lon: Lon = None,
        lat: Lat = None,
    ) -> CallToolResult:
        return await call(
            "query_multiple_rasters_point",
            lambda: service.multi_point(
                where=tool_args.point(place, lon, lat),
                collection_ids=tool_args.collection_ids(collection_ids, settings.max_point_collections),
                token=token,
            ),
        )

    @server.tool(
        annotations=READ_ONLY, description="Use for one point's values through time, e.g. 'monthly rainfall at Denver'."
    )
    async def get_timeseries(
        collection_id: CollectionId,
        place: PointPlace = None,
        lon: Lon = None,
        lat: Lat = None,
        start: Annotated[str | None, Field(description="First date, e.g. '1999-03'")] = None,
        end: Annotated[str | None, Field(description="Last date, e.g. '1999-09'")] = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call(
            "get_timeseries",
            lambda: service.timeseries(
                where=tool_args.point(place, lon, lat),
                collection_id=tool_args.collection_id(collection_id),
                series=tool_args.series_period(start, end),
                band=band,
                token=token,
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description="Use for statistics inside a GeoJSON polygon you already have.",
    )
    async def compute_zonal_stats(
        collection_id: CollectionId,
        place: AreaPlace = None,
        geometry: GeometryArg = None,
        datetime: DatetimeArg = None,
        band: BandArg = None,
    ) -> CallToolResult:
        return await call(
            "compute_zonal_stats",
            lambda: service.zonal(
                tool_args.collection_id(collection_id),
                area(place, None, geometry),
                tool_args.period(datetime),
                band,
                token,
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Use for comparing two dates or periods over an area, e.g. 'how rainfall changed from May to June'."
        ),
    )
    async def detect_change(
        collection_id: CollectionId,
        period_a: Annotated[str, Field(description="First period: a month '1999-01' or months '1999-03/1999-05'")],
        period_b: Annotated[str, Field(description="Second period: a month '1999-07' or months '1999-06/1999-08'")],
        place: AreaPlace = None,
        geometry: GeometryArg = None,
        bbox: BBoxArg = None,
        band: BandArg = None,
        threshold: Annotated[float | None, Field(description="Changes up to this count as unchanged")] = None,
    ) -> CallToolResult:
        return await call(
            "detect_change",
            lambda: service.change(
                collection_id=tool_args.collection_id(collection_id),
                threshold=tool_args.change_threshold(threshold),
                periods=tool_args.change_periods(period_a, period_b),
                where=area(place, bbox, geometry),
                band=band,
                token=token,
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Use for finding or counting the scenes (items) of a scene collection over a place and period, "
            "e.g. 'how many scenes with at most 10 % cloud cover'."
        ),
    )
    async def search_items(
        collection_id: SceneCollectionId,
        place: AreaPlace = None,
        bbox: BBoxArg = None,
        geometry: GeometryArg = None,
        datetime: DatetimeArg = None,
        max_cloud_cover: CloudArg = None,
        sortby: Annotated[
            str | None, Field(description="datetime, -datetime, cloud_cover or -cloud_cover (- is descending)")
        ] = None,
        limit: Annotated[int, Field(description="Items per page, 1-100")] = 10,
        page: Annotated[int, Field(description="Page number, from 1")] = 1,
    ) -> CallToolResult:
        return await call(
            "search_items",
            lambda: scenes.search(
                tool_args.collection_id(collection_id),
                token,
                sortby=tool_args.sort_order(sortby),
                limit=tool_args.page_size(limit),
                page=tool_args.page_number(page),
                where=area(place, bbox, geometry),
                max_cloud_cover=tool_args.cloud_limit(max_cloud_cover),
                period=tool_args.period(datetime),
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Use for mean, min and max of an index such as NDVI (or any band math) over an area from a scene "
            "collection or data cube, e.g. 'NDVI statistics for Olinda'; one answer for the whole period."
        ),
    )
    async def get_scene_statistics(
        collection_id: SceneCollectionId,
        expression: ExpressionArg,
        place: AreaPlace = None,
        bbox: BBoxArg = None,
        geometry: GeometryArg = None,
        datetime: DatetimeArg = None,
        max_cloud_cover: CloudArg = None,
        composite: Annotated[
            str | None, Field(description="Per-pixel over dates: median (default), mean, max, min or latest")
        ] = None,
        cloud_mask: CloudMaskArg = True,
    ) -> CallToolResult:
        return await call(
            "get_scene_statistics",
            lambda: scenes.statistics(
                composite=tool_args.composite(composite),
                collection_id=tool_args.collection_id(collection_id),
                expression=expression,
                token=token,
                where=area(place, bbox, geometry),
                max_cloud_cover=tool_args.cloud_limit(max_cloud_cover),
                period=tool_args.period(datetime),
                cloud_mask=tool_args.flag(cloud_mask, "cloud_mask"),
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Use for how an area's mean changes from date to date in a scene collection or data cube, "
            "e.g. 'monthly temperature through 1999'."
        ),
    )
    async def get_scene_timeseries(
        collection_id: SceneCollectionId,
        expression: ExpressionArg,
        place: AreaPlace = None,
        bbox: BBoxArg = None,
        geometry: GeometryArg = None,
        start: Annotated[str | None, Field(description="First date, e.g. '1999-03'")] = None,
        end: Annotated[str | None, Field(description="Last date, e.g. '1999-09'")] = None,
        max_cloud_cover: CloudArg = None,
        cloud_mask: CloudMaskArg = True,
    ) -> CallToolResult:
        return await call(
            "get_scene_timeseries",
            lambda: scenes.timeseries(
                period=tool_args.series_as_period(start, end),
                collection_id=tool_args.collection_id(collection_id),
                expression=expression,
                token=token,
                where=area(place, bbox, geometry),
                max_cloud_cover=tool_args.cloud_limit(max_cloud_cover),
                cloud_mask=tool_args.flag(cloud_mask, "cloud_mask"),
            ),
        )

    @server.resource(
        "collections://list",
        name="raster_collections",
        mime_type="application/json",
        description="Every raster collection with id, title, extent, time range, units, keywords and band names",
    )
    async def collections_resource() -> str:
        listing = await service.catalogue()
        return json.dumps(plain(listing), separators=(",", ":"))

    @server.prompt(name="analysis_prompt", description="Plan a geospatial analysis with the raster tools")
    def analysis_prompt(task: str, location: str = "") -> str:
        where = f" The area of interest is {location}." if location else ""
        return (
            f"Task: {task}.{where}\n"
            "Work step by step with the raster tools:\n"
            "1. Find candidate data with search_raster_collections or list_raster_collections "
            "(filter by bbox and datetime).\n"
            "2. Read get_raster_info for the chosen collection: bands, units, time steps, resolution.\n"
            "3. Compute with get_raster_statistics (place: a name such as 'Luxembourg'); use "
            "query_raster_point for one spot, get_timeseries for a spot over time and detect_change to "
            "compare two periods.\n"
            "4. Report numbers with their units, the resolution used and any clipping or no-data share; "
            "say which collection and time step each number comes from."
        )

    @server.prompt(name="query_prompt", description="Answer a question about raster data at a place")
    def query_prompt(question: str) -> str:
        return (
            f"Question: {question}\n"
            "Identify the place (pass its name as place, e.g. 'Nairobi') and the quantity asked for. "
            "Pick the collection with search_raster_collections, then use query_raster_point for a "
            "single location, query_multiple_rasters_point to combine several layers, or "
            "get_raster_statistics for an area. Answer briefly with the value, its unit and the data source."
        )
