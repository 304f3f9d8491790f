"""Map tiles and TileJSON over plain HTTP (public, no token)."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import subprocess
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import morecantile
import numpy as np
import pytest
import rasterio
from opentelemetry.sdk.trace import TracerProvider
from raster_test_helpers import call, call_error, cog, connect
from rasterio.errors import NotGeoreferencedWarning
from rasterio.io import MemoryFile
from rasterio.windows import Window, from_bounds
from starlette.requests import Request

from conftest import VectorFeatureServer
from stacgis_common.testing import free_port, run_service
from stacgis_raster.settings import RasterSettings
from stacgis_raster.tiles import ERRORS, tile_base_url


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


COLLECTIONS = [
    "bcsd-precipitation-1999",
    "bcsd-temperature-1999",
    "global-land-mask",
    "global-precipitation-2016",
    "jacksboro-dem",
    "landsat7-olinda",
    "landsat7-olinda-ndvi",
    "luxembourg-dem",
    "nlcd-puerto-rico",
    "oisst-sst",
    "olinda-dem",
    "rmnp-dem",
]


def visible_from(bounds: list[float]) -> int:
    """First zoom where a raster's larger side spans 1/16 of a tile, from its bounds alone."""
    tms = morecantile.tms.get("WebMercatorQuad")
    west, south, east, north = bounds
    left, bottom = tms.xy(west, max(south, -85.0511))
    right, top = tms.xy(east, min(north, 85.0511))
    world = 2 * math.pi * 6378137.0
    return next(z for z in range(25) if max(right - left, top - bottom) * 2**z / world >= 1 / 16)


@pytest.mark.parametrize("collection_id", COLLECTIONS)
def test_tiles_start_at_the_tilejson_minzoom(raster_service: str, collection_id: str) -> None:
    layer = httpx.get(f"{raster_service}/tiles/{collection_id}/tilejson.json").json()
    minzoom = layer["minzoom"]
    # The demo rasters are small enough to read whole from their coarsest level at any zoom, so the
    # floor is where they become visible.
    assert minzoom == visible_from(layer["bounds"])
    west, south, east, north = layer["bounds"]
    lon, lat = (west + east) / 2, max(min((south + north) / 2, 85.0), -85.0)
    if minzoom > 0:
        x, y = tile_xy(lon, lat, minzoom - 1)
        below = httpx.get(f"{raster_service}/tiles/{collection_id}/{minzoom - 1}/{int(x)}/{int(y)}.png")
        assert (rgba(png(below))[3] == 0).all()
        assert f"below this layer's minzoom {minzoom}" in below.headers["x-tile-note"]
    x, y = tile_xy(lon, lat, minzoom)
    at = httpx.get(f"{raster_service}/tiles/{collection_id}/{minzoom}/{int(x)}/{int(y)}.png")
    assert (rgba(png(at))[3] > 0).any() and "x-tile-note" not in at.headers


