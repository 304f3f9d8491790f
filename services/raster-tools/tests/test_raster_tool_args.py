"""The tool edge's argument parsers (`tool_args`), without a server: typed values from good
arguments, and an error naming the argument for each bad one."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from shapely.geometry import box

from stacgis_common.arguments import ArgumentError
from stacgis_raster import tool_args
from stacgis_raster.scene_reads import COMPOSITES
from stacgis_raster.tool_args import (
    MAX_PAGE_SIZE,
    MAX_PLACE_CHARS,
    SORTS,
    BoxArea,
    FeatureRef,
    GeometryArea,
    LonLat,
    PlaceName,
    ZeroSizeBox,
)
from stacgis_raster.validation import parse_interval

SQUARE = {"type": "Polygon", "coordinates": [[[6, 49.5], [6.2, 49.5], [6.2, 49.7], [6, 49.7], [6, 49.5]]]}


def refused(argument: str, parse: Any, *args: Any, **kwargs: Any) -> str:
    """The message of the ArgumentError `parse(*args)` raises, checked to name `argument`."""
    with pytest.raises(ArgumentError) as err:
        parse(*args, **kwargs)
    assert err.value.argument == argument, str(err.value)
    return err.value.detail


def test_collection_ids_are_stripped_and_blank_ones_refused() -> None:
    assert tool_args.collection_id("  luxembourg-dem ") == "luxembourg-dem"
    for bad in ("", "   ", None, 3):
        assert "collection id string" in refused("collection_id", tool_args.collection_id, bad)
    # A list keeps its order and drops repeats; one text is split at commas and spaces.
    assert tool_args.collection_ids(["b", "a", "b"], 12) == ["b", "a"]
    assert tool_args.collection_ids("a, b c", 12) == ["a", "b", "c"]
    assert "limit of 2" in refused("collection_ids", tool_args.collection_ids, ["a", "b", "c"], 2)
    assert "non-empty list" in refused("collection_ids", tool_args.collection_ids, [], 12)
    assert "collection id string" in refused("collection_ids", tool_args.collection_ids, ["a", " "], 12)


def test_place_names_are_checked_before_they_are_resolved() -> None:
    assert tool_args.place_name("Nairobi") == "Nairobi"
    assert "place name" in refused("place", tool_args.place_name, "  ")
    assert f"at most {MAX_PLACE_CHARS}" in refused("place", tool_args.place_name, "x" * (MAX_PLACE_CHARS + 1))
    assert "selection or drawing" in refused("place", tool_args.place_name, "Drawn area")


def test_a_point_is_a_place_or_both_coordinates() -> None:
    assert tool_args.point("Nairobi", None, None) == PlaceName("Nairobi")
    assert tool_args.point("Nairobi", 6.1, None) == PlaceName("Nairobi", ("lon",))
    assert tool_args.point(None, "6.1", 49) == LonLat(6.1, 49.0)
    assert "both lon and lat" in refused("place", tool_args.point, None, 6.1, None)
    assert "-90..90" in refused("lat", tool_args.point, None, 6.1, 95)
    assert "not a number" in refused("lon", tool_args.point, None, "six", 49.6)
    assert "selection" in refused("place", tool_args.point, "selection", 6.1, 49.6)


def test_an_area_is_a_place_a_box_or_a_geometry() -> None:
    def area(place: Any = None, bbox: Any = None, geometry: Any = None) -> Any:
        return tool_args.area(place, bbox, geometry, max_vertices=100)

    assert area() is None
    # A place wins, and the bbox and geometry given with it are not read, only named.
    assert area("Luxembourg", "not a box", {"type": "nothing"}) == PlaceName("Luxembourg", ("bbox", "geometry"))
    assert area(bbox="5.7, 49.4, 6.6, 50.2") == BoxArea((5.7, 49.4, 6.6, 50.2))
    parsed = area(geometry=SQUARE)
    assert isinstance(parsed, GeometryArea) and parsed.geometry.equals(box(6, 49.5, 6.2, 49.7))
    assert area(geometry={"dataset": "countries", "id": 7}) == FeatureRef("countries", 7)
    assert "not both" in refused("geometry", area, bbox=[5.7, 49.4, 6.6, 50.2], geometry=SQUARE)
    assert "must be less than east" in refused("bbox", area, bbox=[6.6, 49.4, 5.7, 50.2])
    assert "Polygon or MultiPolygon" in refused("geometry", area, geometry={"type": "Point", "coordinates": [6, 49]})
    assert "'dataset'" in refused("geometry", area, geometry={"dataset": " ", "id": "x"})
    assert "'id'" in refused("geometry", area, geometry={"dataset": "countries", "id": True})


def test_a_zero_size_box_is_a_point_to_one_reader_and_a_bad_box_to_the_others() -> None:
    parsed = tool_args.area(None, [6.1, 49.6, 6.1, 49.6], None, max_vertices=100)
    assert parsed == ZeroSizeBox((6.1, 49.6, 6.1, 49.6))
    assert isinstance(parsed, ZeroSizeBox)
    assert parsed.lon_lat() == LonLat(6.1, 49.6)
    assert "west (6.1) must be less than east (6.1)" in refused("bbox", parsed.as_bbox)
    far = tool_args.area(None, [200, 49.6, 200, 49.6], None, max_vertices=100)
    assert isinstance(far, ZeroSizeBox)
    assert "-180..180" in refused("lon", far.lon_lat)
    assert "outside -180..180" in refused("bbox", far.as_bbox)


def test_a_bad_datetime_is_an_error_only_where_the_collection_has_dates() -> None:
    assert tool_args.period(None) is None
    good = tool_args.period("1999-07")
    assert good is not None and good.for_collection(True) == parse_interval("1999-07")
    assert good.for_collection(False) is None
    copied = tool_args.period("not time-resolved")
    assert copied is not None and copied.text == "not time-resolved"
    assert copied.for_collection(False) is None
    assert "ISO 8601" in refused("datetime", copied.for_collection, True)


def test_time_series_periods_name_start_or_end() -> None:
    assert tool_args.series_period(None, None) is None
    series = tool_args.series_period("1999-03", "1999-09")
    assert series is not None and series.blamed == "start" and series.interval.text == "1999-03/1999-09"
    assert series.interval.start == dt.datetime(1999, 3, 1, tzinfo=dt.UTC)
    open_start = tool_args.series_period("../1999-03", None)
    assert open_start is not None and open_start.blamed == "start" and open_start.interval.start is None
    only_end = tool_args.series_period(None, "1999-09")
    assert only_end is not None and only_end.blamed == "end"
    assert "before start" in refused("end", tool_args.series_period, "1999-08", "1999-02")
    assert "not a date" in refused("start", tool_args.series_period, "spring", None)
    # A scene series searches its items with the period as a datetime.
    as_period = tool_args.series_as_period("1999-03", None)
    assert as_period is not None and as_period.text == "1999-03/.."
    assert as_period.for_collection(True) == parse_interval("1999-03/..")


def test_change_periods_and_threshold() -> None:
    a, b = tool_args.change_periods("1999-01", "1999-06/1999-08")
    assert (a.text, b.text) == ("1999-01", "1999-06/1999-08")
    assert "required" in refused("period_b", tool_args.change_periods, "1999-01", "")
    assert "not a real date" in refused("period_a", tool_args.change_periods, "1999-13", "1999-07")
    assert tool_args.change_threshold(None) == 0.0
    assert tool_args.change_threshold(5) == 5 and isinstance(tool_args.change_threshold(5), int)
    for bad in (-1, float("nan"), True, "2"):
        assert ">= 0" in refused("threshold", tool_args.change_threshold, bad)


def test_scene_search_choices_and_numbers() -> None:
    assert tool_args.cloud_limit(None) is None
    assert tool_args.cloud_limit(10) == 10.0
    for bad in (-1, 150, True, "10"):
        assert "0 to 100" in refused("max_cloud_cover", tool_args.cloud_limit, bad)
    assert [tool_args.sort_order(s) for s in SORTS] == list(SORTS)
    assert tool_args.sort_order(None) is None
    for bad in ("size", ""):
        assert "cloud_cover" in refused("sortby", tool_args.sort_order, bad)
    assert tool_args.composite(None) == tool_args.composite("") == "median"
    assert [tool_args.composite(c) for c in COMPOSITES] == list(COMPOSITES)
    assert "median" in refused("composite", tool_args.composite, "mode")
    assert tool_args.page_size(MAX_PAGE_SIZE) == MAX_PAGE_SIZE
    for bad in (0, MAX_PAGE_SIZE + 1, True, 2.0):
        assert f"1 to {MAX_PAGE_SIZE}" in refused("limit", tool_args.page_size, bad)
    assert tool_args.page_number(3) == 3
    assert "from 1" in refused("page", tool_args.page_number, 0)
    assert tool_args.flag(False, "cloud_mask") is False
    assert "true or false" in refused("cloud_mask", tool_args.flag, "yes", "cloud_mask")
