"""Parsing and checking of tool arguments (bbox, coordinates, GeoJSON, datetimes, bands)."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import shapely
from shapely.geometry import shape
from shapely.geometry.base import BaseGeometry
from shapely.validation import explain_validity

from stacgis_common.arguments import ArgumentError

BBox = tuple[float, float, float, float]

FEATURE_REFERENCE_KEYS = frozenset({"dataset", "id"})


def _number(value: Any, argument: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArgumentError(argument, f"expected a number, got {type(value).__name__}")
    try:
        number = float(value)
    except ValueError as exc:
        raise ArgumentError(argument, f"'{value}' is not a number") from exc
    if not math.isfinite(number):
        raise ArgumentError(argument, f"must be a finite number, got {value}")
    return number


def check_lon_lat(lon: Any, lat: Any, lon_arg: str = "lon", lat_arg: str = "lat") -> tuple[float, float]:
    x = _number(lon, lon_arg)
    y = _number(lat, lat_arg)
    if not -180.0 <= x <= 180.0:
        raise ArgumentError(lon_arg, f"longitude {x} is outside -180..180 (degrees east, WGS 84)")
    if not -90.0 <= y <= 90.0:
        raise ArgumentError(lat_arg, f"latitude {y} is outside -90..90 (degrees north, WGS 84)")
    return x, y


def boxes_overlap(a: BBox | None, b: BBox | None) -> bool:
    """Whether two [west, south, east, north] boxes meet; a missing box is everywhere."""
    if a is None or b is None:
        return True
    return not (a[2] < b[0] or a[0] > b[2] or a[3] < b[1] or a[1] > b[3])


def parse_bbox(value: Any, argument: str = "bbox") -> BBox:
    """[west, south, east, north] in WGS 84 degrees, as a list or "w,s,e,n" string."""
    if isinstance(value, str):
        parts: Sequence[Any] = [p for p in re.split(r"[,\s]+", value.strip().strip("[]")) if p]
    elif isinstance(value, (list, tuple)):
        parts = value
    else:
        raise ArgumentError(argument, "expected [west, south, east, north] in degrees")
    if len(parts) != 4:
        raise ArgumentError(argument, f"expected 4 numbers [west, south, east, north], got {len(parts)}")
    west, south, east, north = (_number(p, argument) for p in parts)
    for name, x in (("west", west), ("east", east)):
        if not -180.0 <= x <= 180.0:
            raise ArgumentError(argument, f"{name} {x} is outside -180..180")
    for name, y in (("south", south), ("north", north)):
        if not -90.0 <= y <= 90.0:
            raise ArgumentError(argument, f"{name} {y} is outside -90..90")
    if west >= east:
        raise ArgumentError(
            argument,
            f"west ({west}) must be less than east ({east}); order is [west, south, east, north] "
            "and boxes crossing the antimeridian must be split in two",
        )
    if south >= north:
        raise ArgumentError(argument, f"south ({south}) must be less than north ({north})")
    return west, south, east, north


def is_feature_reference(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and set(value) >= FEATURE_REFERENCE_KEYS and "type" not in value


def parse_geojson_geometry(
    value: Any, argument: str = "geometry", *, polygonal: bool = True, max_vertices: int = 100_000
) -> BaseGeometry:
    """A valid shapely geometry from a GeoJSON geometry, Feature or FeatureCollection."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ArgumentError(argument, f"not valid JSON: {exc.msg}") from exc
    if not isinstance(value, dict) or "type" not in value:
        raise ArgumentError(
            argument,
            "expected a GeoJSON Polygon or MultiPolygon (or a Feature), or a feature reference "
            '{"dataset": ..., "id": ...}',
        )
    kind = value["type"]
    if kind == "Feature":
        value = value.get("geometry")
        if not isinstance(value, dict):
            raise ArgumentError(argument, "the Feature has no geometry")
        kind = value.get("type")
    if kind == "FeatureCollection":
        features = value.get("features") or []
        if not features:
            raise ArgumentError(argument, "the FeatureCollection is empty")
        parts = [parse_geojson_geometry(f, argument, polygonal=polygonal, max_vertices=max_vertices) for f in features]
        return shapely.union_all(parts)
    if kind == "Polygon" and _is_ring(value.get("coordinates")):
        # One ring written without the list of rings around it (`[[lon, lat], ...]`): it can only
        # mean that ring, and small models write it so (eval run 24, the Jacksboro box).
        value = {**value, "coordinates": [value["coordinates"]]}
    try:
        geom = shape(value)
    except (KeyError, TypeError, ValueError, AttributeError, shapely.errors.GEOSException) as exc:
        raise ArgumentError(argument, f"not a valid GeoJSON geometry: {exc}") from exc
    if geom.is_empty:
        raise ArgumentError(argument, "the geometry is empty")
    if polygonal and geom.geom_type not in {"Polygon", "MultiPolygon"}:
        raise ArgumentError(argument, f"expected a Polygon or MultiPolygon, got {geom.geom_type}")
    vertices = shapely.get_num_coordinates(geom)
    if vertices > max_vertices:
        raise ArgumentError(argument, f"{vertices} vertices is more than the limit of {max_vertices}")
    coords = shapely.get_coordinates(geom)
    if not coords.size or not np.isfinite(coords).all():
        raise ArgumentError(argument, "coordinates must be finite numbers")
    if (abs(coords[:, 0]) > 180).any() or (abs(coords[:, 1]) > 90).any():
        raise ArgumentError(argument, "coordinates must be [longitude, latitude] within -180..180, -90..90")
    if not geom.is_valid:
        raise ArgumentError(argument, f"invalid geometry ({explain_validity(geom)}); rings must not self-intersect")
    if polygonal and geom.area == 0:
        raise ArgumentError(argument, "the polygon has zero area")
    return geom


