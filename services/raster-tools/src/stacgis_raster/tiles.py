"""XYZ map tiles, TileJSON and the value at a point (identify) over plain HTTP, rendered with rio-tiler.

Tiles are public (the browser fetches them through the ingress), cacheable, and
transparent wherever there is no data, including tiles entirely outside it.

Every tile's work is bounded: a layer starts at a minimum zoom derived from the raster's extent,
resolution and overviews (TileJSON says it; below it a tile is transparent without a read), a tile
reads at most RASTER_TILE_MAX_PIXELS source pixels per band (the overview level is chosen for it),
and a render past RASTER_TILE_TIMEOUT_SECONDS has its worker process stopped and answers 504.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import time
from typing import Any
from urllib.parse import urlencode

import rasterio
from rio_tiler.errors import RioTilerError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import ARGUMENT_ROWS, ErrorRow, ErrorTable
from stacgis_raster import expressions, reads, scene_reads
from stacgis_raster.errors import UpstreamError
from stacgis_raster.metrics import TILE_DURATION, TILE_REQUESTS
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.results import classify
from stacgis_raster.scene_service import scene_items
from stacgis_raster.scene_tiles import render_scene_tile, scene_render, tile_bounds_wgs84
from stacgis_raster.service import RasterService
from stacgis_raster.settings import RasterSettings
from stacgis_raster.tile_grid import LayerZooms, PixelCapExceeded, scene_crowded_below, visible_zoom
from stacgis_raster.tile_params import (
    MAX_ZOOM,
    PASSTHROUGH_PARAMS,
    point_query,
    render_options,
    tile_address,
)
from stacgis_raster.tile_reads import TileResult, render_tile, scene_point_value, tile_layer, transparent_png
from stacgis_raster.tool_args import collection_id
from stacgis_raster.validation import parse_interval
from stacgis_raster.workers import DeadlineExceeded

# Every failure of the tile routes is answered from this one table (stacgis_common.http_errors).
ERRORS = ErrorTable(
    (
        ErrorRow(PixelCapExceeded, 422, "over_pixel_cap"),
        *ARGUMENT_ROWS,
        ErrorRow(DeadlineExceeded, 504, "deadline_exceeded"),
        # The catalog or the asset could not be read: the upstream's failure, not ours.
        ErrorRow((UpstreamError, RioTilerError, rasterio.errors.RasterioError), 502, "upstream_unreadable"),
    ),
    what="the tile request",
)


# host[:port] as a Host header may carry it: a DNS name, IPv4 or a bracketed IPv6 address.
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?")
# TileJSON differs by these request headers: shared caches must key on them.
BASE_URL_VARY = "Host, X-Forwarded-Host, X-Forwarded-Proto"


def _first(value: str | None) -> str:
    return (value or "").split(",")[0].strip()


def tile_base_url(request: Request, settings: RasterSettings) -> str:
    """The origin TileJSON's tile URLs start with: the one the browser used.

    RASTER_PUBLIC_BASE_URL wins when set. Otherwise the request's Host (ingress-nginx, Gateway API
    implementations and the local nginx pass the browser's on), replaced by X-Forwarded-Host and
    X-Forwarded-Proto when the peer is a trusted proxy (a TLS ingress talks plain HTTP to us).
    A fixed URL broke every other host: at 127.0.0.1 a page got localhost tiles and CORS errors.
    """
    if settings.public_base_url:
        return settings.public_base_url
    scheme = request.url.scheme
    host = request.headers.get("host", "")
    peer = request.client.host if request.client else ""
    with contextlib.suppress(ValueError):
        address = ipaddress.ip_address(peer)
        if any(address in ipaddress.ip_network(cidr, strict=False) for cidr in settings.trusted_proxies):
            if (proto := _first(request.headers.get("x-forwarded-proto")).lower()) in ("http", "https"):
                scheme = proto
            if _HOST.fullmatch(forwarded := _first(request.headers.get("x-forwarded-host"))):
                host = forwarded
    if not _HOST.fullmatch(host):
        # No usable Host (HTTP/1.0, garbage): the address we listen on.
        server = request.scope.get("server") or (settings.host, settings.port)
        host = f"{server[0]}:{server[1]}"
    return f"{scheme}://{host}"


def tile_routes(service: RasterService) -> list[Route]:
    settings = service.settings
    empty = transparent_png(settings.tile_size)
    cache_header = f"public, max-age={settings.tile_cache_seconds}"

    async def pick(record: CollectionRecord, params: Any) -> tuple[ItemRecord, str, str]:
        """The item a tile of this layer reads, its href and a note saying why it was chosen."""
        interval = parse_interval(params.get("datetime"))
        items, note = await service.latest_or_matching(record, interval, None, 1)
        return items[0], (await service.hrefs(items[:1]))[0], note

    async def pick_item(record: CollectionRecord, params: Any) -> str:
        return (await pick(record, params))[1]

    def tile_response(result: TileResult) -> Response:
        headers = {"Cache-Control": cache_header}
        png = result.png
        if png is None:
            png = empty
            headers["X-Tile-Note"] = result.note or "empty"
        return Response(png, media_type="image/png", headers=headers)

    async def scene_tile(record: CollectionRecord, z: int, x: int, y: int, params: Any) -> TileResult:
        """A mosaic of the items under the tile through the expression (scene_tiles)."""
        options = scene_render(record, params)
        interval = parse_interval(params.get("datetime")) if record.time_resolved else None
        bounds = tile_bounds_wgs84(z, x, y)
        cap = settings.scene_tile_max_items
        found = await service.run(service.source.items, record, interval, bounds, cap + 1)
        if not found:
            return TileResult(None, "no data under this tile")
        if len(found) > cap:
            return TileResult(None, f"more than {cap} scenes under this tile (RASTER_SCENE_TILE_MAX_ITEMS); zoom in")
        png, pixels = await service.read(
            render_scene_tile,
            await service.run(scene_items, service.asset_href, record, found, options.expression.assets),
            options,
            z,
            x,
            y,
            settings.tile_size,
            deadline_s=settings.tile_timeout_seconds,
            what="the tile",
            setting="RASTER_TILE_TIMEOUT_SECONDS",
        )
        return TileResult(png, None if png else "no data under this tile", 1, pixels)

    async def tile(request: Request) -> Response:
        started = time.perf_counter()
        outcome = "ok"
        try:
            z, x, y = tile_address(request.path_params)
            record = await service.collection(collection_id(request.path_params["collection_id"]), scenes=True)
            if record.scenes:
                result = await scene_tile(record, z, x, y, request.query_params)
                outcome = "ok" if result.png else "empty"
                return tile_response(result)
            options = render_options(record, request.query_params)
            href = await pick_item(record, request.query_params)
            result = await service.read(
                render_tile,
                href,
                z,
                x,
                y,
                options,
                settings.tile_size,
                settings.tile_max_pixels,
                deadline_s=settings.tile_timeout_seconds,
                what="the tile",
                setting="RASTER_TILE_TIMEOUT_SECONDS",
            )
            if result.png is None:
                outcome = "empty"
            return tile_response(result)
        except DeadlineExceeded:
            outcome = "timeout"
            raise
        except Exception:
            outcome = "error"
            raise
        finally:
            TILE_REQUESTS.labels(outcome).inc()
            TILE_DURATION.observe(time.perf_counter() - started)

    async def tilejson(request: Request) -> Response:
        record = await service.collection(collection_id(request.path_params["collection_id"]), scenes=True)
        if record.scenes:
            # Bad parameters are rejected here already; zooms from one item's asset and the whole extent.
            options = scene_render(record, request.query_params)
            items = await service.items(record, None, None, 1)
            key = options.expression.assets[0]
            (first,) = await service.run(scene_items, service.asset_href, record, items[:1], [key])
            layer: str | tuple[scene_reads.SceneItem, str] = (first, key)  # a cube variable: its format opens it
        else:
            render_options(record, request.query_params)  # reject bad parameters here already
            layer = await pick_item(record, request.query_params)
        zooms = await service.read(
            tile_layer,
            layer,
            settings.tile_max_pixels,
            deadline_s=settings.tile_timeout_seconds,
            what="the layer's zooms",
            setting="RASTER_TILE_TIMEOUT_SECONDS",
        )
        if record.scenes and record.bbox is not None:
            crowded = scene_crowded_below(record, settings.scene_tile_max_items)
            minzoom = min(max(zooms.readable_from, visible_zoom(*record.bbox), crowded), MAX_ZOOM)
            zooms = LayerZooms(minzoom, max(zooms.maxzoom, minzoom), [round(v, 6) for v in record.bbox], 0, 0)
        base = tile_base_url(request, settings)
        query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k in PASSTHROUGH_PARAMS])
        url = f"{base}/tiles/{record.id}/{{z}}/{{x}}/{{y}}.png" + (f"?{query}" if query else "")
        west, south, east, north = zooms.bounds
        body = {
            "tilejson": "3.0.0",
            "name": record.id,
            "description": record.title,
            "scheme": "xyz",
            "tiles": [url],
            "minzoom": zooms.minzoom,
            "maxzoom": zooms.maxzoom,
            "bounds": zooms.bounds,
            "center": [round((west + east) / 2, 6), round((south + north) / 2, 6), zooms.minzoom],
            "attribution": ", ".join(record.providers[:2]),
        }
        headers = {"Cache-Control": cache_header}
        if not settings.public_base_url:
            headers["Vary"] = BASE_URL_VARY
        return JSONResponse(body, headers=headers)

    async def point_read(fn: Any, *args: Any) -> Any:
        """A point read in a read worker, under the tiles' deadline (the endpoint is as public as they are)."""
        return await service.read(
            fn,
            *args,
            deadline_s=settings.tile_timeout_seconds,
            what="the value at the point",
            setting="RASTER_TILE_TIMEOUT_SECONDS",
        )

    async def raster_point(record: CollectionRecord, x: float, y: float, params: Any) -> dict[str, Any]:
        """Every band at the point, from the item this layer's tiles show (RasterService's sampling)."""
        item, href, note = await pick(record, params)
        [sampled] = await point_read(reads.point_values, [href], x, y)
        out: dict[str, Any] = {"item": item.id}
        if record.time_resolved:
            out["time"] = item.time_label()
        out["time_note"] = note
        if not sampled.inside:
            return {**out, "inside": False, "values": []}
        values = []
        for band, value in zip(record.bands, sampled.values, strict=False):
            entry: dict[str, Any] = {"band": band.name, "value": value, "unit": band.unit}
            classified = classify(value, band)
            if isinstance(classified, dict):
                entry.update(value=classified["value"], **{"class": classified["class"]})
            if band.description:
                entry["description"] = band.description
            values.append(entry)
        return {**out, "inside": True, "pixel_center": list(sampled.pixel_center or ()), "values": values}

    async def scene_point(record: CollectionRecord, x: float, y: float, params: Any) -> dict[str, Any]:
        """The expression (NDVI by default) from the items under the point, as the scene tiles show it."""
        expression = expressions.parse(params.get("expression") or "ndvi", record.asset_bands, record.id)
        interval = parse_interval(params.get("datetime")) if record.time_resolved else None
        cap = settings.scene_tile_max_items
        found = await service.run(service.source.items, record, interval, (x, y, x, y), cap + 1)
        if not found:
            return {"inside": False, "values": []}
        if len(found) > cap:
            raise ArgumentError(
                "datetime",
                f"more than {cap} scenes lie under this point (RASTER_SCENE_TILE_MAX_ITEMS); give datetime to "
                "choose a shorter period",
            )
        sources = await service.run(scene_items, service.asset_href, record, found, expression.assets)
        read = await point_read(scene_point_value, sources, expression.formula, x, y)
        entry = {"band": expression.text, "formula": expression.formula, "value": read["value"], "unit": None}
        out: dict[str, Any] = {"expression": expression.text, "items_searched": len(found)}
        if read.get("item"):
            out.update(item=read["item"], time=read["date"])
        return {**out, "inside": True, "pixel_center": read["pixel_center"], "values": [entry]}

    async def point(request: Request) -> Response:
        """GET /tiles/{collection_id}/point?lon=..&lat=..[&datetime=..][&expression=..]: the value(s) there."""
        params = request.query_params
        x, y = point_query(params)
        record = await service.collection(collection_id(request.path_params["collection_id"]), scenes=True)
        found = await (scene_point if record.scenes else raster_point)(record, x, y, params)
        body: dict[str, Any] = {"collection_id": record.id, "title": record.title, "lon": x, "lat": y, **found}
        if not found["inside"]:
            extent = [round(v, 6) for v in record.bbox] if record.bbox else None
            body["note"] = f"no data here: the point is outside '{record.id}' (extent {extent})"
        elif all(v["value"] is None for v in found["values"]):
            body["note"] = "no data here (the pixel is nodata)"
        return JSONResponse(body, headers={"Cache-Control": cache_header})

    return [
        Route("/tiles/{collection_id}/point", ERRORS.answering(point), methods=["GET"]),
        Route("/tiles/{collection_id}/tilejson.json", ERRORS.answering(tilejson), methods=["GET"]),
        Route("/tiles/{collection_id}/{z}/{x}/{y}.png", ERRORS.answering(tile), methods=["GET"]),
    ]
