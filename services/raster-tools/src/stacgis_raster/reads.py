"""The raster tools' heavy reads, as plain functions of picklable values.

They run in the worker processes of `workers.ReadPool`, so a read past its deadline is stopped by
ending its process; nothing here may depend on state of the serving process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import rasterio
from shapely.geometry.base import BaseGeometry

from stacgis_raster import rasterops
from stacgis_raster.records import BandInfo


@dataclass(frozen=True)
class Area:
    geometry: BaseGeometry  # WGS 84
    kind: str  # "bbox" | "geometry" | "feature"
    argument: str
    label: Any


@dataclass(frozen=True)
class ReadLimits:
    stats_target_pixels: int
    zonal_max_cells: int
    max_pixels_per_read: int


def ping() -> bool:
    """A read worker is up (readiness: the first tile does not wait for worker start-up)."""
    return True


def read_composite(
    limits: ReadLimits, hrefs: Sequence[str], area: Area, band: int
) -> tuple[np.ma.MaskedArray, rasterops.ReadPlan]:
    """Mean over time of `band` on the grid of the first item (one item: just that item)."""
    with rasterio.open(hrefs[0]) as first:
        plan = rasterops.plan_read(
            first,
            area.geometry,
            target_pixels=limits.stats_target_pixels,
            max_pixels=limits.max_pixels_per_read,
            argument=area.argument,
        )
        stack = [rasterops.read_band(first, plan, band)]
    for href in hrefs[1:]:
        with rasterio.open(href) as ds:
            stack.append(rasterops.read_band(ds, plan, band))
    if len(stack) == 1:
        return stack[0], plan
    return np.ma.stack(stack).mean(axis=0), plan


def composite_stats(
    limits: ReadLimits, hrefs: Sequence[str], area: Area, info: BandInfo
) -> tuple[dict[str, Any], rasterops.ReadPlan]:
    data, plan = read_composite(limits, hrefs, area, info.index)
    inside, weights = rasterops.area_mask_and_weights(plan)
    sample = rasterops.sample_from_array(data, inside, weights)
    return rasterops.summarize(sample, classes=info.classes), plan


def point_values(hrefs: Sequence[str], lon: float, lat: float) -> list[rasterops.PointValue]:
    out = []
    for href in hrefs:
        with rasterio.open(href) as ds:
            out.append(rasterops.sample_point(ds, lon, lat))
    return out


def zonal_items(
    limits: ReadLimits, hrefs: Sequence[str], area: Area, info: BandInfo
) -> list[tuple[dict[str, Any], dict[str, Any], float]]:
    out = []
    for href in hrefs:
        with rasterio.open(href) as ds:
            plan = rasterops.plan_read(
                ds,
                area.geometry,
                target_pixels=limits.zonal_max_cells,
                max_pixels=limits.max_pixels_per_read,
                argument=area.argument,
            )
            level = None if plan.factor == 1 else sorted(ds.overviews(info.index)).index(plan.factor)
        with rasterops.open_dataset(href, level) as ds:
            geom = rasterops.to_dataset_crs(area.geometry, ds.crs or rasterops.WGS84)
            sample = rasterops.exact_sample(ds, info.index, geom)
        out.append((rasterops.summarize(sample, classes=info.classes), plan.resolution, plan.inside_fraction))
    return out


def change_stats(
    limits: ReadLimits,
    hrefs_a: Sequence[str],
    hrefs_b: Sequence[str],
    area: Area,
    info: BandInfo,
    threshold: float,
) -> dict[str, Any]:
    data_a, plan = read_composite(limits, hrefs_a, area, info.index)
    stack_b = []
    for href in hrefs_b:
        with rasterio.open(href) as ds:
            stack_b.append(rasterops.read_band(ds, plan, info.index))
    data_b = stack_b[0] if len(stack_b) == 1 else np.ma.stack(stack_b).mean(axis=0)
    inside, weights = rasterops.area_mask_and_weights(plan)
    out: dict[str, Any] = {
        "statistics_a": rasterops.summarize(rasterops.sample_from_array(data_a, inside, weights), classes=info.classes),
        "statistics_b": rasterops.summarize(rasterops.sample_from_array(data_b, inside, weights), classes=info.classes),
        "_plan": plan,
    }
    both = inside & ~np.ma.getmaskarray(data_a) & ~np.ma.getmaskarray(data_b)
    w = np.asarray(weights)[both]
    if w.sum() <= 0:
        out["change"] = {"note": "no pixel has data in both periods"}
        return out
    va = np.ma.getdata(data_a)[both].astype("float64")
    vb = np.ma.getdata(data_b)[both].astype("float64")
    total = float(w.sum())
    if info.classes:
        changed = va.astype("int64") != vb.astype("int64")
        out["change"] = {"changed_fraction": round(float(w[changed].sum() / total), 4)}
        return out
    diff = vb - va
    diff_sample = rasterops.Sample(diff, w, total)
    change = rasterops.summarize(diff_sample)
    change.pop("valid_fraction", None)
    change["rose_fraction"] = round(float(w[diff > threshold].sum() / total), 4)
    change["fell_fraction"] = round(float(w[diff < -threshold].sum() / total), 4)
    change["unchanged_fraction"] = round(float(w[np.abs(diff) <= threshold].sum() / total), 4)
    mean_a = float(np.average(va, weights=w))
    if mean_a != 0:
        change["mean_change_percent"] = rasterops.round_value(
            100 * (float(np.average(vb, weights=w)) - mean_a) / abs(mean_a), 4
        )
    change["compared_fraction"] = round(total / float(np.asarray(weights)[inside].sum()), 4)
    out["change"] = change
    return out
