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
import json
import math
import re
import time
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import morecantile
import numpy as np
import rasterio
from rasterio.crs import CRS
from rasterio.errors import CRSError
from rasterio.io import DatasetReader
from rasterio.transform import from_bounds
from rasterio.warp import transform as transform_points
from rasterio.warp import transform_bounds
from rio_tiler.colormap import cmap
from rio_tiler.errors import RioTilerError, TileOutsideBounds
from rio_tiler.io import Reader
from rio_tiler.types import ColorMapType
from rio_tiler.utils import render
from shapely.geometry import Point
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import ARGUMENT_ROWS, ErrorRow, ErrorTable
from stacgis_raster import expressions, reads, scene_reads
from stacgis_raster.errors import UpstreamError
from stacgis_raster.metrics import TILE_DURATION, TILE_REQUESTS
from stacgis_raster.rasterops import WGS84
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.results import classify
from stacgis_raster.scene_service import scene_items
from stacgis_raster.scene_tiles import render_scene_tile, scene_render, tile_bounds_wgs84
from stacgis_raster.service import RasterService
from stacgis_raster.settings import RasterSettings
from stacgis_raster.validation import check_lon_lat, parse_interval
from stacgis_raster.workers import DeadlineExceeded

# rio-tiler clamps global rasters to Web Mercator's latitude range on every such tile; expected, not news.
warnings.filterwarnings("ignore", message="Adjusting dataset latitudes", category=UserWarning)

MAX_ZOOM = 24
WEB_MERCATOR = CRS.from_epsg(3857)
WORLD_M = 2 * math.pi * 6378137.0  # Web Mercator's width
MAX_LAT = 85.0511287798
# A layer starts at the zoom where the raster's larger side spans this share of a tile: below it the
# raster is a speck of under 16 pixels on a 256-pixel tile, not worth a read.
MIN_SPAN_OF_TILE = 1 / 16
RESAMPLING = {"nearest", "bilinear", "cubic", "cubic_spline", "lanczos", "average", "mode"}
PASSTHROUGH_PARAMS = ("datetime", "bidx", "rescale", "colormap_name", "colormap", "resampling", "expression")


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
        colormap = {int(k): tuple(v) for k, v in defaults["colormap"].items()}
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


class PixelCapExceeded(ArgumentError):
    """Even the coarsest overview of the raster holds more pixels under this tile than the cap."""

    limit = "RASTER_TILE_MAX_PIXELS"


@dataclass(frozen=True)
class TileResult:
    png: bytes | None  # None: nothing to draw (transparent)
    note: str | None = None  # why it is empty, for the X-Tile-Note header
    level_factor: int = 1
    pixels_read: int = 0


@dataclass(frozen=True)
class LayerZooms:
    minzoom: int
    maxzoom: int
    bounds: list[float]
    visible_from: int  # the raster spans MIN_SPAN_OF_TILE of a tile
    readable_from: int  # every tile reads at most the pixel cap


def _factors(ds: DatasetReader) -> list[int]:
    return [1, *sorted(ds.overviews(1))]


def _metres_per_unit(crs: CRS) -> float:
    if crs.is_geographic:
        return 1.0
    try:
        return float(crs.linear_units_factor[1])
    except CRSError:
        return 1.0


def _geographic_bounds(ds: DatasetReader) -> tuple[float, float, float, float]:
    crs = ds.crs or WGS84
    if crs.is_geographic and crs.to_epsg() == 4326:
        west, south, east, north = ds.bounds
    else:
        west, south, east, north = transform_bounds(crs, WGS84, *ds.bounds, densify_pts=21)
    return max(west, -180.0), max(south, -90.0), min(east, 180.0), min(north, 90.0)


def _mercator_y(lat: float) -> float:
    lat = max(-MAX_LAT, min(MAX_LAT, lat))
    return math.log(math.tan(math.pi / 4 + math.radians(lat) / 2)) * 6378137.0


def _latitude(y: float) -> float:
    return math.degrees(math.atan(math.sinh(y / 6378137.0)))


def _largest_tile(lat0: float, z: int) -> tuple[float, float]:
    """(degrees of longitude, degrees of latitude) of the largest tile at zoom z at or poleward of
    latitude `lat0`: the one ending at lat0 on its poleward edge (Mercator tiles shrink poleward)."""
    tile_m = WORLD_M / 2**z
    top = min(_mercator_y(lat0), WORLD_M / 2)
    start = max(0.0, top - tile_m)
    return 360 / 2**z, _latitude(start + tile_m) - _latitude(start)


