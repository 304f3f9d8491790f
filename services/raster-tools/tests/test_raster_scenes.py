"""Scene tools against a real STAC API server (rustac): item search, NDVI over a mosaic of many
items, temporal composites and time series, checked against rasterio reads of the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pystac
import pytest
import rasterio
from pyproj import Transformer
from raster_test_helpers import call, call_error, cog, connect
from shapely.geometry import Point, box
from shapely.ops import transform as shapely_transform

pytestmark = pytest.mark.asyncio(loop_scope="session")

LANDSAT = "landsat7-olinda-scenes"
CLIMATE = "bcsd-1999-scenes"
OLINDA_BOX = [-34.90, -8.02, -34.86, -7.98]  # spans several tiles of the 12 x 12 grid
CLIMATE_BOX = [-84.0, 34.0, -78.0, 36.5]  # spans 6 of the 8 tiles


def _items(stac_dir: Path, collection_id: str) -> list[pystac.Item]:
    collection = pystac.Collection.from_file(str(stac_dir / collection_id / "collection.json"))
    items = list(collection.get_items())
    for item in items:
        item.make_asset_hrefs_absolute()
    return items


def _overlapping(items: list[pystac.Item], bbox: list[float]) -> list[pystac.Item]:
    return [i for i in items if i.bbox and box(*i.bbox).intersects(box(*bbox))]


async def test_search_filters_by_area_and_cloud_cover_sorts_and_pages(api_backed_service: str, stac_dir: Path) -> None:
    items = _overlapping(_items(stac_dir, LANDSAT), OLINDA_BOX)
    limit_cover = float(np.median([i.properties["eo:cloud_cover"] for i in items]))
    expected = sorted(
        (i for i in items if i.properties["eo:cloud_cover"] <= limit_cover),
        key=lambda i: (i.properties["eo:cloud_cover"], i.id),
    )
    assert 5 < len(expected) < len(items)
    async with connect(api_backed_service) as mcp:
        query = {"collection_id": LANDSAT, "bbox": OLINDA_BOX, "max_cloud_cover": limit_cover, "sortby": "cloud_cover"}
        first = await call(mcp, "search_items", limit=5, **query)
        assert first["count"] == len(expected)
        assert first["pages"] == -(-len(expected) // 5) and first["next_page"] == 2
        assert [i["id"] for i in first["items"]] == [i.id for i in expected[:5]]
        assert first["items"][0]["assets"] == ["blue", "green", "red", "nir", "swir16", "swir22"]
        second = await call(mcp, "search_items", limit=5, page=2, **query)
        assert [i["id"] for i in second["items"]] == [i.id for i in expected[5:10]]
        # A period: months of the climate collection, each with its tiles.
        spring = await call(mcp, "search_items", collection_id=CLIMATE, datetime="1999-03/1999-05", limit=100)
        months = {i["datetime"][:7] for i in spring["items"]}
        assert months == {"1999-03", "1999-04", "1999-05"}
        assert spring["count"] == sum(1 for i in _items(stac_dir, CLIMATE) if i.datetime and 3 <= i.datetime.month <= 5)


def _landsat_ndvi_reference(stac_dir: Path, bbox: list[float], cloud_masked: bool) -> np.ndarray:
    """NDVI of every pixel whose centre lies in `bbox`, from the items' red and nir files placed on the
    scene's grid (overlaps hold the same pixels, so the order does not matter); without the pixels the
    items' cloud masks flag when `cloud_masked`."""
    items = _overlapping(_items(stac_dir, LANDSAT), bbox)
    with rasterio.open(items[0].assets["red"].href) as ds:
        crs, res, x0, y0 = ds.crs, ds.res[0], ds.transform.c, ds.transform.f
    for item in items:
        with rasterio.open(item.assets["red"].href) as ds:
            x0, y0 = min(x0, ds.transform.c), max(y0, ds.transform.f)
    red: dict[tuple[int, int], float] = {}
    nir: dict[tuple[int, int], float] = {}
    cloud: dict[tuple[int, int], float] = {}
    for item in items:
        for key, target in (("red", red), ("nir", nir), ("cloud_mask", cloud)):
            with rasterio.open(item.assets[key].href) as ds:
                data = ds.read(1).astype("float64")
                r0 = round((y0 - ds.transform.f) / res)
                c0 = round((ds.transform.c - x0) / res)
                for (r, c), value in np.ndenumerate(data):
                    target[(r0 + r, c0 + c)] = value
    to_utm = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    area = shapely_transform(lambda x, y: to_utm.transform(x, y), box(*bbox).segmentize(0.001))
    values = []
    for (r, c), red_value in red.items():
        centre = Point(x0 + (c + 0.5) * res, y0 - (r + 0.5) * res)
        total = nir[(r, c)] + red_value
        if total > 0 and area.contains(centre) and not (cloud_masked and cloud[(r, c)] == 1):
            values.append((nir[(r, c)] - red_value) / total)
    return np.array(values)


