"""The internal GET /places/labels (city names for a map view) through the real server over the loaded cities;
the cities expected are picked from the GeoNames source file, not from the loader or the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from vector_helpers import CITIES_JSON, MIN_POPULATION

from stacgis_common.testing import RunningService, error_of, token_for
from stacgis_vector.settings import VectorSettings

pytestmark = pytest.mark.asyncio(loop_scope="session")

MAX_LABELS = VectorSettings.model_fields["max_label_limit"].default


def expected(cache: Path, box: tuple[float, float, float, float], limit: int) -> list[dict[str, Any]]:
    """The source's loaded cities whose point is in the box (west > east: across the antimeridian), largest first."""
    west, south, east, north = box

    def inside(lon: float, lat: float) -> bool:
        across = lon >= west or lon <= east
        return south <= lat <= north and (west <= lon <= east if west <= east else across)

    cities = json.loads((cache / CITIES_JSON).read_text()).values()
    chosen = [
        city
        for city in cities
        if int(city["population"]) >= MIN_POPULATION and inside(float(city["longitude"]), float(city["latitude"]))
    ]
    chosen.sort(key=lambda city: (-int(city["population"]), city["name"], str(city["geonameid"])))
    return chosen[:limit]


async def labels(client: httpx.AsyncClient, server: RunningService, **params: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token_for('chat-gateway')}"}
    return await client.get(f"{server.url}/places/labels", params=params, headers=headers)


async def test_the_most_populous_cities_in_the_box_come_first(vector_server: RunningService, cache_dir: Path) -> None:
    europe = (-10.0, 35.0, 30.0, 60.0)
    want = expected(cache_dir, europe, 5)
    assert len(want) == 5, "Europe has five cities of a million or more"
    async with httpx.AsyncClient(timeout=30) as client:
        found = await labels(client, vector_server, bbox=",".join(map(str, europe)), limit=5)
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["bbox"] == list(europe) and body["count"] == 5
    assert [label["ref"] for label in body["labels"]] == [f"cities/{city['geonameid']}" for city in want]
    for label, city in zip(body["labels"], want, strict=True):
        assert label["name"] == city["name"]
        assert label["population"] == int(city["population"])
        assert [label["lon"], label["lat"]] == pytest.approx([city["longitude"], city["latitude"]], abs=1e-4)
        assert label["country"]  # the country's name from GeoNames' country list
    populations = [label["population"] for label in body["labels"]]
    assert populations == sorted(populations, reverse=True)


async def test_a_box_across_the_antimeridian_holds_both_sides(vector_server: RunningService, cache_dir: Path) -> None:
    pacific = (100.0, -50.0, -60.0, 70.0)  # east Asia, the Pacific and the Americas west of 60° W
    want = expected(cache_dir, pacific, 40)
    assert any(float(city["longitude"]) > 100 for city in want), "no city east of 100° E"
    assert any(float(city["longitude"]) < -60 for city in want), "no city west of 60° W"
    async with httpx.AsyncClient(timeout=30) as client:
        found = await labels(client, vector_server, bbox="100,-50,-60,70", limit=40)
        assert found.status_code == 200, found.text
        assert [label["ref"] for label in found.json()["labels"]] == [f"cities/{c['geonameid']}" for c in want]
        # The rest of the world: the complementary box shares no city.
        rest = await labels(client, vector_server, bbox="-60,-50,100,70", limit=40)
    assert rest.status_code == 200, rest.text
    assert not {label["ref"] for label in rest.json()["labels"]} & {label["ref"] for label in found.json()["labels"]}
    assert rest.json()["labels"], "Europe, Africa and western Asia have cities"


async def test_the_limit_bounds_the_answer_and_an_empty_box_has_no_names(
    vector_server: RunningService, cache_dir: Path
) -> None:
    world = (-180.0, -90.0, 180.0, 90.0)
    async with httpx.AsyncClient(timeout=30) as client:
        everything = await labels(client, vector_server, bbox="-180,-90,180,90", limit=MAX_LABELS)
        ocean = await labels(client, vector_server, bbox="-140,-50,-130,-40", limit=10)
    assert everything.status_code == 200, everything.text
    assert everything.json()["count"] == len(expected(cache_dir, world, MAX_LABELS))
    assert everything.json()["count"] <= MAX_LABELS
    assert expected(cache_dir, (-140.0, -50.0, -130.0, -40.0), 10) == []
    assert ocean.status_code == 200 and ocean.json() == {"bbox": [-140, -50, -130, -40], "labels": [], "count": 0}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "bbox"),
        ({"bbox": "1,2,3"}, "bbox"),
        ({"bbox": "west,2,3,4"}, "bbox"),
        ({"bbox": "nan,2,3,4"}, "bbox"),
        ({"bbox": "0,-91,10,10"}, "bbox"),
        ({"bbox": "-181,0,10,10"}, "bbox"),
        ({"bbox": "0,10,10,5"}, "bbox"),
        ({"bbox": "0,0,10,10", "limit": "many"}, "limit"),
        ({"bbox": "0,0,10,10", "limit": 0}, "limit"),
        ({"bbox": "0,0,10,10", "limit": MAX_LABELS + 1}, "limit"),
    ],
)
async def test_bad_label_requests_are_422s_naming_the_field(
    vector_server: RunningService, params: dict[str, Any], field: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        bad = await labels(client, vector_server, **params)
    assert error_of(bad, 422, field)["code"] == "invalid_argument"


async def test_labels_need_the_internal_token(vector_server: RunningService) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        anonymous = await client.get(f"{vector_server.url}/places/labels", params={"bbox": "0,0,10,10"})
    refusal = error_of(anonymous, 401)
    assert refusal["code"] == "unauthenticated" and refusal["message"].startswith("invalid internal token: ")
    assert anonymous.headers["www-authenticate"] == "Bearer"
