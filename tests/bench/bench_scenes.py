"""Scene tools benchmark (prints a table; not a test).

    .venv/bin/python tests/bench/bench_scenes.py [--repeat 3]

Starts the STAC API server `make up` runs (rustac over the demo catalog) and two raster-tools
processes, one reading that API and one the static catalog, on free ports. Then:

1. Item search: `search_items` over MCP through each source, and the bare STAC API search
   (pystac-client straight to rustac) it is built on; median latency.
2. NDVI statistics versus the number of items: areas covering 1 to 144 tiles of
   `landsat7-olinda-scenes` through `get_scene_statistics` (mosaic of the tiles, one COG per band),
   against NDVI of the same pixels computed in this process from the untiled scene; the ratio is the
   price of reading many files instead of one.
3. Pixels and bytes decoded versus the area (from the tool's own `pixels_read`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import rasterio
from bench_raster import CATALOG, DATA, ensure_data  # run as a script: tests/bench is on the path
from pystac_client import Client

from stacgis_common.testing import free_port, mcp_client, run_service, token_for

SCENE = DATA / "stac" / "landsat7-olinda" / "landsat7-olinda" / "landsat7-olinda.tif"
SCENES = "landsat7-olinda-scenes"
# The Landsat scene's extent (degrees); sub-boxes of it from the centre outwards.
WEST, SOUTH, EAST, NORTH = -34.9166, -8.0409, -34.826, -7.9498


def centred_box(fraction: float) -> list[float]:
    cx, cy = (WEST + EAST) / 2, (SOUTH + NORTH) / 2
    hx, hy = (EAST - WEST) * fraction / 2, (NORTH - SOUTH) * fraction / 2
    return [cx - hx, cy - hy, cx + hx, cy + hy]


async def median_seconds(work: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = await work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def direct_ndvi_seconds(bbox: list[float], repeat: int) -> float:
    """NDVI mean of the box read from the untiled scene in this process (window read + numpy)."""
    from rasterio.warp import transform_bounds
    from rasterio.windows import from_bounds

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with rasterio.open(SCENE) as ds:
            window = from_bounds(*transform_bounds("EPSG:4326", ds.crs, *bbox), transform=ds.transform)
            red, nir = (ds.read(b, window=window.round_offsets().round_lengths()).astype("float64") for b in (3, 4))
        total = nir + red
        _ = float(np.mean((nir - red)[total > 0] / total[total > 0]))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    ensure_data()
    api_port, static_port, raster_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as export:
        api_env = {"STAC_API_CATALOG": str(CATALOG), "STAC_API_DIR": export, "STAC_API_PORT": str(api_port)}
        common = {"RASTER_LOG_LEVEL": "WARNING", "RASTER_ALLOWED_LOCAL_ROOTS": json.dumps([str(DATA)])}
        with (
            run_service("stacgis_raster.demo_data.stac_api", api_env, api_port, ready_path="/conformance") as api,
            run_service(
                "stacgis_raster",
                {
                    **common,
                    "RASTER_PORT": str(raster_port),
                    "RASTER_STAC_URL": f"{api.url}/",
                    "RASTER_STAC_LISTING_ITEMS": "500",
                },
                raster_port,
                ready_path="/readyz",
            ) as via_api,
            run_service(
                "stacgis_raster",
                {**common, "RASTER_PORT": str(static_port), "RASTER_STAC_URL": str(CATALOG)},
                static_port,
                ready_path="/readyz",
            ) as via_static,
        ):
            token = token_for("bench")
            search_args = {"collection_id": SCENES, "bbox": centred_box(0.5), "max_cloud_cover": 2.0, "limit": 20}
            client = Client.open(f"{api.url}/")

            def bare_search() -> int:
                return len(
                    list(client.search(collections=[SCENES], bbox=centred_box(0.5), max_items=200, limit=100).items())
                )

            async def bare() -> int:
                return await asyncio.to_thread(bare_search)

            print("## Item search (median of", max(5, args.repeat), "calls)\n")
            print("| path | items found | median ms |")
            print("|---|---|---|")
            seconds, found = await median_seconds(bare, max(5, args.repeat))
            print(f"| STAC API search (pystac-client -> rustac), bbox only | {found} | {seconds * 1000:.1f} |")
            for label, service in (
                ("search_items via STAC API", via_api),
                ("search_items via static catalog", via_static),
            ):
                async with mcp_client(f"{service.url}/mcp", token) as mcp:

                    async def search(mcp: Any = mcp) -> dict[str, Any]:
                        result = await mcp.call_tool("search_items", search_args)
                        return dict(json.loads(result.content[0].text))

                    await search()
                    seconds, result = await median_seconds(search, max(5, args.repeat))
                print(f"| {label}, bbox + cloud cover <= 2 % | {result['count']} | {seconds * 1000:.1f} |")

            print("\n## NDVI statistics vs number of items (get_scene_statistics via STAC API)\n")
            print(
                "| area km² | items used | pixels read | decoded MB | tool median s | direct from one file s | ratio |"
            )
            print("|---|---|---|---|---|---|---|")
            async with mcp_client(f"{via_api.url}/mcp", token) as mcp:
                for fraction in (0.08, 0.2, 0.35, 0.5, 0.75, 1.0):
                    bbox = centred_box(fraction)

                    async def stats(bbox: list[float] = bbox) -> dict[str, Any]:
                        result = await mcp.call_tool(
                            "get_scene_statistics", {"collection_id": SCENES, "expression": "ndvi", "bbox": bbox}
                        )
                        assert not result.is_error, result.content[0].text
                        return dict(json.loads(result.content[0].text))

                    seconds, result = await median_seconds(stats, args.repeat)
                    direct = direct_ndvi_seconds(bbox, args.repeat)
                    pixels = result["pixels_read"]
                    print(
                        f"| {result['area']['area_km2']:.1f} | {result['items']['used']} | {pixels} | "
                        f"{pixels / 1e6:.2f} | {seconds:.2f} | {direct:.4f} | {seconds / direct:.0f}× |"
                    )


if __name__ == "__main__":
    asyncio.run(main())