async def test_ndvi_over_a_mosaic_of_many_items_matches_a_direct_computation(
    api_backed_service: str, stac_dir: Path
) -> None:
    reference = _landsat_ndvi_reference(stac_dir, OLINDA_BOX, cloud_masked=False)
    clear = _landsat_ndvi_reference(stac_dir, OLINDA_BOX, cloud_masked=True)
    assert 0 < clear.size < reference.size
    async with connect(api_backed_service) as mcp:
        result = await call(
            mcp, "get_scene_statistics", collection_id=LANDSAT, expression="ndvi", bbox=OLINDA_BOX, cloud_mask=False
        )
        same = await call(
            mcp,
            "get_scene_statistics",
            collection_id=LANDSAT,
            expression="(nir - red) / (nir + red)",
            bbox=OLINDA_BOX,
            cloud_mask=False,
        )
        masked = await call(mcp, "get_scene_statistics", collection_id=LANDSAT, expression="ndvi", bbox=OLINDA_BOX)
    # By default the items' own cloud masks leave their cloudy pixels out.
    assert masked["statistics"]["valid_pixels"] == clear.size
    assert masked["statistics"]["mean"] == pytest.approx(clear.mean(), rel=1e-5)
    assert "cloud_mask" in masked["cloud_mask"]
    assert result["formula"] == "(nir - red) / (nir + red)"
    assert result["items"]["used"] > 10  # really a mosaic
    stats = result["statistics"]
    assert stats["valid_pixels"] == reference.size
    assert stats["mean"] == pytest.approx(reference.mean(), rel=1e-5)
    assert stats["min"] == pytest.approx(reference.min(), rel=1e-5)
    assert stats["max"] == pytest.approx(reference.max(), rel=1e-5)
    assert same["statistics"] == stats


def _monthly(stac_dir: Path, collection_id: str, month: int) -> tuple[np.ma.MaskedArray, Any]:
    path = cog(stac_dir, collection_id, f"{collection_id}-1999-{month:02d}")
    with rasterio.open(path) as ds:
        return ds.read(1, masked=True).astype("float64"), ds.transform


def _weighted_mean_in_box(data: np.ma.MaskedArray, transform: Any, bbox: list[float]) -> float:
    rows, cols = np.indices(data.shape)
    lon = transform.c + (cols + 0.5) * transform.a
    lat = transform.f + (rows + 0.5) * transform.e
    inside = (lon >= bbox[0]) & (lon <= bbox[2]) & (lat >= bbox[1]) & (lat <= bbox[3]) & ~np.ma.getmaskarray(data)
    weights = np.cos(np.radians(lat))[inside]
    return float(np.average(np.ma.getdata(data)[inside], weights=weights))


