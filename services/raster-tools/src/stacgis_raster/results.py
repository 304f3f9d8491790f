"""The JSON the tools answer with: bands, times, areas, classes and summaries written out as a
small model reads them best, and every value made JSON-safe."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stacgis_raster import rasterops
from stacgis_raster.catalog import BandInfo, CollectionRecord, ItemRecord
from stacgis_raster.reads import Area


def plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to null, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if value else None


def band_json(band: BandInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"index": band.index, "name": band.name, "unit": band.unit}
    if band.description:
        out["description"] = band.description
    return out


def classify(value: float | None, band: BandInfo) -> Any:
    if value is None or not band.classes:
        return value
    return {"value": int(value), "class": band.classes.get(int(value), "unnamed class")}


def area_json(
    area: Area, plan: rasterops.ReadPlan | None = None, inside_fraction: float | None = None
) -> dict[str, Any]:
    fraction = plan.inside_fraction if plan is not None else inside_fraction
    out: dict[str, Any] = {"type": area.kind, area.kind if area.kind != "geometry" else "geometry_type": area.label}
    out["area_km2"] = rasterops._round(rasterops.spherical_area_km2(area.geometry), 6)
    if fraction is not None:
        out["fraction_inside_extent"] = round(fraction, 4)
        out["clipped"] = fraction < 0.9999
    return out


def time_json(record: CollectionRecord, items: Sequence[ItemRecord], note: str) -> dict[str, Any]:
    out: dict[str, Any] = {"note": note}
    if not record.time_resolved:
        # Item dates of undated collections are file timestamps, not acquisition times.
        return out
    labels = [i.time_label() for i in items]
    out["time_steps"] = labels if len(labels) <= 12 else [*labels[:6], "...", *labels[-6:]]
    out["items"] = len(items)
    return out


def weighting(plan: rasterops.ReadPlan) -> str:
    if plan.geographic:
        return "area-weighted (cos latitude) on a geographic grid; pixel centres inside the area"
    return "equal-area pixels of a projected grid; pixel centres inside the area"


def series_summary(
    items: Sequence[ItemRecord], values: Sequence[rasterops.PointValue], band: BandInfo
) -> dict[str, Any] | None:
    """Lowest, highest and mean value of the first band over the time steps, with their times."""
    steps = []
    for item, value in zip(items, values, strict=True):
        reading = value.values[band.index - 1] if value.inside else None
        if reading is not None:
            steps.append((item.time_label(), float(reading)))
    if len(steps) < 2 or band.classes:
        return None
    low = min(steps, key=lambda s: s[1])
    high = max(steps, key=lambda s: s[1])
    return {
        "band": band.name,
        "count": len(steps),
        "min": {"value": low[1], "time": low[0]},
        "max": {"value": high[1], "time": high[0]},
        "mean": rasterops._round(float(np.mean([v for _, v in steps]))),
    }


def change_summary(
    change: dict[str, Any], a: dict[str, Any], b: dict[str, Any], unit: str | None, periods: tuple[str, str]
) -> str:
    """The comparison in one sentence, sign and unit written out: a small model copies a sentence
    more faithfully than it picks the right key of a nested result."""
    mean_a, mean_b, diff = a.get("mean"), b.get("mean"), change.get("mean")
    if not isinstance(diff, (int, float)) or not all(isinstance(v, (int, float)) for v in (mean_a, mean_b)):
        return ""
    u = f" {unit}" if unit else ""
    text = (
        f"mean {mean_a}{u} in {periods[0]}, {mean_b}{u} in {periods[1]}: a change of "
        f"{'+' if diff > 0 else ''}{diff}{u} ({'rose' if diff > 0 else 'fell' if diff < 0 else 'unchanged'})"
    )
    percent = change.get("mean_change_percent")
    if isinstance(percent, (int, float)):
        text += f", {'+' if percent > 0 else ''}{percent} % of the {periods[0]} mean"
    return text


def point_json(
    record: CollectionRecord,
    items: Sequence[ItemRecord],
    values: Sequence[rasterops.PointValue],
    x: float,
    y: float,
    place_info: dict[str, Any] | None,
    note: str,
    series: dict[str, Any] | None,
) -> dict[str, Any]:
    """Every band at the point per item read, the class in words first when a band holds classes."""
    results = []
    for item, value in zip(items, values, strict=True):
        entry: dict[str, Any] = {"item": item.id}
        if record.time_resolved:
            entry["time"] = item.time_label()
        if not value.inside:
            entry["inside"] = False
        else:
            entry["values"] = {b.name: classify(v, b) for b, v in zip(record.bands, value.values, strict=False)}
            entry["pixel_center"] = value.pixel_center
        results.append(entry)
    inside = any(v.inside for v in values)
    out: dict[str, Any] = {
        "collection_id": record.id,
        **({"place": place_info} if place_info else {}),
        "lon": x,
        "lat": y,
        "units": {b.name: b.unit for b in record.bands},
        "time": note,
        "results": results,
    }
    classes = {
        name: str(value["class"])
        for name, value in (results[-1].get("values") or {}).items()
        if isinstance(value, dict) and "class" in value
    }
    if classes:
        # The class in words, first and alone: asked "land or water?" the model answered "land"
        # from "land = 0: Water" (the band's name); the band is named only when there are several.
        named = [f"{label} (band {name})" for name, label in classes.items()]
        if len(classes) == 1:
            named = [*classes.values()]
        out = {"class_at_point": "; ".join(named), **out}
    if series and inside:
        out["all_time_steps"] = series
    if not inside:
        out["note"] = f"the point is outside the collection's extent {record.bbox}"
    elif all(v is None for r in results for v in (r.get("values") or {}).values()):
        out["note"] = "no data at this point (nodata value)"
    return out
