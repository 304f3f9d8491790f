"""Bounding boxes, exact intersection and result-size simplification (shapely)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import shapely
from asyncpg.types import Box, Point
from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import bbox_argument


@dataclass(frozen=True)
class QueryBox:
    """A lon/lat box; one that crosses the antimeridian (west > east) is held as two parts."""

    west: float
    south: float
    east: float
    north: float

    @property
    def parts(self) -> list[tuple[float, float, float, float]]:
        if self.west <= self.east:
            return [(self.west, self.south, self.east, self.north)]
        return [(self.west, self.south, 180.0, self.north), (-180.0, self.south, self.east, self.north)]

    def pg_boxes(self) -> list[Box]:
        return [pg_box(part) for part in self.parts]

    def shape(self) -> BaseGeometry:
        return shapely.union_all([shapely.box(*part) for part in self.parts])

    def as_list(self) -> list[float]:
        return [self.west, self.south, self.east, self.north]


def pg_box(bounds: tuple[float, float, float, float]) -> Box:
    west, south, east, north = bounds
    return Box(Point(east, north), Point(west, south))


def parse_bbox(value: Any, argument: str = "bbox") -> QueryBox:
    """Validate [west, south, east, north] in degrees (or "w,s,e,n"); west > east means across the antimeridian."""
    return QueryBox(*bbox_argument(value, argument))


def bounds_list(box: Box) -> list[float]:
    """[west, south, east, north] of a stored Postgres box."""
    return [box.low.x, box.low.y, box.high.x, box.high.y]


@dataclass(frozen=True)
class Simplified:
    geometry: BaseGeometry
    tolerance: float
    original_vertices: int
    vertices: int
    dropped_parts: int


def _count(geometry: BaseGeometry) -> int:
    return int(shapely.get_num_coordinates(geometry))


def _simplify(geometry: BaseGeometry, tolerance: float) -> tuple[BaseGeometry, int]:
    """Topology-preserving Douglas-Peucker (valid polygons, holes kept); polygon parts smaller
    than the tolerance in both directions are dropped, as a plain Douglas-Peucker would collapse them."""
    simplified = shapely.simplify(geometry, tolerance, preserve_topology=True)
    if not isinstance(simplified, shapely.MultiPolygon):
        return simplified, 0
    parts = list(shapely.get_parts(simplified))
    largest = max(parts, key=lambda part: part.area)
    kept = []
    for part in parts:
        west, south, east, north = part.bounds
        if part is largest or max(east - west, north - south) >= tolerance:
            kept.append(part)
    return shapely.MultiPolygon(kept), len(parts) - len(kept)


def simplify_for_result(geometry: BaseGeometry, tolerance: float | None, max_vertices: int) -> Simplified:
    """Simplify to the requested tolerance, then coarser (doubling it) until within `max_vertices`."""
    original = _count(geometry)
    current, used, dropped = geometry, 0.0, 0
    if tolerance:
        current, dropped = _simplify(geometry, tolerance)
        used = tolerance
    west, south, east, north = geometry.bounds
    # Powers of ten times powers of two: tolerances read as 0.004, 0.008, 0.016 ...
    step = used or 10 ** math.floor(math.log10(max(east - west, north - south, 1e-6) / 4000))
    while _count(current) > max_vertices and step < 360:
        step *= 2
        current, dropped = _simplify(geometry, step)
        used = step
    return Simplified(current, used, original, _count(current), dropped)