async def test_a_temporal_composite_and_a_time_series_match_the_untiled_grids(
    api_backed_service: str, stac_dir: Path
) -> None:
    """The tiled collection mosaicked back per month equals the original monthly grids."""
    months = [3, 4, 5]
    grids = [_monthly(stac_dir, "bcsd-precipitation-1999", m) for m in months]
    median = np.ma.median(np.ma.stack([g for g, _ in grids]), axis=0)
    expected_median = _weighted_mean_in_box(median, grids[0][1], CLIMATE_BOX)
    temperatures = [_monthly(stac_dir, "bcsd-temperature-1999", m) for m in months]
    expected_series = [_weighted_mean_in_box(g, t, CLIMATE_BOX) for g, t in temperatures]
    async with connect(api_backed_service) as mcp:
        composite = await call(
            mcp,
            "get_scene_statistics",
            collection_id=CLIMATE,
            expression="pr",
            bbox=CLIMATE_BOX,
            datetime="1999-03/1999-05",
            composite="median",
        )
        series = await call(
            mcp,
            "get_scene_timeseries",
            collection_id=CLIMATE,
            expression="tas",
            bbox=CLIMATE_BOX,
            start="1999-03",
            end="1999-05",
        )
    assert composite["unit"] == "mm/month"
    assert len(composite["dates"]) == 3 and composite["composite"].startswith("median over 3 dates")
    assert composite["statistics"]["mean"] == pytest.approx(expected_median, rel=1e-5)
    assert [p["date"][:7] for p in series["series"]] == ["1999-03", "1999-04", "1999-05"]
    assert [p["mean"] for p in series["series"]] == pytest.approx(expected_series, rel=1e-5)
    assert series["unit"] == "degC"
    # The extremes lead the result, as a sentence naming the months the series gives.
    assert next(iter(series)) == "summary"
    months = {p["date"][:7]: p["mean"] for p in series["series"]}
    warmest, coolest = max(months, key=lambda m: months[m]), min(months, key=lambda m: months[m])
    assert series["summary"]["text"] == (
        f"highest mean {months[warmest]} degC in {warmest}, lowest {months[coolest]} degC in {coolest}, over 3 dates"
    )


async def test_static_catalog_and_stac_api_find_the_same_items(raster_service: str, api_backed_service: str) -> None:
    arguments = {"collection_id": LANDSAT, "bbox": OLINDA_BOX, "max_cloud_cover": 1.0, "sortby": "-cloud_cover"}
    async with connect(raster_service) as static, connect(api_backed_service) as api:
        from_static = await call(static, "search_items", limit=100, **arguments)
        from_api = await call(api, "search_items", limit=100, **arguments)
    assert from_static["count"] > 0
    assert json.dumps(from_static["items"]) == json.dumps(from_api["items"])


@pytest.mark.parametrize(
    ("tool", "arguments", "argument", "words"),
    [
        ("get_scene_statistics", {"expression": "nir + __import__('os').getcwd()"}, "expression", "only numbers"),
        ("get_scene_statistics", {"expression": "(nir - red"}, "expression", "does not parse"),
        ("get_scene_statistics", {"expression": "(nir - thermal) / 2"}, "expression", "not an asset"),
        ("get_scene_statistics", {"expression": "ndvi", "composite": "mode"}, "composite", "median"),
        ("search_items", {"max_cloud_cover": 150}, "max_cloud_cover", "0 to 100"),
        ("search_items", {"sortby": "size"}, "sortby", "cloud_cover"),
        ("search_items", {"limit": 0}, "limit", "1 to 100"),
        ("get_scene_statistics", {"expression": "ndvi", "bbox": [10, 10, 11, 11]}, "bbox", "no items"),
    ],
)
async def test_impossible_requests_name_the_argument(
    api_backed_service: str, tool: str, arguments: dict[str, Any], argument: str, words: str
) -> None:
    async with connect(api_backed_service) as mcp:
        message = await call_error(mcp, tool, collection_id=LANDSAT, **arguments)
    assert f"{argument}: " in message and words in message


