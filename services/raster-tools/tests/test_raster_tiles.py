"""Map tiles and TileJSON over plain HTTP (public, no token)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import httpx
import numpy as np
import pytest
from raster_test_helpers import cog
from rasterio.errors import NotGeoreferencedWarning
from rasterio.io import MemoryFile
from rio_tiler.io import Reader

from conftest import VectorFeatureServer
from stacgis_common.testing import free_port, run_service
from stacgis_raster.tiles import ZOOM_OUT_LEVELS


def png(response: httpx.Response) -> np.ndarray:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)  # a PNG has no georeference
        with MemoryFile(response.content) as mem, mem.open() as img:
            assert img.driver == "PNG"
            data = img.read()
    return data


def rgba(data: np.ndarray) -> np.ndarray:
    """Always (4, h, w): grey+alpha PNGs are expanded."""
    if data.shape[0] == 2:
        return np.concatenate([np.repeat(data[:1], 3, axis=0), data[1:]])
    return data


def tile_xy(lon: float, lat: float, z: int) -> tuple[float, float]:
    """Fractional XYZ tile coordinates of a point (Web Mercator)."""
    n = 2**z
    x = (lon + 180) / 360 * n
    y = (1 - math.asinh(math.tan(math.radians(lat))) / math.pi) / 2 * n
    return x, y


def test_tile_inside_the_data_is_an_opaque_png_of_the_right_size(raster_service: str) -> None:
    x, y = tile_xy(6.1, 49.75, 10)
    response = httpx.get(f"{raster_service}/tiles/luxembourg-dem/10/{int(x)}/{int(y)}.png")
    data = rgba(png(response))
    assert data.shape == (4, 256, 256)
    assert (data[3] == 255).mean() > 0.95  # the tile lies (almost) wholly inside Luxembourg
    assert response.headers["cache-control"] == "public, max-age=3600"


def test_tile_outside_the_data_is_fully_transparent(raster_service: str) -> None:
    x, y = tile_xy(20.0, 0.0, 8)  # central Africa, far from Luxembourg
    data = rgba(png(httpx.get(f"{raster_service}/tiles/luxembourg-dem/8/{int(x)}/{int(y)}.png")))
    assert data.shape[1:] == (256, 256)
    assert (data[3] == 0).all()


def test_partially_covered_tile_is_transparent_where_there_is_no_data(raster_service: str) -> None:
    # At zoom 6 Luxembourg fills a small part of one tile: the rest must be see-through.
    x, y = tile_xy(6.1, 49.8, 6)
    data = rgba(png(httpx.get(f"{raster_service}/tiles/luxembourg-dem/6/{int(x)}/{int(y)}.png")))
    opaque = data[3] > 0
    assert 0 < opaque.mean() < 0.1
    px, py = int((x % 1) * 256), int((y % 1) * 256)
    assert opaque[py, px]  # the pixel over Luxembourg City
    assert not opaque[0, 0] and not opaque[255, 255]


def test_land_mask_tile_uses_the_class_colours(raster_service: str) -> None:
    data = rgba(png(httpx.get(f"{raster_service}/tiles/global-land-mask/0/0/0.png")))
    for lon, lat, colour in [(15.0, 23.0, (120, 170, 90)), (-140.0, 0.0, (70, 130, 180))]:
        x, y = tile_xy(lon, lat, 0)
        assert tuple(data[:3, int(y * 256), int(x * 256)]) == colour


def test_query_parameters_change_the_rendering(raster_service: str) -> None:
    x, y = tile_xy(6.1, 49.75, 8)
    url = f"{raster_service}/tiles/luxembourg-dem/8/{int(x)}/{int(y)}.png"
    default = rgba(png(httpx.get(url)))
    viridis = rgba(png(httpx.get(url, params={"colormap_name": "viridis", "rescale": "100,600"})))
    assert not np.array_equal(default[:3], viridis[:3])
    assert np.array_equal(default[3], viridis[3])
    rgb = rgba(
        png(
            httpx.get(
                f"{raster_service}/tiles/landsat7-olinda/12/1651/2139.png", params={"bidx": "4,3,2", "rescale": "0,200"}
            )
        )
    )
    assert rgb.shape == (4, 256, 256) and (rgb[3] > 0).any()


def test_time_step_is_chosen_with_datetime(raster_service: str) -> None:
    x, y = tile_xy(-80, 35, 5)
    url = f"{raster_service}/tiles/bcsd-temperature-1999/5/{int(x)}/{int(y)}.png"
    january = png(httpx.get(url, params={"datetime": "1999-01"}))
    july = png(httpx.get(url, params={"datetime": "1999-07"}))
    assert not np.array_equal(january, july)


def test_a_world_tile_of_a_small_raster_is_transparent_and_below_the_layers_minzoom(
    raster_service: str, stac_dir: Path
) -> None:
    # landsat7-olinda: 349 x 352 pixels in UTM, no overviews; a world tile of it once took minutes and GBs.
    with Reader(str(cog(stac_dir, "landsat7-olinda"))) as reader:
        native = reader.minzoom
        west, south, east, north = reader.get_geographic_bounds(reader.tms.rasterio_geographic_crs)
    floor = native - ZOOM_OUT_LEVELS
    assert floor > 0
    layer = httpx.get(f"{raster_service}/tiles/landsat7-olinda/tilejson.json").json()
    assert layer["minzoom"] == floor
    for z in (0, floor - 1):
        x, y = tile_xy((west + east) / 2, (south + north) / 2, z)
        data = rgba(png(httpx.get(f"{raster_service}/tiles/landsat7-olinda/{z}/{int(x)}/{int(y)}.png", timeout=30)))
        assert (data[3] == 0).all(), z
    x, y = tile_xy((west + east) / 2, (south + north) / 2, floor)
    data = rgba(png(httpx.get(f"{raster_service}/tiles/landsat7-olinda/{floor}/{int(x)}/{int(y)}.png", timeout=30)))
    assert 0 < (data[3] > 0).mean() < 0.05, "at the layer's minzoom the scene is a small visible patch"


def test_a_tile_past_its_deadline_is_a_504(demo_data: Path, vector_server: VectorFeatureServer) -> None:
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(demo_data),
        "RASTER_VECTOR_TOOLS_URL": vector_server.url,
        "RASTER_TILE_TIMEOUT_SECONDS": "0.001",
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        x, y = tile_xy(6.1, 49.75, 10)
        response = httpx.get(f"{service.url}/tiles/luxembourg-dem/10/{int(x)}/{int(y)}.png", timeout=30)
        assert response.status_code == 504 and "0.001 s" in response.json()["error"]
        assert httpx.get(f"{service.url}/healthz").status_code == 200


def test_tilejson_describes_the_layer(raster_service: str) -> None:
    response = httpx.get(f"{raster_service}/tiles/luxembourg-dem/tilejson.json", params={"colormap_name": "viridis"})
    assert response.status_code == 200
    body = response.json()
    assert body["tilejson"] == "3.0.0"
    assert body["tiles"] == [f"{raster_service}/tiles/luxembourg-dem/{{z}}/{{x}}/{{y}}.png?colormap_name=viridis"]
    assert body["bounds"] == pytest.approx([5.741667, 49.441667, 6.533333, 50.191667], abs=1e-4)
    assert 0 <= body["minzoom"] < body["maxzoom"] and body["maxzoom"] >= 7


@pytest.mark.parametrize(
    ("path", "params", "status", "parameter"),
    [
        ("luxembourg-dem/30/0/0.png", {}, 400, "z"),
        ("luxembourg-dem/2/9/0.png", {}, 400, "x"),
        ("luxembourg-dem/2/0/x.png", {}, 400, "y"),
        ("luxembourg-dem/2/0/0.png", {"bidx": "9"}, 400, "bidx"),
        ("luxembourg-dem/2/0/0.png", {"rescale": "high,low"}, 400, "rescale"),
        ("luxembourg-dem/2/0/0.png", {"rescale": "600,100"}, 400, "rescale"),
        ("luxembourg-dem/2/0/0.png", {"colormap_name": "rainbowish"}, 400, "colormap_name"),
        ("luxembourg-dem/2/0/0.png", {"colormap": "{not json"}, 400, "colormap"),
        ("bcsd-temperature-1999/2/0/0.png", {"datetime": "2020-01"}, 400, "datetime"),
        ("luxemburg-dem/2/0/0.png", {}, 404, "collection_id"),
        ("luxemburg-dem/tilejson.json", {}, 404, "collection_id"),
    ],
)
def test_bad_tile_requests_name_the_parameter(
    raster_service: str, path: str, params: dict[str, str], status: int, parameter: str
) -> None:
    response = httpx.get(f"{raster_service}/tiles/{path}", params=params)
    assert response.status_code == status
    assert response.json()["parameter"] == parameter
    assert httpx.get(f"{raster_service}/tiles/global-land-mask/0/0/0.png").status_code == 200