def tree_memory(pid: int) -> dict[int, tuple[int, int]]:
    """(VmRSS, VmHWM) in kB of a process and all its descendants (the read workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: dict[int, tuple[int, int]] = {}
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            status = dict(
                line.split(":", 1) for line in Path(f"/proc/{current}/status").read_text().splitlines() if ":" in line
            )
        except OSError:
            continue
        if "VmRSS" in status:
            out[current] = (int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0]))
        todo += children.get(current, [])
    return out


def first_zoom_within(path: Path, cap: int) -> int:
    """First zoom whose largest tile (at the equator) covers at most `cap` cells of the coarsest overview."""
    tms = morecantile.tms.get("WebMercatorQuad")
    with rasterio.open(path) as ds:
        level = len(ds.overviews(1)) - 1
    with rasterio.open(path, overview_level=level) as ovr:
        whole = Window(0, 0, ovr.width, ovr.height)
        for z in range(25):
            west, south, east, north = tms.bounds(morecantile.Tile(0, 2**z // 2, z))
            window = from_bounds(west, south, east, north, transform=ovr.transform).intersection(whole)
            if math.ceil(window.width) * math.ceil(window.height) <= cap:
                return z
    raise AssertionError("no zoom within the cap")


def test_the_lowest_tiles_of_every_collection_read_a_bounded_amount(
    demo_data: Path, stac_dir: Path, vector_server: VectorFeatureServer
) -> None:
    # One read worker, a small block cache and the smallest pixel cap: the memory a tile may take is
    # known, and a read of a whole raster at full resolution (the land mask: 933 million cells) or a
    # warp at the raster's resolution over a world tile would exceed it by far.
    cap, cache_mb, bands, itemsize = 65_536, 16, 3, 8
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(demo_data),
        "RASTER_VECTOR_TOOLS_URL": vector_server.url,
        "RASTER_IO_WORKERS": "1",
        "RASTER_TILE_MAX_PIXELS": str(cap),
        "RASTER_GDAL_CONFIG": json.dumps({"GDAL_CACHEMAX": str(cache_mb)}),
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service, httpx.Client(timeout=60) as client:
        pid = service.process.pid
        assert png(client.get(f"{service.url}/tiles/luxembourg-dem/7/66/43.png")).size  # workers warm
        before = tree_memory(pid)
        layers = {}
        for collection_id in COLLECTIONS:
            layer = client.get(f"{service.url}/tiles/{collection_id}/tilejson.json").json()
            layers[collection_id] = layer
            west, south, east, north = layer["bounds"]
            lon, lat = (west + east) / 2, max(min((south + north) / 2, 85.0), -85.0)
            for z in sorted({0, layer["minzoom"]}):
                x, y = tile_xy(lon, lat, z)
                response = client.get(f"{service.url}/tiles/{collection_id}/{z}/{int(x)}/{int(y)}.png")
                png(response)
        after = tree_memory(pid)
    # Even its coarsest overview holds more cells than the cap under a world tile: the land mask
    # starts where a tile fits.
    land_mask = layers["global-land-mask"]["minzoom"]
    assert land_mask == first_zoom_within(cog(stac_dir, "global-land-mask"), cap) > 0
    assert set(after) == set(before), "no read worker was replaced"
    grown_kb = sum(after[p][1] - before[p][1] for p in before) + after[pid][0] - before[pid][0]
    # Per tile: the source window (cap pixels x bands, as float64 at most) held a few times over
    # (read, mask, rescaled copy, warp buffer), the block cache, and 48 MB for the interpreter.
    bound_kb = (4 * cap * bands * itemsize) // 1024 + cache_mb * 1024 + 48 * 1024
    assert grown_kb < bound_kb, (grown_kb, bound_kb)


class StalledAssetServer:
    """An HTTP server that accepts requests for a COG and never answers them (a hung upstream)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        release = self.release

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                release.wait(120)

            do_HEAD = do_GET

            def log_message(self, *_: Any) -> None:
                pass

        self.port = free_port()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()


def catalog_with_copies(stac_dir: Path, out: Path, copies: dict[str, str]) -> Path:
    """luxembourg-dem as it is, plus for each name in `copies` the same item with its COG at another href."""
    shutil.copytree(stac_dir / "luxembourg-dem", out / "luxembourg-dem")
    collection = json.loads((out / "luxembourg-dem" / "collection.json").read_text())
    item = json.loads((out / "luxembourg-dem" / "luxembourg-dem" / "luxembourg-dem.json").read_text())
    for name, href in copies.items():
        (out / name / name).mkdir(parents=True)
        links = [
            {**link, "href": f"./{name}/{name}.json"} if link["rel"] == "item" else link for link in collection["links"]
        ]
        copy = {**item, "id": name, "collection": name}
        copy["assets"] = {"data": {**item["assets"]["data"], "href": href}}
        (out / name / "collection.json").write_text(json.dumps({**collection, "id": name, "links": links}))
        (out / name / name / f"{name}.json").write_text(json.dumps(copy))
    catalog = json.loads((stac_dir / "catalog.json").read_text())
    catalog["links"] = [link for link in catalog["links"] if link["rel"] != "child"] + [
        {"rel": "child", "href": f"./{name}/collection.json", "type": "application/json"}
        for name in ("luxembourg-dem", *copies)
    ]
    (out / "catalog.json").write_text(json.dumps(catalog))
    return out / "catalog.json"


