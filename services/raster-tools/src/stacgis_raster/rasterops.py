"""Blocking raster reads and the statistics computed from them.

Geometries arrive in WGS 84; each read transforms them into the dataset's CRS,
reads only the window that covers them (from an overview when the area is
large), and weights pixels by their area so that statistics on geographic grids
are not biased towards the poles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import rasterio
import shapely
from affine import Affine
from exactextract import exact_extract
from exactextract.raster import RasterioRasterSource
from pyproj import Transformer
from rasterio.crs import CRS
from rasterio.enums import Resampling
from rasterio.features import geometry_mask
from rasterio.io import DatasetReader
from rasterio.vrt import WarpedVRT
from rasterio.windows import Window, from_bounds
from shapely.geometry import box, mapping
from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import ArgumentError

WGS84 = CRS.from_epsg(4326)
PERCENTILES = (5, 25, 50, 75, 95)
T = TypeVar("T")


def in_gdal_env(env: Mapping[str, Any], fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` under the GDAL configuration `env` (catalog threads open STAC documents with it)."""
    with rasterio.Env(**env):
        return fn(*args)


def to_dataset_crs(geom: BaseGeometry, crs: CRS) -> BaseGeometry:
    """Reproject a WGS 84 geometry, densified first so straight edges follow the projection."""
    if crs == WGS84 or (crs.is_geographic and crs.to_epsg() == 4326):
        return geom
    minx, miny, maxx, maxy = geom.bounds
    step = max(maxx - minx, maxy - miny) / 64 or 1e-6
    dense = shapely.segmentize(geom, step)
    transformer = Transformer.from_crs(WGS84, crs, always_xy=True)
    return shapely.transform(dense, lambda xy: np.column_stack(transformer.transform(xy[:, 0], xy[:, 1])))


AUTHALIC_RADIUS_KM = 6371.0072


def spherical_area_km2(geom: BaseGeometry) -> float:
    """Area of a lon/lat geometry on the authalic sphere.

    Maps (lon, lat) to (lon in radians, sin lat), an equal-area projection, after
    densifying edges; unlike geodesic polygon area it also works for a box
    spanning the whole globe or touching a pole.
    """
    dense = shapely.segmentize(geom, 0.25)
    projected = shapely.transform(
        dense, lambda xy: np.column_stack([np.radians(xy[:, 0]), np.sin(np.radians(np.clip(xy[:, 1], -90, 90)))])
    )
    return float(projected.area) * AUTHALIC_RADIUS_KM**2


def _area(geom: BaseGeometry, geographic: bool) -> float:
    return spherical_area_km2(geom) if geographic else float(geom.area)


def describe_resolution(ds: DatasetReader | WarpedVRT, factor: float) -> dict[str, Any]:
    xres, yres = ds.res[0] * factor, ds.res[1] * factor
    out: dict[str, Any] = {"x": round(xres, 8), "y": round(yres, 8)}
    if ds.crs is not None and ds.crs.is_geographic:
        lat = math.radians((ds.bounds.top + ds.bounds.bottom) / 2)
        out["units"] = "degree"
        out["approx_m"] = round((xres * 111_320 * math.cos(lat) + yres * 111_320) / 2, 1)
    else:
        out["units"] = "metre"
    out["overview_factor"] = factor
    out["native"] = factor == 1
    return out


@dataclass
class ReadPlan:
    """Where and at which resolution to read one area of one grid."""

    crs: CRS
    geometry: BaseGeometry  # in `crs`
    window: Window
    out_shape: tuple[int, int]
    transform: Affine  # of the (possibly decimated) output grid
    factor: int
    inside_fraction: float
    resolution: dict[str, Any]
    geographic: bool
    source_transform: Affine
    source_shape: tuple[int, int]


