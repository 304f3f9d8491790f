"""Bad input gets an MCP tool error naming the argument, and the server keeps answering."""

from __future__ import annotations

import math
from typing import Any

import pytest
from raster_test_helpers import call, call_error, connect

pytestmark = pytest.mark.asyncio(loop_scope="session")

BOWTIE = {"type": "Polygon", "coordinates": [[[6.0, 49.6], [6.3, 49.9], [6.3, 49.6], [6.0, 49.9], [6.0, 49.6]]]}


def _many_vertices(count: int) -> dict[str, Any]:
    ring = [
        [6.1 + 0.1 * math.cos(2 * math.pi * i / count), 49.7 + 0.1 * math.sin(2 * math.pi * i / count)]
        for i in range(count)
    ]
    return {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}


CASES = [
    (
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "bbox": [6.5, 49.4, 5.7, 50.2]},
        ["bbox: ", "west (6.5) must be less than east (5.7)"],
    ),
    (
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "bbox": [5.7, 49.4, 6.6, 95]},
        ["bbox: ", "outside -90..90"],
    ),
    ("get_raster_statistics", {"collection_id": "luxembourg-dem", "bbox": "5.7,NaN,6.6,50.2"}, ["bbox: ", "finite"]),
    ("compute_zonal_stats", {"collection_id": "luxembourg-dem"}, ["place: ", "required"]),
    ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": 6.1}, ["place: ", "lon and lat"]),
    ("get_raster_statistics", {"collection_id": "luxembourg-dem", "place": "selection"}, ["place: ", "selection"]),
    (
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "bbox": [-10, -10, -5, -5]},
        ["bbox: ", "does not overlap"],
    ),
    (
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "bbox": [5.7, 49.4, 6.6, 50.2], "band": 3},
        ["band: ", "1=elevation"],
    ),
    ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": 6.1, "lat": 95}, ["lat: ", "-90..90"]),
    ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": 200, "lat": 49.6}, ["lon: ", "-180..180"]),
    ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": float("nan"), "lat": 49.6}, ["lon"]),
    ("query_raster_point", {"collection_id": "luxembourg-dem", "lon": "six", "lat": 49.6}, ["lon"]),
    (
        "compute_zonal_stats",
        {"collection_id": "luxembourg-dem", "geometry": {"type": "Polygon", "coordinates": "x"}},
        ["geometry: ", "not a valid GeoJSON geometry"],
    ),
    (
        "compute_zonal_stats",
        {"collection_id": "luxembourg-dem", "geometry": BOWTIE},
        ["geometry: ", "Self-intersection"],
    ),
    (
        "compute_zonal_stats",
        {"collection_id": "luxembourg-dem", "geometry": {"type": "Point", "coordinates": [6, 49]}},
        ["geometry: ", "Polygon or MultiPolygon"],
    ),
    (
        "compute_zonal_stats",
        {"collection_id": "luxembourg-dem", "geometry": _many_vertices(6000)},
        ["geometry: ", "limit of 5000"],
    ),
    (
        "compute_zonal_stats",
        {"collection_id": "luxembourg-dem", "geometry": {"dataset": "test-areas", "id": "nowhere"}},
        ["geometry: ", "no feature 'nowhere'"],
    ),
    ("get_raster_info", {"collection_id": "luxemburg-dem"}, ["collection_id: ", "Did you mean: luxembourg-dem"]),
    (
        "query_raster_point",
        {"collection_id": "bcsd-precipitation-1999", "lon": -83.5, "lat": 35.6, "datetime": "2005-06"},
        ["datetime: ", "no data", "1999-01-01"],
    ),
    (
        "query_raster_point",
        {"collection_id": "bcsd-precipitation-1999", "lon": -83.5, "lat": 35.6, "datetime": "last summer"},
        ["datetime: ", "ISO 8601"],
    ),
    (
        "get_timeseries",
        {"collection_id": "luxembourg-dem", "lon": 6.1, "lat": 49.6},
        ["collection_id: ", "not a time series", "bcsd-temperature-1999"],
    ),
    (
        "get_timeseries",
        {"collection_id": "bcsd-temperature-1999", "lon": -83.5, "lat": 35.6, "start": "1999-08", "end": "1999-02"},
        ["end: ", "before start"],
    ),
    (
        "detect_change",
        {"collection_id": "rmnp-dem", "bbox": [-105.8, 40.2, -105.6, 40.4], "period_a": "2000", "period_b": "2010"},
        ["collection_id: ", "nothing to compare"],
    ),
    (
        "detect_change",
        {
            "collection_id": "bcsd-temperature-1999",
            "bbox": [-85, 33, -75, 37],
            "period_a": "1999-01",
            "period_b": "2001-01",
        },
        ["period_b: ", "no data"],
    ),
    (
        "detect_change",
        {
            "collection_id": "bcsd-temperature-1999",
            "bbox": [-85, 33, -75, 37],
            "period_a": "1999-01",
            "period_b": "1999-07",
            "threshold": -1,
        },
        ["threshold: ", ">= 0"],
    ),
    (
        "query_multiple_rasters_point",
        {"collection_ids": ["luxembourg-dem"] * 13, "lon": 6.1, "lat": 49.6},
        ["collection_ids: ", "limit of 12"],
    ),
    (
        "query_multiple_rasters_point",
        {"collection_ids": ["luxembourg-dem", "landsat"], "lon": 6.1, "lat": 49.6},
        ["collection_ids: ", "landsat7-olinda"],
    ),
    ("search_raster_collections", {"query": "   "}, ["query: ", "non-empty"]),
]


@pytest.mark.parametrize(("tool", "arguments", "fragments"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_bad_input_is_a_clear_error_and_the_server_keeps_serving(
    raster_service: str, tool: str, arguments: dict[str, Any], fragments: list[str]
) -> None:
    async with connect(raster_service) as mcp:
        message = await call_error(mcp, tool, **arguments)
        for fragment in fragments:
            assert fragment in message, message
        after = await call(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=6.13, lat=49.61)
        assert after["results"][0]["values"]["elevation"] is not None


async def test_whole_world_zonal_statistics_fall_back_to_an_overview(raster_service: str) -> None:
    world = {"type": "Polygon", "coordinates": [[[-180, -85], [180, -85], [180, 85], [-180, 85], [-180, -85]]]}
    async with connect(raster_service) as mcp:
        result = await call(mcp, "compute_zonal_stats", collection_id="global-land-mask", geometry=world)
    assert result["resolution"]["native"] is False
    land = next(c for c in result["statistics"]["classes"] if c["name"] == "Land")
    assert 0.27 < land["fraction"] < 0.32


async def test_calls_without_a_valid_token_are_refused(raster_service: str) -> None:
    import httpx

    response = httpx.post(
        f"{raster_service}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer forged", "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