def test_read_workers_start_with_the_modules_of_every_worker_read_imported() -> None:
    """The forkserver imports workers.PRELOAD once for all workers and skips a name it cannot import
    without a word: a module renamed or split would leave every new worker importing its reads."""
    # The modules whose functions RasterService.read sends to a worker.
    worker_reads = {f"stacgis_raster.{name}" for name in ("reads", "scene_reads", "tile_reads", "scene_tiles")}
    code = (
        "import importlib, json, sys\n"
        "from stacgis_raster.workers import PRELOAD\n"
        "for name in PRELOAD: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('stacgis_raster.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert worker_reads <= set(json.loads(done.stdout))


def test_a_read_past_its_deadline_is_stopped_and_frees_its_worker(
    stac_dir: Path, tmp_path: Path, vector_server: VectorFeatureServer
) -> None:
    hung = StalledAssetServer()
    try:
        not_a_raster = tmp_path / "not-a-raster.tif"
        not_a_raster.write_text("this is not a GeoTIFF")
        catalog = catalog_with_copies(
            stac_dir,
            tmp_path,
            {"stalled-dem": f"http://127.0.0.1:{hung.port}/stalled.tif", "broken-dem": str(not_a_raster)},
        )
        port = free_port()
        env = {
            "RASTER_PORT": str(port),
            "RASTER_STAC_URL": str(catalog),
            "RASTER_ALLOWED_REMOTE_HOSTS": json.dumps(["127.0.0.1"]),
            "RASTER_VECTOR_TOOLS_URL": vector_server.url,
            # One worker: a read still holding it would make the next request wait past its deadline
            # (GDAL waits 30 s for the hung server).
            "RASTER_IO_WORKERS": "1",
            "RASTER_GDAL_CONFIG": json.dumps({"GDAL_HTTP_TIMEOUT": "30", "GDAL_HTTP_MAX_RETRY": "0"}),
            "RASTER_TILE_TIMEOUT_SECONDS": "3",
            "RASTER_TOOL_TIMEOUT_SECONDS": "3",
            "RASTER_LOG_LEVEL": "WARNING",
        }
        x, y = tile_xy(6.1, 49.75, 7)
        with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
            stalled = httpx.get(f"{service.url}/tiles/stalled-dem/7/{int(x)}/{int(y)}.png", timeout=60)
            assert stalled.status_code == 504
            assert stalled.json()["limit"] == "RASTER_TILE_TIMEOUT_SECONDS"
            assert "3 s" in stalled.json()["message"] and stalled.json()["code"] == "deadline_exceeded"
            served = httpx.get(f"{service.url}/tiles/luxembourg-dem/7/{int(x)}/{int(y)}.png", timeout=60)
            assert (rgba(png(served))[3] > 0).any()
            # An asset that is not a raster is the data's failure, not ours: 502 naming the cause.
            broken = httpx.get(f"{service.url}/tiles/broken-dem/7/{int(x)}/{int(y)}.png", timeout=60)
            assert broken.status_code == 502 and broken.json()["code"] == "upstream_unreadable"
            assert "not recognized as being in a supported file format" in broken.json()["message"]
            # The value at a point (identify) is as bounded as a tile: the same deadline and the same answer.
            point = httpx.get(f"{service.url}/tiles/stalled-dem/point", params={"lon": 6.1, "lat": 49.75}, timeout=60)
            assert point.status_code == 504 and point.json()["limit"] == "RASTER_TILE_TIMEOUT_SECONDS"

            async def tools() -> None:
                async with connect(service.url) as session:
                    text = await call_error(
                        session, "get_raster_statistics", collection_id="stalled-dem", bbox=[6.0, 49.6, 6.2, 49.8]
                    )
                    assert "RASTER_TOOL_TIMEOUT_SECONDS" in text and "stopped" in text
                    result = await call(
                        session, "get_raster_statistics", collection_id="luxembourg-dem", bbox=[6.0, 49.6, 6.2, 49.8]
                    )
                    assert result["statistics"]["valid_pixels"] > 0
                    refused = await call_error(
                        session, "get_raster_statistics", collection_id="luxembourg-dem", bbox=[6.2, 49.6, 6.0]
                    )
                    assert "bbox" in refused

            asyncio.run(tools())
            # The server counts each call by how it ended: past its deadline, answered, refused.
            metrics = httpx.get(f"{service.url}/metrics", timeout=10).text
            for outcome in ("timeout", "ok", "error"):
                line = f'raster_tool_calls_total{{outcome="{outcome}",tool="get_raster_statistics"}} 1.0'
                assert line in metrics, [m for m in metrics.splitlines() if m.startswith("raster_tool_calls_total")]
    finally:
        hung.close()


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
    body = response.json()
    # The one error body of stacgis_common.http_errors: the field, the message naming it, a code.
    assert set(body) == {"field", "message", "code"}
    assert body["field"] == parameter and body["message"].startswith(f"{parameter}: ")
    assert body["code"] == {400: "invalid_argument", 404: "not_found"}[status]
    assert httpx.get(f"{raster_service}/tiles/global-land-mask/0/0/0.png").status_code == 200


def test_an_unexpected_failure_is_a_logged_500_with_the_trace_id(caplog: pytest.LogCaptureFixture) -> None:
    # No input of the running service reaches a bug on purpose, so the table is checked directly:
    # inside a span, as the tile route runs.
    provider = TracerProvider()
    with provider.get_tracer("test").start_as_current_span("GET /tiles") as span:
        response = ERRORS.response(KeyError("band"))
        trace_id = format(span.get_span_context().trace_id, "032x")
    body = json.loads(bytes(response.body))
    assert response.status_code == 500
    assert body == {
        "field": None,
        "message": "the tile request failed: KeyError",
        "code": "internal",
        "trace_id": trace_id,
    }
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)


