"""The tile routes' reads, run in read workers: a tile rendered with rio-tiler, a layer's zooms, and
the value of a scene expression at a point."""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Any

import morecantile
import numpy as np
import rasterio
from rasterio.transform import from_bounds
from rasterio.warp import transform as transform_points
from rio_tiler.errors import TileOutsideBounds
from rio_tiler.io import Reader
from rio_tiler.utils import render
from shapely.geometry import Point

from stacgis_raster import reads, scene_reads
from stacgis_raster.rasterops import WGS84
from stacgis_raster.tile_grid import LayerZooms, layer_zooms, overview_factors, tile_read_factor
from stacgis_raster.tile_params import RenderOptions

# rio-tiler clamps global rasters to Web Mercator's latitude range on every such tile; expected, not news.
warnings.filterwarnings("ignore", message="Adjusting dataset latitudes", category=UserWarning)


def transparent_png(size: int) -> bytes:
    return render(np.zeros((1, size, size), dtype="uint8"), np.zeros((size, size), dtype="uint8"), img_format="PNG")


@dataclass(frozen=True)
class TileResult:
    png: bytes | None  # None: nothing to draw (transparent)
    note: str | None = None  # why it is empty, for the X-Tile-Note header
    level_factor: int = 1
    pixels_read: int = 0


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
        factors = overview_factors(ds)
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