async def test_other_tools_send_scene_collections_to_the_scene_tools(api_backed_service: str) -> None:
    async with connect(api_backed_service) as mcp:
        message = await call_error(mcp, "compute_zonal_stats", collection_id=LANDSAT, geometry=None)
        assert "get_scene_statistics" in message
        # get_raster_statistics reads a scene collection as the scene tool would, and says so.
        plain = await call(mcp, "get_raster_statistics", collection_id=LANDSAT, bbox=OLINDA_BOX)
        scene = await call(mcp, "get_scene_statistics", collection_id=LANDSAT, expression="ndvi", bbox=OLINDA_BOX)
        assert plain["statistics"] == scene["statistics"] and "expression 'ndvi'" in plain["read_as"]
        july = {"bbox": CLIMATE_BOX, "datetime": "1999-07"}
        by_band = await call(mcp, "get_raster_statistics", collection_id=CUBE, band="tas", **july)
        by_expression = await call(mcp, "get_scene_statistics", collection_id=CUBE, expression="tas", **july)
        assert by_band["statistics"] == by_expression["statistics"] and by_band["unit"] == "degC"
        message = await call_error(mcp, "get_scene_statistics", collection_id="luxembourg-dem", expression="ndvi")
        assert "not a scene collection" in message and LANDSAT in message
        # The other way round: a single-file collection whose band the expression names is read by
        # get_raster_statistics, and says so.
        single = await call(
            mcp, "get_scene_statistics", collection_id="landsat7-olinda-ndvi", expression="ndvi", bbox=OLINDA_BOX
        )
        direct = await call(mcp, "get_raster_statistics", collection_id="landsat7-olinda-ndvi", bbox=OLINDA_BOX)
        assert single["statistics"] == direct["statistics"] and "get_raster_statistics" in single["read_as"]
        # The scene statistics lead with one sentence holding the mean.
        assert scene["summary"].startswith(f"mean {scene['statistics']['mean']} ")
        # Gridded tiles have no cloud cover: a cloud limit is refused by name, not a silent "no items".
        cloudy = await call_error(
            mcp, "get_scene_statistics", collection_id=CLIMATE, expression="pr", max_cloud_cover=10, **july
        )
        assert "max_cloud_cover: " in cloudy and "carry no cloud cover" in cloudy
        period = await call_error(
            mcp, "get_scene_statistics", collection_id=CLIMATE, expression="pr", datetime="2005-01"
        )
        assert "datetime: " in period and "1999" in period
        info = await call(mcp, "get_raster_info", collection_id=LANDSAT)
        assert info["assets"]["nir"]["common_name"] == "nir"