def plan_read(
    ds: DatasetReader, geom_wgs84: BaseGeometry, *, target_pixels: int, max_pixels: int, argument: str
) -> ReadPlan:
    """Pick the window and overview level for reading `geom_wgs84` from `ds`.

    The finest level whose pixel count stays under `target_pixels` is used; if
    even the coarsest level exceeds `max_pixels` the request is refused.
    """
    crs = ds.crs or WGS84
    geom = to_dataset_crs(geom_wgs84, crs)
    footprint = box(*ds.bounds)
    geographic = bool(crs.is_geographic)
    inside = geom.intersection(footprint)
    if inside.is_empty:
        raise ArgumentError(argument, "the area does not overlap the collection's extent")
    requested_area = _area(geom, geographic) if geom.area > 0 else 0.0
    inside_fraction = _area(inside, geographic) / requested_area if requested_area else 1.0
    window = from_bounds(*inside.bounds, transform=ds.transform)
    col0 = max(0, math.floor(window.col_off + 1e-9))
    row0 = max(0, math.floor(window.row_off + 1e-9))
    col1 = min(ds.width, math.ceil(window.col_off + window.width - 1e-9))
    row1 = min(ds.height, math.ceil(window.row_off + window.height - 1e-9))
    window = Window(col0, row0, max(1, col1 - col0), max(1, row1 - row0))
    full = int(window.width * window.height)
    factors = [1, *sorted(ds.overviews(1))]
    factor = factors[-1]
    for candidate in factors:
        if full / (candidate * candidate) <= target_pixels:
            factor = candidate
            break
    height = max(1, round(window.height / factor))
    width = max(1, round(window.width / factor))
    if width * height > max_pixels:
        raise ArgumentError(
            argument,
            f"the area spans {full} pixels ({width * height} even at the coarsest overview), "
            f"over the limit of {max_pixels}; use a smaller area",
        )
    win_transform = ds.window_transform(window)
    transform = win_transform @ Affine.scale(window.width / width, window.height / height)
    return ReadPlan(
        crs,
        geom,
        window,
        (height, width),
        transform,
        factor,
        min(1.0, inside_fraction),
        describe_resolution(ds, factor),
        geographic,
        ds.transform,
        (ds.height, ds.width),
    )


def read_band(ds: DatasetReader, plan: ReadPlan, band: int) -> np.ma.MaskedArray:
    """Read `band` on the plan's grid; another grid is warped onto it (nearest)."""
    same_grid = (
        (ds.crs or WGS84) == plan.crs
        and ds.transform.almost_equals(plan.source_transform)
        and (ds.height, ds.width) == plan.source_shape
    )
    data: np.ma.MaskedArray
    if same_grid:
        data = ds.read(band, window=plan.window, out_shape=plan.out_shape, masked=True, resampling=Resampling.nearest)
        return data
    height, width = plan.out_shape
    with WarpedVRT(
        ds, crs=plan.crs, transform=plan.transform, width=width, height=height, resampling=Resampling.nearest
    ) as vrt:
        data = vrt.read(band, masked=True)
    return data


def area_mask_and_weights(plan: ReadPlan) -> tuple[np.ndarray, np.ndarray]:
    """Pixels whose centre lies in the geometry, and each pixel's relative area."""
    height, width = plan.out_shape
    inside = geometry_mask(
        [mapping(plan.geometry)], out_shape=(height, width), transform=plan.transform, invert=True, all_touched=False
    )
    if not inside.any():
        # An area smaller than one pixel still covers the pixels it touches.
        inside = geometry_mask(
            [mapping(plan.geometry)], out_shape=(height, width), transform=plan.transform, invert=True, all_touched=True
        )
    if plan.geographic:
        rows = np.arange(height) + 0.5
        lats = plan.transform.f + rows * plan.transform.e
        weights = np.cos(np.radians(np.clip(lats, -90, 90)))[:, np.newaxis]
        weights = np.broadcast_to(weights, (height, width))
    else:
        weights = np.ones((height, width))
    return inside, weights


@dataclass
class Sample:
    """Valid pixel values with their area weights, plus the weight of every covered cell."""

    values: np.ndarray
    weights: np.ndarray
    total_weight: float


def sample_from_array(data: np.ma.MaskedArray, inside: np.ndarray, weights: np.ndarray) -> Sample:
    valid = inside & ~np.ma.getmaskarray(data) & np.isfinite(np.ma.getdata(data))
    return Sample(
        values=np.ma.getdata(data)[valid].astype("float64"),
        weights=np.asarray(weights)[valid].astype("float64"),
        total_weight=float(np.asarray(weights)[inside].sum()),
    )


def exact_sample(ds: DatasetReader, band: int, geom: BaseGeometry) -> Sample:
    """Exact cell coverage fractions (exactextract) times cell area for a polygon."""
    coverage_weight = "area_spherical_m2" if ds.crs is None or ds.crs.is_geographic else "area_cartesian"
    feature = [{"type": "Feature", "properties": {}, "geometry": mapping(geom)}]
    result = exact_extract(
        RasterioRasterSource(ds, band),
        feature,
        [
            "v=values",
            f"w=coverage(coverage_weight={coverage_weight})",
            f"all=coverage(coverage_weight={coverage_weight},default_value=0)",
        ],
        output="geojson",
    )
    props = result[0]["properties"]
    values = np.asarray(props["v"], dtype="float64")
    weights = np.asarray(props["w"], dtype="float64")
    finite = np.isfinite(values)
    return Sample(values[finite], weights[finite], float(np.asarray(props["all"]).sum()))


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[int, ...]) -> list[float]:
    order = np.argsort(values, kind="stable")
    v = values[order]
    w = weights[order]
    cum = np.cumsum(w)
    # Midpoint rule: each value sits at the centre of its weight interval.
    positions = (cum - w / 2) / cum[-1]
    return [float(np.interp(q / 100, positions, v)) for q in qs]


