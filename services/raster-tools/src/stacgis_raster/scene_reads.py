"""Reads over many scene items: mosaics per date, band math, temporal composites, statistics.

Like `reads`, plain functions of picklable values run in the read workers (a read past its
deadline is stopped with its process). Every item is read onto one output grid: the area's
bounds snapped to the first asset's pixel grid, coarsened by a power of two when the area has
more pixels than the statistics target, so a country-sized area costs what a city does.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np
import rasterio
from affine import Affine
from rasterio.enums import Resampling
from rasterio.errors import NotGeoreferencedWarning, RasterioIOError
from rasterio.io import DatasetReader
from rasterio.vrt import WarpedVRT
from rasterio.warp import transform_bounds
from rasterio.windows import Window, from_bounds

from stacgis_common.arguments import ArgumentError
from stacgis_raster import expressions, rasterops
from stacgis_raster.reads import Area, ReadLimits
from stacgis_raster.records import CubeFormat

Composite = Literal["median", "mean", "max", "min", "latest"]
COMPOSITES: tuple[Composite, ...] = get_args(Composite)


@dataclass(frozen=True)
class SceneItem:
    id: str
    date: str  # the acquisition (or period start) label; items of one date are mosaicked together
    hrefs: dict[str, str]  # asset key -> checked href, only the assets the expression reads
    cloud_cover: float | None
    # asset key -> (scale, offset) from raster:bands, so band math sees physical values (reflectance)
    scaling: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Data cubes: the file's format (how GDAL opens variable `key` of it) and the time step's band.
    cube: CubeFormat | None = None
    band: int = 1
    # The item's cloud mask (href) and its class values to leave out.
    mask: tuple[str, tuple[int, ...]] | None = None
    bbox: tuple[float, float, float, float] | None = None  # WGS 84, from the STAC item

    def source(self, key: str) -> tuple[str, int]:
        """What to open for asset `key`, and which band of it."""
        if self.cube is not None:
            return self.cube.source(self.hrefs[key], key), self.band
        return self.hrefs[key], 1

    @contextmanager
    def open(self, key: str, argument: str = "expression") -> Iterator[tuple[DatasetReader, int]]:
        """Asset `key` opened, and the band to read. A cube variable the file lacks (the catalog
        lists it, the file does not hold it) is an error of `argument`, naming the file's variables; a
        file that cannot be read at all stays the upstream's failure."""
        href, band = self.source(key)
        try:
            ds = rasterio.open(href)
        except RasterioIOError:
            held = cube_variables(self.cube, self.hrefs[key]) if self.cube is not None else []
            if self.cube is None or not held or key in held:
                raise
            raise ArgumentError(
                argument,
                f"variable '{key}' is not in the {self.cube.name} cube {self.hrefs[key]} (it holds {', '.join(held)})",
            ) from None
        with ds:
            if band > ds.count:
                raise ArgumentError(
                    "datetime", f"variable '{key}' of {self.hrefs[key]} has {ds.count} time steps, not {band}"
                )
            yield ds, band


def cube_variables(cube: CubeFormat, href: str) -> list[str]:
    """The gridded variables of a cube file: its subdatasets with rows and columns (coordinates such
    as time or lat are 1-D). Only asked when a read failed, so opening each one costs nothing usual."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)  # the file itself and 1-D arrays have no grid
        try:
            with rasterio.open(cube.root(href)) as ds:
                names = [v for k, v in ds.tags(ns="SUBDATASETS").items() if k.endswith("_NAME")]
        except RasterioIOError:
            return []
        for name in names:
            try:
                with rasterio.open(name) as ds:
                    gridded = ds.height > 1 and ds.width > 1
            except RasterioIOError:
                continue
            if gridded:
                out.append(name.rsplit(":", 1)[-1].lstrip("/"))
    return sorted(out)


@dataclass
class Mosaic:
    """One date's mosaic of an expression, and which items gave it pixels."""

    date: str
    data: np.ma.MaskedArray
    items: list[str] = field(default_factory=list)
    cloud_pixels: int = 0  # item pixels left out by the items' cloud masks


def _opened(source: str | DatasetReader) -> AbstractContextManager[DatasetReader]:
    """A path opened here (and closed after), or a dataset the caller opened and closes."""
    return rasterio.open(source) if isinstance(source, str) else nullcontext(source)


