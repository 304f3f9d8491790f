"""What the band and time arguments mean for a collection: the band named (or meant), the time
steps of `datetime` or of `start`/`end`, and a box of zero size as the point it is; and the other
arguments of the single-file tools parsed into typed values (collection id lists, change periods)."""

from __future__ import annotations

import math
import re
from typing import Any

from stacgis_common.arguments import ArgumentError
from stacgis_raster.errors import UpstreamError
from stacgis_raster.records import BandInfo, CollectionRecord
from stacgis_raster.validation import TimeInterval, parse_interval

# Names of statistics a model writes where a band is asked; no band is named so.
STATISTIC_WORDS = frozenset(
    {"mean", "average", "avg", "min", "minimum", "max", "maximum", "median", "sum", "std", "total", "count"}
    | {"share", "fraction", "percent", "percentage", "proportion", "majority", "mode", "class", "classes"}
)


def interval_for(record: CollectionRecord, value: Any) -> TimeInterval | None:
    """The `datetime` argument for a collection. One that is not time-resolved has no dates to choose
    from, so whatever a model put there ("not time-resolved", copied from the catalogue) is ignored;
    the result's time note says the collection is not time-resolved."""
    return parse_interval(value) if record.time_resolved else None


def select_band(record: CollectionRecord, band: Any, argument: str = "band") -> BandInfo:
    """The band a `band` argument means, read as meant where a small model writes it nearly right."""
    if not record.bands:
        raise UpstreamError(f"collection '{record.id}' describes no raster bands")
    if band is None or (isinstance(band, str) and band.strip().lower() in STATISTIC_WORDS):
        # "band": "mean" is a statistic the model wants, not a band: every result has them all.
        return record.bands[0]
    if isinstance(band, int) and not isinstance(band, bool):
        if 1 <= band <= len(record.bands):
            return record.bands[band - 1]
    elif isinstance(band, str):
        if band.isdigit() and 1 <= int(band) <= len(record.bands):
            return record.bands[int(band) - 1]
        for info in record.bands:
            if info.name.lower() == band.lower():
                return info
        wanted = band.strip().lower()
        # The quantity written as the band ("temperature" for tas) of a one-band collection about it.
        if len(record.bands) == 1 and wanted in {k.lower() for k in record.keywords}:
            return record.bands[0]
        # A class written as the band ("forest" for the share of Evergreen Forest): the band holding it.
        for info in record.bands:
            if wanted and any(wanted in name.lower() for name in (info.classes or {}).values()):
                return info
    names = ", ".join(f"{b.index}={b.name}" for b in record.bands)
    raise ArgumentError(argument, f"'{band}' is not a band of '{record.id}'; bands are {names}")


def series_interval(start: Any, end: Any) -> TimeInterval | None:
    """The period from `start` to `end` of a time series (either may be open), errors naming them."""
    first = parse_interval(start, "start")
    last = parse_interval(end, "end")
    if not first and not last:
        return None
    interval = TimeInterval(
        first.start if first else None, last.end if last else None, f"{start or '..'}/{end or '..'}"
    )
    if interval.start and interval.end and interval.start > interval.end:
        raise ArgumentError("end", f"end ({end}) is before start ({start})")
    return interval


def zero_size_box(bbox: Any) -> tuple[float, float] | None:
    """(lon, lat) of a box whose west equals east and south equals north, else None."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox):
        return None
    west, south, east, north = (float(v) for v in bbox)
    return (west, south) if west == east and south == north else None


def collection_id_list(value: Any, limit: int) -> list[str]:
    """The distinct ids of `collection_ids` in their order: a list, or ids in one text split at commas
    and spaces."""
    if isinstance(value, str):
        value = [c for c in re.split(r"[,\s]+", value) if c]
    if not isinstance(value, list) or not value:
        raise ArgumentError("collection_ids", "expected a non-empty list of collection ids")
    if len(value) > limit:
        raise ArgumentError("collection_ids", f"{len(value)} collections is more than the limit of {limit}")
    return list(dict.fromkeys(value))


def change_threshold(value: Any) -> float:
    """`detect_change`'s threshold, 0 when absent; a number given is kept as given (an integer stays one)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ArgumentError("threshold", "expected a finite number >= 0 (in the band's unit)")
    threshold: float = value
    return threshold


def change_periods(period_a: Any, period_b: Any) -> tuple[TimeInterval, TimeInterval]:
    """`detect_change`'s two periods, both required."""
    a = parse_interval(period_a, "period_a")
    b = parse_interval(period_b, "period_b")
    if a is None:
        raise ArgumentError("period_a", "required, e.g. '1999-01' or '1999-01/1999-03'")
    if b is None:
        raise ArgumentError("period_b", "required, e.g. '1999-07' or '1999-07/1999-09'")
    return a, b