@pytest.mark.parametrize(
    ("headers", "origin"),
    [
        # The browser's Host, passed on by the ingress: the page at 127.0.0.1 gets 127.0.0.1 tiles.
        ({"Host": "127.0.0.1:8080"}, "http://127.0.0.1:8080"),
        ({"Host": "stacgis.example.org"}, "http://stacgis.example.org"),
        # A TLS ingress that talks HTTP to us (and may rewrite Host) says so in X-Forwarded-*.
        (
            {"Host": "raster-tools:8011", "X-Forwarded-Host": "maps.example.org", "X-Forwarded-Proto": "https"},
            "https://maps.example.org",
        ),
        ({"Host": "[::1]:8080", "X-Forwarded-Proto": "https, http"}, "https://[::1]:8080"),
    ],
)
def test_tilejson_tiles_are_on_the_host_the_browser_used(
    raster_service: str, headers: dict[str, str], origin: str
) -> None:
    response = httpx.get(f"{raster_service}/tiles/global-land-mask/tilejson.json", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["tiles"] == [f"{origin}/tiles/global-land-mask/{{z}}/{{x}}/{{y}}.png"]
    # One URL, several hosts: a shared cache must not hand one host's TileJSON to another.
    assert {v.strip() for v in response.headers["vary"].split(",")} >= {"Host", "X-Forwarded-Host", "X-Forwarded-Proto"}


def _request(headers: dict[str, str], peer: str = "127.0.0.1") -> Request:
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": "/tiles/x/tilejson.json",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": (peer, 50000),
        "server": ("10.1.2.3", 8011),
    }
    return Request(scope)


