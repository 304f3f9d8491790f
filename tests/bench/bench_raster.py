"""raster-tools benchmark (prints a table; not a test).

    .venv/bin/python tests/bench/bench_raster.py [--repeat 3] [--tiles 40]

1. Statistics over the whole GLOBE land mask (43200 x 21600 cells): the
   service's overview read versus a full-resolution read of every cell; speed
   ratio and relative error of the area-weighted mean (the land share).
2. The same statistics as an MCP tool call over HTTP to a running server.
3. Map tiles: GET /tiles/... through the running service versus rendering the
   same tiles with rio-tiler directly in this process; overhead ratio.
4. Bounded tiles: for every demo collection and every zoom 0..maxzoom, the
   slowest tile over the data (up to 64 per zoom) through a service with one
   read worker, with the growth of that worker's peak RSS; and a tile whose
   asset never answers, stopped at its deadline, with the next request's time.

The demo data is built first if missing (python -m stacgis_raster.demo_data).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import morecantile
import numpy as np
import rasterio
from rasterio.windows import Window
from shapely.geometry import box

from stacgis_common.testing import REPO_ROOT, free_port, mcp_client, run_service, token_for
from stacgis_raster import rasterops
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import StaticCatalogSource
from stacgis_raster.records import CollectionRecord
from stacgis_raster.settings import RasterSettings
from stacgis_raster.tile_params import render_options
from stacgis_raster.tile_reads import TileResult, render_tile

DATA = REPO_ROOT / ".local" / "data"
CATALOG = DATA / "stac" / "catalog.json"
LAND_MASK = DATA / "stac" / "global-land-mask" / "global-land-mask" / "global-land-mask.tif"


def ensure_data() -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "stacgis_raster.demo_data",
            "--cache",
            str(REPO_ROOT / ".local" / "cache"),
            "--out",
            str(DATA),
        ],
        check=True,
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
    )


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of `repeat` runs (seconds) and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def land_share_overview(settings: RasterSettings) -> tuple[float, dict[str, Any]]:
    """Exactly what get_raster_statistics does for a whole-world bbox."""
    with rasterio.open(LAND_MASK) as ds:
        plan = rasterops.plan_read(
            ds,
            box(-180, -90, 180, 90),
            target_pixels=settings.stats_target_pixels,
            max_pixels=settings.max_pixels_per_read,
            argument="bbox",
        )
        data = rasterops.read_band(ds, plan, 1)
    inside, weights = rasterops.area_mask_and_weights(plan)
    sample = rasterops.sample_from_array(data, inside, weights)
    share = float(np.average(sample.values, weights=sample.weights))
    return share, plan.resolution


def land_share_full_resolution(strip_rows: int = 1080) -> float:
    """Every one of the 933 million cells, read in strips, weighted by cos(latitude)."""
    weighted = 0.0
    total = 0.0
    with rasterio.open(LAND_MASK) as ds:
        for row in range(0, ds.height, strip_rows):
            rows = min(strip_rows, ds.height - row)
            strip = ds.read(1, window=Window(0, row, ds.width, rows))
            lats = ds.transform.f + (row + np.arange(rows) + 0.5) * ds.transform.e
            weights = np.cos(np.radians(lats))
            weighted += float((strip.sum(axis=1, dtype=np.int64) * weights).sum())
            total += float(weights.sum() * ds.width)
    return weighted / total


def tile_list() -> list[tuple[str, int, int, int]]:
    tiles: list[tuple[str, int, int, int]] = []
    for z in range(0, 4):
        tiles += [("global-land-mask", z, x, y) for x in range(2**z) for y in range(2**z)][:8]
    for z in (8, 9, 10):
        n = 2**z
        x = int((6.1 + 180) / 360 * n)
        y = int((1 - math.asinh(math.tan(math.radians(49.75))) / math.pi) / 2 * n)
        tiles += [("luxembourg-dem", z, x + dx, y + dy) for dx in (-1, 0) for dy in (0, 1)]
    return tiles


def render_direct(
    records: dict[str, CollectionRecord], tiles: list[tuple[str, int, int, int]], settings: RasterSettings
) -> list[TileResult]:
    out = []
    with rasterio.Env(**settings.gdal_env()):
        for cid, z, x, y in tiles:
            record = records[cid]
            options = render_options(record, _NoParams())
            href = record.items[-1].href
            out.append(render_tile(href, z, x, y, options, settings.tile_size, settings.tile_max_pixels))
    return out


class _NoParams(dict[str, str]):
    def getlist(self, _key: str) -> list[str]:
        return []


async def mcp_stats(url: str, repeat: int) -> tuple[float, dict[str, Any]]:
    async with mcp_client(f"{url}/mcp", token_for("bench")) as session:
        times = []
        data: dict[str, Any] = {}
        for _ in range(repeat):
            started = time.perf_counter()
            result = await session.call_tool(
                "get_raster_statistics", {"collection_id": "global-land-mask", "bbox": [-180, -90, 180, 90]}
            )
            times.append(time.perf_counter() - started)
            data = json.loads(result.content[0].text)
        return statistics.median(times), data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ensure_data()
    settings = RasterSettings(stac_url=str(CATALOG))

    overview_s, (overview_share, resolution) = timed(lambda: land_share_overview(settings), args.repeat)
    full_s, full_share = timed(land_share_full_resolution, 1)
    rel_error = abs(overview_share - full_share) / full_share

    source = StaticCatalogSource(str(CATALOG), AssetGuard([CATALOG.parent], []), refresh_seconds=3600, timeout=10)
    records = {r.id: r for r in source.collections()}
    tiles = tile_list()
    render_direct(records, tiles, settings)  # warm the block cache, as the server is warmed below
    direct_s, direct_results = timed(lambda: render_direct(records, tiles, settings), args.repeat)
    direct_pngs = [r.png for r in direct_results]

    port = free_port()
    env = {"RASTER_PORT": str(port), "RASTER_STAC_URL": str(CATALOG), "RASTER_LOG_LEVEL": "WARNING"}
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service, httpx.Client(timeout=60) as client:

        def fetch_all() -> list[bytes]:
            out = []
            for cid, z, x, y in tiles:
                response = client.get(f"{service.url}/tiles/{cid}/{z}/{x}/{y}.png")
                response.raise_for_status()
                out.append(response.content)
            return out

        fetch_all()
        service_s, service_pngs = timed(fetch_all, args.repeat)
        mcp_s, mcp_data = asyncio.run(mcp_stats(service.url, args.repeat))

    # The service answers a tile with nothing to draw with its shared transparent PNG.
    same = sum(a is None or a == b for a, b in zip(direct_pngs, service_pngs, strict=True))
    mcp_land = next(c["fraction"] for c in mcp_data["statistics"]["classes"] if c["name"] == "Land")
    n = len(tiles)
    rows = [
        ("land mask stats, full resolution (933 M cells)", f"{full_s:.2f} s", f"land share {full_share:.5f}"),
        (
            f"land mask stats, overview x{resolution['overview_factor']} ({resolution['approx_m'] / 1000:.1f} km)",
            f"{overview_s * 1000:.0f} ms",
            f"land share {overview_share:.5f}",
        ),
        ("  speed ratio full / overview", f"{full_s / overview_s:.0f}x", f"relative error of mean {rel_error:.4%}"),
        ("get_raster_statistics over MCP/HTTP (same area)", f"{mcp_s * 1000:.0f} ms", f"land share {mcp_land:.4f}"),
        (f"tiles via rio-tiler directly ({n} tiles)", f"{direct_s / n * 1000:.1f} ms/tile", ""),
        (f"tiles via GET /tiles ({n} tiles)", f"{service_s / n * 1000:.1f} ms/tile", f"{same}/{n} PNGs byte-identical"),
        (
            "  overhead ratio service / direct",
            f"{service_s / direct_s:.2f}x",
            f"+{(service_s - direct_s) / n * 1000:.1f} ms/tile",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"raster-tools benchmark ({args.repeat} repeats, median; {Path(LAND_MASK).name})")
    print(f"{'measure'.ljust(width)}  {'time':>14}  notes")
    for name, value, note in rows:
        print(f"{name.ljust(width)}  {value:>14}  {note}")
    print()
    bounded_tiles(settings, sorted(records))
    print()
    stalled_read()


def tree_memory(pid: int) -> dict[int, tuple[int, int]]:
    """(VmRSS, VmHWM) in kB of a process and its descendants (the read workers)."""
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
            lines = Path(f"/proc/{current}/status").read_text().splitlines()
        except OSError:
            continue
        status = dict(line.split(":", 1) for line in lines if ":" in line)
        if "VmRSS" in status:
            out[current] = (int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0]))
        todo += children.get(current, [])
    return out


def tiles_over(bounds: list[float], z: int, limit: int = 64) -> list[tuple[int, int]]:
    """Tiles over a layer's bounds at zoom z, at most `limit` of them spread evenly."""
    tms = morecantile.tms.get("WebMercatorQuad")
    west, south, east, north = bounds
    found = [(t.x, t.y) for t in tms.tiles(west, max(south, -85.05), east, min(north, 85.05), [z])]
    step = max(1, len(found) // limit)
    return found[::step][:limit]


def bounded_tiles(settings: RasterSettings, collection_ids: list[str]) -> None:
    """The slowest tile of every collection at every zoom, and the read worker's peak RSS."""
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(CATALOG),
        "RASTER_LOG_LEVEL": "WARNING",
        "RASTER_IO_WORKERS": "1",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service, httpx.Client(timeout=120) as client:
        pid = service.process.pid
        client.get(f"{service.url}/tiles/luxembourg-dem/7/66/43.png").raise_for_status()
        base = tree_memory(pid)
        workers = [p for p in base if p != pid]
        print(
            f"bounded tiles: one read worker, RASTER_TILE_MAX_PIXELS={settings.tile_max_pixels}, "
            f"RASTER_TILE_TIMEOUT_SECONDS={settings.tile_timeout_seconds:g}; server {base[pid][0] // 1024} MB, "
            f"worker processes {sum(base[p][0] for p in workers) // 1024} MB before"
        )
        print("slowest tile over the data per zoom (ms); '-' below the layer's minzoom (transparent, no read)")
        print(f"{'collection':<26} {'min':>3} {'max':>3}  per zoom 0..max{'':<40} worker peak RSS growth")
        worst_ms = 0.0
        for cid in collection_ids:
            layer = client.get(f"{service.url}/tiles/{cid}/tilejson.json").json()
            cells = []
            for z in range(0, layer["maxzoom"] + 1):
                slowest = 0.0
                for x, y in tiles_over(layer["bounds"], z):
                    started = time.perf_counter()
                    response = client.get(f"{service.url}/tiles/{cid}/{z}/{x}/{y}.png")
                    elapsed = time.perf_counter() - started
                    response.raise_for_status()
                    slowest = max(slowest, elapsed)
                worst_ms = max(worst_ms, slowest * 1000)
                cells.append("-" if z < layer["minzoom"] else f"{slowest * 1000:.0f}")
            now = tree_memory(pid)
            grown = sum(now[p][1] - base[p][1] for p in workers if p in now) / 1024
            print(f"{cid:<26} {layer['minzoom']:>3} {layer['maxzoom']:>3}  {' '.join(cells):<56} {grown:+.0f} MB")
        after = tree_memory(pid)
        replaced = [p for p in workers if p not in after]
        print(
            f"slowest tile of all: {worst_ms:.0f} ms; server RSS {after[pid][0] // 1024} MB after; "
            f"worker peak RSS {max(after[p][1] for p in after if p != pid) // 1024} MB; "
            f"workers replaced: {len(replaced)}"
        )


class _Stalled:
    """An HTTP server that never answers: an asset host that hangs."""

    def __init__(self) -> None:
        self.release = threading.Event()
        release = self.release

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                release.wait(120)

            do_HEAD = do_GET

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()


def stalled_read(deadline_s: float = 3.0) -> None:
    """A tile whose COG lies on a host that never answers, with one read worker: the 504 at the
    deadline, and the time of the next tile (it needs the same worker)."""
    hung = _Stalled()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        shutil.copytree(CATALOG.parent / "luxembourg-dem", out / "luxembourg-dem")
        collection = json.loads((out / "luxembourg-dem" / "collection.json").read_text())
        item = json.loads((out / "luxembourg-dem" / "luxembourg-dem" / "luxembourg-dem.json").read_text())
        (out / "stalled" / "stalled").mkdir(parents=True)
        collection["id"] = item["collection"] = item["id"] = "stalled"
        collection["links"] = [
            {**link, "href": "./stalled/stalled.json"} if link["rel"] == "item" else link
            for link in collection["links"]
        ]
        item["assets"]["data"]["href"] = f"http://127.0.0.1:{hung.httpd.server_address[1]}/stalled.tif"
        (out / "stalled" / "collection.json").write_text(json.dumps(collection))
        (out / "stalled" / "stalled" / "stalled.json").write_text(json.dumps(item))
        catalog = json.loads(CATALOG.read_text())
        catalog["links"] = [link for link in catalog["links"] if link["rel"] != "child"] + [
            {"rel": "child", "href": f"./{name}/collection.json"} for name in ("luxembourg-dem", "stalled")
        ]
        (out / "catalog.json").write_text(json.dumps(catalog))
        port = free_port()
        env = {
            "RASTER_PORT": str(port),
            "RASTER_STAC_URL": str(out / "catalog.json"),
            "RASTER_ALLOWED_REMOTE_HOSTS": json.dumps(["127.0.0.1"]),
            "RASTER_IO_WORKERS": "1",
            "RASTER_TILE_TIMEOUT_SECONDS": str(deadline_s),
            "RASTER_LOG_LEVEL": "WARNING",
        }
        try:
            with (
                run_service("stacgis_raster", env, port, ready_path="/readyz") as service,
                httpx.Client(timeout=120) as client,
            ):
                client.get(f"{service.url}/tiles/luxembourg-dem/7/66/43.png").raise_for_status()
                started = time.perf_counter()
                stalled = client.get(f"{service.url}/tiles/stalled/7/66/43.png")
                stalled_s = time.perf_counter() - started
                started = time.perf_counter()
                following = client.get(f"{service.url}/tiles/luxembourg-dem/7/66/44.png")
                following_s = time.perf_counter() - started
        finally:
            hung.close()
    print(f"stalled asset, deadline {deadline_s:g} s, one read worker (GDAL would wait 20 s x 3 tries):")
    print(f"  tile on the hung host: {stalled.status_code} after {stalled_s:.2f} s ({stalled.json()['error']})")
    print(f"  next tile, same worker slot: {following.status_code} after {following_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
