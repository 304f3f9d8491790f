"""Every tool over the real MCP transport, checked against rasterio/numpy on the source files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio
from pyproj import Transformer
from raster_test_helpers import LUX_CENTRE, STARS, TERRA, call, call_error, cog, connect, source_file
from rasterio.features import geometry_mask
from rasterio.transform import Affine
from shapely.geometry import shape

from stacgis_common.arguments import retry_hint

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXPECTED_IDS = {
    "luxembourg-dem",
    "landsat7-olinda",
    "landsat7-olinda-ndvi",
    "olinda-dem",
    "nlcd-puerto-rico",
    "bcsd-precipitation-1999",
    "bcsd-temperature-1999",
    "oisst-sst",
    "rmnp-dem",
    "jacksboro-dem",
    "global-precipitation-2016",
    "global-land-mask",
    "landsat7-olinda-scenes",
    "bcsd-1999-scenes",
    "bcsd-1999-cube",
    "bcsd-1999-zarr",
}
BCSD = f"{STARS}/nc/bcsd_obs_1999.nc"


def cos_lat_mean(data: np.ma.MaskedArray, transform: Affine) -> float:
    rows = np.arange(data.shape[0]) + 0.5
    lats = transform.f + rows * transform.e
    weights = np.broadcast_to(np.cos(np.radians(lats))[:, None], data.shape)
    valid = ~np.ma.getmaskarray(data)
    return float(np.average(np.ma.getdata(data)[valid], weights=weights[valid]))


def netcdf_series(var: str, lon: float, lat: float) -> list[float]:
    with rasterio.open(f"netcdf:{source_file(BCSD)}:{var}") as ds:
        row, col = ds.index(lon, lat)
        return [float(v) for v in ds.read(window=((row, row + 1), (col, col + 1)))[:, 0, 0]]


async def test_tools_are_listed_read_only_with_schemas(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        listed = await mcp.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == {
            "list_raster_collections",
            "search_raster_collections",
            "get_raster_info",
            "get_raster_statistics",
            "query_raster_point",
            "query_multiple_rasters_point",
            "get_timeseries",
            "compute_zonal_stats",
            "detect_change",
            "search_items",
            "get_scene_statistics",
            "get_scene_timeseries",
        }
        assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
        assert set(tools["query_raster_point"].input_schema["required"]) == {"collection_id"}
        assert set(tools["detect_change"].input_schema["required"]) == {"collection_id", "period_a", "period_b"}
        assert set(tools["compute_zonal_stats"].input_schema["required"]) == {"collection_id"}
        located = {name for name, tool in tools.items() if "place" in tool.input_schema["properties"]}
        assert located == {
            "get_raster_statistics",
            "query_raster_point",
            "query_multiple_rasters_point",
            "get_timeseries",
            "compute_zonal_stats",
            "detect_change",
            "search_items",
            "get_scene_statistics",
            "get_scene_timeseries",
        }
        assert all(tool.description and tool.description.startswith("Use for") for tool in tools.values())


async def test_list_collections_with_filters(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        everything = await call(mcp, "list_raster_collections")
        assert {c["id"] for c in everything["collections"]} == EXPECTED_IDS
        lux = await call(mcp, "list_raster_collections", bbox=[5.8, 49.5, 6.4, 50.1])
        ids = {c["id"] for c in lux["collections"]}
        assert "luxembourg-dem" in ids and "global-land-mask" in ids
        assert "rmnp-dem" not in ids and "nlcd-puerto-rico" not in ids
        july = await call(mcp, "list_raster_collections", datetime="1999-07")
        ids = {c["id"] for c in july["collections"]}
        assert {"bcsd-temperature-1999", "bcsd-precipitation-1999"} <= ids
        assert "global-precipitation-2016" not in ids and "oisst-sst" not in ids
        assert "luxembourg-dem" in ids  # undated collections are not filtered by time
        monthly = next(c for c in everything["collections"] if c["id"] == "bcsd-temperature-1999")
        assert monthly["items"] == 12 and monthly["units"] == ["degC"]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("elevation Luxembourg", "luxembourg-dem"),
        ("land cover", "nlcd-puerto-rico"),
        ("sea surface temperature", "oisst-sst"),
        ("rainfall 1999", "bcsd-precipitation-1999"),
        ("vegetation index", "landsat7-olinda-ndvi"),
        ("Rocky Mountains DEM", "rmnp-dem"),
    ],
)
async def test_search_ranks_the_obvious_collection_first(raster_service: str, query: str, best: str) -> None:
    async with connect(raster_service) as mcp:
        found = await call(mcp, "search_raster_collections", query=query)
        assert found["collections"][0]["id"] == best


async def test_info_lists_class_names_from_the_attribute_table(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        import xml.etree.ElementTree as ET

        info = await call(mcp, "get_raster_info", collection_id="nlcd-puerto-rico")
        classes = info["bands"][0]["classes"]
        table = ET.parse(source_file(f"{STARS}/tif/lc.tif.aux.xml")).getroot()  # noqa: S314
        named = {r.get("index"): r.findall("F")[5].text for r in table.iter("Row") if r.findall("F")[5].text}
        assert classes == named
        assert info["crs"] == "EPSG:5070" and info["resolution_m"] == 3000.0
        assert info["license"] and info["provenance"]["sources"][0]["package"] == "r-cran-stars"
        assert info["tiles"] == "/tiles/nlcd-puerto-rico/{z}/{x}/{y}.png"


async def test_luxembourg_dem_statistics_match_the_source_file(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        result = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", bbox=[5.7, 49.4, 6.6, 50.2])
        with rasterio.open(source_file(f"{TERRA}/ex/elev.tif")) as ds:
            data = ds.read(1, masked=True)
            transform = ds.transform
        stats = result["statistics"]
        assert (stats["min"], stats["max"]) == (float(data.min()), float(data.max())) == (141.0, 547.0)
        assert stats["mean"] == pytest.approx(cos_lat_mean(data, transform), rel=1e-5)
        assert stats["valid_fraction"] == pytest.approx(data.count() / data.size, abs=2e-3)
        assert result["unit"] == "m" and result["resolution"]["native"] is True
        assert result["area"]["clipped"] is True and 0 < result["area"]["fraction_inside_extent"] < 1
        assert stats["percentiles"]["p5"] < stats["percentiles"]["p50"] < stats["percentiles"]["p95"]


async def test_statistics_without_an_area_cover_the_whole_collection(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        result = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem")
        with rasterio.open(source_file(f"{TERRA}/ex/elev.tif")) as ds:
            data = ds.read(1, masked=True)
            west, south, east, north = ds.bounds
        stats = result["statistics"]
        assert (stats["min"], stats["max"]) == (float(data.min()), float(data.max()))
        assert stats["valid_pixels"] == data.count()
        assert result["area"]["bbox"] == pytest.approx([west, south, east, north], abs=1e-6)


async def test_a_statistic_given_as_the_band_means_the_first_band(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        box = [5.7, 49.4, 6.6, 50.2]
        plain = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", bbox=box)
        for word in ("mean", "Max", "share"):
            asked = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", bbox=box, band=word)
            assert asked["statistics"] == plain["statistics"] and asked["band"] == plain["band"]


async def test_a_datetime_given_for_a_collection_without_dates_is_ignored(raster_service: str) -> None:
    # The catalogue lists such collections with time "not time-resolved"; a small model copies that.
    async with connect(raster_service) as mcp:
        box = [-34.9, -8.03, -34.84, -7.96]
        plain = await call(mcp, "get_raster_statistics", collection_id="landsat7-olinda-ndvi", bbox=box)
        copied = await call(
            mcp, "get_raster_statistics", collection_id="landsat7-olinda-ndvi", bbox=box, datetime="not time-resolved"
        )
        assert copied["statistics"] == plain["statistics"]
        assert "not time-resolved" in json.dumps(copied["time"])


async def test_ndvi_range_matches_numpy_on_the_landsat_scene(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        with rasterio.open(source_file(f"{STARS}/tif/L7_ETMs.tif")) as ds:
            red, nir = (b.astype("float64") for b in ds.read([3, 4]))
        total = nir + red
        ndvi = (nir - red)[total > 0] / total[total > 0]
        result = await call(
            mcp, "get_raster_statistics", collection_id="landsat7-olinda-ndvi", bbox=[-34.93, -8.05, -34.81, -7.94]
        )
        stats = result["statistics"]
        assert stats["min"] == pytest.approx(ndvi.min(), abs=1e-6)
        assert stats["max"] == pytest.approx(ndvi.max(), abs=1e-6)
        assert stats["mean"] == pytest.approx(ndvi.mean(), abs=1e-4)  # projected grid: equal-area pixels
        assert stats["valid_pixels"] == ndvi.size
        assert -1 <= stats["min"] < 0 < stats["max"] <= 1


async def test_global_land_mask_uses_overviews_and_keeps_the_land_share(raster_service: str, stac_dir: Path) -> None:
    async with connect(raster_service) as mcp:
        result = await call(mcp, "get_raster_statistics", collection_id="global-land-mask", bbox=[-180, -90, 180, 90])
        assert result["resolution"]["native"] is False and result["resolution"]["overview_factor"] >= 8
        land = next(c for c in result["statistics"]["classes"] if c["name"] == "Land")["fraction"]
        # Independent: area-weighted land share from a 4x finer overview than the service reads.
        with rasterio.open(cog(stac_dir, "global-land-mask"), overview_level=1) as ds:
            data = ds.read(1)
            lats = ds.transform.f + (np.arange(ds.height) + 0.5) * ds.transform.e
        weights = np.cos(np.radians(lats))
        share = float((data.mean(axis=1) * weights).sum() / weights.sum())
        assert land == pytest.approx(share, abs=0.003)
        assert 0.27 < land < 0.31  # about 29 % of the Earth's surface is land


async def test_statistics_of_a_period_average_its_time_steps(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        result = await call(
            mcp,
            "get_raster_statistics",
            collection_id="bcsd-temperature-1999",
            bbox=[-85, 33, -74.9, 37.2],
            datetime="1999-06/1999-08",
        )
        assert result["time"]["items"] == 3
        with rasterio.open(f"netcdf:{source_file(BCSD)}:tas") as ds:
            summer = ds.read([6, 7, 8], masked=True)
            transform = ds.transform
        summer = np.ma.masked_greater(summer, 1e19).mean(axis=0)
        assert result["statistics"]["mean"] == pytest.approx(cos_lat_mean(summer, transform), rel=1e-4)
        assert result["statistics"]["max"] == pytest.approx(float(summer.max()), rel=1e-5)


async def test_point_in_land_cover_names_the_class(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        lon, lat = -66.1, 18.3
        result = await call(mcp, "query_raster_point", collection_id="nlcd-puerto-rico", lon=lon, lat=lat)
        with rasterio.open(source_file(f"{STARS}/tif/lc.tif")) as ds:
            x, y = Transformer.from_crs(4326, ds.crs, always_xy=True).transform(lon, lat)
            code = int(next(ds.sample([(x, y)]))[0])
        value = result["results"][0]["values"]["land_cover"]
        assert value["value"] == code
        assert value["class"] == "Developed, Low Intensity"
        assert result["class_at_point"] == "Developed, Low Intensity"  # the class alone: one band


async def test_point_of_a_month(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        result = await call(
            mcp, "query_raster_point", collection_id="bcsd-precipitation-1999", lon=-83.5, lat=35.6, datetime="1999-03"
        )
        assert result["results"][0]["values"]["pr"] == pytest.approx(netcdf_series("pr", -83.5, 35.6)[2], rel=1e-6)
        assert result["units"] == {"pr": "mm/month"}
        latest = await call(mcp, "query_raster_point", collection_id="bcsd-precipitation-1999", lon=-83.5, lat=35.6)
        assert latest["results"][0]["time"].startswith("1999-12-01")
        # Without a date every step is summarised too: the wettest month is in the answer to any point call.
        series = netcdf_series("pr", -83.5, 35.6)
        steps = latest["all_time_steps"]
        assert steps["count"] == 12 and steps["max"]["value"] == pytest.approx(max(series), rel=1e-6)
        assert steps["max"]["time"].startswith(f"1999-{series.index(max(series)) + 1:02d}")
        assert steps["min"]["value"] == pytest.approx(min(series), rel=1e-6)
        assert steps["mean"] == pytest.approx(sum(series) / 12, rel=1e-4)
        assert "all_time_steps" not in result, "a point in a chosen month is that month only"
        # Statistics over a box of zero size (a small model pointing with a box): the cell's value.
        cell = await call(
            mcp,
            "get_raster_statistics",
            collection_id="bcsd-precipitation-1999",
            bbox=[-83.5, 35.6, -83.5, 35.6],
            datetime="1999-03",
        )
        assert cell["statistics"]["mean"] == result["results"][0]["values"]["pr"] == cell["statistics"]["max"]
        assert cell["area"]["type"] == "point" and cell["statistics"]["valid_pixels"] == 1
        # Paris is outside the Luxembourg DEM: an error that says so and names what does cover it.
        outside = await call_error(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=2.35, lat=48.85)
        assert "outside 'luxembourg-dem'" in outside and "Collections covering this point:" in outside
        covering = (await call(mcp, "list_raster_collections", bbox=[2.349, 48.849, 2.351, 48.851]))["collections"]
        assert all(c["id"] in outside for c in covering)
        assert retry_hint(outside) is None, "no other collection at Paris holds elevation"
        # Olinda asked of the Luxembourg DEM: of the collections there, one holds elevation in metres
        # too, and the error names it as the call to make (the orchestrator makes it).
        olinda = await call_error(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=-34.86, lat=-8.0)
        here = (await call(mcp, "list_raster_collections", bbox=[-34.861, -8.001, -34.859, -7.999]))["collections"]
        infos = [await call(mcp, "get_raster_info", collection_id=c["id"]) for c in here]
        dem = await call(mcp, "get_raster_info", collection_id="luxembourg-dem")
        alike = [
            i["id"]
            for i in infos
            if len(i["bands"]) == 1
            and [(b["name"], b.get("unit")) for b in i["bands"]] == [(b["name"], b.get("unit")) for b in dem["bands"]]
        ]
        assert len(alike) == 1
        assert retry_hint(olinda) == ("collection_id", alike[0])


async def test_several_collections_at_one_point(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        lon, lat = -34.86, -8.0
        result = await call(
            mcp,
            "query_multiple_rasters_point",
            collection_ids=["landsat7-olinda", "olinda-dem", "landsat7-olinda-ndvi"],
            lon=lon,
            lat=lat,
        )
        by_id = {r["collection_id"]: r for r in result["results"]}
        with rasterio.open(source_file(f"{STARS}/tif/L7_ETMs.tif")) as ds:
            x, y = Transformer.from_crs(4326, ds.crs, always_xy=True).transform(lon, lat)
            bands = [float(v) for v in next(ds.sample([(x, y)]))]
        with rasterio.open(source_file(f"{STARS}/tif/olinda_dem_utm25s.tif")) as ds:
            x, y = Transformer.from_crs(4326, ds.crs, always_xy=True).transform(lon, lat)
            elevation = float(next(ds.sample([(x, y)]))[0])
        assert list(by_id["landsat7-olinda"]["values"].values()) == bands
        assert by_id["olinda-dem"]["values"]["elevation"] == elevation
        assert by_id["landsat7-olinda-ndvi"]["values"]["ndvi"] == pytest.approx(
            (bands[3] - bands[2]) / (bands[3] + bands[2]), abs=1e-6
        )
        # Outside every collection asked: an error naming the collections that do cover the point.
        paris = await call_error(
            mcp, "query_multiple_rasters_point", collection_ids=["landsat7-olinda", "olinda-dem"], lon=2.35, lat=48.85
        )
        assert "outside 'landsat7-olinda'" in paris and "Collections covering this point:" in paris
        assert "global-land-mask" in paris
        # This tool takes a list: no single collection_id to call again with, though one DEM covers Olinda.
        olinda = await call_error(
            mcp, "query_multiple_rasters_point", collection_ids=["luxembourg-dem"], lon=-34.86, lat=-8.0
        )
        assert "olinda-dem" in olinda and retry_hint(olinda) is None


async def test_timeseries_of_1999_has_12_monthly_points(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        result = await call(mcp, "get_timeseries", collection_id="bcsd-temperature-1999", lon=-83.5, lat=35.6)
        named = await call(
            mcp, "get_timeseries", collection_id="bcsd-temperature-1999", lon=-83.5, lat=35.6, band="temperature"
        )
        assert named["points"] == result["points"]  # the quantity written as the band means its one band
        expected = netcdf_series("tas", -83.5, 35.6)
        assert result["count"] == 12
        assert [p["value"] for p in result["points"]] == pytest.approx(expected, rel=1e-6)
        assert [p["time"][:7] for p in result["points"]] == [f"1999-{m:02d}" for m in range(1, 13)]
        assert result["unit"] == "degC"
        spring = await call(
            mcp,
            "get_timeseries",
            collection_id="bcsd-temperature-1999",
            lon=-83.5,
            lat=35.6,
            start="1999-03",
            end="1999-05",
        )
        assert [p["value"] for p in spring["points"]] == pytest.approx(expected[2:5], rel=1e-6)


def _coverage_weighted_mean(path: Path, polygon: dict[str, Any], supersample: int = 16) -> float:
    """Exact-ish zonal mean: cell coverage from a 16x finer rasterisation, times cos(latitude)."""
    with rasterio.open(path) as ds:
        data = ds.read(1, masked=True)
        fine = ds.transform @ Affine.scale(1 / supersample)
        inside = geometry_mask(
            [polygon], out_shape=(ds.height * supersample, ds.width * supersample), transform=fine, invert=True
        )
        coverage = inside.reshape(ds.height, supersample, ds.width, supersample).mean(axis=(1, 3))
        lats = ds.transform.f + (np.arange(ds.height) + 0.5) * ds.transform.e
    weights = coverage * np.cos(np.radians(lats))[:, None]
    valid = ~np.ma.getmaskarray(data) & (weights > 0)
    return float(np.average(np.ma.getdata(data)[valid], weights=weights[valid]))


async def test_zonal_stats_are_exact_and_area_weighted(raster_service: str, stac_dir: Path) -> None:
    async with connect(raster_service) as mcp:
        result = await call(mcp, "compute_zonal_stats", collection_id="luxembourg-dem", geometry=LUX_CENTRE)
        expected = _coverage_weighted_mean(cog(stac_dir, "luxembourg-dem"), LUX_CENTRE)
        assert result["statistics"]["mean"] == pytest.approx(expected, rel=2e-4)
        assert result["area"]["area_km2"] == pytest.approx(
            shape(LUX_CENTRE).area * (111.195**2) * math.cos(math.radians(49.77)), rel=0.01
        )
        assert "exactextract" in result["method"]


async def test_zonal_stats_of_land_cover_give_named_class_fractions(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        polygon = {
            "type": "Polygon",
            "coordinates": [[[-66.5, 18.0], [-65.8, 18.0], [-65.8, 18.5], [-66.5, 18.5], [-66.5, 18.0]]],
        }
        result = await call(mcp, "compute_zonal_stats", collection_id="nlcd-puerto-rico", geometry=polygon)
        classes = result["statistics"]["classes"]
        assert sum(c["fraction"] for c in classes) == pytest.approx(1.0, abs=2e-3)
        # Independent: class shares of the pixels whose centres fall in the polygon.
        with rasterio.open(source_file(f"{STARS}/tif/lc.tif")) as ds:
            transformer = Transformer.from_crs(4326, ds.crs, always_xy=True)
            ring = [transformer.transform(x, y) for x, y in polygon["coordinates"][0]]
            inside = geometry_mask(
                [{"type": "Polygon", "coordinates": [ring]}], out_shape=ds.shape, transform=ds.transform, invert=True
            )
            codes = ds.read(1)[inside]
        codes = codes[codes != 0]
        for entry in classes[:3]:
            assert entry["fraction"] == pytest.approx(float((codes == entry["value"]).mean()), abs=0.03)
        assert result["statistics"]["majority"] == "Evergreen Forest"
        first = classes[0]
        assert result["statistics"]["shares"].startswith(f"{first['name']}: {100 * first['fraction']:.2f} %")
        # A class written as the band means the band that holds it.
        by_class = await call(
            mcp, "compute_zonal_stats", collection_id="nlcd-puerto-rico", geometry=polygon, band="forest"
        )
        assert by_class["statistics"] == result["statistics"]


async def test_detect_change_between_winter_and_summer(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        bbox = [-85, 33, -74.9, 37.2]
        result = await call(
            mcp,
            "detect_change",
            collection_id="bcsd-temperature-1999",
            bbox=bbox,
            period_a="1999-01",
            period_b="1999-07",
            threshold=18,
        )
        with rasterio.open(f"netcdf:{source_file(BCSD)}:tas") as ds:
            both = np.ma.masked_greater(ds.read([1, 7], masked=True), 1e19)
            transform = ds.transform
        diff = both[1] - both[0]
        assert result["change"]["mean"] == pytest.approx(cos_lat_mean(diff, transform), rel=1e-4)
        assert result["statistics_a"]["mean"] < result["statistics_b"]["mean"]
        # A period the collection lacks: the error names the collections with data then and there.
        error = await call_error(
            mcp,
            "detect_change",
            collection_id="global-precipitation-2016",
            bbox=bbox,
            period_a="1999-01",
            period_b="1999-07",
        )
        assert "no data in 'global-precipitation-2016' for 1999-01" in error
        assert "Collections with data for 1999-01 there: bcsd-precipitation-1999, bcsd-temperature-1999" in error
        # The comparison in one sentence, with the sign written out.
        change = result["change"]
        assert result["summary"] == (
            f"mean {result['statistics_a']['mean']} degC in 1999-01, {result['statistics_b']['mean']} degC in "
            f"1999-07: a change of +{change['mean']} degC (rose), +{change['mean_change_percent']} % of the "
            "1999-01 mean"
        )
        lats = transform.f + (np.arange(diff.shape[0]) + 0.5) * transform.e
        weights = np.broadcast_to(np.cos(np.radians(lats))[:, None], diff.shape)[~diff.mask]
        rose = float(weights[diff.compressed() > 18].sum() / weights.sum())
        assert result["change"]["rose_fraction"] == pytest.approx(rose, abs=1e-3)
        assert result["change"]["rose_fraction"] + result["change"]["unchanged_fraction"] + result["change"][
            "fell_fraction"
        ] == pytest.approx(1.0, abs=2e-3)


async def test_geometry_by_vector_feature_reference(raster_service: str, vector_server: Any) -> None:
    async with connect(raster_service) as mcp:
        inline = await call(mcp, "compute_zonal_stats", collection_id="luxembourg-dem", geometry=LUX_CENTRE)
        referenced = await call(
            mcp,
            "compute_zonal_stats",
            collection_id="luxembourg-dem",
            geometry={"dataset": "test-areas", "id": "lux-centre"},
        )
        assert referenced["statistics"] == inline["statistics"]
        assert referenced["area"]["type"] == "feature"
        assert vector_server.seen_users[-1] == "analyst-1"  # the caller's identity travelled with the token
        stats = await call(
            mcp,
            "get_raster_statistics",
            collection_id="luxembourg-dem",
            geometry={"dataset": "test-areas", "id": "lux-centre"},
        )
        assert stats["statistics"]["min"] >= 141


async def test_resource_and_prompts(raster_service: str) -> None:
    async with connect(raster_service) as mcp:
        import json

        resource = await mcp.read_resource("collections://list")
        listing = json.loads(resource.contents[0].text)
        assert {c["id"] for c in listing["collections"]} == EXPECTED_IDS
        # Keywords and band names let the orchestrator tell which collection holds which variable.
        info = await call(mcp, "get_raster_info", collection_id="luxembourg-dem")
        lux = next(c for c in listing["collections"] if c["id"] == "luxembourg-dem")
        assert "elevation" in lux["keywords"] and lux["band_names"] == [b["name"] for b in info["bands"]]
        prompts = {p.name for p in (await mcp.list_prompts()).prompts}
        assert {"analysis_prompt", "query_prompt"} <= prompts
        prompt = await mcp.get_prompt(
            "analysis_prompt", {"task": "mean elevation of Luxembourg", "location": "Luxembourg"}
        )
        text = prompt.messages[0].content.text
        assert "mean elevation of Luxembourg" in text and "get_raster_statistics" in text