def visible_zoom(west: float, south: float, east: float, north: float) -> int:
    """The first zoom where an extent's larger side spans MIN_SPAN_OF_TILE of a tile."""
    span = max((east - west) / 360 * WORLD_M, _mercator_y(north) - _mercator_y(south), 1e-9)
    return max(0, math.ceil(math.log2(WORLD_M * MIN_SPAN_OF_TILE / span) - 1e-9))


def scene_crowded_below(record: CollectionRecord, cap: int) -> int:
    """The first zoom where a tile meets at most `cap` of the collection's items, for items spread
    evenly over its extent: a tile of w x h meets about count * (w + item w)(h + item h) / extent."""
    if record.bbox is None or not record.item_count:
        return 0
    west, south, east, north = record.bbox
    width, height = max(east - west, 1e-9), max(north - south, 1e-9)
    item_w, item_h = width / math.sqrt(record.item_count), height / math.sqrt(record.item_count)
    for z in range(MAX_ZOOM + 1):
        lon_span, lat_span = _largest_tile(0.0 if south <= 0 <= north else min(abs(south), abs(north)), z)
        met = record.item_count * min(1.0, (lon_span + item_w) * (lat_span + item_h) / (width * height))
        if met <= cap:
            return z
    return MAX_ZOOM


def layer_zooms(ds: DatasetReader, max_pixels: int) -> LayerZooms:
    """The zooms a layer is served at, from the raster's extent, resolution and overviews.

    visible_from: the first zoom where the raster's larger side spans MIN_SPAN_OF_TILE of a tile.
    readable_from: the first zoom where no tile needs more than `max_pixels` source pixels from the
    coarsest overview: per side at most min(raster, tile span / resolution), for the largest tile
    over the raster (at its latitude closest to the equator, where Mercator tiles cover most ground).
    """
    west, south, east, north = _geographic_bounds(ds)
    visible = visible_zoom(west, south, east, north)

    crs = ds.crs or WGS84
    coarsest = _factors(ds)[-1]
    lat0 = 0.0 if south <= 0 <= north else min(abs(south), abs(north))
    xres, yres = abs(ds.res[0]), abs(ds.res[1])
    readable = MAX_ZOOM
    for z in range(MAX_ZOOM + 1):
        lon_span, lat_span = _largest_tile(lat0, z)
        if crs.is_geographic:
            tile_w, tile_h = lon_span / xres, lat_span / yres
        else:
            metres = _metres_per_unit(crs)
            tile_w = lon_span * 111_320 * math.cos(math.radians(lat0)) / metres / xres
            tile_h = lat_span * 110_574 / metres / yres
        cols = math.ceil(min(ds.width, tile_w) / coarsest + 1)
        rows = math.ceil(min(ds.height, tile_h) / coarsest + 1)
        if cols * rows <= max_pixels:
            readable = z
            break
    with Reader(ds.name, dataset=ds) as reader:
        maxzoom = max(reader.maxzoom, 0)
    minzoom = min(max(visible, readable), MAX_ZOOM)
    return LayerZooms(
        minzoom, max(maxzoom, minzoom), [round(v, 6) for v in (west, south, east, north)], visible, readable
    )


def tile_read_factor(
    ds: DatasetReader, tile_bounds: tuple[float, float, float, float], tilesize: int, max_pixels: int
) -> tuple[int, int] | None:
    """(overview factor, source pixels) to read for a tile in Web Mercator; None: no overlap.

    The level is the coarsest one still at least as fine as the tile (what GDAL would pick), made
    coarser while the window under the tile holds more than `max_pixels` pixels.
    """
    crs = ds.crs or WGS84
    bounds = transform_bounds(WEB_MERCATOR, crs, *tile_bounds, densify_pts=21)
    if not all(math.isfinite(v) for v in bounds):
        bounds = tuple(ds.bounds)
    left, bottom, right, top = bounds
    b = ds.bounds
    inter_w = min(right, b.right) - max(left, b.left)
    inter_h = min(top, b.top) - max(bottom, b.bottom)
    if inter_w <= 0 or inter_h <= 0:
        return None
    xres, yres = abs(ds.res[0]), abs(ds.res[1])
    out_x, out_y = (right - left) / tilesize, (top - bottom) / tilesize
    factors = _factors(ds)
    natural = max([f for f in factors if xres * f <= out_x * 1.0001 and yres * f <= out_y * 1.0001], default=1)
    cols, rows = inter_w / xres, inter_h / yres
    for factor in (f for f in factors if f >= natural):
        pixels = math.ceil(cols / factor + 1) * math.ceil(rows / factor + 1)
        if pixels <= max_pixels:
            return factor, pixels
    raise PixelCapExceeded(
        "z",
        f"this tile would read {pixels} source pixels even from the coarsest overview, over the cap of "
        f"{max_pixels} (RASTER_TILE_MAX_PIXELS); use a closer zoom",
    )