def test_forwarded_headers_count_only_from_trusted_proxies() -> None:
    settings = RasterSettings(trusted_proxies=["10.0.0.0/8"])
    forged = {"Host": "stacgis.example.org", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
    assert tile_base_url(_request(forged, peer="192.0.2.7"), settings) == "http://stacgis.example.org"
    assert tile_base_url(_request(forged, peer="10.4.0.9"), settings) == "https://evil.example"
    # Junk in the headers never reaches the URL: the next usable value does.
    junk = {"Host": "a b/c", "X-Forwarded-Host": "x/y@z", "X-Forwarded-Proto": "javascript"}
    assert tile_base_url(_request(junk, peer="10.4.0.9"), settings) == "http://10.1.2.3:8011"


def test_a_configured_public_base_url_wins() -> None:
    settings = RasterSettings(public_base_url="https://tiles.example.org/")
    assert tile_base_url(_request({"Host": "127.0.0.1:8080"}), settings) == "https://tiles.example.org"
    assert RasterSettings(public_base_url="").public_base_url is None
    with pytest.raises(ValueError, match="http"):
        RasterSettings(public_base_url="tiles.example.org")


# -- identify: GET /tiles/{collection_id}/point ------------------------------------------------------


def rasterio_sample(path: Path, lon: float, lat: float) -> tuple[list[float], tuple[float, float]]:
    """Every band of a COG at a point and the centre of that pixel (lon, lat), read with rasterio."""
    from pyproj import Transformer

    with rasterio.open(path) as ds:
        x, y = Transformer.from_crs("EPSG:4326", ds.crs, always_xy=True).transform(lon, lat)
        values = [float(v) for v in next(ds.sample([(x, y)]))]
        row, col = ds.index(x, y)
        cx, cy = Transformer.from_crs(ds.crs, "EPSG:4326", always_xy=True).transform(*ds.xy(row, col))
    return values, (cx, cy)


def test_point_answers_the_value_of_the_cog_under_it_with_unit_and_title(raster_service: str, stac_dir: Path) -> None:
    lon, lat = 6.1, 49.75
    response = httpx.get(f"{raster_service}/tiles/luxembourg-dem/point", params={"lon": lon, "lat": lat})
    assert response.status_code == 200, response.text
    body = response.json()
    (expected,), centre = rasterio_sample(cog(stac_dir, "luxembourg-dem"), lon, lat)
    assert body["collection_id"] == "luxembourg-dem" and body["title"]
    assert body["inside"] is True and "note" not in body
    [value] = body["values"]
    assert value["value"] == pytest.approx(expected, rel=1e-6)
    assert value["unit"] == "m" and value["band"]
    assert body["pixel_center"] == pytest.approx(centre, abs=1e-5)
    assert body["item"] == "luxembourg-dem"
    assert response.headers["cache-control"] == "public, max-age=3600"


def test_point_names_the_class_of_categorical_data(raster_service: str, stac_dir: Path) -> None:
    lon, lat = -66.1, 18.3
    body = httpx.get(f"{raster_service}/tiles/nlcd-puerto-rico/point", params={"lon": lon, "lat": lat}).json()
    (code,), _ = rasterio_sample(cog(stac_dir, "nlcd-puerto-rico"), lon, lat)
    [value] = body["values"]
    assert value["value"] == int(code) and value["class"] == "Developed, Low Intensity"


def test_point_uses_the_time_step_the_tiles_show(raster_service: str, stac_dir: Path) -> None:
    lon, lat = -83.5, 35.6
    march = httpx.get(
        f"{raster_service}/tiles/bcsd-precipitation-1999/point",
        params={"lon": lon, "lat": lat, "datetime": "1999-03"},
    ).json()
    item = march["item"]
    (expected,), _ = rasterio_sample(cog(stac_dir, "bcsd-precipitation-1999", item), lon, lat)
    assert march["time"].startswith("1999-03") and march["values"][0]["value"] == pytest.approx(expected, rel=1e-6)
    assert march["values"][0]["unit"] == "mm/month"
    latest = httpx.get(f"{raster_service}/tiles/bcsd-precipitation-1999/point", params={"lon": lon, "lat": lat})
    assert latest.json()["time"].startswith("1999-12")


def test_point_outside_the_data_says_there_is_no_data(raster_service: str) -> None:
    response = httpx.get(f"{raster_service}/tiles/luxembourg-dem/point", params={"lon": 20.0, "lat": 0.0})
    assert response.status_code == 200
    body = response.json()
    assert body["inside"] is False and body["values"] == []
    assert body["note"].startswith("no data here") and "luxembourg-dem" in body["note"]


@pytest.mark.parametrize(
    ("params", "status", "parameter"),
    [
        ({"lat": "49.7"}, 400, "lon"),
        ({"lon": "6.1"}, 400, "lat"),
        ({"lon": "east", "lat": "49.7"}, 400, "lon"),
        ({"lon": "6.1", "lat": "nan"}, 400, "lat"),
        ({"lon": "190", "lat": "49.7"}, 400, "lon"),
        ({"lon": "6.1", "lat": "-91"}, 400, "lat"),
        ({"lon": "6.1", "lat": "49.7", "datetime": "not a date"}, 400, "datetime"),
    ],
)
def test_bad_point_requests_name_the_field(
    raster_service: str, params: dict[str, str], status: int, parameter: str
) -> None:
    response = httpx.get(f"{raster_service}/tiles/bcsd-precipitation-1999/point", params=params)
    assert response.status_code == status, response.text
    assert response.json()["field"] == parameter and response.json()["code"] == "invalid_argument"


def test_point_of_an_unknown_collection_is_404(raster_service: str) -> None:
    response = httpx.get(f"{raster_service}/tiles/luxemburg-dem/point", params={"lon": 6.1, "lat": 49.7})
    assert response.status_code == 404
    assert response.json()["field"] == "collection_id" and response.json()["code"] == "not_found"


def test_point_of_a_scene_collection_is_the_ndvi_of_the_item_under_it(api_backed_service: str, stac_dir: Path) -> None:
    lon, lat = -34.871, -7.995
    with httpx.Client(base_url=api_backed_service, timeout=60) as http:
        response = http.get("/tiles/landsat7-olinda-scenes/point", params={"lon": lon, "lat": lat})
        outside = http.get("/tiles/landsat7-olinda-scenes/point", params={"lon": 6.1, "lat": 49.7})
        bad = http.get("/tiles/landsat7-olinda-scenes/point", params={"lon": lon, "lat": lat, "expression": "nir +"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["expression"] == "ndvi" and body["inside"] is True
    # NDVI of the same spot in the untiled scene, computed here with rasterio.
    (_b1, _b2, red, nir, *_), _ = rasterio_sample(cog(stac_dir, "landsat7-olinda"), lon, lat)
    assert body["values"][0]["value"] == pytest.approx((nir - red) / (nir + red), abs=1e-6)
    assert body["item"]
    assert outside.status_code == 200 and outside.json()["inside"] is False
    assert outside.json()["note"].startswith("no data here")
    assert bad.status_code == 400 and bad.json()["field"] == "expression"
