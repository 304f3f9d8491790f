"""XYZ map tiles and TileJSON over plain HTTP, rendered with rio-tiler.

Tiles are public (the browser fetches them through the ingress), cacheable, and
transparent wherever there is no data, including tiles entirely outside it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np
import rasterio
from rio_tiler.colormap import cmap
from rio_tiler.errors import RioTilerError, TileOutsideBounds
from rio_tiler.io import Reader
from rio_tiler.types import ColorMapType
from rio_tiler.utils import render
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stacgis_raster.catalog import CollectionRecord
from stacgis_raster.errors import ArgumentError, NotFoundError, UpstreamError
from stacgis_raster.metrics import TILE_DURATION, TILE_REQUESTS
from stacgis_raster.service import RasterService
from stacgis_raster.validation import parse_interval

log = logging.getLogger(__name__)

# rio-tiler clamps global rasters to Web Mercator's latitude range on every such tile; expected, not news.
warnings.filterwarnings("ignore", message="Adjusting dataset latitudes", category=UserWarning)

MAX_ZOOM = 24
# Tiles more than this many zoom levels below a raster's own minimum zoom (where it fills about one
# tile) are transparent: the raster would be under 1/8 of the tile, and warping a world-sized tile
# from a small projected raster costs seconds and GBs per level (measured on landsat7-olinda, no
# overviews: z8 0.15 s / 350 MB, z6 2.9 s / 1.5 GB, z3 16 s).
ZOOM_OUT_LEVELS = 3
RESAMPLING = {"nearest", "bilinear", "cubic", "cubic_spline", "lanczos", "average", "mode"}
PASSTHROUGH_PARAMS = ("datetime", "bidx", "rescale", "colormap_name", "colormap", "resampling")


def transparent_png(size: int) -> bytes:
    return render(np.zeros((1, size, size), dtype="uint8"), np.zeros((size, size), dtype="uint8"), img_format="PNG")


@dataclass(frozen=True)
class RenderOptions:
    bidx: list[int]
    rescale: list[tuple[float, float]] | None
    colormap: ColorMapType | None
    resampling: str


def _int_param(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise ArgumentError(name, f"expected an integer, got '{value}'") from exc


def check_tile_address(z: int, x: int, y: int) -> None:
    if not 0 <= z <= MAX_ZOOM:
        raise ArgumentError("z", f"zoom must be 0..{MAX_ZOOM}, got {z}")
    limit = 2**z
    if not 0 <= x < limit:
        raise ArgumentError("x", f"must be 0..{limit - 1} at zoom {z}, got {x}")
    if not 0 <= y < limit:
        raise ArgumentError("y", f"must be 0..{limit - 1} at zoom {z}, got {y}")


def render_options(record: CollectionRecord, params: Any) -> RenderOptions:
    """Defaults from the collection's STAC render extension, overridden by query parameters."""
    defaults = record.render or {}
    count = len(record.bands) or 1
    bidx: list[int] = list(defaults.get("bidx") or [1])
    if params.get("bidx"):
        try:
            bidx = [int(v) for v in params["bidx"].split(",") if v.strip()]
        except ValueError as exc:
            raise ArgumentError("bidx", "expected band numbers like '1' or '3,2,1'") from exc
    if not bidx or len(bidx) not in (1, 3) or any(not 1 <= b <= count for b in bidx):
        raise ArgumentError("bidx", f"give 1 or 3 band numbers between 1 and {count}")

    rescale: list[tuple[float, float]] | None = None
    given = params.getlist("rescale")
    if given:
        rescale = [_parse_range(text) for text in given]
    elif defaults.get("rescale"):
        rescale = [(float(r[0]), float(r[1])) for r in defaults["rescale"]]
        if len(rescale) != len(bidx):
            rescale = rescale[:1]
    if rescale is not None and len(rescale) != len(bidx):
        if len(rescale) != 1:
            raise ArgumentError("rescale", f"give one range for all bands or one per band ({len(bidx)})")
        rescale = rescale * len(bidx)

    colormap: ColorMapType | None = None
    name = params.get("colormap_name") or (defaults.get("colormap_name") if "colormap" not in params else None)
    if params.get("colormap"):
        colormap = _parse_colormap(params["colormap"])
    elif name:
        if name.lower() not in cmap.list():
            raise ArgumentError("colormap_name", f"unknown colormap '{name}', e.g. viridis, terrain, rdylgn, blues")
        colormap = cmap.get(name.lower())
    elif defaults.get("colormap"):
        colormap = {int(k): tuple(v) for k, v in defaults["colormap"].items()}  # type: ignore[misc]
    if colormap is not None and len(bidx) != 1:
        raise ArgumentError("colormap_name", "a colormap applies to one band only (bidx with one number)")

    resampling = params.get("resampling") or defaults.get("resampling") or "nearest"
    if resampling not in RESAMPLING:
        raise ArgumentError("resampling", f"one of {', '.join(sorted(RESAMPLING))}")
    if record.categorical:
        rescale = None  # class codes are coloured as they are
        resampling = "nearest"
    return RenderOptions(bidx, rescale, colormap, resampling)


def _parse_range(text: str) -> tuple[float, float]:
    try:
        low, high = (float(p) for p in text.split(","))
    except ValueError as exc:
        raise ArgumentError("rescale", "expected 'min,max', e.g. rescale=0,3000") from exc
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise ArgumentError("rescale", f"min must be a finite number below max, got '{text}'")
    return low, high


