"""The vector-tools MCP server: tools, resource, and the internal full-feature endpoint."""

from __future__ import annotations

import json
from typing import Annotated

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stacgis_common.auth import InvalidInternalToken, bearer_token, verify_internal_token
from stacgis_common.mcp_app import build_tool_server_app, compact_result, create_mcp_server
from stacgis_common.pgvector_runtime import PgvectorRuntime
from stacgis_common.settings import load_settings
from stacgis_vector.metrics import FEATURE_REQUESTS, observe
from stacgis_vector.service import VectorService
from stacgis_vector.settings import VectorSettings
from stacgis_vector.store import EMBEDDINGS

INSTRUCTIONS = (
    "Vector datasets of places: countries (Natural Earth), cities (GeoNames), US states and US counties. "
    "Find a place with search_vector_features, then pass its `ref` ({dataset, id}) to tools that take a "
    "geometry (raster statistics, zonal statistics): the full geometry is resolved server-side."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

settings = load_settings(VectorSettings)
server = create_mcp_server("vector-tools", settings, instructions=INSTRUCTIONS)
runtime = PgvectorRuntime("vector-tools", settings, EMBEDDINGS, VectorService)


Limit = Annotated[int, Field(ge=1, le=settings.max_limit, description="Maximum number of results.")]
BBox = Annotated[
    list[float],
    Field(
        min_length=4,
        max_length=4,
        description="[west, south, east, north] in degrees (WGS 84); west > east crosses the antimeridian.",
    ),
]
DatasetId = Annotated[str, Field(description="Dataset id from list_vector_datasets, e.g. 'countries' or 'cities'.")]


@server.tool(annotations=READ_ONLY)
async def list_vector_datasets() -> CallToolResult:
    """List the vector datasets: id, title, description, geometry type, feature count, extent, licence, sources."""
    with observe("list_vector_datasets"):
        return compact_result(await runtime.get().list_datasets())


@server.tool(annotations=READ_ONLY)
async def search_vector_features(
    query: Annotated[str, Field(description="Place name or description, e.g. 'Berlin' or 'cities in Brazil'.")],
    dataset: Annotated[str | None, Field(description="Only this dataset (see list_vector_datasets).")] = None,
    bbox: Annotated[BBox | None, Field(description="Only features whose bounding box overlaps this box.")] = None,
    limit: Limit = settings.default_limit,
) -> CallToolResult:
    """Find places by name or meaning: exact and prefix name matches (including alternate names in many
    languages), full-text and semantic similarity, fused by reciprocal rank. Places named exactly as the
    query come first, largest population first; equal scores go to the larger population. Each result has a
    `ref` ({dataset, id}), coordinates for points or bbox and label point for areas, and a few properties.
    Geometries are not included: use get_vector_feature or pass the ref on."""
    with observe("search_vector_features"):
        return compact_result(await runtime.get().search(query, dataset, bbox, limit))


@server.tool(annotations=READ_ONLY)
async def get_vector_feature(
    dataset: DatasetId,
    feature_id: Annotated[str, Field(description="Feature id, from a search result's ref.id.")],
    simplify: Annotated[
        float | None,
        Field(description="Simplification tolerance in degrees; by default only large geometries are simplified."),
    ] = None,
) -> CallToolResult:
    """One feature with all its properties and its geometry as GeoJSON. Geometries with more vertices than the
    server's budget come back simplified; `geometry_simplification` states the tolerance used. Tools taking
    the feature's `ref` always use the full geometry."""
    with observe("get_vector_feature"):
        return compact_result(await runtime.get().get_feature(dataset, feature_id, simplify))


@server.tool(annotations=READ_ONLY)
async def query_vector_by_bbox(
    dataset: DatasetId,
    bbox: BBox,
    limit: Annotated[
        int, Field(ge=1, le=settings.max_bbox_limit, description="Maximum number of features returned.")
    ] = settings.default_limit,
) -> CallToolResult:
    """Features of a dataset whose geometry intersects the box (exact test, not just bounding boxes), largest
    population first. `matched` counts all intersecting features; `truncated` says whether more exist than
    were returned."""
    with observe("query_vector_by_bbox"):
        return compact_result(await runtime.get().query_by_bbox(dataset, bbox, limit))


@server.resource(
    "vector://datasets/all",
    name="vector-datasets",
    description="All vector datasets with their descriptions, extents, licences and sources.",
    mime_type="application/json",
)
async def datasets_resource() -> str:
    return json.dumps(await runtime.get().list_datasets())


async def feature_endpoint(request: Request) -> Response:
    """GET /features/{dataset}/{feature_id}: the full GeoJSON Feature, for other services only."""
    try:
        verify_internal_token(
            bearer_token(request),
            settings.internal_token_secret.get_secret_value(),
            settings.internal_token_audience,
        )
    except InvalidInternalToken as error:
        FEATURE_REQUESTS.labels("401").inc()
        return JSONResponse(
            {"detail": f"invalid internal token: {error}"}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
        )
    dataset, feature_id = request.path_params["dataset"], request.path_params["feature_id"]
    body = await runtime.get().full_feature(dataset, feature_id)
    if body is None:
        FEATURE_REQUESTS.labels("404").inc()
        return JSONResponse({"detail": f"dataset {dataset!r} has no feature {feature_id!r}"}, status_code=404)
    FEATURE_REQUESTS.labels("200").inc()
    return Response(body, media_type="application/geo+json")


app = build_tool_server_app(
    server,
    settings,
    readiness=runtime.readiness(),
    extra_routes=[Route("/features/{dataset}/{feature_id}", feature_endpoint, methods=["GET"])],
    lifespan=runtime.lifespan,
)
