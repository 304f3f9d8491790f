"""How far the loading of the place names has come: GET /api/v1/places/status forwarded to vector-tools'
status (here the stand-in in gateway_test_orchestrator, scripted per user) with the caller's internal token,
reduced to the public fields; failures clear (503/504 with Retry-After) and never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gateway_helpers import Gateways, gateway_env, new_user, services, user
from gateway_test_orchestrator import PLACES_LOADED

from stacgis_common.testing import error_of, free_port

pytestmark = pytest.mark.asyncio

PUBLIC = {"id", "state", "stage", "done", "total", "features"}
# Mid-load, as vector-tools reports it, with what the public answer leaves out: the age of the last
# progress report, and fields it may add later.
LOADING: dict[str, Any] = {
    "loading": True,
    "started_by": "loader",
    "datasets": [
        {"id": "countries", "state": "loaded", "features": 258, "table": "places_countries"},
        {
            "id": "cities",
            "state": "loading",
            "stage": "embedding",
            "done": 12288,
            "total": 33602,
            "updated_seconds_ago": 2.1,
        },
        {"id": "us_counties", "state": "stalled", "stage": "writing", "done": 100, "total": 3143, "eta": 9},
    ],
}


def public(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "loading": status["loading"],
        "datasets": [{key: value for key, value in entry.items() if key in PUBLIC} for entry in status["datasets"]],
    }


async def script(client: httpx.AsyncClient, gateways: Gateways, who: str, **answer: Any) -> None:
    scripted = await client.put(f"{gateways.orchestrator.url}/_scripted/place_status/{who}", json=answer)
    assert scripted.status_code == 200, scripted.text


async def test_the_load_status_comes_back_with_its_public_fields_only(gateways: Gateways) -> None:
    who = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{gateways.a.url}/api/v1/places/status"
        loaded = await client.get(url, headers=user(who))
        assert loaded.status_code == 200, loaded.text
        assert loaded.json() == PLACES_LOADED
        await script(client, gateways, who, body=LOADING)
        loading = await client.get(url, headers=user(who))
        asked = (await client.get(f"{gateways.orchestrator.url}/_scripted/place_status")).json()
    assert loading.status_code == 200, loading.text
    assert loading.json() == public(LOADING)
    cities = loading.json()["datasets"][1]
    assert cities == {"id": "cities", "state": "loading", "stage": "embedding", "done": 12288, "total": 33602}
    # A loaded dataset has no stage or counts, a loading one no feature count: absent, not null.
    assert set(loading.json()["datasets"][0]) == {"id", "state", "features"}
    # Asked with the caller's own internal token.
    assert asked.count(who) == 2


async def test_a_minute_of_polling_every_five_seconds_is_allowed(gateways: Gateways) -> None:
    who = user(new_user())
    async with httpx.AsyncClient(timeout=30) as client:
        answers = [await client.get(f"{gateways.a.url}/api/v1/places/status", headers=who) for _ in range(60 // 5)]
    assert [answer.status_code for answer in answers] == [200] * (60 // 5)


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        (
            {"status": 500, "body": {"message": "broken"}},
            503,
            "the place loading status failed (HTTP 500); retry shortly",
        ),
        # A 422 to a request without parameters names nothing the caller sent.
        (
            {"status": 422, "body": {"field": "x", "message": "x: no", "code": "invalid_argument"}},
            503,
            "the place loading status failed (HTTP 422); retry shortly",
        ),
        (
            {"body": {"loading": True, "datasets": [{"id": "cities", "state": "exploded"}]}},
            503,
            "the place loading status gave an answer the gateway cannot read; retry shortly",
        ),
        (
            {"body": {"loading": True}},
            503,
            "the place loading status gave an answer the gateway cannot read; retry shortly",
        ),
        ({"body": ["not", "an", "object"]}, 503, "the place loading status failed (HTTP 200); retry shortly"),
        ({"delay": 30}, 504, "the place loading status did not answer in time"),
    ],
)
async def test_status_failures_are_clear_and_never_500(
    gateways: Gateways, answer: dict[str, Any], status: int, message: str
) -> None:
    who = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        await script(client, gateways, who, **answer)
        failed = await client.get(f"{gateways.a.url}/api/v1/places/status", headers=user(who))
    assert error_of(failed, status)["message"] == message
    assert failed.headers["Retry-After"] == "2"


async def test_the_status_has_its_own_rate_limit_and_reports_an_unreachable_index(
    pg_dsn: str, redis_url: str, gateways: Gateways
) -> None:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        gateways.orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="status:",
        GATEWAY_PLACE_STATUS_PER_MINUTE="2",
        GATEWAY_PLACE_LABELS_PER_MINUTE="2",
        GATEWAY_VECTOR_TOOLS_URL=f"http://127.0.0.1:{free_port()}",  # nothing listens there
    )
    with services(("stacgis_gateway", env, port)) as (gateway,):
        async with httpx.AsyncClient(timeout=30) as client:
            who = user(new_user())
            answers = [await client.get(f"{gateway.url}/api/v1/places/status", headers=who) for _ in range(3)]
            # The city names keep their own allowance.
            labels = await client.get(f"{gateway.url}/api/v1/places/labels", params={"bbox": "0,0,10,10"}, headers=who)
    assert [answer.status_code for answer in answers] == [503, 503, 429]
    assert error_of(answers[0], 503)["message"] == "the place loading status is unavailable; retry shortly"
    assert answers[0].headers["Retry-After"] == "2"
    assert error_of(answers[2], 429)["code"] == "rate_limited"
    assert int(answers[2].headers["Retry-After"]) > 0
    assert error_of(labels, 503)["message"] == "the city name lookup is unavailable; retry shortly"
