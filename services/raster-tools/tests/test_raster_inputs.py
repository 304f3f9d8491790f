"""Argument parsing, the asset allow-lists and the statistics helpers, without a server."""

from __future__ import annotations

import datetime as dt
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pystac
import pytest
from shapely.geometry import box

from stacgis_common.arguments import ArgumentError
from stacgis_common.testing import free_port
from stacgis_raster.assets import AssetGuard, AssetNotAllowed
from stacgis_raster.catalog import StaticCatalogSource
from stacgis_raster.errors import unknown_collection
from stacgis_raster.rasterops import Sample, spherical_area_km2, summarize, weighted_percentiles
from stacgis_raster.validation import check_lon_lat, parse_bbox, parse_geojson_geometry, parse_interval

UTC = dt.UTC


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("1999", dt.datetime(1999, 1, 1, tzinfo=UTC), dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("1999-02", dt.datetime(1999, 2, 1, tzinfo=UTC), dt.datetime(1999, 2, 28, 23, 59, 59, 999999, tzinfo=UTC)),
        ("1999-07-15", dt.datetime(1999, 7, 15, tzinfo=UTC), dt.datetime(1999, 7, 15, 23, 59, 59, 999999, tzinfo=UTC)),
        ("1999-07-15T12:00:00Z", dt.datetime(1999, 7, 15, 12, tzinfo=UTC), dt.datetime(1999, 7, 15, 12, tzinfo=UTC)),
        (
            "1999-01/1999-03",
            dt.datetime(1999, 1, 1, tzinfo=UTC),
            dt.datetime(1999, 3, 31, 23, 59, 59, 999999, tzinfo=UTC),
        ),
        ("../1999-03", None, dt.datetime(1999, 3, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2016/..", dt.datetime(2016, 1, 1, tzinfo=UTC), None),
    ],
)
def test_datetime_forms_expand_to_whole_periods(text: str, start: dt.datetime | None, end: dt.datetime | None) -> None:
    interval = parse_interval(text)
    assert interval is not None
    assert (interval.start, interval.end) == (start, end)


@pytest.mark.parametrize("text", ["yesterday", "1999-13", "1999-02-30", "1999-05/1999-01", "../.."])
def test_bad_datetimes_name_the_argument(text: str) -> None:
    with pytest.raises(ArgumentError) as err:
        parse_interval(text, "period_a")
    assert "period_a: " in str(err.value)


def test_bbox_accepts_list_and_string() -> None:
    assert parse_bbox([5.7, 49.4, 6.6, 50.2]) == (5.7, 49.4, 6.6, 50.2)
    assert parse_bbox("5.7, 49.4, 6.6, 50.2") == (5.7, 49.4, 6.6, 50.2)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([7, 49, 5, 51], "west (7.0) must be less than east"),
        ([5, 51, 7, 49], "south (51.0) must be less than north"),
        ([5, 49, 190, 51], "outside -180..180"),
        ([5, -95, 7, 51], "outside -90..90"),
        ([5, 49, 7], "expected 4 numbers"),
        ([5, "NaN", 7, 51], "finite"),
        ([5, float("inf"), 7, 51], "finite"),
        ("west,south,east,north", "not a number"),
    ],
)
def test_bad_bboxes_explain_what_is_allowed(value: object, fragment: str) -> None:
    with pytest.raises(ArgumentError) as err:
        parse_bbox(value)
    assert err.value.argument == "bbox"
    assert fragment in str(err.value)


def test_coordinates_out_of_range_or_nan() -> None:
    with pytest.raises(ArgumentError, match=r"^lat: "):
        check_lon_lat(6.0, 91)
    with pytest.raises(ArgumentError, match=r"^lon: "):
        check_lon_lat(float("nan"), 49)
    assert check_lon_lat("6.1", 49) == (6.1, 49.0)


def test_geometry_validation() -> None:
    square = {"type": "Polygon", "coordinates": [[[6, 49.5], [6.2, 49.5], [6.2, 49.7], [6, 49.7], [6, 49.5]]]}
    assert parse_geojson_geometry(square).bounds == (6, 49.5, 6.2, 49.7)
    assert parse_geojson_geometry(json.dumps({"type": "Feature", "geometry": square, "properties": {}})).area > 0
    # The ring without the list of rings around it, as a small model wrote it: the same polygon.
    bare = {"type": "Polygon", "coordinates": square["coordinates"][0]}
    assert parse_geojson_geometry(bare).equals(parse_geojson_geometry(square))
    with pytest.raises(ArgumentError, match="not a valid GeoJSON geometry"):
        parse_geojson_geometry({"type": "Polygon", "coordinates": [[6, 49.5], [6.2, 49.5]]})
    bowtie = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}
    with pytest.raises(ArgumentError, match="Self-intersection"):
        parse_geojson_geometry(bowtie)
    with pytest.raises(ArgumentError, match="expected a Polygon or MultiPolygon, got Point"):
        parse_geojson_geometry({"type": "Point", "coordinates": [6, 49]})
    with pytest.raises(ArgumentError, match="not a valid GeoJSON geometry"):
        parse_geojson_geometry({"type": "Polygon", "coordinates": "abc"})
    with pytest.raises(ArgumentError, match=r"within -180\.\.180"):
        parse_geojson_geometry({"type": "Polygon", "coordinates": [[[0, 0], [200, 0], [200, 1], [0, 0]]]})
    many = [[6 + 0.001 * np.cos(a), 49.5 + 0.001 * np.sin(a)] for a in np.linspace(0, 2 * np.pi, 300)]
    many[-1] = many[0]
    with pytest.raises(ArgumentError, match="more than the limit of 100"):
        parse_geojson_geometry({"type": "Polygon", "coordinates": [many]}, max_vertices=100)


