"""Where a layer's tiles start and how much a tile reads: the zooms a raster is served at (from its
extent, resolution and overviews) and the overview level under one tile, within the pixel cap."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rasterio.crs import CRS
from rasterio.errors import CRSError
from rasterio.io import DatasetReader
from rasterio.warp import transform_bounds
from rio_tiler.io import Reader

from stacgis_common.arguments import ArgumentError
from stacgis_raster.rasterops import WGS84
from stacgis_raster.records import CollectionRecord
from stacgis_raster.tile_params import MAX_ZOOM

WEB_MERCATOR = CRS.from_epsg(3857)
WORLD_M = 2 * math.pi * 6378137.0  # Web Mercator's width
MAX_LAT = 85.0511287798
# A layer starts at the zoom where the raster's larger side spans this share of a tile: below it the
# raster is a speck of under 16 pixels on a 256-pixel tile, not worth a read.
MIN_SPAN_OF_TILE = 1 / 16


class PixelCapExceeded(ArgumentError):
    """Even the coarsest overview of the raster holds more pixels under this tile than the cap."""

    limit = "RASTER_TILE_MAX_PIXELS"


@dataclass(frozen=True)
class LayerZooms:
    minzoom: int
    maxzoom: int
    bounds: list[float]
    visible_from: int  # the raster spans MIN_SPAN_OF_TILE of a tile
    readable_from: int  # every tile reads at most the pixel cap


def overview_factors(ds: DatasetReader) -> list[int]:
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
    coarsest = overview_factors(ds)[-1]
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
    factors = overview_factors(ds)
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
