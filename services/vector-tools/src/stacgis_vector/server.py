"""The vector-tools MCP server: tools, resource, and the internal full-feature endpoint.

Nothing is built at import: `create_app(settings)` assembles the server, its tools and routes."""

# No `from __future__ import annotations`: the tools' annotations use register_tools' locals (limits
# from settings), which the MCP SDK resolves from the live annotations, not from strings.
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from prometheus_client import Counter
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from stacgis_common.auth import verified_identity
from stacgis_common.health import Check, Notice
from stacgis_common.http_errors import REFUSAL_ROWS, Conflict, ErrorTable
from stacgis_common.mcp_app import build_tool_server_app, compact_result, create_mcp_server
from stacgis_common.pgvector_runtime import PgvectorRuntime
from stacgis_vector.metrics import FEATURE_REQUESTS, PLACE_REQUESTS, TOOLS
from stacgis_vector.places import AmbiguousPlace
from stacgis_vector.service import VectorService
from stacgis_vector.settings import VectorSettings
from stacgis_vector.store import EMBEDDINGS

INSTRUCTIONS = (
    "Vector datasets of places: countries (Natural Earth), cities (GeoNames), US states and US counties. "
    'Tools elsewhere take a place by name (`place: "Nairobi"`) or by ref (`place: "countries/LUX"`); '
    "resolve_place says which feature a name means."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Runtime = PgvectorRuntime[VectorSettings, VectorService]

BBox = Annotated[
    list[float],
    Field(
        min_length=4,
        max_length=4,
        description="[west, south, east, north] in degrees; west > east crosses the antimeridian.",
    ),
]
DatasetId = Annotated[str, Field(description="Dataset id: countries, cities, us-states or us-counties.")]
PlaceArg = Annotated[str, Field(description="Place name, e.g. 'Nairobi', 'Germany', 'DE', or a ref 'cities/184745'.")]


def register_tools(server: MCPServer[Any], runtime: Runtime, settings: VectorSettings) -> None:
    """The tools and resource; limits in their schemas come from `settings`."""
    Limit = Annotated[int, Field(ge=1, le=settings.max_limit, description="Maximum number of results.")]
    BBoxLimit = Annotated[
        int, Field(ge=1, le=settings.max_bbox_limit, description="Maximum number of features returned.")
    ]
    default_limit = settings.default_limit

    @server.tool(annotations=READ_ONLY)
    async def list_vector_datasets() -> CallToolResult:
        """Use for which vector datasets exist (countries, cities, US states, US counties)."""
        return compact_result(await runtime.get().list_datasets())

    @server.tool(annotations=READ_ONLY)
    async def resolve_place(
        place: PlaceArg,
        dataset: Annotated[str | None, Field(description="Only this dataset, e.g. 'cities'.")] = None,
    ) -> CallToolResult:
        """Use for where one named place is: its kind, country, point or box, and ref."""
        return compact_result(await runtime.get().resolve_place(place, dataset))

    @server.tool(annotations=READ_ONLY)
    async def search_vector_features(
        query: Annotated[str, Field(description="Words to search, e.g. 'cities in Brazil', 'Berl'.")],
        dataset: Annotated[str | None, Field(description="Only this dataset, e.g. 'countries'.")] = None,
        bbox: Annotated[BBox | None, Field(description="Only features whose box overlaps this box.")] = None,
        limit: Limit = default_limit,
    ) -> CallToolResult:
        """Use for finding several places by words or meaning; each result has a ref."""
        return compact_result(await runtime.get().search(query, dataset, bbox, limit))

    @server.tool(annotations=READ_ONLY)
    async def get_vector_feature(
        dataset: DatasetId,
        feature_id: Annotated[str, Field(description="Feature id, from a ref.")],
        simplify: Annotated[float | None, Field(description="Simplification tolerance in degrees.")] = None,
    ) -> CallToolResult:
        """Use for one feature's properties and GeoJSON outline."""
        return compact_result(await runtime.get().get_feature(dataset, feature_id, simplify))

    @server.tool(annotations=READ_ONLY)
    async def query_vector_by_bbox(
        dataset: DatasetId,
        place: Annotated[
            str | None, Field(description="Area by name, e.g. 'Luxembourg'; its boundary is used.")
        ] = None,
        bbox: Annotated[BBox | None, Field(description="Only if no place: [west, south, east, north].")] = None,
        limit: BBoxLimit = default_limit,
    ) -> CallToolResult:
        """Use for listing a dataset's features inside an area, e.g. cities in a country."""
        return compact_result(await runtime.get().query_by_bbox(dataset, bbox, limit, place))

    @server.resource(
        "vector://datasets/all",
        name="vector-datasets",
        description="All vector datasets with their descriptions, extents, licences and sources.",
        mime_type="application/json",
    )
    async def datasets_resource() -> str:
        return json.dumps(await runtime.get().list_datasets())


# Every answer of the internal routes but a 200 comes from this table, in the one error body
# (stacgis_common.http_errors): a name that means nothing (a NotFoundError) is a 404 there.
ERRORS = ErrorTable(REFUSAL_ROWS, what="the vector-tools request")


def internal_routes(runtime: Runtime, settings: VectorSettings) -> list[BaseRoute]:
    """GET /features/..., /places/resolve, /places/search, /places/labels and /places/status: for other
    services, behind the internal token."""

    async def answer(
        request: Request, counted: Counter, call: Callable[[VectorService], Awaitable[Response]]
    ) -> Response:
        """`call`'s answer for a caller with the internal token (401 without), counted by status."""
        try:
            verified_identity(request, settings)
            response = await call(runtime.get())
        except Exception as error:  # noqa: BLE001 - the table answers every exception (unknown ones: logged 500)
            response = ERRORS.response(error)
        counted.labels(str(response.status_code)).inc()
        return response

    async def feature_endpoint(request: Request) -> Response:
        """GET /features/{dataset}/{feature_id}: the full GeoJSON Feature, for other services only."""

        async def feature(service: VectorService) -> Response:
            body = await service.full_feature(request.path_params["dataset"], request.path_params["feature_id"])
            return Response(body, media_type="application/geo+json")

        return await answer(request, FEATURE_REQUESTS, feature)

    async def place_endpoint(request: Request) -> Response:
        """GET /places/resolve?place=...[&dataset=...]: the place meant and its full GeoJSON Feature, for other
        services. 404 unknown name (with suggestions), 409 ambiguous (with candidates), 422 bad argument."""

        async def resolved(service: VectorService) -> Response:
            try:
                body = await service.resolved_feature(
                    request.query_params.get("place"), request.query_params.get("dataset")
                )
            except AmbiguousPlace as error:
                raise Conflict(
                    str(error), field=error.argument, code="ambiguous", candidates=error.candidates
                ) from None
            return Response(body, media_type="application/json")

        return await answer(request, PLACE_REQUESTS, resolved)

    def query_limit(request: Request) -> Any:
        raw = request.query_params.get("limit", str(settings.default_limit))
        try:
            return int(raw)
        except ValueError:
            return raw  # refused by the service, naming limit

    async def place_search_endpoint(request: Request) -> Response:
        """GET /places/search?q=...[&limit=...]: a search box's candidates (no geometries), for the gateway."""
        limit = query_limit(request)

        async def search(service: VectorService) -> Response:
            return JSONResponse(await service.search_places(request.query_params.get("q"), limit))

        return await answer(request, PLACE_REQUESTS, search)

    async def place_labels_endpoint(request: Request) -> Response:
        """GET /places/labels?bbox=w,s,e,n[&limit=...]: the most populous cities in a map view, for its names."""
        limit = query_limit(request)

        async def labels(service: VectorService) -> Response:
            return JSONResponse(await service.place_labels(request.query_params.get("bbox"), limit))

        return await answer(request, PLACE_REQUESTS, labels)

    async def place_status_endpoint(request: Request) -> Response:
        """GET /places/status: the datasets in and those still loading, for the map to say which place names
        are still arriving."""

        async def load_status(service: VectorService) -> Response:
            return JSONResponse(await service.load_status())

        return await answer(request, PLACE_REQUESTS, load_status)

    return [
        Route("/features/{dataset}/{feature_id}", feature_endpoint, methods=["GET"]),
        Route("/places/status", place_status_endpoint, methods=["GET"]),
        Route("/places/resolve", place_endpoint, methods=["GET"]),
        Route("/places/search", place_search_endpoint, methods=["GET"]),
        Route("/places/labels", place_labels_endpoint, methods=["GET"]),
    ]


def build_server(settings: VectorSettings) -> tuple[MCPServer[Any], Runtime]:
    """The MCP server with its tools registered, and the runtime its tools use (started by the app's lifespan)."""
    server = create_mcp_server("vector-tools", settings, instructions=INSTRUCTIONS, tool_metrics=TOOLS)
    runtime: Runtime = PgvectorRuntime("vector-tools", settings, EMBEDDINGS, VectorService)
    register_tools(server, runtime, settings)
    return server, runtime


def datasets_check(runtime: Runtime) -> Check:
    """Readiness's word on the data: ready either way (what is in is served), but /readyz says which datasets
    are still loading or stalled, or that none is loaded."""

    async def datasets() -> Notice | None:
        status = await runtime.get().load_status()
        if not status["datasets"]:
            return Notice("no datasets loaded: run python -m stacgis_vector.load")
        said = []
        for entry in status["datasets"]:
            if entry["state"] == "loading":
                said.append(f"loading {entry['id']} ({entry['stage']} {entry['done']:,} of {entry['total']:,})")
            elif entry["state"] == "stalled":
                said.append(f"stalled {entry['id']} (no progress for {entry['updated_seconds_ago']:.0f} s)")
        return Notice("; ".join(said)) if said else None

    return datasets


def create_app(settings: VectorSettings) -> Starlette:
    server, runtime = build_server(settings)
    return build_tool_server_app(
        server,
        settings,
        readiness={**runtime.readiness(), "datasets": datasets_check(runtime)},
        extra_routes=internal_routes(runtime, settings),
        lifespan=runtime.lifespan,
    )
