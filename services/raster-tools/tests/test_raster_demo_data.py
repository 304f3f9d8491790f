"""The demo-data build: real sources, COGs, STAC fields, idempotence."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pystac
import pytest
import rasterio
from raster_test_helpers import CACHE_DIR, DATA_DIR, STARS, cog, source_file
from rio_cogeo.cogeo import cog_validate

from stacgis_raster.demo_data.loaders import read_class_table


def test_every_item_is_a_valid_cog_with_projection_and_raster_fields(demo_data: Path) -> None:
    catalog = pystac.Catalog.from_file(str(demo_data))
    collections = [
        c for c in catalog.get_all_collections() if not {"item_assets", "cube:variables"} & set(c.extra_fields)
    ]
    assert len(collections) == 12
    for collection in collections:
        assert collection.license and collection.providers and collection.keywords
        provenance = collection.extra_fields["stacgis:provenance"]
        assert provenance["sources"] and all(len(s["archive_sha256"]) == 64 for s in provenance["sources"])
        assert "default" in collection.extra_fields["renders"]
        for item in collection.get_items():
            asset = item.assets["data"]
            path = Path(asset.get_absolute_href() or "")
            assert path.is_relative_to(demo_data.parent)
            valid, errors, _ = cog_validate(str(path), quiet=True)
            assert valid, (path, errors)
            assert item.properties["proj:shape"] and item.properties["proj:transform"]
            assert item.properties["proj:wkt2"]
            bands = asset.extra_fields["raster:bands"]
            with rasterio.open(path) as ds:
                assert len(bands) == ds.count
                assert item.properties["proj:shape"] == [ds.height, ds.width]
            assert all("name" in b and "data_type" in b for b in bands)


def test_values_are_copied_not_invented(stac_dir: Path) -> None:
    for collection, source in [
        ("nlcd-puerto-rico", f"{STARS}/tif/lc.tif"),
        ("landsat7-olinda", f"{STARS}/tif/L7_ETMs.tif"),
        ("olinda-dem", f"{STARS}/tif/olinda_dem_utm25s.tif"),
    ]:
        with rasterio.open(source_file(source)) as original, rasterio.open(cog(stac_dir, collection)) as copy:
            assert (original.read() == copy.read()).all()
            assert original.transform.almost_equals(copy.transform)


def test_time_series_items_have_monthly_intervals(demo_data: Path) -> None:
    collection = pystac.Catalog.from_file(str(demo_data)).get_child("bcsd-precipitation-1999")
    assert isinstance(collection, pystac.Collection)
    items = sorted(collection.get_items(), key=lambda i: i.properties["start_datetime"])
    assert [i.properties["start_datetime"][:10] for i in items] == [f"1999-{m:02d}-01" for m in range(1, 13)]
    assert items[1].properties["end_datetime"].startswith("1999-02-28T23:59:59")
    assert collection.extra_fields["stacgis:time_resolved"] is True
    assert items[0].assets["data"].extra_fields["raster:bands"][0]["unit"] == "mm/month"


def test_class_table_comes_from_the_aux_xml() -> None:
    classes = read_class_table(source_file(f"{STARS}/tif/lc.tif.aux.xml"))
    assert len(classes) == 16
    assert (classes[0].value, classes[0].title, classes[0].color[:3]) == (11, "Open Water", (71, 107, 161))


def test_a_second_build_is_a_no_op(demo_data: Path) -> None:
    stamp = json.loads((demo_data.parent / "build-info.json").read_text())
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "stacgis_raster.demo_data", "--cache", str(CACHE_DIR), "--out", str(DATA_DIR)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "up to date" in proc.stdout
    assert time.monotonic() - started < 20
    assert json.loads((demo_data.parent / "build-info.json").read_text()) == stamp


def test_offline_build_without_cached_packages_says_what_is_missing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "stacgis_raster.demo_data",
            "--cache",
            str(tmp_path / "cache"),
            "--out",
            str(tmp_path / "out"),
            "--offline",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert "r-cran-stars=0.6-0-4 is not in" in proc.stderr


@pytest.mark.parametrize("collection_id", ["jacksboro-dem", "global-precipitation-2016", "oisst-sst"])
def test_georeferenced_grids_land_where_their_sources_say(stac_dir: Path, collection_id: str) -> None:
    expected = {
        "jacksboro-dem": (-84.41375, 36.44625, -84.077917, 36.732917),
        "global-precipitation-2016": (-180.0, -81.0, 180.0, 87.0),
        "oisst-sst": (-181.0, -90.0, 179.0, 90.0),  # 2-degree cells centred on -180..178
    }[collection_id]
    with rasterio.open(
        cog(stac_dir, collection_id, "oisst-sst-1981-12-31" if collection_id == "oisst-sst" else None)
    ) as ds:
        assert tuple(ds.bounds) == pytest.approx(expected, abs=1e-5)


def test_scene_collections_tile_the_source_with_one_cog_per_band(demo_data: Path, stac_dir: Path) -> None:
    catalog = pystac.Catalog.from_file(str(demo_data))
    scenes = catalog.get_child("landsat7-olinda-scenes")
    assert isinstance(scenes, pystac.Collection)
    item_assets = scenes.extra_fields["item_assets"]
    keys = [key for key, asset in item_assets.items() if "data" in asset["roles"]]
    assert keys == ["blue", "green", "red", "nir", "swir16", "swir22"]
    assert item_assets["cloud_mask"]["roles"] == ["cloud"]
    items = list(scenes.get_items())
    assert len(items) == 144
    with rasterio.open(cog(stac_dir, "landsat7-olinda")) as scene:
        whole = scene.read()
        origin, res = scene.transform, scene.res[0]
    for item in items[::13]:
        for index, key in enumerate(keys):
            path = item.assets[key].get_absolute_href() or ""
            assert cog_validate(path, quiet=True)[0]
            with rasterio.open(path) as ds:
                row, col = round((origin.f - ds.transform.f) / res), round((ds.transform.c - origin.c) / res)
                # Each tile's pixels are the scene's own pixels at the same place.
                assert (ds.read(1) == whole[index, row : row + ds.height, col : col + ds.width]).all()
                bright = 100 * float((whole[0, row : row + ds.height, col : col + ds.width] >= 120).mean())
        assert item.properties["eo:cloud_cover"] == round(bright, 2)
        with rasterio.open(item.assets["cloud_mask"].get_absolute_href() or "") as mask:
            # The mask flags the same bright pixels the cloud cover counts.
            assert 100 * float(mask.read(1).mean()) == pytest.approx(bright)
    climate = catalog.get_child("bcsd-1999-scenes")
    assert isinstance(climate, pystac.Collection)
    months = {i.datetime.month for i in climate.get_items() if i.datetime}
    assert months == set(range(1, 13))
