"""raster-tools against a STAC API (searched with pystac-client) instead of a static catalog.

The API is a real STAC API server (rustac, fixture `stac_api`) serving the built demo catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pystac
import pytest
from raster_test_helpers import call, call_error, connect

from stacgis_common.testing import free_port, run_service

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="session")
def api_service_without_roots(stac_api: str) -> Iterator[str]:
    port = free_port()
    env = {"RASTER_PORT": str(port), "RASTER_STAC_URL": f"{stac_api}/", "RASTER_LOG_LEVEL": "WARNING"}
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url


async def test_collections_and_time_series_come_from_the_api(api_backed_service: str, demo_data: Path) -> None:
    async with connect(api_backed_service) as mcp:
        listing = await call(mcp, "list_raster_collections")
        assert listing["count"] == len(list(pystac.Catalog.from_file(str(demo_data)).get_children()))
        series = await call(
            mcp,
            "get_timeseries",
            collection_id="bcsd-temperature-1999",
            lon=-83.5,
            lat=35.6,
            start="1999-04",
            end="1999-06",
        )
        assert [p["time"][:7] for p in series["points"]] == ["1999-04", "1999-05", "1999-06"]
        stats = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", bbox=[5.7, 49.4, 6.6, 50.2])
        assert (stats["statistics"]["min"], stats["statistics"]["max"]) == (141.0, 547.0)
        info = await call(mcp, "get_raster_info", collection_id="nlcd-puerto-rico")
        assert info["bands"][0]["classes"]["42"] == "Evergreen Forest"


async def test_assets_outside_the_allowed_roots_are_not_read(api_service_without_roots: str) -> None:
    async with connect(api_service_without_roots) as mcp:
        message = await call_error(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=6.1, lat=49.6)
        assert "outside the allowed roots" in message
        listing = await call(mcp, "list_raster_collections")  # the catalog itself still answers
        assert listing["count"] > 0


async def test_the_api_describes_collections_as_the_static_catalog_does(
    raster_service: str, api_backed_service: str
) -> None:
    async with connect(raster_service) as static, connect(api_backed_service) as api:
        listed_api = (await call(api, "list_raster_collections"))["collections"]
        listed_static = (await call(static, "list_raster_collections"))["collections"]
        for a, b in zip(listed_api, listed_static, strict=True):
            assert a == b, (a, b)
        for collection_id in ("bcsd-temperature-1999", "landsat7-olinda-scenes"):
            from_api = await call(api, "get_raster_info", collection_id=collection_id)
            from_static = await call(static, "get_raster_info", collection_id=collection_id)
            assert from_api == from_static
