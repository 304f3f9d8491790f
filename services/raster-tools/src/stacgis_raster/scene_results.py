"""The JSON the scene tools answer with (search_items, get_scene_statistics, get_scene_timeseries and
`query_raster_point` on scenes): items, composites and series written out as a small model reads them
best. The shared pieces (areas, times) are in `results`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stacgis_raster.expressions import Expression
from stacgis_raster.reads import Area
from stacgis_raster.records import CollectionRecord, ItemRecord
from stacgis_raster.results import area_json
from stacgis_raster.validation import TimeInterval

# Item ids and dates listed in full up to this many.
LISTED_IDS = 20


def item_json(item: ItemRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"id": item.id, "datetime": item.time_label()}
    if item.cloud_cover is not None:
        out["cloud_cover"] = item.cloud_cover
    out["bbox"] = [round(v, 5) for v in item.bbox] if item.bbox else None
    out["assets"] = list(item.assets)
    return out


def item_search_json(
    record: CollectionRecord,
    found: Sequence[ItemRecord],
    shown: Sequence[ItemRecord],
    *,
    page: int,
    pages: int,
    capped: bool,
    max_items: int,
    place_info: dict[str, Any] | None,
    interval: TimeInterval | None,
    datetime_given: bool,
) -> dict[str, Any]:
    """One page of `search_items`: `found` all matching items, `shown` those of the page."""
    result: dict[str, Any] = {
        "collection_id": record.id,
        "count": len(found),
        "count_is_lower_bound": capped,
        "page": page,
        "pages": pages,
        "returned": len(shown),
        "items": [item_json(i) for i in shown],
    }
    if page < pages:
        result["next_page"] = page + 1
    if capped:
        result["note"] = (
            f"only the first {max_items} items were searched (RASTER_SCENE_MAX_ITEMS); narrow the area or period"
        )
    if place_info is not None:
        result["place"] = place_info
    if interval is not None:
        result["datetime"] = interval.text
    elif datetime_given and not record.time_resolved:
        result["datetime"] = "collection is not time-resolved; datetime does not apply"
    if not found:
        result["note"] = "no items match; widen the area, the period or the cloud limit"
    return result


def scene_head(
    record: CollectionRecord,
    parsed: Expression,
    area: Area,
    place_info: dict[str, Any] | None,
    capped: bool,
    max_items: int,
) -> dict[str, Any]:
    """What scene statistics and series both start with: the expression, its unit and the area."""
    units = {record.asset_bands[k].unit for k in parsed.assets}
    out: dict[str, Any] = {
        "collection_id": record.id,
        "expression": parsed.text,
        "formula": parsed.formula,
        "unit": units.pop() if len(units) == 1 and len(parsed.assets) == 1 else None,
        "area": area_json(area),
    }
    scaled = [k for k in parsed.assets if record.asset_bands[k].scale is not None or record.asset_bands[k].offset]
    if scaled:
        out["scaled"] = f"{', '.join(scaled)} read as stored value x scale + offset (raster:bands)"
    if place_info is not None:
        out["place"] = place_info
    if capped:
        out["note"] = f"only the first {max_items} matching items were used (RASTER_SCENE_MAX_ITEMS)"
    return out


def read_figures(done: dict[str, Any]) -> dict[str, Any]:
    """What a read cost and how its pixels were weighted."""
    return {
        "pixels_read": done["pixels_read"],
        "resolution": done["resolution"],
        "weighting": "cos(latitude) area weights" if done["geographic"] else "equal-area pixels",
    }


def scene_statistics_json(
    head: dict[str, Any],
    record: CollectionRecord,
    items: Sequence[ItemRecord],
    done: dict[str, Any],
    method: str,
    cloud_mask: bool,
) -> dict[str, Any]:
    """`get_scene_statistics` from the read's answer `done`; `cloud_mask`: the items' masks were applied."""
    result = dict(head)
    dates = done["dates"]
    used = done["items_used"]
    result["items"] = {
        "matched": len(items),
        "used": len(used),
        "ids": used[:LISTED_IDS] + ([f"... {len(used) - LISTED_IDS} more"] if len(used) > LISTED_IDS else []),
    }
    result["dates"] = dates if len(dates) <= LISTED_IDS else [dates[0], f"... {len(dates) - 2} more", dates[-1]]
    result["composite"] = (
        f"{method} over {len(dates)} dates of per-date mosaics" if len(dates) > 1 else "one date: a mosaic of its items"
    )
    result["mosaic"] = "least cloudy item first where items overlap"
    if record.cloud_mask is not None and cloud_mask:
        result["cloud_mask"] = (
            f"{done['cloud_pixels']} item pixels classed cloud in asset '{record.cloud_mask[0]}' left out"
        )
    result.update(read_figures(done))
    result["statistics"] = done["statistics"]
    return {"summary": _statistics_sentence(result, method, len(dates)), **result}


def scene_timeseries_json(head: dict[str, Any], items: Sequence[ItemRecord], done: dict[str, Any]) -> dict[str, Any]:
    """`get_scene_timeseries` from the read's answer `done`."""
    result = dict(head)
    series = done["series"]
    steps = [p for p in series if p["mean"] is not None]
    result["items"] = {"matched": len(items)}
    result["series"] = series
    if steps:
        # Lowest and highest with their dates, as `get_timeseries` gives them: "which month was
        # wettest" is then read, not worked out by the model.
        low = min(steps, key=lambda p: p["mean"])
        high = max(steps, key=lambda p: p["mean"])
        unit = f" {result['unit']}" if result.get("unit") else ""
        # First in the result, with a sentence: asked which month was wettest, the 1.5B model
        # named the series' first month when the extremes came after the series.
        result = {
            "summary": {
                "text": f"highest mean {high['mean']}{unit} in {_period_label(high['date'])}, lowest "
                f"{low['mean']}{unit} in {_period_label(low['date'])}, over {len(series)} dates",
                "steps": len(series),
                "min": {"value": low["mean"], "date": low["date"]},
                "max": {"value": high["mean"], "date": high["date"]},
                "mean": round(sum(p["mean"] for p in steps) / len(steps), 6),
            },
            **result,
        }
    result.update(read_figures(done))
    return result


