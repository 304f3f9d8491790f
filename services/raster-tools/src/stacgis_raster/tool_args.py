"""Tool arguments parsed into typed values at the tool edge (`tools`, the tile routes), before any
collection is looked up: whatever can be checked without the collection is checked here, each error
naming the argument at fault.

Three arguments stay open to the collection. `band` and `expression` are read against its bands and
assets (`selection`, `expressions`). `datetime` is ignored by a collection without dates, so a bad
one is an error only for a dated collection (`Period`). And a bbox of zero size is a point to the
statistics of a single-file collection but a refused box to every other reader (`ZeroSizeBox`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import ArgumentError
from stacgis_raster.scene_reads import COMPOSITES, Composite
from stacgis_raster.validation import (
    BBox,
    TimeInterval,
    check_lon_lat,
    is_feature_reference,
    parse_bbox,
    parse_geojson_geometry,
    parse_interval,
)

MAX_QUERY_CHARS = 500
MAX_PLACE_CHARS = 200
MAX_PAGE_SIZE = 100
# Names the orchestrator replaces with the user's selected feature or drawn area before a call.
USER_PLACES = frozenset({"selection", "selected feature", "drawn area", "drawing"})

SortOrder = Literal["datetime", "-datetime", "cloud_cover", "-cloud_cover"]
SORTS: tuple[SortOrder, ...] = get_args(SortOrder)
# A band number or name, read against the collection's bands (`selection.select_band`).
Band = int | str | None
Choice = TypeVar("Choice", bound=str)


@dataclass(frozen=True)
class PlaceName:
    """A place name or ref, resolved by vector-tools; `ignored` names the arguments given with it,
    which the result says it ignored."""

    name: str
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class LonLat:
    lon: float
    lat: float


@dataclass(frozen=True)
class BoxArea:
    bbox: BBox


@dataclass(frozen=True)
class ZeroSizeBox:
    """A bbox whose west equals east and south equals north (a small model's way of pointing), its
    numbers unchecked: the statistics of a single-file collection read the cell under the point and
    check it as lon/lat, every other reader refuses it as the bbox it is (`as_bbox`)."""

    corners: tuple[float, float, float, float]

    def lon_lat(self) -> LonLat:
        return LonLat(*check_lon_lat(self.corners[0], self.corners[1]))

    def as_bbox(self) -> BBox:
        return parse_bbox(self.corners)


@dataclass(frozen=True)
class GeometryArea:
    geometry: BaseGeometry  # valid, polygonal, WGS 84


@dataclass(frozen=True)
class FeatureRef:
    """A vector-tools feature given as the geometry ({"dataset": ..., "id": ...})."""

    dataset: str
    feature_id: str | int


PointArg = PlaceName | LonLat
AreaArg = PlaceName | BoxArea | ZeroSizeBox | GeometryArea | FeatureRef


@dataclass(frozen=True)
class Period:
    """A `datetime` argument: its text as given and its interval, or the error it is. Only a
    collection with dates reads it; one without ignores it, so whatever a model put there ("not
    time-resolved", copied from the catalogue) is an error for a dated collection alone."""

    text: str
    interval: TimeInterval | None
    problem: ArgumentError | None = None

    def for_collection(self, dated: bool) -> TimeInterval | None:
        if not dated:
            return None
        if self.problem is not None:
            raise self.problem
        return self.interval


@dataclass(frozen=True)
class SeriesPeriod:
    """The `start`/`end` of a time series, and the argument a period without data is blamed on."""

    interval: TimeInterval
    blamed: str  # "start" when start was given, else "end"


# -- discovery -----------------------------------------------------------------------------


def listing_filter(bbox: object, datetime: object) -> tuple[BBox | None, TimeInterval | None]:
    """The area and period `list_raster_collections` filters by (either may be absent)."""
    return (parse_bbox(bbox) if bbox is not None else None), parse_interval(datetime)


def search_text(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ArgumentError("query", "expected a non-empty search text, e.g. 'elevation Luxembourg'")
    if len(query) > MAX_QUERY_CHARS:
        raise ArgumentError("query", f"at most {MAX_QUERY_CHARS} characters")
    return query


def collection_id(value: object, argument: str = "collection_id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(argument, "expected a collection id string")
    return value.strip()


def collection_ids(value: object, limit: int) -> list[str]:
    """The distinct ids of `collection_ids` in their order: a list, or ids in one text split at commas
    and spaces."""
    if isinstance(value, str):
        value = [c for c in re.split(r"[,\s]+", value) if c]
    if not isinstance(value, list) or not value:
        raise ArgumentError("collection_ids", "expected a non-empty list of collection ids")
    if len(value) > limit:
        raise ArgumentError("collection_ids", f"{len(value)} collections is more than the limit of {limit}")
    return [collection_id(c, "collection_ids") for c in dict.fromkeys(value)]


# -- where ---------------------------------------------------------------------------------


def place_name(value: object) -> str:
    """A place name or ref as given (vector-tools resolves it)."""
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError("place", "expected a place name, e.g. 'Nairobi', or a ref 'countries/LUX'")
    if len(value) > MAX_PLACE_CHARS:
        raise ArgumentError("place", f"at most {MAX_PLACE_CHARS} characters")
    if value.strip().lower() in USER_PLACES:
        raise ArgumentError("place", f"{value!r} means the user's selection or drawing, and none came with this call")
    return value


def _given(**values: object) -> tuple[str, ...]:
    return tuple(name for name, value in values.items() if value is not None)


def point(place: object, lon: object, lat: object) -> PointArg:
    """The point of a point tool: `place` when given (lon/lat then ignored, and said so), else lon/lat."""
    if place is not None:
        return PlaceName(place_name(place), _given(lon=lon, lat=lat))
    if lon is None or lat is None:
        raise ArgumentError("place", "give place (a city name, e.g. 'Nairobi') or both lon and lat")
    return LonLat(*check_lon_lat(lon, lat))


def area(place: object, bbox: object, geometry: object, *, max_vertices: int) -> AreaArg | None:
    """The area of an area tool: `place` when given (bbox and geometry then ignored, and said so),
    else the bbox or the geometry; None when none is given (each tool decides what that means)."""
    if place is not None:
        return PlaceName(place_name(place), _given(bbox=bbox, geometry=geometry))
    if bbox is not None and geometry is not None:
        raise ArgumentError("geometry", "give either bbox or geometry, not both")
    if geometry is not None:
        if is_feature_reference(geometry):
            return feature_reference(geometry)
        return GeometryArea(parse_geojson_geometry(geometry, "geometry", max_vertices=max_vertices))
    if bbox is not None:
        corners = _zero_size(bbox)
        return ZeroSizeBox(corners) if corners is not None else BoxArea(parse_bbox(bbox))
    return None


def _zero_size(bbox: object) -> tuple[float, float, float, float] | None:
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox):
        return None
    west, south, east, north = (float(v) for v in bbox)
    return (west, south, east, north) if west == east and south == north else None


def feature_reference(reference: dict[str, Any]) -> FeatureRef:
    """A `geometry` that `is_feature_reference`, its dataset and id checked."""
    dataset, feature_id = reference.get("dataset"), reference.get("id")
    if not isinstance(dataset, str) or not dataset.strip():
        raise ArgumentError("geometry", "a feature reference needs a non-empty string 'dataset'")
    if isinstance(feature_id, bool) or not isinstance(feature_id, (str, int)) or str(feature_id) == "":
        raise ArgumentError("geometry", "a feature reference needs an 'id' (string or integer)")
    return FeatureRef(dataset, feature_id)


# -- when ----------------------------------------------------------------------------------


def period(value: object, argument: str = "datetime") -> Period | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    try:
        return Period(text, parse_interval(value, argument))
    except ArgumentError as problem:
        return Period(text, None, problem)


def series_period(start: object, end: object) -> SeriesPeriod | None:
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
    return SeriesPeriod(interval, "start" if start else "end")


def series_as_period(start: object, end: object) -> Period | None:
    """A scene time series' `start`/`end` as the `datetime` its items are searched with (read as a
    `datetime` is: ignored by a collection without dates)."""
    series = series_period(start, end)
    return period(series.interval.text) if series is not None else None


def change_periods(period_a: object, period_b: object) -> tuple[TimeInterval, TimeInterval]:
    """`detect_change`'s two periods, both required."""
    a = parse_interval(period_a, "period_a")
    b = parse_interval(period_b, "period_b")
    if a is None:
        raise ArgumentError("period_a", "required, e.g. '1999-01' or '1999-01/1999-03'")
    if b is None:
        raise ArgumentError("period_b", "required, e.g. '1999-07' or '1999-07/1999-09'")
    return a, b


# -- numbers and choices -------------------------------------------------------------------


def change_threshold(value: object) -> float:
    """`detect_change`'s threshold, 0 when absent; a number given is kept as given (an integer stays one)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ArgumentError("threshold", "expected a finite number >= 0 (in the band's unit)")
    return value


def cloud_limit(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ArgumentError("max_cloud_cover", "expected a percentage from 0 to 100")
    return float(value)


def _one_of(value: object, choices: tuple[Choice, ...], argument: str) -> Choice:
    """`value` as the choice it equals (typed as that Literal), else an error listing the choices."""
    for known in choices:
        if value == known:
            return known
    raise ArgumentError(argument, f"expected one of {', '.join(choices)}")


def sort_order(value: object) -> SortOrder | None:
    return None if value is None else _one_of(value, SORTS, "sortby")


def composite(value: object) -> Composite:
    """The per-pixel composite over dates, median when none is given."""
    return _one_of(value or "median", COMPOSITES, "composite")


def page_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PAGE_SIZE:
        raise ArgumentError("limit", f"expected a whole number from 1 to {MAX_PAGE_SIZE}")
    return value


def page_number(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError("page", "expected a page number from 1")
    return value


def flag(value: object, argument: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(argument, "expected true or false")
    return value
