"""The JSON the tools answer with: collections, bands, times, areas, classes and summaries written
out as a small model reads them best, and every value made JSON-safe."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stacgis_raster import rasterops
from stacgis_raster.reads import Area
from stacgis_raster.records import BandInfo, CollectionRecord, ItemRecord
from stacgis_raster.stac_fields import iso as stac_iso
from stacgis_raster.validation import BBox, TimeInterval, boxes_overlap


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
    return stac_iso(value) if value else None


def band_description(band: BandInfo) -> dict[str, Any]:
    """A band as `get_raster_info` lists it."""
    out: dict[str, Any] = {"band": band.index, "name": band.name}
    if band.common_name:
        out["common_name"] = band.common_name
    if band.description:
        out["description"] = band.description
    out["unit"] = band.unit
    if band.classes:
        out["classes"] = {str(k): v for k, v in band.classes.items()}
    return out


def collection_summary(record: CollectionRecord) -> dict[str, Any]:
    """Compact description for listings."""
    units = sorted({b.unit for b in record.bands if b.unit})
    out: dict[str, Any] = {
        "id": record.id,
        "title": record.title,
        "bbox": [round(v, 4) for v in record.bbox] if record.bbox else None,
        "time": record.temporal_label() if record.time_resolved else "not time-resolved",
        "bands": len(record.bands),
        "units": units,
        "kind": "categorical" if record.categorical else "continuous",
    }
    if record.item_count is not None:
        out["items"] = record.item_count
    if record.scenes:
        out["kind"] = "data cube" if record.cube_dimensions else "scenes"
        out["variables" if record.cube_dimensions else "assets"] = list(record.asset_bands)
    return out


def collection_details(record: CollectionRecord) -> dict[str, Any]:
    """Everything `get_raster_info` says of a collection, with its tile URLs."""
    out = collection_summary(record)
    out.pop("units")
    out["description"] = record.description
    out["keywords"] = record.keywords
    out["license"] = record.license
    out["providers"] = record.providers
    out["crs"] = record.proj_code
    out["resolution_m"] = record.resolution_m
    out["bands"] = [band_description(b) for b in record.bands]
    if record.cube_dimensions:
        out["kind"] = "data cube"
        out["variables"] = {key: band_description(band) for key, band in record.asset_bands.items()}
        out["dimensions"] = {
            name: {k: v for k, v in dim.items() if k in {"type", "extent", "step"}}
            | ({"steps": len(dim["values"])} if "values" in dim else {})
            for name, dim in record.cube_dimensions.items()
        }
    elif record.scenes:
        out["assets"] = {key: band_description(band) for key, band in record.asset_bands.items()}
        out["scene_tools"] = "search_items, get_scene_statistics (band math, mosaics, composites), get_scene_timeseries"
    out["time_resolved"] = record.time_resolved
    if record.time_resolved and record.items and not record.scenes:
        out["timesteps"] = [i.time_label() for i in record.items[:24]]
        if len(record.items) > 24:
            out["timesteps"].append(f"... {len(record.items) - 24} more")
    if record.provenance:
        out["provenance"] = record.provenance
    out["tiles"] = f"/tiles/{record.id}/{{z}}/{{x}}/{{y}}.png"
    out["tilejson"] = f"/tiles/{record.id}/tilejson.json"
    out["render_defaults"] = record.render or None
    return out


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
    out["area_km2"] = rasterops.round_value(rasterops.spherical_area_km2(area.geometry), 6)
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
        "mean": rasterops.round_value(float(np.mean([v for _, v in steps]))),
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


def collection_listing(
    records: Sequence[CollectionRecord], bbox: BBox | None, interval: TimeInterval | None
) -> dict[str, Any]:
    """`list_raster_collections`: the collections meeting the area and period, by id."""
    out = []
    for record in sorted(records, key=lambda r: r.id):
        if not boxes_overlap(bbox, record.bbox):
            continue
        if interval and record.time_resolved and not interval.overlaps(record.start, record.end):
            continue
        out.append(collection_summary(record))
    result: dict[str, Any] = {"count": len(out), "collections": out}
    if interval:
        result["note"] = "collections that are not time-resolved are listed regardless of datetime"
    return result


def catalogue_json(records: Sequence[CollectionRecord]) -> dict[str, Any]:
    """The listing plus the keywords and band names a client needs to tell which collection holds
    which variable."""
    out = [
        {**collection_summary(r), "keywords": r.keywords, "band_names": [b.name for b in r.bands]}
        for r in sorted(records, key=lambda r: r.id)
    ]
    return {"count": len(out), "collections": out}


def search_json(
    query: str, records: Sequence[CollectionRecord], hits: Sequence[tuple[float, CollectionRecord]]
) -> dict[str, Any]:
    """`search_raster_collections`: the hits with their scores, or every id when nothing matched."""
    found = [{**collection_summary(r), "score": round(s, 2)} for s, r in hits]
    result: dict[str, Any] = {"query": query, "count": len(found), "collections": found}
    if not found:
        result["hint"] = "nothing matched; available ids: " + ", ".join(sorted(r.id for r in records))
    return result


def band_head(record: CollectionRecord, info: BandInfo, place_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a result about one band starts with: the collection, the band and its unit, the place."""
    return {
        "collection_id": record.id,
        "band": band_json(info),
        "unit": info.unit,
        **({"place": place_info} if place_info else {}),
    }


