"""The one reader of a geometry's positions, used by the agent's prompt summary and its map views."""

from __future__ import annotations

from typing import Any

from stacgis_common.geojson import positions

SQUARE = [[5.7, 49.4], [6.5, 49.4], [6.5, 50.2], [5.7, 50.2], [5.7, 49.4]]


def test_every_position_of_nested_and_collected_geometries_in_order() -> None:
    multi: dict[str, Any] = {"type": "MultiPolygon", "coordinates": [[SQUARE], [[[1, 2], [3, 4], [1, 2]]]]}
    collection = {
        "type": "GeometryCollection",
        "geometries": [{"type": "Point", "coordinates": [7.0, 46.0, 350.0]}, multi],
    }
    assert positions(multi) == [*SQUARE, [1, 2], [3, 4], [1, 2]]
    # A third number (elevation) is not part of the position's [x, y].
    assert positions(collection) == [[7.0, 46.0], *positions(multi)]


def test_what_is_not_a_position_is_skipped_not_raised() -> None:
    assert positions({"type": "Point"}) == []
    assert positions({"type": "LineString", "coordinates": [[1, "a"], [2, 3], "x", None]}) == [[2, 3]]
    assert positions({"type": "GeometryCollection", "geometries": [None, "x", {"type": "Point"}]}) == []