@dataclass(frozen=True)
class TimeInterval:
    """Closed UTC interval; open ends are None."""

    start: dt.datetime | None
    end: dt.datetime | None
    text: str

    def overlaps(self, start: dt.datetime | None, end: dt.datetime | None) -> bool:
        if self.start is not None and end is not None and end < self.start:
            return False
        return not (self.end is not None and start is not None and start > self.end)


_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


def _parse_instant(text: str, argument: str, *, end: bool) -> dt.datetime:
    """A datetime; a bare year, month or day expands to its first or last instant."""
    match = _PARTIAL.match(text)
    if match:
        year, month, day = (int(g) if g else None for g in match.groups())
        try:
            if month is None:
                first = dt.datetime(year or 1, 1, 1, tzinfo=dt.UTC)
                following = first.replace(year=first.year + 1)
            elif day is None:
                first = dt.datetime(year or 1, month, 1, tzinfo=dt.UTC)
                following = (first + dt.timedelta(days=32)).replace(day=1)
            else:
                first = dt.datetime(year or 1, month, day, tzinfo=dt.UTC)
                following = first + dt.timedelta(days=1)
        except ValueError as exc:
            raise ArgumentError(argument, f"'{text}' is not a real date: {exc}") from exc
        return following - dt.timedelta(microseconds=1) if end else first
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ArgumentError(
            argument,
            f"'{text}' is not a date; use ISO 8601 like 1999-07, 1999-07-15, "
            "1999-07-15T12:00:00Z or an interval 1999-01/1999-06",
        ) from exc
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def parse_interval(value: Any, argument: str = "datetime") -> TimeInterval | None:
    """'1999', '1999-07', '1999-07-15T00:00:00Z', 'a/b', '../b', 'a/..' -> TimeInterval."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ArgumentError(argument, "expected an ISO 8601 date or interval string")
    text = value.strip()
    if not text:
        return None
    if "/" in text:
        left, _, right = text.partition("/")
        start = None if left in {"", ".."} else _parse_instant(left.strip(), argument, end=False)
        end = None if right in {"", ".."} else _parse_instant(right.strip(), argument, end=True)
        if start is None and end is None:
            raise ArgumentError(argument, "an interval needs at least one end")
    else:
        start = _parse_instant(text, argument, end=False)
        end = _parse_instant(text, argument, end=True) if _PARTIAL.match(text) else start
    if start is not None and end is not None and start > end:
        raise ArgumentError(argument, f"the interval starts after it ends ({text})")
    return TimeInterval(start, end, text)


def _is_ring(coordinates: Any) -> bool:
    """A list of [lon, lat] positions (as opposed to a list of such lists)."""
    return (
        isinstance(coordinates, list)
        and len(coordinates) >= 4
        and all(
            isinstance(p, list) and len(p) in (2, 3) and all(isinstance(c, int | float) for c in p) for p in coordinates
        )
    )