async def test_scene_tiles_show_ndvi_of_the_mosaic_in_the_collection_colours(
    api_backed_service: str, stac_dir: Path
) -> None:
    import httpx
    import morecantile
    from rasterio.io import MemoryFile
    from rio_tiler.colormap import cmap

    lon, lat = -34.871, -7.995
    tile = morecantile.tms.get("WebMercatorQuad").tile(lon, lat, 14)
    async with httpx.AsyncClient(base_url=api_backed_service, timeout=60) as http:
        tilejson = (await http.get(f"/tiles/{LANDSAT}/tilejson.json", params={"expression": "ndvi"})).json()
        response = await http.get(f"/tiles/{LANDSAT}/{tile.z}/{tile.x}/{tile.y}.png")
        zoomed_out = await http.get(f"/tiles/{LANDSAT}/10/{tile.x >> 4}/{tile.y >> 4}.png")
        bad = await http.get(f"/tiles/{LANDSAT}/{tile.z}/{tile.x}/{tile.y}.png", params={"expression": "nir +"})
        unscaled = await http.get(f"/tiles/{LANDSAT}/{tile.z}/{tile.x}/{tile.y}.png", params={"expression": "nir"})
    assert "expression=ndvi" in tilejson["tiles"][0]
    assert tilejson["minzoom"] == 14 and tilejson["maxzoom"] == 14  # from 14 a tile meets at most 24 tiles
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    with MemoryFile(response.content) as memory, memory.open() as png:
        rgba = png.read()
    assert rgba.shape == (4, 256, 256) and (rgba[3] == 255).mean() > 0.9  # the tile lies inside the scene
    # The colour of the pixel under (lon, lat) is rdylgn of that spot's NDVI in the untiled scene.
    left, bottom, right, top = morecantile.tms.get("WebMercatorQuad").xy_bounds(tile)
    x, y = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(lon, lat)
    col, row = int((x - left) / (right - left) * 256), int((top - y) / (top - bottom) * 256)
    with rasterio.open(cog(stac_dir, "landsat7-olinda")) as scene:
        sx, sy = Transformer.from_crs("EPSG:3857", scene.crs, always_xy=True).transform(
            left + (col + 0.5) * (right - left) / 256, top - (row + 0.5) * (top - bottom) / 256
        )
        red, nir = (float(v) for v in next(scene.sample([(sx, sy)], indexes=[3, 4])))
    ndvi = (nir - red) / (nir + red)
    expected = cmap.get("rdylgn")[int(np.clip((ndvi + 1) / 2 * 255, 0, 255))]
    assert tuple(int(v) for v in rgba[:3, row, col]) == expected[:3]
    assert zoomed_out.status_code == 200 and "zoom in" in zoomed_out.headers["x-tile-note"]
    assert bad.status_code == 400 and bad.json()["field"] == "expression"
    assert unscaled.status_code == 400 and unscaled.json()["field"] == "rescale"


CUBE = "bcsd-1999-cube"


async def test_a_data_cube_answers_statistics_and_time_series_per_variable(
    api_backed_service: str, stac_dir: Path
) -> None:
    """One NetCDF file, variables x time x space, equals the 24 monthly files cut from it."""
    grids = [_monthly(stac_dir, "bcsd-precipitation-1999", m) for m in (6, 7, 8)]
    expected_max = _weighted_mean_in_box(
        np.ma.max(np.ma.stack([g for g, _ in grids]), axis=0), grids[0][1], CLIMATE_BOX
    )
    temperatures = [_monthly(stac_dir, "bcsd-temperature-1999", m) for m in range(1, 13)]
    expected_series = [_weighted_mean_in_box(g, t, CLIMATE_BOX) for g, t in temperatures]
    async with connect(api_backed_service) as mcp:
        info = await call(mcp, "get_raster_info", collection_id=CUBE)
        summer = await call(
            mcp,
            "get_scene_statistics",
            collection_id=CUBE,
            expression="pr",
            bbox=CLIMATE_BOX,
            datetime="1999-06/1999-08",
            composite="max",
        )
        series = await call(mcp, "get_scene_timeseries", collection_id=CUBE, expression="tas", bbox=CLIMATE_BOX)
        ratio = await call(
            mcp, "get_scene_statistics", collection_id=CUBE, expression="pr / 30", bbox=CLIMATE_BOX, datetime="1999-07"
        )
        steps = await call(mcp, "search_items", collection_id=CUBE, datetime="1999-03/1999-04")
    assert info["kind"] == "data cube"
    assert set(info["variables"]) == {"pr", "tas"} and info["variables"]["pr"]["unit"] == "mm/month"
    assert info["dimensions"]["time"]["steps"] == 12 and set(info["dimensions"]) == {"x", "y", "time"}
    assert len(summer["dates"]) == 3
    assert summer["statistics"]["mean"] == pytest.approx(expected_max, rel=1e-5)
    assert [p["mean"] for p in series["series"]] == pytest.approx(expected_series, rel=1e-5)
    july, _ = _monthly(stac_dir, "bcsd-precipitation-1999", 7)
    assert ratio["statistics"]["mean"] == pytest.approx(
        _weighted_mean_in_box(july / 30, grids[1][1], CLIMATE_BOX), rel=1e-5
    )
    assert steps["count"] == 2 and all(i["assets"] == ["pr", "tas"] for i in steps["items"])