def _parse_colormap(text: str) -> dict[int, tuple[int, int, int, int]]:
    try:
        raw = json.loads(text)
        colormap = {int(k): tuple(int(c) for c in v) for k, v in raw.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ArgumentError("colormap", 'expected JSON like {"1": [255, 0, 0, 255]}') from exc
    if any(len(c) not in (3, 4) or any(not 0 <= v <= 255 for v in c) for c in colormap.values()):
        raise ArgumentError("colormap", "each colour is 3 or 4 integers 0..255")
    return {k: (*c, 255) if len(c) == 3 else c for k, c in colormap.items()}  # type: ignore[misc]


def render_tile(href: str, z: int, x: int, y: int, options: RenderOptions, tilesize: int, empty: bytes) -> bytes:
    with Reader(href) as reader:
        if z < reader.minzoom - ZOOM_OUT_LEVELS or not reader.tile_exists(x, y, z):
            return empty
        try:
            image = reader.tile(x, y, z, tilesize=tilesize, indexes=options.bidx, resampling_method=options.resampling)
        except TileOutsideBounds:
            return empty
    if not image.mask.any():
        return empty
    if options.rescale:
        image.rescale(in_range=options.rescale)
    elif image.array.dtype != np.uint8 and not options.colormap:
        image.rescale(in_range=[(float(image.array.min()), float(image.array.max()) or 1.0)])
    elif image.array.dtype != np.uint8 and options.colormap:
        image.array = image.array.astype("uint8")
    return bytes(image.render(img_format="PNG", colormap=options.colormap))


def tile_bounds(href: str) -> dict[str, Any]:
    with Reader(href) as reader:
        # Below this the tiles are transparent (see ZOOM_OUT_LEVELS): the map need not ask for them.
        return {
            "minzoom": max(0, reader.minzoom - ZOOM_OUT_LEVELS),
            "maxzoom": max(reader.maxzoom, 0),
            "bounds": [round(v, 6) for v in reader.get_geographic_bounds(reader.tms.rasterio_geographic_crs)],
        }


def _error(exc: Exception) -> JSONResponse:
    if isinstance(exc, NotFoundError):
        return JSONResponse({"error": str(exc), "parameter": exc.argument}, status_code=404)
    if isinstance(exc, ArgumentError):
        return JSONResponse({"error": str(exc), "parameter": exc.argument}, status_code=400)
    if isinstance(exc, (UpstreamError, RioTilerError, rasterio.errors.RasterioError)):
        return JSONResponse({"error": str(exc)}, status_code=502)
    # Our own bug, not an upstream's: a 500, logged with the trace id, never disguised as a 502.
    log.exception("tile rendering failed")
    return JSONResponse({"error": f"could not render the tile: {type(exc).__name__}"}, status_code=500)


def tile_routes(service: RasterService) -> list[Route]:
    settings = service.settings
    empty = transparent_png(settings.tile_size)
    cache_header = f"public, max-age={settings.tile_cache_seconds}"

    async def pick_item(record: CollectionRecord, params: Any) -> str:
        interval = parse_interval(params.get("datetime"))
        items, _note = await service.latest_or_matching(record, interval, None, 1)
        return service.href(items[0])

    async def tile(request: Request) -> Response:
        started = time.perf_counter()
        outcome = "ok"
        try:
            p = request.path_params
            z = _int_param("z", p["z"])
            x = _int_param("x", p["x"])
            y = _int_param("y", p["y"])
            check_tile_address(z, x, y)
            record = await service.collection(p["collection_id"])
            options = render_options(record, request.query_params)
            href = await pick_item(record, request.query_params)
            try:
                async with asyncio.timeout(settings.tile_timeout_seconds):
                    png = await service.run(render_tile, href, z, x, y, options, settings.tile_size, empty)
            except TimeoutError:
                outcome = "timeout"
                return JSONResponse(
                    {"error": f"the tile took longer than {settings.tile_timeout_seconds:g} s to render"},
                    status_code=504,
                )
            if png is empty:
                outcome = "empty"
            return Response(png, media_type="image/png", headers={"Cache-Control": cache_header})
        except Exception as exc:
            outcome = "error"
            return _error(exc)
        finally:
            TILE_REQUESTS.labels(outcome).inc()
            TILE_DURATION.observe(time.perf_counter() - started)

    async def tilejson(request: Request) -> Response:
        try:
            record = await service.collection(request.path_params["collection_id"])
            render_options(record, request.query_params)  # reject bad parameters here already
            href = await pick_item(record, request.query_params)
            zooms = await service.run(tile_bounds, href)
        except Exception as exc:
            return _error(exc)
        base = (settings.public_base_url or str(request.base_url)).rstrip("/")
        query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k in PASSTHROUGH_PARAMS])
        url = f"{base}/tiles/{record.id}/{{z}}/{{x}}/{{y}}.png" + (f"?{query}" if query else "")
        west, south, east, north = zooms["bounds"]
        body = {
            "tilejson": "3.0.0",
            "name": record.id,
            "description": record.title,
            "scheme": "xyz",
            "tiles": [url],
            "minzoom": zooms["minzoom"],
            "maxzoom": zooms["maxzoom"],
            "bounds": zooms["bounds"],
            "center": [round((west + east) / 2, 6), round((south + north) / 2, 6), zooms["minzoom"]],
            "attribution": ", ".join(record.providers[:2]),
        }
        return JSONResponse(body, headers={"Cache-Control": cache_header})

    return [
        Route("/tiles/{collection_id}/tilejson.json", tilejson, methods=["GET"]),
        Route("/tiles/{collection_id}/{z}/{x}/{y}.png", tile, methods=["GET"]),
    ]