def plan_grid(limits: ReadLimits, source: str | DatasetReader, area: Area) -> rasterops.ReadPlan:
    """The output grid for `area`: snapped to the source's pixels, coarsened to the statistics target."""
    with _opened(source) as ds:
        crs = ds.crs or rasterops.WGS84
        geom = rasterops.to_dataset_crs(area.geometry, crs)
        xres, yres = ds.res
        origin_x, origin_y = ds.transform.c, ds.transform.f
        minx, miny, maxx, maxy = geom.bounds
        col0 = math.floor((minx - origin_x) / xres + 1e-9)
        col1 = math.ceil((maxx - origin_x) / xres - 1e-9)
        row0 = math.floor((origin_y - maxy) / yres + 1e-9)
        row1 = math.ceil((origin_y - miny) / yres - 1e-9)
        width, height = max(1, col1 - col0), max(1, row1 - row0)
        factor = 1
        while width * height / (factor * factor) > limits.stats_target_pixels and factor < 4096:
            factor *= 2
        out_w, out_h = max(1, math.ceil(width / factor)), max(1, math.ceil(height / factor))
        if out_w * out_h > limits.max_pixels_per_read:
            raise ArgumentError(
                area.argument, f"the area is too large to read ({out_w * out_h} pixels); use a smaller area"
            )
        transform = Affine(xres * factor, 0, origin_x + col0 * xres, 0, -yres * factor, origin_y - row0 * yres)
        return rasterops.ReadPlan(
            crs,
            geom,
            Window(0, 0, out_w, out_h),
            (out_h, out_w),
            transform,
            factor,
            1.0,
            rasterops.describe_resolution(ds, factor),
            bool(crs.is_geographic),
            transform,
            (out_h, out_w),
        )


def item_grid(limits: ReadLimits, item: SceneItem, area: Area) -> rasterops.ReadPlan:
    """`plan_grid` on the pixels of the item's first asset."""
    with item.open(next(iter(item.hrefs))) as (ds, _):
        return plan_grid(limits, ds, area)


def _read_asset(
    source: str | DatasetReader,
    plan: rasterops.ReadPlan,
    scaling: tuple[float, float] | None,
    band: int = 1,
    classes: bool = False,
) -> np.ma.MaskedArray:
    """Band `band` of an asset warped onto the plan's grid; pixels outside it or at nodata are masked.
    Classes (a mask) are never averaged."""
    height, width = plan.out_shape
    resampling = Resampling.nearest if plan.factor == 1 or classes else Resampling.average
    with _opened(source) as ds:
        with WarpedVRT(
            ds,
            # A CF grid in degrees without a CRS variable (NetCDF) is WGS 84.
            src_crs=ds.crs or rasterops.WGS84,
            crs=plan.crs,
            transform=plan.transform,
            width=width,
            height=height,
            resampling=resampling,
            add_alpha=True,
        ) as vrt:
            values = vrt.read(band)
            alpha = vrt.read(vrt.count)
        mask = alpha == 0
        if ds.nodata is not None:
            mask |= values == ds.nodata
    if scaling is not None:
        values = values.astype("float64") * scaling[0] + scaling[1]
    return np.ma.MaskedArray(values, mask=mask)


def _item_part(item: SceneItem, plan: rasterops.ReadPlan) -> tuple[slice, slice, rasterops.ReadPlan] | None:
    """The rows and columns of the output grid an item covers, and the plan reading just those: an
    item is read over its own footprint, not the whole area, so a mosaic costs what its items hold."""
    if item.bbox is not None:
        # The item's own WGS 84 box: no extra open of its file (pixels outside the footprint are masked).
        bounds = transform_bounds(rasterops.WGS84, plan.crs, *item.bbox, densify_pts=21)
    else:
        with item.open(next(iter(item.hrefs))) as (ds, _):
            bounds = transform_bounds(ds.crs or rasterops.WGS84, plan.crs, *ds.bounds, densify_pts=21)
    height, width = plan.out_shape
    window = from_bounds(*bounds, transform=plan.transform)
    row0, col0 = max(0, math.floor(window.row_off)), max(0, math.floor(window.col_off))
    row1 = min(height, math.ceil(window.row_off + window.height))
    col1 = min(width, math.ceil(window.col_off + window.width))
    if row1 <= row0 or col1 <= col0:
        return None
    part = replace(
        plan, out_shape=(row1 - row0, col1 - col0), transform=plan.transform @ Affine.translation(col0, row0)
    )
    return slice(row0, row1), slice(col0, col1), part