def render_tile(
    href: str, z: int, x: int, y: int, options: RenderOptions, tilesize: int, max_pixels: int
) -> TileResult:
    """One tile, reading at most `max_pixels` source pixels per band (runs in a read worker)."""
    tms = morecantile.tms.get("WebMercatorQuad")
    with rasterio.open(href) as ds:
        zooms = layer_zooms(ds, max_pixels)
        if z < zooms.minzoom:
            return TileResult(None, f"zoom {z} is below this layer's minzoom {zooms.minzoom} (see its tilejson.json)")
        tile_bounds = tuple(tms.xy_bounds(morecantile.Tile(x, y, z)))
        plan = tile_read_factor(ds, tile_bounds, tilesize, max_pixels)  # type: ignore[arg-type]
        if plan is None:
            return TileResult(None, "no data under this tile")
        factor, pixels = plan
        factors = _factors(ds)
    level = factors.index(factor) - 1
    with contextlib.ExitStack() as stack:
        ds = stack.enter_context(rasterio.open(href, overview_level=level) if level >= 0 else rasterio.open(href))
        reader = stack.enter_context(Reader(href, dataset=ds))
        # A warped VRT on the tile's own grid: rio-tiler's default VRT has the raster's resolution over
        # the whole tile, which for a small raster at a low zoom is millions of pixels a side.
        vrt = {"transform": from_bounds(*tile_bounds, tilesize, tilesize), "width": tilesize, "height": tilesize}
        try:
            image = reader.tile(
                x,
                y,
                z,
                tilesize=tilesize,
                indexes=options.bidx,
                resampling_method=options.resampling,
                reproject_method=options.resampling,
                vrt_options=vrt,
            )
        except TileOutsideBounds:
            return TileResult(None, "no data under this tile")
    if not image.mask.any():
        return TileResult(None, "no data under this tile", factor, pixels)
    if options.rescale:
        image.rescale(in_range=options.rescale)
    elif image.array.dtype != np.uint8 and not options.colormap:
        image.rescale(in_range=[(float(image.array.min()), float(image.array.max()) or 1.0)])
    elif image.array.dtype != np.uint8 and options.colormap:
        image.array = image.array.astype("uint8")
    return TileResult(bytes(image.render(img_format="PNG", colormap=options.colormap)), None, factor, pixels)


def scene_point_value(items: list[scene_reads.SceneItem], formula: str, lon: float, lat: float) -> dict[str, Any]:
    """The expression at a point, as a scene tile shows it (runs in a read worker): a one-pixel grid on
    the first item's pixels, each date mosaicked least cloudy first, the newest valid date taken."""
    area = reads.Area(Point(lon, lat), "point", "lon", None)
    plan = scene_reads.item_grid(reads.ReadLimits(1, 1, 1), items[0], area)
    layers, _pixels = scene_reads.mosaics(plan, items, formula)
    cx, cy = plan.transform * (0.5, 0.5)
    xs, ys = transform_points(plan.crs, WGS84, [cx], [cy])
    out: dict[str, Any] = {"value": None, "pixel_center": [round(xs[0], 6), round(ys[0], 6)]}
    for mosaic in reversed(layers):  # newest date first, as the tile's "latest" composite
        if not np.ma.getmaskarray(mosaic.data)[0, 0]:
            value = float(np.ma.getdata(mosaic.data)[0, 0])
            if math.isfinite(value):
                out.update(value=round(value, 6), date=mosaic.date, item=mosaic.items[0] if mosaic.items else None)
                break
    return out


def tile_layer(layer: str | tuple[scene_reads.SceneItem, str], max_pixels: int) -> LayerZooms:
    """Zooms of a file (href), or of asset `key` of a scene item (a cube's variable names the argument
    `expression` when the file lacks it)."""
    if isinstance(layer, str):
        with rasterio.open(layer) as ds:
            return layer_zooms(ds, max_pixels)
    item, key = layer
    with item.open(key) as (ds, _):
        return layer_zooms(ds, max_pixels)


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
            p = request.path_params
            z = _int_param("z", p["z"])
            x = _int_param("x", p["x"])
            y = _int_param("y", p["y"])
            check_tile_address(z, x, y)
            record = await service.collection(p["collection_id"], scenes=True)
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
        record = await service.collection(request.path_params["collection_id"], scenes=True)
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
        for name in ("lon", "lat"):
            if params.get(name) is None or not params[name].strip():
                raise ArgumentError(name, "required: a number in degrees (WGS 84)")
        x, y = check_lon_lat(params["lon"].strip(), params["lat"].strip())
        record = await service.collection(request.path_params["collection_id"], scenes=True)
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