def test_unknown_collection_suggests_close_ids() -> None:
    error = unknown_collection("luxemburg-dem", ["luxembourg-dem", "rmnp-dem", "oisst-sst"])
    assert "Did you mean: luxembourg-dem" in str(error)
    assert error.argument == "collection_id"


def test_asset_guard_blocks_escapes_and_foreign_hosts(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "a.tif").write_bytes(b"")
    guard = AssetGuard([root], ["tiles.example.org", "*.bucket.example.net"])
    assert guard.check(str(root / "a.tif")) == str((root / "a.tif").resolve())
    assert guard.check(f"file://{root}/a.tif") == str((root / "a.tif").resolve())
    assert guard.check("https://tiles.example.org/x.tif") == "https://tiles.example.org/x.tif"
    assert guard.check("https://eu.bucket.example.net/x.tif").startswith("https://eu.")
    for bad in [
        str(root / ".." / "secret.tif"),
        "/etc/passwd",
        "http://169.254.169.254/latest/meta-data",
        "https://tiles.example.org.evil.com/x.tif",
        "/vsicurl/http://tiles.example.org/x.tif",
        "s3://bucket/x.tif",
        "ftp://tiles.example.org/x.tif",
    ]:
        with pytest.raises(AssetNotAllowed):
            guard.check(bad)
    link = root / "escape.tif"
    link.symlink_to("/etc/hostname")
    with pytest.raises(AssetNotAllowed):
        guard.check(str(link))


def test_static_catalog_over_http_only_reads_allowed_hosts(tmp_path: Path) -> None:
    catalog = pystac.Catalog("remote", "served over HTTP")
    collection = pystac.Collection(
        "c1",
        "one collection",
        pystac.Extent(
            pystac.SpatialExtent([[0, 0, 1, 1]]), pystac.TemporalExtent([[dt.datetime(2020, 1, 1, tzinfo=UTC), None]])
        ),
        license="CC-BY-4.0",
    )
    item = pystac.Item("i1", box(0, 0, 1, 1).__geo_interface__, [0, 0, 1, 1], dt.datetime(2020, 1, 1, tzinfo=UTC), {})
    item.add_asset("data", pystac.Asset("http://169.254.169.254/latest/x.tif", media_type=pystac.MediaType.COG))
    collection.add_item(item)
    catalog.add_child(collection)
    catalog.normalize_and_save(str(tmp_path), pystac.CatalogType.SELF_CONTAINED)
    port = free_port()
    httpd = ThreadingHTTPServer(("127.0.0.1", port), partial(SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        guard = AssetGuard([], ["127.0.0.1"])
        source = StaticCatalogSource(f"http://127.0.0.1:{port}/catalog.json", guard, refresh_seconds=60, timeout=5)
        record = source.collection("c1")
        assert record.item_count == 1
        with pytest.raises(AssetNotAllowed, match=r"169\.254\.169\.254"):
            guard.check(record.items[0].href)
        closed = StaticCatalogSource(
            f"http://127.0.0.1:{port}/catalog.json", AssetGuard([], []), refresh_seconds=60, timeout=5
        )
        with pytest.raises(AssetNotAllowed, match=r"127\.0\.0\.1"):
            closed.collections()
    finally:
        httpd.shutdown()


def test_weighted_statistics_match_numpy_for_equal_weights() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(100, 15, 5001)
    weights = np.ones_like(values)
    got = weighted_percentiles(values, weights, (5, 50, 95))
    want = np.percentile(values, [5, 50, 95])
    assert np.allclose(got, want, rtol=1e-3)
    stats = summarize(Sample(values, weights, float(weights.sum()) * 2))
    assert stats["valid_fraction"] == 0.5
    assert stats["mean"] == pytest.approx(values.mean(), rel=1e-5)
    assert stats["std"] == pytest.approx(values.std(), rel=1e-5)


def test_weights_move_the_mean_towards_heavier_values() -> None:
    stats = summarize(Sample(np.array([0.0, 10.0]), np.array([3.0, 1.0]), 4.0))
    assert stats["mean"] == 2.5


def test_spherical_area_of_the_globe_and_of_a_degree() -> None:
    assert spherical_area_km2(box(-180, -90, 180, 90)) == pytest.approx(510_065_600, rel=1e-4)
    # One degree square at the equator is about 111.2 km on each side.
    assert spherical_area_km2(box(0, 0, 1, 1)) == pytest.approx(12_364, rel=2e-3)
