"""Map tiles of scene collections: the items under a tile, mosaicked, through band math, coloured.

`/tiles/{scene collection}/{z}/{x}/{y}.png?expression=ndvi&rescale=-1,1&colormap_name=rdylgn`
searches the items under the tile (at most RASTER_SCENE_TILE_MAX_ITEMS; more answers a transparent
tile asking to zoom in), warps the assets the expression reads onto the tile's grid in a read
worker (least cloudy item first, newest date first), and colours the result. Without parameters
the collection's render extension says what to show (else NDVI); other expressions need `rescale`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import morecantile
import numpy as np
from rasterio.crs import CRS
from rasterio.transform import from_bounds
from rasterio.windows import Window
from rio_tiler.colormap import cmap
from rio_tiler.types import ColorMapType
from rio_tiler.utils import render
from shapely.geometry import box

from stacgis_common.arguments import ArgumentError
from stacgis_raster import expressions, rasterops, scene_reads
from stacgis_raster.records import CollectionRecord

WEB_MERCATOR = "EPSG:3857"


@dataclass(frozen=True)
class SceneRender:
    expression: expressions.Expression
    rescale: tuple[float, float]
    colormap: ColorMapType


def scene_render(record: CollectionRecord, params: Any) -> SceneRender:
    """Expression, display range and colours from the query, else from the collection's render
    extension (`renders.default`: expression, rescale, colormap_name), else NDVI."""
    default = record.render or {}
    text = params.get("expression") or default.get("expression") or "ndvi"
    parsed = expressions.parse(text, record.asset_bands, record.id)
    index = text.strip().lower() in expressions.INDICES
    rendered = text == default.get("expression") and default.get("rescale")
    if params.get("rescale"):
        try:
            low, high = (float(v) for v in params["rescale"].split(","))
        except ValueError as exc:
            raise ArgumentError("rescale", "expected 'min,max', e.g. rescale=-1,1") from exc
        if not low < high:
            raise ArgumentError("rescale", "min must be below max")
    elif rendered:
        low, high = (float(v) for v in default["rescale"][0])
    elif index:
        low, high = -1.0, 1.0
    else:
        raise ArgumentError("rescale", f"give rescale=min,max for '{text}' (indices default to -1,1)")
    fallback = default.get("colormap_name") if rendered else None
    name = (params.get("colormap_name") or fallback or ("rdylgn" if index else "viridis")).lower()
    if name not in cmap.list():
        raise ArgumentError("colormap_name", f"unknown colormap '{name}', e.g. rdylgn, viridis, blues")
    return SceneRender(parsed, (low, high), cmap.get(name))


def tile_bounds_wgs84(z: int, x: int, y: int) -> tuple[float, float, float, float]:
    west, south, east, north = morecantile.tms.get("WebMercatorQuad").bounds(morecantile.Tile(x, y, z))
    return west, south, east, north


def render_scene_tile(
    items: Sequence[scene_reads.SceneItem], options: SceneRender, z: int, x: int, y: int, tilesize: int
) -> tuple[bytes | None, int]:
    """(PNG or None when nothing is under the tile, pixels read); runs in a read worker."""
    bounds = tuple(morecantile.tms.get("WebMercatorQuad").xy_bounds(morecantile.Tile(x, y, z)))
    transform = from_bounds(*bounds, tilesize, tilesize)
    plan = rasterops.ReadPlan(
        CRS.from_string(WEB_MERCATOR),
        box(*bounds),
        Window(0, 0, tilesize, tilesize),
        (tilesize, tilesize),
        transform,
        1,
        1.0,
        {},
        False,
        transform,
        (tilesize, tilesize),
    )
    layers, pixels = scene_reads.mosaics(plan, items, options.expression.formula)
    data = scene_reads.composite([m.data for m in layers], "latest")
    valid = ~np.ma.getmaskarray(data)
    if not valid.any():
        return None, pixels
    low, high = options.rescale
    scaled = np.clip((np.ma.getdata(data) - low) / (high - low) * 255, 0, 255).astype("uint8")
    png = render(scaled[np.newaxis], (valid * 255).astype("uint8"), img_format="PNG", colormap=options.colormap)
    return bytes(png), pixels
