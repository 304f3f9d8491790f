"""Assembly of the raster-tools ASGI app: catalog source, service, MCP tools and tile routes."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from starlette.applications import Starlette

from stacgis_common.mcp_app import build_tool_server_app, create_mcp_server
from stacgis_raster import reads
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import open_source
from stacgis_raster.features import FeatureResolver
from stacgis_raster.metrics import TOOLS
from stacgis_raster.service import RasterService
from stacgis_raster.settings import RasterSettings
from stacgis_raster.signing import Signer
from stacgis_raster.tiles import tile_routes
from stacgis_raster.tools import register_tools

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Raster data from a STAC catalog: elevation models, satellite imagery and NDVI, land cover, "
    'climate time series and global grids. Name places (`place: "Nairobi"`, `place: "Luxembourg"`) '
    "rather than typing coordinates: vector-tools resolves them, countries to their boundaries."
)


def build_service(settings: RasterSettings) -> RasterService:
    guard = AssetGuard([Path(p) for p in settings.allowed_local_roots], settings.allowed_remote_hosts)
    source = open_source(
        settings.stac_url,
        guard,
        kind=settings.stac_kind,
        refresh_seconds=settings.catalog_refresh_seconds,
        timeout=settings.stac_timeout_seconds,
        listing_items=settings.stac_listing_items,
    )
    resolver = FeatureResolver(settings.vector_tools_url, settings.vector_tools_timeout_seconds)
    signer = Signer(settings.sas_token_url, settings.sas_hosts, settings.stac_timeout_seconds)
    return RasterService(settings, source, guard, resolver, signer)


def create_app(settings: RasterSettings) -> Starlette:
    service = build_service(settings)
    server = create_mcp_server("raster-tools", settings, instructions=INSTRUCTIONS, tool_metrics=TOOLS)
    register_tools(server, service, settings)

    async def catalog_ready() -> None:
        collections = await service.collections()
        if not collections:
            raise RuntimeError(f"no collections in {settings.stac_url}")

    async def read_workers_ready() -> None:
        await service.read(reads.ping, deadline_s=5.0, what="a read worker's start")

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        service.start()
        try:
            count = len(await service.collections())
            log.info("catalog %s loaded: %d collections", settings.stac_url, count)
        except Exception as exc:  # noqa: BLE001 - served on: readiness reports the catalog until it loads
            log.error("catalog %s could not be loaded: %s", settings.stac_url, exc)
        try:
            yield
        finally:
            await service.resolver.aclose()
            service.close()

    app: Any = build_tool_server_app(
        server,
        settings,
        readiness={"catalog": catalog_ready, "read_workers": read_workers_ready},
        extra_routes=tile_routes(service),
        lifespan=lifespan,
    )
    app.state.service = service
    return cast(Starlette, app)