def round_value(value: float, digits: int = 6) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, max(0, digits - math.floor(math.log10(abs(value))) - 1))


def summarize(sample: Sample, *, classes: dict[int, str] | None = None) -> dict[str, Any]:
    """Area-weighted statistics of a sample; class shares for categorical bands."""
    valid_fraction = float(sample.weights.sum() / sample.total_weight) if sample.total_weight else 0.0
    if sample.values.size == 0 or sample.weights.sum() <= 0:
        return {"valid_pixels": 0, "valid_fraction": 0.0, "note": "no valid data in the area"}
    out: dict[str, Any] = {"valid_pixels": int(sample.values.size), "valid_fraction": round(valid_fraction, 4)}
    if classes is not None:
        codes = sample.values.astype("int64")
        total = sample.weights.sum()
        shares: list[dict[str, Any]] = []
        for code in np.unique(codes):
            share = float(sample.weights[codes == code].sum() / total)
            shares.append(
                {"value": int(code), "name": classes.get(int(code), "unnamed class"), "fraction": round(share, 4)}
            )
        shares.sort(key=lambda s: -s["fraction"])
        # First, as one line: a small model reads "Land: 49.04 %" right where it took the first
        # fraction of the list for the class asked about.
        listed = "; ".join(f"{s['name']}: {100 * s['fraction']:.2f} %" for s in shares)
        out = {"shares": f"{listed} of the area", **out, "classes": shares, "majority": shares[0]["name"]}
        return out
    mean = float(np.average(sample.values, weights=sample.weights))
    variance = float(np.average((sample.values - mean) ** 2, weights=sample.weights))
    out.update(
        {
            "min": round_value(float(sample.values.min())),
            "max": round_value(float(sample.values.max())),
            "mean": round_value(mean),
            "std": round_value(math.sqrt(max(variance, 0.0))),
            "percentiles": {
                f"p{q}": round_value(v)
                for q, v in zip(
                    PERCENTILES, weighted_percentiles(sample.values, sample.weights, PERCENTILES), strict=True
                )
            },
        }
    )
    return out


@dataclass(frozen=True)
class PointValue:
    inside: bool
    values: list[float | None]
    pixel_center: tuple[float, float] | None
    row: int | None
    col: int | None


def sample_point(ds: DatasetReader, lon: float, lat: float) -> PointValue:
    crs = ds.crs or WGS84
    candidates = [(lon, lat)]
    if crs.is_geographic:
        candidates += [(lon + 360, lat), (lon - 360, lat)]  # grids stored 0..360 or past +-180
    for x_geo, y_geo in candidates:
        if crs.is_geographic:
            x, y = x_geo, y_geo
        else:
            x, y = Transformer.from_crs(WGS84, crs, always_xy=True).transform(x_geo, y_geo)
        b = ds.bounds
        if not (b.left <= x < b.right and b.bottom < y <= b.top):
            continue
        row, col = ds.index(x, y)
        row = min(max(row, 0), ds.height - 1)
        col = min(max(col, 0), ds.width - 1)
        data = ds.read(window=Window(col, row, 1, 1), masked=True)
        values: list[float | None] = []
        for band in range(data.shape[0]):
            cell = data[band, 0, 0]
            raw = float(np.ma.getdata(data)[band, 0, 0])
            values.append(None if cell is np.ma.masked or not math.isfinite(raw) else round_value(raw, 8))
        cx, cy = ds.xy(row, col)
        if not crs.is_geographic:
            cx, cy = Transformer.from_crs(crs, WGS84, always_xy=True).transform(cx, cy)
        elif cx > 180:
            cx -= 360
        elif cx < -180:
            cx += 360
        return PointValue(True, values, (round(cx, 6), round(cy, 6)), row, col)
    return PointValue(False, [None] * ds.count, None, None, None)


def open_dataset(href: str, overview_level: int | None = None) -> DatasetReader:
    if overview_level is None:
        return rasterio.open(href)
    return rasterio.open(href, overview_level=overview_level)
