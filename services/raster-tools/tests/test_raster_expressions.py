"""Band math: the grammar admits arithmetic over asset names only, resolves the spellings catalogs
use for the same band, masks what cannot be computed, and reads stored values as physical ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box
from shapely.geometry.base import BaseGeometry

from stacgis_common.arguments import ArgumentError
from stacgis_raster import expressions, scene_reads
from stacgis_raster.reads import Area, ReadLimits
from stacgis_raster.records import BandInfo


def band(index: int, name: str, common: str | None) -> BandInfo:
    return BandInfo(index, name, None, None, None, "uint16", None, common)


# Planetary Computer's Sentinel-2 keys: B04 (red), B08 (nir), B11 (swir16).
SENTINEL = {"B04": band(1, "B04", "red"), "B08": band(2, "B08", "nir"), "B11": band(3, "B11", "swir16")}
# Planetary Computer's Landsat keys: nir08 spelled out.
LANDSAT = {"red": band(1, "red", "red"), "nir08": band(2, "nir08", "nir08")}


def test_index_names_resolve_through_common_names_and_their_spellings() -> None:
    assert expressions.parse("ndvi", SENTINEL, "s2").formula == "(B08 - B04) / (B08 + B04)"
    assert expressions.parse("NDVI", LANDSAT, "ls").formula == "(nir08 - red) / (nir08 + red)"
    parsed = expressions.parse("(nir - swir1) / (nir + swir1)", SENTINEL, "s2")
    assert parsed.assets == ("B08", "B11")


def test_the_quantity_an_asset_describes_names_it() -> None:
    climate = {
        "pr": BandInfo(1, "pr", "Monthly total precipitation", "mm/month", None, "float32"),
        "tas": BandInfo(1, "tas", "Monthly mean near-surface air temperature", "degC", None, "float32"),
    }
    assert expressions.parse("precipitation", climate, "c").formula == "pr"
    assert expressions.parse("Temperature - 0", climate, "c").assets == ("tas",)
    # A word both assets' descriptions share names neither.
    with pytest.raises(ArgumentError, match="'monthly' is not an asset"):
        expressions.parse("monthly", climate, "c")


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('id')",
        "red.__class__",
        "red[0]",
        "(lambda: red)()",
        "red if nir else 1",
        "red ** 99999999",
        "red // 2",
        "'a' * 3",
        "True + red",
    ],
)
def test_anything_but_arithmetic_is_refused(text: str) -> None:
    with pytest.raises(ArgumentError) as error:
        expressions.parse(text, SENTINEL, "s2")
    assert error.value.argument == "expression"


def test_bounds_on_size() -> None:
    with pytest.raises(ArgumentError, match="at most 200 characters"):
        expressions.parse("red + " * 40 + "red", SENTINEL, "s2")
    with pytest.raises(ArgumentError, match="terms"):
        expressions.parse("+".join(["red"] * 40), SENTINEL, "s2")


def test_division_by_zero_and_masked_inputs_are_masked_not_infinite() -> None:
    red = np.ma.MaskedArray([0.0, 10.0, 20.0, 5.0], mask=[False, False, False, True])
    nir = np.ma.MaskedArray([0.0, 30.0, 20.0, 5.0])
    result = expressions.evaluate("(nir - red) / (nir + red)", {"red": red, "nir": nir})
    assert np.ma.getmaskarray(result).tolist() == [True, False, False, True]
    assert result[1] == pytest.approx(0.5) and result[2] == 0.0


def test_stored_values_are_read_with_scale_and_offset(tmp_path: Path) -> None:
    """Sentinel-2 L2A stores reflectance x 10000 + 1000: band math must see reflectance."""
    stored = np.array([[1000, 2000], [3000, 0]], dtype="uint16")
    transform = from_origin(500000, 4000000, 10, 10)
    path = tmp_path / "b04.tif"
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=2,
        height=2,
        count=1,
        dtype="uint16",
        crs="EPSG:32633",
        transform=transform,
        nodata=0,
    ) as ds:
        ds.write(stored, 1)
    plan = scene_reads.plan_grid(
        ReadLimits(10_000, 10_000, 10_000),
        str(path),
        Area(_wgs84_box(path), "bbox", "bbox", None),
    )
    values = scene_reads._read_asset(str(path), plan, (0.0001, -0.1))
    got = values.compressed().tolist()
    assert sorted(got) == pytest.approx([0.0, 0.1, 0.2])
    assert int(np.ma.getmaskarray(values).sum()) >= 1  # the nodata pixel stays masked


def _wgs84_box(path: Path) -> BaseGeometry:
    from pyproj import Transformer

    with rasterio.open(path) as ds:
        to_wgs84 = Transformer.from_crs(ds.crs, "EPSG:4326", always_xy=True)
        b = ds.bounds
        # A box just inside the raster, so every pixel centre lies in it.
        west, south = to_wgs84.transform(b.left + 1, b.bottom + 1)
        east, north = to_wgs84.transform(b.right - 1, b.top - 1)
    return box(west, south, east, north)


def test_cloud_masks_are_found_by_role_or_by_cloud_classes() -> None:
    from stacgis_raster.stac_records import _cloud_mask

    # Sentinel-2 L2A's scene classification as Earth Search describes it: a data asset with classes.
    scl = {
        "roles": ["data"],
        "classification:classes": [
            {"value": 3, "name": "cloud_shadow"},
            {"value": 4, "name": "vegetation"},
            {"value": 8, "name": "cloud_medium_probability"},
            {"value": 9, "name": "cloud_high_probability"},
            {"value": 10, "name": "thin_cirrus"},
        ],
    }
    assert _cloud_mask({"red": {"roles": ["data"]}, "scl": scl}) == ("scl", (3, 8, 9, 10))
    mask = {
        "roles": ["cloud"],
        "classification:classes": [{"value": 0, "name": "clear"}, {"value": 1, "name": "cloud"}],
    }
    assert _cloud_mask({"cloud_mask": mask}) == ("cloud_mask", (1,))
    assert _cloud_mask({"red": {"roles": ["data"]}, "thumbnail": {"roles": ["thumbnail"]}}) is None
