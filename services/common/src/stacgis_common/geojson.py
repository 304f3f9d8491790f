"""GeoJSON checks of a spatial context (a selected feature, a drawn geometry): structure (geojson-pydantic) and
WGS84 coordinate ranges; the gateway and the orchestrator check requests with the same rules. Also the one
reader of a geometry's positions."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from geojson_pydantic import Feature
from geojson_pydantic.geometries import Geometry
from pydantic import TypeAdapter, ValidationError

_FEATURE: TypeAdapter[Any] = TypeAdapter(Feature[Geometry, dict[str, Any]])
_GEOMETRY: TypeAdapter[Any] = TypeAdapter(Geometry)


def _first_error(error: ValidationError) -> str:
    item = error.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    return f"{where}: {item['msg']}" if where else str(item["msg"])


def _check_positions(coordinates: Any, path: str) -> None:
    if isinstance(coordinates, (list, tuple)) and coordinates and isinstance(coordinates[0], (int, float)):
        lon, lat = float(coordinates[0]), float(coordinates[1])
        if not (math.isfinite(lon) and -180.0 <= lon <= 180.0):
            raise ValueError(f"{path}: longitude {lon} is outside -180..180")
        if not (math.isfinite(lat) and -90.0 <= lat <= 90.0):
            raise ValueError(f"{path}: latitude {lat} is outside -90..90")
        return
    if isinstance(coordinates, (list, tuple)):
        for index, item in enumerate(coordinates):
            _check_positions(item, f"{path}.{index}")


def positions(geometry: Mapping[str, Any]) -> list[list[float]]:
    """Every position's [x, y] of a geometry, its GeometryCollection members' too, in order, numbers as
    given; what is not a position is skipped (a summary or a bounding box of what can be read)."""
    found: list[list[float]] = []

    def walk(value: Any) -> None:
        if isinstance(value, list) and len(value) >= 2 and all(isinstance(v, int | float) for v in value[:2]):
            found.append(value[:2])
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(geometry.get("coordinates"))
    for member in geometry.get("geometries") or []:
        if isinstance(member, Mapping):
            walk(member.get("coordinates"))
    return found


def _check_geometry_ranges(geometry: dict[str, Any], path: str) -> None:
    if geometry.get("type") == "GeometryCollection":
        for index, member in enumerate(geometry.get("geometries") or []):
            _check_geometry_ranges(member, f"{path}.geometries.{index}")
        return
    _check_positions(geometry.get("coordinates"), f"{path}.coordinates")


def check_geometry(value: dict[str, Any]) -> None:
    """Raise ValueError saying what is wrong unless `value` is a valid GeoJSON geometry in WGS84."""
    try:
        _GEOMETRY.validate_python(value)
    except ValidationError as error:
        raise ValueError(f"not a valid GeoJSON geometry ({_first_error(error)})") from None
    _check_geometry_ranges(value, "geometry")


def check_feature(value: dict[str, Any]) -> None:
    """Raise ValueError saying what is wrong unless `value` is a valid GeoJSON Feature in WGS84."""
    try:
        _FEATURE.validate_python(value)
    except ValidationError as error:
        raise ValueError(f"not a valid GeoJSON Feature ({_first_error(error)})") from None
    geometry = value.get("geometry")
    if isinstance(geometry, dict):
        _check_geometry_ranges(geometry, "geometry")
