"""Numbers that locate a call: the point or box a question types ("longitude 0, latitude 0", "the box
-84, 34, -78, 36.5"), a box written as an argument, and whether a call's coordinates are all ones the
user wrote (then they win over a `place`, `places.py`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..grounding import extract_numbers

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LON_LAT = re.compile(
    rf"\blon(?:gitude)?\s*[:=]?\s*{_NUMBER}\s*,?\s*(?:and\s+)?lat(?:itude)?\s*[:=]?\s*{_NUMBER}", re.I
)
_LAT_LON = re.compile(
    rf"\blat(?:itude)?\s*[:=]?\s*{_NUMBER}\s*,?\s*(?:and\s+)?lon(?:gitude)?\s*[:=]?\s*{_NUMBER}", re.I
)
_AREA_WORDS = re.compile(r"\b(?:box|bbox|area|region|polygon|within|inside|around|between)\b", re.I)
# Arguments that locate a call by numbers.
COORDINATE_KEYS = ("lon", "lat", "bbox", "points")


def call_coordinates(arguments: Mapping[str, Any]) -> list[float]:
    numbers: list[float] = []

    def walk(value: Any) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            numbers.append(float(value))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for key in COORDINATE_KEYS:
        walk(arguments.get(key))
    geometry = arguments.get("geometry")
    if isinstance(geometry, Mapping):
        walk(geometry.get("coordinates"))
    return numbers


def typed_by_user(numbers: list[float], question: str) -> bool:
    """Every number is one the user wrote (signs aside: "80 W" may come as -80)."""
    written = {abs(found.value) for found in extract_numbers(question)}
    return bool(numbers) and all(any(math.isclose(abs(n), w, abs_tol=1e-9) for w in written) for n in numbers)


def typed_point(question: str) -> tuple[float, float] | None:
    """The one (lon, lat) a question gives in words ("longitude 0, latitude 0"), when it names no area."""
    if _AREA_WORDS.search(question):
        return None
    points = [(float(lon), float(lat)) for lon, lat in _LON_LAT.findall(question)]
    points += [(float(lon), float(lat)) for lat, lon in _LAT_LON.findall(question)]
    if len(set(points)) != 1:
        return None
    lon, lat = points[0]
    return (lon, lat) if -180 <= lon <= 180 and -90 <= lat <= 90 else None


def lonlat_box(value: Any) -> list[float] | None:
    """Four numbers west, south, east, north of a valid lon/lat box, as a list or its JSON text."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list) or len(value) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    west, south, east, north = (float(v) for v in value)
    if not (-180 <= west < east <= 180 and -90 <= south < north <= 90):
        return None
    return [west, south, east, north]


def typed_box(question: str) -> list[float] | None:
    """The first four numbers in a row the question writes that make a lon/lat box (west, south, east, north)."""
    numbers = [found.value for found in extract_numbers(question)]
    return next(filter(None, (lonlat_box(numbers[i : i + 4]) for i in range(len(numbers) - 3))), None)
