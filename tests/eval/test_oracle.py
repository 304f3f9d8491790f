"""The expected-value computations against direct rasterio reads of small COGs written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio
from affine import Affine
from shapely.geometry import box

from .oracle import Oracle, OracleError

# A 1-degree grid, 8 x 6 cells, west 10 E, north 50 N: cell (row r, col c) spans
# lon 10+c .. 11+c, lat 50-r-1 .. 50-r.
WEST, NORTH, STEP, WIDTH, HEIGHT = 10.0, 50.0, 1.0, 8, 6
NODATA = -9999.0


def write_cog(path: Path, data: np.ndarray, nodata: float | None = NODATA) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    profile = {
        "driver": "COG",
        "width": data.shape[1],
        "height": data.shape[0],
        "count": 1,
        "dtype": data.dtype.name,
        "crs": "EPSG:4326",
        "transform": Affine(STEP, 0, WEST, 0, -STEP, NORTH),
        "nodata": nodata,
    }
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(data, 1)


def write_collection(
    root: Path, cid: str, items: list[tuple[str, np.ndarray, str | None, str | None]], **extra: Any
) -> None:
    """A STAC collection of single-band COGs: (item id, data, start, end) per item."""
    links = []
    for item_id, data, start, end in items:
        write_cog(root / cid / item_id / f"{item_id}.tif", data, extra.get("nodata", NODATA))
        properties: dict[str, Any] = {"datetime": start or "2020-01-01T00:00:00Z"}
        if start and end:
            properties.update({"start_datetime": start, "end_datetime": end})
        band: dict[str, Any] = {"name": extra.get("band", "value"), "unit": extra.get("unit", "m")}
        if "classes" in extra:
            band["classification:classes"] = [{"value": v, "name": n.lower(), "title": n} for v, n in extra["classes"]]
        item = {
            "type": "Feature",
            "id": item_id,
            "properties": properties,
            "assets": {"data": {"href": f"./{item_id}.tif", "raster:bands": [band]}},
            "links": [],
        }
        (root / cid / item_id / f"{item_id}.json").write_text(json.dumps(item))
        links.append({"rel": "item", "href": f"./{item_id}/{item_id}.json"})
    collection = {
        "id": cid,
        "title": extra.get("title", cid),
        "keywords": extra.get("keywords", []),
        "description": "",
        "stacgis:time_resolved": len(items) > 1,
        "extent": {"spatial": {"bbox": [[WEST, NORTH - HEIGHT, WEST + WIDTH, NORTH]]}},
        "links": links,
    }
    (root / cid / "collection.json").write_text(json.dumps(collection))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    data = tmp_path_factory.mktemp("data")
    stac = data / "stac"
    rng = np.random.default_rng(7)
    elevation = rng.uniform(100, 900, (HEIGHT, WIDTH)).astype("float32")
    elevation[0, 0] = NODATA
    write_collection(stac, "test-dem", [("test-dem", elevation, None, None)], keywords=["elevation"], band="elevation")
    months = [
        (
            f"test-rain-1999-{m:02d}",
            np.full((HEIGHT, WIDTH), 10.0 * m, dtype="float32"),
            f"1999-{m:02d}-01T00:00:00Z",
            f"1999-{m:02d}-28T23:59:59Z",
        )
        for m in (1, 2, 7)
    ]
    months[2][1][2, 3] = 500.0  # one wet cell in July
    write_collection(stac, "test-rain", months, keywords=["precipitation"], band="pr", unit="mm/month")
    classes = np.zeros((HEIGHT, WIDTH), dtype="uint8")
    classes[:, :2] = 1
    write_collection(
        stac,
        "test-cover",
        [("test-cover", classes, None, None)],
        nodata=None,
        band="cover",
        unit=None,
        classes=[(0, "Water"), (1, "Land")],
        keywords=["land cover"],
    )
    catalog = {
        "type": "Catalog",
        "id": "test",
        "links": [{"rel": "child", "href": f"./{c}/collection.json"} for c in ("test-dem", "test-rain", "test-cover")],
    }
    (stac / "catalog.json").write_text(json.dumps(catalog))
    return Oracle(data, tmp_path_factory.mktemp("cache"), tmp_path_factory.mktemp("knowledge"))


def cog(oracle: Oracle, cid: str, index: int = -1) -> Path:
    return oracle.catalog.collection(cid).items[index].href


def cell_weights(rows: range) -> np.ndarray:
    """Spherical area of 1-degree cells (proportional to sin(top) - sin(bottom))."""
    return np.array([np.sin(np.radians(NORTH - r)) - np.sin(np.radians(NORTH - r - 1)) for r in rows])


def test_point_is_the_cell_under_it(oracle: Oracle) -> None:
    with rasterio.open(cog(oracle, "test-dem")) as ds:
        direct = ds.read(1)[3, 5]  # lon 15.5 -> col 5, lat 46.5 -> row 3
    assert oracle.compute({"op": "point", "collection": "test-dem", "lon": 15.5, "lat": 46.5}).value == pytest.approx(
        direct
    )
    with pytest.raises(OracleError, match="no value"):
        oracle.compute({"op": "point", "collection": "test-dem", "lon": 10.5, "lat": 49.5})  # the no-data cell


def test_zonal_mean_over_whole_cells_is_the_area_weighted_mean(oracle: Oracle) -> None:
    with rasterio.open(cog(oracle, "test-dem")) as ds:
        data = ds.read(1, masked=True)
    rows, cols = range(0, 4), range(0, 5)  # box 10..15 E, 46..50 N
    block = data[rows.start : rows.stop, cols.start : cols.stop]
    weights = np.repeat(cell_weights(rows)[:, None], len(cols), axis=1) * ~np.ma.getmaskarray(block)
    direct = float((block.filled(0) * weights).sum() / weights.sum())
    got = oracle.compute({"op": "zonal", "collection": "test-dem", "bbox": [10, 46, 15, 50]})
    assert got.value == pytest.approx(direct, rel=1e-6) and got.unit == "m"
    assert oracle.compute(
        {"op": "zonal", "collection": "test-dem", "bbox": [10, 46, 15, 50], "stat": "max"}
    ).value == pytest.approx(block.max())


def test_zonal_mean_weights_partly_covered_cells_by_their_share(oracle: Oracle) -> None:
    # Half of each cell of column 5 and all of column 4, one row: weights 1 and 0.5.
    with rasterio.open(cog(oracle, "test-dem")) as ds:
        row = ds.read(1)[2]
    direct = (row[4] * 1.0 + row[5] * 0.5) / 1.5
    got = oracle.compute({"op": "zonal", "collection": "test-dem", "bbox": [14, 47, 15.5, 48]})
    assert got.value == pytest.approx(direct, rel=1e-6)


def test_time_steps_and_change_between_periods(oracle: Oracle) -> None:
    spec = {"collection": "test-rain", "bbox": [13, 46, 14, 48]}  # rows 2-3, col 3: the July wet cell in row 2
    weights = cell_weights(range(2, 4))
    july = float((np.array([500.0, 70.0]) * weights).sum() / weights.sum())
    assert oracle.compute({"op": "zonal", **spec, "datetime": "1999-07"}).value == pytest.approx(july, rel=1e-6)
    # A two-month period averages its months per cell.
    assert oracle.compute({"op": "zonal", **spec, "datetime": "1999-01/1999-02"}).value == pytest.approx(15.0)
    change = oracle.compute({"op": "change", **spec, "period_a": "1999-01", "period_b": "1999-07"})
    assert change.value == pytest.approx(july - 10.0, rel=1e-6)
    series = {"op": "series", "collection": "test-rain", "lon": 13.5, "lat": 47.5}
    assert oracle.compute({**series, "reduce": "max"}).value == pytest.approx(500.0)
    assert oracle.compute({**series, "reduce": "mean"}).value == pytest.approx((10 + 20 + 500) / 3)
    assert oracle.compute({**series, "reduce": "argmax"}).value == "July"
    assert oracle.compute({"op": "item_count", "collection": "test-rain"}).value == 3.0


def test_temporal_composites_and_series_of_area_means(oracle: Oracle) -> None:
    spec = {"op": "zonal", "collection": "test-rain", "bbox": [13, 46, 14, 48], "datetime": "1999"}
    weights = cell_weights(range(2, 4))  # the wet July cell in row 2, an ordinary one in row 3
    per_cell = {"max": [500.0, 70.0], "min": [10.0, 10.0], "median": [20.0, 20.0], "mean": [530 / 3, 100 / 3]}
    for how, cells in per_cell.items():
        direct = float((np.array(cells) * weights).sum() / weights.sum())
        assert oracle.compute({**spec, "composite": how}).value == pytest.approx(direct, rel=1e-6), how
    with pytest.raises(OracleError, match="composite"):
        oracle.compute({**spec, "composite": "mode"})
    series = {"op": "area_series", "collection": "test-rain", "bbox": [13, 46, 14, 48]}
    wettest = oracle.compute({**series, "reduce": "argmax"})
    assert wettest.value == "July" and wettest.terms == ("July|1999-07",)
    assert oracle.compute({**series, "reduce": "argmin"}).value == "January"
    july = float((np.array([500.0, 70.0]) * weights).sum() / weights.sum())
    assert oracle.compute({**series, "reduce": "max"}).value == pytest.approx(july, rel=1e-6)


def test_scene_count_is_what_an_item_search_with_a_cloud_filter_finds(tmp_path: Path) -> None:
    # Four tiles of one degree in a row, with their cloud cover; the box meets the middle two.
    stac = tmp_path / "stac"
    root = stac / "tiles"
    links = []
    for index, cloud in enumerate([1.0, 5.0, 0.5, 0.0]):
        item = {
            "type": "Feature",
            "id": f"tile-{index}",
            "bbox": [10 + index, 40, 11 + index, 41],
            "properties": {"datetime": "2020-01-01T00:00:00Z", "eo:cloud_cover": cloud},
            "assets": {"red": {"href": "./red.tif"}},
            "links": [],
        }
        (root / item["id"]).mkdir(parents=True)
        (root / item["id"] / "item.json").write_text(json.dumps(item))
        links.append({"rel": "item", "href": f"./{item['id']}/item.json"})
    (root / "collection.json").write_text(json.dumps({"id": "tiles", "links": links}))
    (stac / "catalog.json").write_text(json.dumps({"links": [{"rel": "child", "href": "./tiles/collection.json"}]}))
    oracle = Oracle(tmp_path, tmp_path / "cache", tmp_path)
    spec = {"op": "scene_count", "collection": "tiles", "bbox": [11.5, 40.2, 12.5, 40.8]}
    assert oracle.compute(spec).value == 2.0
    assert oracle.compute({**spec, "max_cloud_cover": 2}).value == 1.0
    with pytest.raises(OracleError, match="ask for nothing"):
        oracle.compute({**spec, "max_cloud_cover": 0.1})


def test_class_shares_and_names(oracle: Oracle) -> None:
    # Columns 0-1 are land, so a box over columns 0-3 is half land.
    share = oracle.compute(
        {"op": "zonal", "collection": "test-cover", "bbox": [10, 44, 14, 50], "stat": "class_share", "class": "Land"}
    )
    assert share.value == pytest.approx(50.0) and share.unit == "%"
    majority = oracle.compute({"op": "zonal", "collection": "test-cover", "bbox": [10, 44, 13, 50], "stat": "majority"})
    assert majority.value == "Land"
    assert oracle.compute({"op": "point", "collection": "test-cover", "lon": 17.5, "lat": 45.5}).terms == ("Water",)


def test_places_come_from_the_vector_source(oracle: Oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    square = box(12, 45, 14, 47)
    monkeypatch.setattr(oracle.places, "geometry", lambda dataset, name: square)
    by_place = oracle.compute({"op": "zonal", "collection": "test-dem", "place": {"dataset": "countries", "name": "X"}})
    by_box = oracle.compute({"op": "zonal", "collection": "test-dem", "bbox": [12, 45, 14, 47]})
    assert by_place.value == pytest.approx(by_box.value)


def test_premises_of_refusals_are_checked(oracle: Oracle) -> None:
    assert oracle.compute({"op": "no_collection", "terms": ["snow"]})
    with pytest.raises(OracleError, match="answerable"):
        oracle.compute({"op": "no_collection", "terms": ["precipitation"]})
    assert (
        "1999-01 to 1999-07"
        in oracle.compute({"op": "outside_period", "collection": "test-rain", "datetime": "2005"}).detail
    )
    with pytest.raises(OracleError, match="has items"):
        oracle.compute({"op": "outside_period", "collection": "test-rain", "datetime": "1999-07"})
    assert oracle.compute({"op": "absent_band", "collection": "test-rain", "band": "humidity"})
    with pytest.raises(OracleError):
        oracle.compute({"op": "absent_band", "collection": "test-rain", "band": "pr"})
    assert oracle.compute({"op": "not_covered", "variable": ["elevation"], "lon": 40.0, "lat": 0.0})
    with pytest.raises(OracleError, match="answerable"):
        oracle.compute({"op": "not_covered", "variable": ["elevation"], "lon": 15.5, "lat": 46.5})


def test_bad_expectations_are_errors_not_scores(oracle: Oracle) -> None:
    with pytest.raises(OracleError, match="unknown expectation op"):
        oracle.compute({"op": "guess"})
    with pytest.raises(OracleError, match="no collection 'nope'"):
        oracle.compute({"op": "point", "collection": "nope", "lon": 0, "lat": 0})
    with pytest.raises(OracleError, match="no item"):
        oracle.compute({"op": "zonal", "collection": "test-rain", "bbox": [10, 44, 12, 46], "datetime": "2005"})