def mosaics(plan: rasterops.ReadPlan, items: Sequence[SceneItem], formula: str) -> tuple[list[Mosaic], int]:
    """One mosaic per date (least cloudy item first where items overlap, cloudy pixels left out
    where items carry a cloud mask) and the pixels read."""
    by_date: dict[str, list[SceneItem]] = {}
    for item in items:
        by_date.setdefault(item.date, []).append(item)
    out: list[Mosaic] = []
    pixels_read = 0
    shape = plan.out_shape
    for date in sorted(by_date):
        group = sorted(by_date[date], key=lambda i: (i.cloud_cover if i.cloud_cover is not None else 0.0, i.id))
        data = np.ma.MaskedArray(np.zeros(shape), mask=np.ones(shape, dtype=bool))
        mosaic = Mosaic(date, data)
        for item in group:
            part = _item_part(item, plan)
            if part is None:
                continue
            rows, cols, item_plan = part
            arrays = {}
            for key in item.hrefs:
                with item.open(key) as (ds, band):
                    arrays[key] = _read_asset(ds, item_plan, item.scaling.get(key), band)
            pixels_read += sum(int((~np.ma.getmaskarray(a)).sum()) for a in arrays.values())
            value = expressions.evaluate(formula, arrays)
            if item.mask is not None:
                flags = _read_asset(item.mask[0], item_plan, None, classes=True)
                cloudy = np.isin(np.ma.getdata(flags), item.mask[1]) & ~np.ma.getmaskarray(flags)
                mosaic.cloud_pixels += int((cloudy & ~np.ma.getmaskarray(value)).sum())
                value = np.ma.masked_where(cloudy, value)
            target = data[rows, cols]
            fill = np.ma.getmaskarray(target) & ~np.ma.getmaskarray(value)
            if fill.any():
                target[fill] = value[fill]
                data[rows, cols] = target
                mosaic.items.append(item.id)
            if not np.ma.getmaskarray(data).any():
                break  # the area is full: later (cloudier) items would add nothing
        out.append(mosaic)
    return out, pixels_read


def composite(layers: Sequence[np.ma.MaskedArray], method: str) -> np.ma.MaskedArray:
    """Per-pixel reduction over dates, ignoring masked pixels; `latest` takes the newest valid value."""
    if len(layers) == 1:
        return layers[0]
    if method == "latest":
        result = layers[-1].copy()
        for layer in reversed(layers[:-1]):
            gap = np.ma.getmaskarray(result) & ~np.ma.getmaskarray(layer)
            result[gap] = layer[gap]
        return result
    stack = np.ma.stack(layers)
    reducers: dict[str, Callable[..., Any]] = {
        "median": np.ma.median,
        "mean": np.ma.mean,
        "max": np.ma.max,
        "min": np.ma.min,
    }
    reduce = reducers[method]
    return np.ma.asarray(reduce(stack, axis=0))


def scene_statistics(
    limits: ReadLimits, items: Sequence[SceneItem], area: Area, formula: str, method: str
) -> dict[str, Any]:
    plan = item_grid(limits, items[0], area)
    layers, pixels_read = mosaics(plan, items, formula)
    data = composite([m.data for m in layers], method)
    inside, weights = rasterops.area_mask_and_weights(plan)
    stats = rasterops.summarize(rasterops.sample_from_array(data, inside, weights))
    used = [item for m in layers for item in m.items]
    return {
        "statistics": stats,
        "dates": [m.date for m in layers],
        "items_used": used,
        "cloud_pixels": sum(m.cloud_pixels for m in layers),
        "pixels_read": pixels_read,
        "resolution": plan.resolution,
        "geographic": plan.geographic,
    }


def scene_series(limits: ReadLimits, items: Sequence[SceneItem], area: Area, formula: str) -> dict[str, Any]:
    plan = item_grid(limits, items[0], area)
    layers, pixels_read = mosaics(plan, items, formula)
    inside, weights = rasterops.area_mask_and_weights(plan)
    series = []
    for mosaic in layers:
        sample = rasterops.sample_from_array(mosaic.data, inside, weights)
        point: dict[str, Any] = {"date": mosaic.date, "items": len(mosaic.items)}
        if sample.values.size and sample.weights.sum() > 0:
            point["mean"] = rasterops.round_value(float(np.average(sample.values, weights=sample.weights)))
            point["valid_fraction"] = round(float(sample.weights.sum() / sample.total_weight), 4)
        else:
            point["mean"] = None
            point["valid_fraction"] = 0.0
        series.append(point)
    return {"series": series, "pixels_read": pixels_read, "resolution": plan.resolution, "geographic": plan.geographic}


def scene_point(items: Sequence[SceneItem], lon: float, lat: float) -> list[dict[str, Any] | None]:
    """Each item's asset values at a point (None: the point is outside the item or every value is
    nodata), with the pixel centre."""
    out: list[dict[str, Any] | None] = []
    for item in items:
        values: dict[str, float | None] = {}
        centre = None
        for key in item.hrefs:
            # Every variable is read, none chosen by an expression: a missing one is the collection's.
            with item.open(key, "collection_id") as (ds, band):
                point = rasterops.sample_point(ds, lon, lat)
            if not point.inside:
                break
            value = point.values[band - 1]
            scale, offset = item.scaling.get(key, (1.0, 0.0))
            values[key] = None if value is None else rasterops.round_value(value * scale + offset, 8)
            centre = point.pixel_center
        if len(values) < len(item.hrefs) or all(v is None for v in values.values()):
            out.append(None)
        else:
            out.append({"values": values, "pixel_center": centre})
    return out