def statistics_json(
    record: CollectionRecord,
    info: BandInfo,
    area: Area,
    plan: rasterops.ReadPlan,
    items: Sequence[ItemRecord],
    note: str,
    stats: dict[str, Any],
) -> dict[str, Any]:
    result = {
        **band_head(record, info),
        "area": area_json(area, plan),
        "time": time_json(record, items, note),
        "resolution": plan.resolution,
        "weighting": weighting(plan),
        "statistics": stats,
    }
    if len(items) > 1:
        result["composite"] = f"per-pixel mean of {len(items)} time steps"
    return result


def cell_statistics_json(
    record: CollectionRecord, info: BandInfo, point: tuple[float, float], found: dict[str, Any]
) -> dict[str, Any]:
    """Statistics of the one cell under a point, from `point_json`'s answer there."""
    value = (found["results"][-1].get("values") or {}).get(info.name)
    reading = value.get("value") if isinstance(value, dict) else value
    statistics: dict[str, Any] = {"valid_pixels": 0 if reading is None else 1}
    if reading is not None:
        statistics.update({"min": reading, "max": reading, "mean": reading})
        if isinstance(value, dict) and "class" in value:
            statistics["majority"] = value["class"]
    return {
        **band_head(record, info),
        "area": {
            "type": "point",
            "lon": point[0],
            "lat": point[1],
            "note": "a box of zero size is a point: the value of the cell under it",
        },
        "time": found["time"],
        "statistics": statistics,
    }


def multi_point_entry(record: CollectionRecord, single: dict[str, Any]) -> dict[str, Any]:
    """One collection's line of `query_multiple_rasters_point`, from `point_json`'s answer."""
    entry: dict[str, Any] = {"collection_id": record.id, "title": record.title, "units": single["units"]}
    first = single["results"][-1]
    entry.update({k: v for k, v in first.items() if k in {"values", "time", "inside"}})
    if "note" in single:
        entry["note"] = single["note"]
    return entry


def timeseries_json(
    record: CollectionRecord,
    info: BandInfo,
    place_info: dict[str, Any] | None,
    x: float,
    y: float,
    items: Sequence[ItemRecord],
    values: Sequence[rasterops.PointValue],
) -> dict[str, Any]:
    points: list[dict[str, Any]] = [
        {
            "time": iso(i.start),
            "end": iso(i.end) if i.end != i.start else None,
            "value": v.values[info.index - 1] if v.inside else None,
        }
        for i, v in zip(items, values, strict=True)
    ]
    valid = [float(p["value"]) for p in points if p["value"] is not None]
    out: dict[str, Any] = {
        **band_head(record, info, place_info),
        "lon": x,
        "lat": y,
        "pixel_center": next(v.pixel_center for v in values if v.inside),
        "count": len(points),
        "points": [{k: v for k, v in p.items() if v is not None or k == "value"} for p in points],
    }
    if valid:
        out["summary"] = {"min": min(valid), "max": max(valid), "mean": rasterops.round_value(float(np.mean(valid)))}
    else:
        out["note"] = "no data at this point in any time step"
    return out


def zonal_json(
    record: CollectionRecord,
    info: BandInfo,
    place_info: dict[str, Any] | None,
    area: Area,
    items: Sequence[ItemRecord],
    note: str,
    per_item: Sequence[tuple[dict[str, Any], Any, float]],
) -> dict[str, Any]:
    """Zonal statistics of each item read: (statistics, resolution, fraction of the area inside)."""
    first_stats, resolution, inside_fraction = per_item[0]
    result: dict[str, Any] = {
        **band_head(record, info, place_info),
        "area": area_json(area, inside_fraction=inside_fraction),
        "time": time_json(record, items, note),
        "resolution": resolution,
        "method": "exact cell coverage fractions (exactextract) weighted by cell area",
    }
    if len(items) == 1:
        result["statistics"] = first_stats
    else:
        result["per_time_step"] = [
            {
                "time": i.time_label(),
                **{k: s.get(k) for k in ("mean", "min", "max", "valid_fraction", "majority") if k in s},
            }
            for i, (s, _r, _f) in zip(items, per_item, strict=True)
        ]
        means = [float(s["mean"]) for s, _r, _f in per_item if "mean" in s]
        if means:
            result["summary"] = {
                "mean_of_means": rasterops.round_value(float(np.mean(means))),
                "min": min(s["min"] for s, _r, _f in per_item if "min" in s),
                "max": max(s["max"] for s, _r, _f in per_item if "max" in s),
            }
    return result


def change_json(
    record: CollectionRecord,
    info: BandInfo,
    place_info: dict[str, Any] | None,
    area: Area,
    plan: rasterops.ReadPlan,
    period_a: tuple[TimeInterval, Sequence[ItemRecord]],
    period_b: tuple[TimeInterval, Sequence[ItemRecord]],
    threshold: float,
    stats: dict[str, Any],
) -> dict[str, Any]:
    """The change between two periods; `stats` is the read's answer without its plan."""
    (a, items_a), (b, items_b) = period_a, period_b
    summary = change_summary(stats["change"], stats["statistics_a"], stats["statistics_b"], info.unit, (a.text, b.text))
    return {
        "collection_id": record.id,
        **({"summary": summary} if summary else {}),
        "band": band_json(info),
        "unit": info.unit,
        **({"place": place_info} if place_info else {}),
        "area": area_json(area, plan),
        "period_a": {"query": a.text, "time_steps": [i.time_label() for i in items_a]},
        "period_b": {"query": b.text, "time_steps": [i.time_label() for i in items_b]},
        "resolution": plan.resolution,
        "weighting": weighting(plan),
        "threshold": threshold,
        **stats,
    }