async def test_the_point_tool_reads_every_asset_of_scenes_and_every_variable_of_the_cube(
    api_backed_service: str, stac_dir: Path
) -> None:
    lon, lat = -80.0, 36.0
    expected = {}
    for variable, collection_id in (("pr", "bcsd-precipitation-1999"), ("tas", "bcsd-temperature-1999")):
        with rasterio.open(cog(stac_dir, collection_id, f"{collection_id}-1999-07")) as ds:
            expected[variable] = float(next(ds.sample([(lon, lat)]))[0])
    with rasterio.open(cog(stac_dir, "landsat7-olinda")) as scene:
        x, y = Transformer.from_crs("EPSG:4326", scene.crs, always_xy=True).transform(-34.871, -7.995)
        bands = [float(v) for v in next(scene.sample([(x, y)]))]
    async with connect(api_backed_service) as mcp:
        cube = await call(mcp, "query_raster_point", collection_id=CUBE, lon=lon, lat=lat, datetime="1999-07")
        latest = await call(mcp, "query_raster_point", collection_id=CUBE, lon=lon, lat=lat)
        tiles = await call(mcp, "query_raster_point", collection_id=LANDSAT, lon=-34.871, lat=-7.995)
        outside = await call_error(mcp, "query_raster_point", collection_id=LANDSAT, lon=10.0, lat=10.0)
    (july,) = cube["results"]
    assert july["time"].startswith("1999-07") and july["values"] == pytest.approx(expected, rel=1e-6)
    assert cube["units"] == {"pr": "mm/month", "tas": "degC"}
    assert latest["results"][0]["time"].startswith("1999-12")
    assert list(tiles["results"][0]["values"].values()) == bands
    assert "lon: " in outside and "no item" in outside


async def test_every_scene_collection_has_a_default_map_view(api_backed_service: str) -> None:
    """Without parameters a scene layer shows what its render extension says (NDVI for the Landsat
    tiles, precipitation for the climate tiles and cube)."""
    import httpx
    import morecantile

    async with httpx.AsyncClient(base_url=api_backed_service, timeout=60) as http:
        for collection_id in (LANDSAT, CLIMATE, CUBE):
            tilejson = await http.get(f"/tiles/{collection_id}/tilejson.json")
            assert tilejson.status_code == 200, (collection_id, tilejson.text)
        body = (await http.get(f"/tiles/{CUBE}/tilejson.json")).json()
        tile = morecantile.tms.get("WebMercatorQuad").tile(-80.0, 36.0, body["minzoom"])
        png = await http.get(f"/tiles/{CUBE}/{tile.z}/{tile.x}/{tile.y}.png")
    assert png.status_code == 200 and "x-tile-note" not in png.headers, png.headers


ZARR = "bcsd-1999-zarr"


def _zarr_store(stac_dir: Path) -> str:
    (item,) = _items(stac_dir, ZARR)
    assert item.assets["data"].media_type == "application/vnd+zarr"
    return item.assets["data"].href


