"""raster-tools benchmark (prints a table; not a test).

    .venv/bin/python tests/bench/bench_raster.py [--repeat 3] [--tiles 40]

1. Statistics over the whole GLOBE land mask (43200 x 21600 cells): the
   service's overview read versus a full-resolution read of every cell; speed
   ratio and relative error of the area-weighted mean (the land share).
2. The same statistics as an MCP tool call over HTTP to a running server.
3. Map tiles: GET /tiles/... through the running service versus rendering the
   same tiles with rio-tiler directly in this process; overhead ratio.

The demo data is built first if missing (python -m stacgis_raster.demo_data).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import rasterio
from rasterio.windows import Window
from shapely.geometry import box

from stacgis_common.testing import REPO_ROOT, free_port, mcp_client, run_service, token_for
from stacgis_raster import rasterops
from stacgis_raster.assets import AssetGuard
from stacgis_raster.catalog import CollectionRecord, StaticCatalogSource
from stacgis_raster.settings import RasterSettings
from stacgis_raster.tiles import render_options, render_tile, transparent_png

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
    records: dict[str, CollectionRecord], tiles: list[tuple[str, int, int, int]], settings: RasterSettings, empty: bytes
) -> list[bytes]:
    out = []
    with rasterio.Env(**settings.gdal_env()):
        for cid, z, x, y in tiles:
            record = records[cid]
            options = render_options(record, _NoParams())
            out.append(render_tile(record.items[-1].href, z, x, y, options, settings.tile_size, empty))
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
    empty = transparent_png(settings.tile_size)
    render_direct(records, tiles, settings, empty)  # warm the block cache, as the server is warmed below
    direct_s, direct_pngs = timed(lambda: render_direct(records, tiles, settings, empty), args.repeat)

    port = free_port()
    env = {"RASTER_PORT": str(port), "RASTER_STAC_URL": str(CATALOG), "RASTER_LOG_LEVEL": "WARNING"}
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service, httpx.Client() as client:

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

    same = sum(a == b for a, b in zip(direct_pngs, service_pngs, strict=True))
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


if __name__ == "__main__":
    main()
