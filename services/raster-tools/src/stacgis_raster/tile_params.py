"""The tile routes' query parameters parsed into typed values: the tile address, the render options
(defaults from the collection's STAC render extension) and the point of `/point`."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rio_tiler.colormap import cmap
from rio_tiler.types import ColorMapType

from stacgis_common.arguments import ArgumentError
from stacgis_raster.records import CollectionRecord
from stacgis_raster.validation import check_lon_lat

MAX_ZOOM = 24
RESAMPLING = {"nearest", "bilinear", "cubic", "cubic_spline", "lanczos", "average", "mode"}
# The parameters TileJSON's tile URLs carry on.
PASSTHROUGH_PARAMS = ("datetime", "bidx", "rescale", "colormap_name", "colormap", "resampling", "expression")


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


def tile_address(path_params: dict[str, Any]) -> tuple[int, int, int]:
    """(z, x, y) of a tile URL, each an integer in range."""
    z = _int_param("z", path_params["z"])
    x = _int_param("x", path_params["x"])
    y = _int_param("y", path_params["y"])
    check_tile_address(z, x, y)
    return z, x, y


def point_query(params: Any) -> tuple[float, float]:
    """(lon, lat) of `/point`, both required."""
    for name in ("lon", "lat"):
        if params.get(name) is None or not params[name].strip():
            raise ArgumentError(name, "required: a number in degrees (WGS 84)")
    return check_lon_lat(params["lon"].strip(), params["lat"].strip())


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