async def test_a_zarr_cube_reads_as_the_netcdf_cube_and_the_monthly_files(
    api_backed_service: str, stac_dir: Path
) -> None:
    """The Zarr store written from the packaged NetCDF file: its time steps are GDAL's bands in the
    order of the catalog's time values, and every tool answers as for the NetCDF cube."""
    import datetime as dt

    store = _zarr_store(stac_dir)
    (item,) = _items(stac_dir, ZARR)
    times = item.properties["cube:dimensions"]["time"]["values"]
    with rasterio.open(f'ZARR:"{store}":/pr') as ds:
        assert ds.count == len(times) == 12
        for band, value in zip(ds.indexes, times, strict=True):
            tags = ds.tags(band)
            origin = dt.datetime.fromisoformat(tags["DIM_time_UNIT"].removeprefix("days since ") + "+00:00")
            assert origin + dt.timedelta(days=float(tags["DIM_time_VALUE"])) == dt.datetime.fromisoformat(value)
        july = ds.read(7, masked=True).astype("float64")
    june_to_august = [_monthly(stac_dir, "bcsd-precipitation-1999", m) for m in (6, 7, 8)]
    assert np.ma.allequal(july, june_to_august[1][0]) and (july.mask == june_to_august[1][0].mask).all()
    expected_max = _weighted_mean_in_box(
        np.ma.max(np.ma.stack([g for g, _ in june_to_august]), axis=0), june_to_august[0][1], CLIMATE_BOX
    )
    temperatures = [_monthly(stac_dir, "bcsd-temperature-1999", m) for m in range(1, 13)]
    expected_series = [_weighted_mean_in_box(g, t, CLIMATE_BOX) for g, t in temperatures]
    lon, lat = -80.0, 36.0
    expected_point = {}
    for variable, collection_id in (("pr", "bcsd-precipitation-1999"), ("tas", "bcsd-temperature-1999")):
        with rasterio.open(cog(stac_dir, collection_id, f"{collection_id}-1999-07")) as ds:
            expected_point[variable] = float(next(ds.sample([(lon, lat)]))[0])
    answers: dict[str, dict[str, Any]] = {}
    async with connect(api_backed_service) as mcp:
        for cube in (ZARR, CUBE):
            answers[cube] = {
                "info": await call(mcp, "get_raster_info", collection_id=cube),
                "max": await call(
                    mcp,
                    "get_scene_statistics",
                    collection_id=cube,
                    expression="pr",
                    bbox=CLIMATE_BOX,
                    datetime="1999-06/1999-08",
                    composite="max",
                ),
                "series": await call(
                    mcp, "get_scene_timeseries", collection_id=cube, expression="tas", bbox=CLIMATE_BOX
                ),
                "point": await call(
                    mcp, "query_raster_point", collection_id=cube, lon=lon, lat=lat, datetime="1999-07"
                ),
            }
    zarr, netcdf = answers[ZARR], answers[CUBE]
    assert zarr["info"]["kind"] == "data cube" and zarr["info"]["variables"] == netcdf["info"]["variables"]
    assert zarr["info"]["dimensions"] == netcdf["info"]["dimensions"]
    assert len(zarr["max"]["dates"]) == 3 and zarr["max"]["unit"] == "mm/month"
    assert zarr["max"]["statistics"]["mean"] == pytest.approx(expected_max, rel=1e-5)
    assert zarr["max"]["statistics"] == netcdf["max"]["statistics"]
    assert [p["date"][:7] for p in zarr["series"]["series"]] == [f"1999-{m:02d}" for m in range(1, 13)]
    assert [p["mean"] for p in zarr["series"]["series"]] == pytest.approx(expected_series, rel=1e-5)
    assert zarr["series"]["series"] == netcdf["series"]["series"]
    (july_point,) = zarr["point"]["results"]
    assert july_point["time"].startswith("1999-07") and july_point["values"] == pytest.approx(expected_point, rel=1e-6)
    assert july_point["values"] == netcdf["point"]["results"][0]["values"]


async def test_a_zarr_cube_tile_renders_as_the_netcdf_cube_tile(api_backed_service: str) -> None:
    import httpx
    import morecantile

    async with httpx.AsyncClient(base_url=api_backed_service, timeout=60) as http:
        tilejson = (await http.get(f"/tiles/{ZARR}/tilejson.json")).json()
        tile = morecantile.tms.get("WebMercatorQuad").tile(-80.0, 36.0, tilejson["minzoom"])
        path = f"{tile.z}/{tile.x}/{tile.y}.png"
        zarr_png = await http.get(f"/tiles/{ZARR}/{path}", params={"expression": "tas", "rescale": "-5,30"})
        netcdf_png = await http.get(f"/tiles/{CUBE}/{path}", params={"expression": "tas", "rescale": "-5,30"})
    assert zarr_png.status_code == 200 and zarr_png.headers["content-type"] == "image/png"
    assert "x-tile-note" not in zarr_png.headers, zarr_png.headers
    assert zarr_png.content == netcdf_png.content


