"""The map's city names: GET /api/v1/places/labels forwarded to vector-tools' labels (here the stand-in in
gateway_test_orchestrator) with the caller's internal token; bad boxes refused naming the field, failures
clear and never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gateway_helpers import Gateways, gateway_env, new_user, services, user
from gateway_test_orchestrator import LABELS

from stacgis_common.testing import error_of, free_port

pytestmark = pytest.mark.asyncio


def in_box(west: float, south: float, east: float, north: float) -> list[dict[str, Any]]:
    return [label for label in LABELS if west <= label["lon"] <= east and south <= label["lat"] <= north]


async def asked(client: httpx.AsyncClient, gateways: Gateways, who: str) -> list[tuple[str, int]]:
    requests = (await client.get(f"{gateways.orchestrator.url}/_scripted/labels")).json()
    return [(entry["bbox"], entry["limit"]) for entry in requests if entry["user_id"] == who]


async def test_labels_are_forwarded_as_the_caller_and_come_back_largest_first(gateways: Gateways) -> None:
    who = new_user()
    germany = in_box(5, 45, 15, 55)
    assert len(germany) == 3 and germany[0]["population"] > germany[1]["population"]
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{gateways.a.url}/api/v1/places/labels"
        two = await client.get(url, params={"bbox": "5,45,15,55", "limit": 2}, headers=user(who))
        assert two.status_code == 200, two.text
        assert two.json() == {"bbox": [5, 45, 15, 55], "labels": germany[:2]}
        # The default limit, and a box across the antimeridian forwarded as it is (west > east).
        everything = await client.get(url, params={"bbox": "5,45,15,55"}, headers=user(who))
        assert everything.json()["labels"] == germany
        across = await client.get(url, params={"bbox": "170,-10,-170.5,10"}, headers=user(who))
        assert across.status_code == 200 and across.json() == {"bbox": [170, -10, -170.5, 10], "labels": []}
        # A label without a country leaves the field out.
        luxembourg = await client.get(url, params={"bbox": "6,49,7,50"}, headers=user(who))
        assert luxembourg.json()["labels"] == in_box(6, 49, 7, 50) and "country" not in luxembourg.json()["labels"][0]
        forwarded = await asked(client, gateways, who)
    assert forwarded == [
        ("5.0,45.0,15.0,55.0", 2),
        ("5.0,45.0,15.0,55.0", 100),
        ("170.0,-10.0,-170.5,10.0", 100),
        ("6.0,49.0,7.0,50.0", 100),
    ]


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({}, "bbox", "Field required"),
        ({"bbox": ""}, "bbox", "at least 1"),
        ({"bbox": "1,2,3"}, "bbox", "west,south,east,north"),
        ({"bbox": "west,2,3,4"}, "bbox", "finite numbers"),
        ({"bbox": "inf,2,3,4"}, "bbox", "finite numbers"),
        ({"bbox": "0,-91,10,10"}, "bbox", "latitudes between -90 and 90"),
        ({"bbox": "-181,0,10,10"}, "bbox", "longitudes between -180 and 180"),
        ({"bbox": "0,10,10,5"}, "bbox", "south (10.0) must not be greater than north (5.0)"),
        ({"bbox": "1," * 100 + "1"}, "bbox", "at most 200"),
        ({"bbox": "0,0,10,10", "limit": 0}, "limit", "greater than or equal to 1"),
        ({"bbox": "0,0,10,10", "limit": 251}, "limit", "less than or equal to 250"),
        ({"bbox": "0,0,10,10", "limit": "many"}, "limit", "integer"),
    ],
)
async def test_bad_label_requests_are_422s_naming_the_field_and_never_forwarded(
    gateways: Gateways, params: dict[str, Any], field: str, says: str
) -> None:
    who = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.get(f"{gateways.a.url}/api/v1/places/labels", params=params, headers=user(who))
        error = error_of(answer, 422, field)
        assert says in error["message"] and "; " not in error["message"], error
        assert await asked(client, gateways, who) == []


async def test_a_refusal_by_the_place_index_names_its_field(gateways: Gateways) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.get(
            f"{gateways.a.url}/api/v1/places/labels", params={"bbox": "3,0,10,10"}, headers=user(new_user())
        )
    # The place index's own words ("limit: ..."), its field named.
    assert error_of(answer, 422, "limit")["message"] == "limit: must be an integer from 1 to 3"


async def test_label_failures_are_clear_and_never_500(gateways: Gateways) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{gateways.a.url}/api/v1/places/labels"
        slow = await client.get(url, params={"bbox": "1,0,10,10"}, headers=user(new_user()))
        assert error_of(slow, 504)["message"] == "the city name lookup did not answer in time"
        assert slow.headers["Retry-After"] == "2"
        broken = await client.get(url, params={"bbox": "2,0,10,10"}, headers=user(new_user()))
    assert error_of(broken, 503)["message"] == "the city name lookup failed (HTTP 500); retry shortly"
    assert broken.headers["Retry-After"] == "2"


async def test_labels_have_their_own_rate_limit_and_report_an_unreachable_index(
    pg_dsn: str, redis_url: str, gateways: Gateways
) -> None:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        gateways.orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="labels:",
        GATEWAY_PLACE_LABELS_PER_MINUTE="2",
        GATEWAY_PLACE_SEARCH_PER_MINUTE="2",
        GATEWAY_VECTOR_TOOLS_URL=f"http://127.0.0.1:{free_port()}",  # nothing listens there
    )
    with services(("stacgis_gateway", env, port)) as (gateway,):
        async with httpx.AsyncClient(timeout=30) as client:
            who = user(new_user())
            answers = [
                await client.get(f"{gateway.url}/api/v1/places/labels", params={"bbox": "0,0,10,10"}, headers=who)
                for _ in range(3)
            ]
            # The search box keeps its own allowance.
            search = await client.get(f"{gateway.url}/api/v1/places/search", params={"q": "Berlin"}, headers=who)
    assert [answer.status_code for answer in answers] == [503, 503, 429]
    assert error_of(answers[0], 503)["message"] == "the city name lookup is unavailable; retry shortly"
    assert answers[0].headers["Retry-After"] == "2"
    assert error_of(answers[2], 429)["code"] == "rate_limited"
    assert int(answers[2].headers["Retry-After"]) > 0
    assert error_of(search, 503)["message"] == "the place search is unavailable; retry shortly"