def scene_point_results(
    record: CollectionRecord, chosen: Sequence[ItemRecord], sampled: Sequence[dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """One entry per date: the first (least cloudy) item of the date with a value at the point."""
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item, value in zip(chosen, sampled, strict=True):
        label = item.time_label() or ""
        if value is None or label in seen:
            continue  # outside this item, or a less cloudy item of the date already answered
        seen.add(label)
        entry: dict[str, Any] = {"item": item.id}
        if record.time_resolved:
            entry["time"] = label
        results.append({**entry, **value})
    return results


def scene_point_json(
    record: CollectionRecord,
    place_info: dict[str, Any] | None,
    x: float,
    y: float,
    results: list[dict[str, Any]],
    *,
    dated: bool,
) -> dict[str, Any]:
    """`query_raster_point` on a scene collection; `dated`: a datetime was asked for."""
    note = f"{len(results)} date(s)" if dated else "latest date used; pass datetime to choose"
    return {
        "collection_id": record.id,
        **({"place": place_info} if place_info else {}),
        "lon": x,
        "lat": y,
        "units": {key: band.unit for key, band in record.asset_bands.items()},
        "time": note if record.time_resolved else "collection is not time-resolved",
        "results": results,
    }


def _period_label(interval: str) -> str:
    """'1999-09' for a month's interval ('1999-09-01T00:00:00Z/1999-09-30T23:59:59Z'), else its first day."""
    start, _, end = interval.partition("/")
    if end and start[:7] == end[:7] and start[8:10] == "01":
        return start[:7]
    return start[:10]


def _statistics_sentence(result: dict[str, Any], method: str, dates: int) -> str:
    """The statistics in one sentence, the mean first: asked for "the mean of the maximum composite",
    the 1.5B model quoted p75 from the nested result; it copies a sentence faithfully."""
    stats = result["statistics"]
    unit = f" {result['unit']}" if result.get("unit") else ""
    of = f"the {method} composite of {dates} dates" if dates > 1 else "one date's mosaic"
    if stats.get("mean") is None:
        return f"no valid pixel of {result['expression']} in {of} over the area"
    return (
        f"mean {stats['mean']}{unit} (min {stats['min']}, max {stats['max']}) of {result['expression']} in {of}"
        " over the area"
    )