def _zarr_collection(stac_dir: Path, collection_id: str, href: str) -> pystac.Collection:
    """The demo Zarr cube's collection under another id, its asset at `href`."""
    collection = pystac.Collection.from_file(str(stac_dir / ZARR / "collection.json"))
    (item,) = collection.get_items()
    item.assets["data"].href = href
    collection.id = item.collection_id = collection_id
    item.id = collection_id
    return collection


async def test_a_zarr_store_over_http_and_a_variable_it_lacks(stac_dir: Path, tmp_path: Path) -> None:
    """A Zarr store read over HTTP (GDAL's /vsicurl/) answers as the local one; a catalog listing a
    variable its store does not hold is refused naming the variable, the argument that chose it and
    the variables the store has, instead of failing somewhere in GDAL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    from stacgis_common.testing import free_port, run_service

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

    files = ThreadingHTTPServer(("127.0.0.1", free_port()), functools.partial(Quiet, directory=str(stac_dir)))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    store = _zarr_store(stac_dir)
    remote = _zarr_collection(
        stac_dir, "zarr-over-http", f"http://127.0.0.1:{files.server_port}/{Path(store).relative_to(stac_dir)}"
    )
    lacking = _zarr_collection(stac_dir, "zarr-lacking-hurs", store)
    (item,) = lacking.get_items()
    humidity = {"dimensions": ["time", "y", "x"], "type": "data", "description": "relative humidity", "unit": "%"}
    for variables in (lacking.extra_fields["cube:variables"], item.properties["cube:variables"]):
        variables["hurs"] = humidity
    catalog = pystac.Catalog("zarr-cases", "Zarr cubes over HTTP and with a variable too many")
    catalog.add_children([remote, lacking])
    catalog.normalize_hrefs(str(tmp_path / "catalog"))
    catalog.save(pystac.CatalogType.ABSOLUTE_PUBLISHED)
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(tmp_path / "catalog" / "catalog.json"),
        "RASTER_ALLOWED_LOCAL_ROOTS": json.dumps([str(stac_dir)]),
        "RASTER_ALLOWED_REMOTE_HOSTS": json.dumps(["127.0.0.1"]),
        "RASTER_LOG_LEVEL": "WARNING",
    }
    july = {"expression": "pr", "bbox": CLIMATE_BOX, "datetime": "1999-07"}
    try:
        with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
            async with connect(service.url) as mcp:
                over_http = await call(mcp, "get_scene_statistics", collection_id="zarr-over-http", **july)
                statistics = await call_error(
                    mcp, "get_scene_statistics", collection_id="zarr-lacking-hurs", expression="hurs / 100"
                )
                point = await call_error(mcp, "query_raster_point", collection_id="zarr-lacking-hurs", lon=-80, lat=36)
                # The variables the store holds still read.
                held = await call(mcp, "get_scene_statistics", collection_id="zarr-lacking-hurs", **july)
            async with httpx.AsyncClient(base_url=service.url, timeout=60) as http:
                tile = await http.get(
                    "/tiles/zarr-lacking-hurs/tilejson.json", params={"expression": "hurs", "rescale": "0,100"}
                )
    finally:
        files.shutdown()
    july_grid, transform = _monthly(stac_dir, "bcsd-precipitation-1999", 7)
    expected = _weighted_mean_in_box(july_grid, transform, CLIMATE_BOX)
    assert over_http["statistics"]["mean"] == pytest.approx(expected, rel=1e-5)
    assert over_http["statistics"] == held["statistics"]
    for message, argument in ((statistics, "expression"), (point, "collection_id")):
        assert f"{argument}: variable 'hurs' is not in the Zarr cube {store} (it holds pr, tas)" in message, message
    assert tile.status_code == 400 and tile.json()["field"] == "expression", tile.text
