"""The map beside the chat: a conversation's map state saved and read back (owner only, validated, bounded),
and the place search box (forwarded to vector-tools' place search with the caller's internal token)."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import httpx
import pytest
from gateway_helpers import Gateways, chat, gateway_env, new_user, services, user

from stacgis_common.testing import error_of, free_port

MAP_STATE: dict[str, Any] = {
    "view": {"center": {"lat": 49.61, "lon": 6.13}, "zoom": 8.5, "bearing": 30, "pitch": 0},
    "basemap": "dark",
    "basemap_visible": True,
    "basemap_opacity": 0.8,
    "layers": [
        {
            "id": "raster:dem-lux",
            "source": {
                "type": "raster",
                "tiles": ["http://localhost:8080/tiles/dem-lux/{z}/{x}/{y}.png"],
                "tileSize": 256,
                "bounds": [5.7, 49.4, 6.6, 50.2],
                "minzoom": 0,
                "maxzoom": 14,
            },
            "legend": {"collectionId": "dem-lux", "title": "Elevation", "range": [200, 560], "units": "m"},
            "origin": "agent",
            "visible": True,
            "opacity": 0.85,
        }
    ],
    "selected_feature": {
        "type": "Feature",
        "properties": {"name": "Luxembourg"},
        "geometry": {"type": "Polygon", "coordinates": [[[5.8, 49.5], [6.5, 49.5], [6.5, 50.1], [5.8, 49.5]]]},
    },
    "drawn_geometry": {"type": "Point", "coordinates": [6.1, 49.6]},
}


async def _session(client: httpx.AsyncClient, base: str, owner: str) -> str:
    stream = await chat(client, base, "hello map", user(owner))
    assert stream.status == 200
    return stream.session_id


@pytest.mark.asyncio
async def test_map_state_is_saved_and_read_back_by_its_owner_only(gateways: Gateways) -> None:
    owner, other = new_user(), new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        session = await _session(client, gateways.a.url, owner)
        url = f"{gateways.a.url}/api/v1/chat/session/{session}/map-state"
        empty = await client.get(url, headers=user(owner))
        assert empty.status_code == 200 and empty.json() == {"map_state": None, "updated_at": None}
        listed = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(owner))).json()

        saved = await client.put(url, json=MAP_STATE, headers=user(owner))
        assert saved.status_code == 200, saved.text
        assert saved.json()["map_state"] == MAP_STATE and saved.json()["updated_at"]
        # Read through the other replica: Postgres is the record.
        read = await client.get(f"{gateways.b.url}/api/v1/chat/session/{session}/map-state", headers=user(owner))
        assert read.json() == saved.json()
        # Saving the map does not move the conversation in the list.
        after = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(owner))).json()
        assert [s["updated_at"] for s in after] == [s["updated_at"] for s in listed]

        # A later save replaces the earlier one; defaults fill what the app left out.
        minimal = {"view": {"center": {"lat": 0, "lon": 0}, "zoom": 2}}
        replaced = await client.put(url, json=minimal, headers=user(owner))
        assert replaced.status_code == 200
        assert replaced.json()["map_state"] == {
            "view": {"center": {"lat": 0.0, "lon": 0.0}, "zoom": 2.0, "bearing": 0.0, "pitch": 0.0},
            "basemap": "light",
            "basemap_visible": True,
            "basemap_opacity": 1.0,
            "layers": [],
            "selected_feature": None,
            "drawn_geometry": None,
        }

        # Another user's session answers exactly like one that does not exist, and is left unchanged.
        for target in (url, f"{gateways.a.url}/api/v1/chat/session/{uuid.uuid4()}/map-state"):
            got = await client.get(target, headers=user(other))
            put = await client.put(target, json=MAP_STATE, headers=user(other))
            for refused in (got, put):
                assert error_of(refused, 404) == {"field": None, "message": "session not found", "code": "not_found"}
        assert (await client.get(url, headers=user(owner))).json()["map_state"]["view"]["zoom"] == 2.0

        # Deleting the session deletes its map.
        assert (await client.delete(f"{gateways.a.url}/api/v1/chat/session/{session}", headers=user(owner))).is_success
        assert error_of(await client.get(url, headers=user(owner)), 404)["message"] == "session not found"


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    state = copy.deepcopy(MAP_STATE)
    target: Any = state
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return state


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_with(("view", "zoom"), 30), "view.zoom"),
        (_with(("view", "center", "lat"), 91), "view.center.lat"),
        (_with(("view", "bearing"), "north"), "view.bearing"),
        (_with(("basemap",), "javascript:alert(1)"), "basemap"),
        (_with(("layers", 0, "id"), "raster:../../etc"), "layers.0.id"),
        (_with(("layers", 0, "opacity"), 1.5), "layers.0.opacity"),
        (_with(("layers", 0, "origin"), "someone"), "layers.0.origin"),
        (_with(("layers", 0, "source", "tiles"), ["javascript:alert(1)"]), "layers.0.source.tiles.0"),
        (_with(("layers", 0, "source", "tiles"), ["//evil.example/{z}"]), "layers.0.source.tiles.0"),
        (_with(("layers", 0, "source", "bounds"), [0, 10, 1, 5]), "layers.0.source.bounds"),
        (_with(("layers",), [MAP_STATE["layers"][0]] * 21), "layers"),
        (_with(("drawn_geometry",), {"type": "Point", "coordinates": [200, 0]}), "drawn_geometry"),
        (_with(("selected_feature",), {"type": "Feature"}), "selected_feature"),
        (_with(("zoom",), 3), "zoom"),
        ({"layers": []}, "view"),
    ],
)
async def test_a_bad_map_state_is_a_422_naming_the_field(gateways: Gateways, body: dict[str, Any], field: str) -> None:
    owner = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        session = await _session(client, gateways.a.url, owner)
        url = f"{gateways.a.url}/api/v1/chat/session/{session}/map-state"
        answer = await client.put(url, json=body, headers=user(owner))
        assert error_of(answer, 422, field)["code"] == "invalid_argument"
        assert (await client.get(url, headers=user(owner))).json()["map_state"] is None


@pytest.mark.asyncio
async def test_a_map_state_over_the_size_limit_is_refused(gateways: Gateways) -> None:
    owner = new_user()
    # Each layer's legend is a little over 27 KB: 20 of them pass every field check but not the whole size.
    layers = [{**MAP_STATE["layers"][0], "id": f"raster:c{i}", "legend": {"title": "x" * 27_000}} for i in range(20)]
    async with httpx.AsyncClient(timeout=30) as client:
        session = await _session(client, gateways.a.url, owner)
        answer = await client.put(
            f"{gateways.a.url}/api/v1/chat/session/{session}/map-state",
            json={**MAP_STATE, "layers": layers},
            headers=user(owner),
        )
    assert error_of(answer, 422, "body")["message"].startswith("body: the map state is ")
    assert "at most 524288 are allowed" in answer.json()["message"]


@pytest.mark.asyncio
async def test_place_search_forwards_to_the_place_index_as_the_caller(gateways: Gateways) -> None:
    searcher = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{gateways.a.url}/api/v1/places/search"
        found = await client.get(url, params={"q": "  Luxem ", "limit": 5}, headers=user(searcher))
        assert found.status_code == 200, found.text
        assert found.json() == {
            "query": "Luxem",
            "results": [
                {"name": "Luxembourg", "kind": "country", "ref": "countries/LUX", "bbox": [5.73, 49.45, 6.53, 50.18]},
                {
                    "name": "Luxembourg",
                    "kind": "city",
                    "country": "Luxembourg",
                    "ref": "cities/2960316",
                    "point": [6.13, 49.61],
                },
            ],
        }
        one = await client.get(url, params={"q": "Luxem", "limit": 1}, headers=user(searcher))
        assert [place["ref"] for place in one.json()["results"]] == ["countries/LUX"]
        none = await client.get(url, params={"q": "Atlantis"}, headers=user(searcher))
        assert none.status_code == 200 and none.json() == {"query": "Atlantis", "results": []}
        searched = (await client.get(f"{gateways.orchestrator.url}/_scripted/places")).json()
    # Asked with the caller's own internal token, the words cleaned, the default limit 5.
    mine = [entry for entry in searched if entry["user_id"] == searcher]
    assert [(entry["q"], entry["limit"]) for entry in mine] == [("Luxem", 5), ("Luxem", 1), ("Atlantis", 5)]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "   "}, "q"),
        ({"q": "x" * 101}, "q"),
        ({"q": "Berlin", "limit": 11}, "limit"),
        ({"q": "Berlin", "limit": 0}, "limit"),
        ({"q": "Berlin", "limit": "many"}, "limit"),
        ({"q": "refused words"}, "q"),
    ],
)
async def test_bad_place_searches_are_422s_naming_the_field(
    gateways: Gateways, params: dict[str, Any], field: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.get(f"{gateways.a.url}/api/v1/places/search", params=params, headers=user(new_user()))
    error = error_of(answer, 422, field)
    assert error["code"] == "invalid_argument"
    if params.get("q") == "refused words":  # the place index's own words, its field named
        assert error["message"] == "q: these words are refused", error


@pytest.mark.asyncio
async def test_place_search_failures_are_clear_and_never_500(gateways: Gateways) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        url = f"{gateways.a.url}/api/v1/places/search"
        slow = await client.get(url, params={"q": "slow town"}, headers=user(new_user()))
        assert error_of(slow, 504) == {
            "field": None,
            "message": "the place search did not answer in time",
            "code": "timeout",
        }
        broken = await client.get(url, params={"q": "broken"}, headers=user(new_user()))
        assert broken.headers["Retry-After"] == "2"
        assert error_of(broken, 503)["message"] == "the place search failed (HTTP 500); retry shortly"


@pytest.mark.asyncio
async def test_place_search_is_rate_limited_and_reports_an_unreachable_index(
    pg_dsn: str, redis_url: str, gateways: Gateways
) -> None:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        gateways.orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="places:",
        GATEWAY_PLACE_SEARCH_PER_MINUTE="3",
        GATEWAY_VECTOR_TOOLS_URL=f"http://127.0.0.1:{free_port()}",  # nothing listens there
    )
    with services(("stacgis_gateway", env, port)) as (gateway,):
        async with httpx.AsyncClient(timeout=30) as client:
            who = user(new_user())
            answers = [
                await client.get(f"{gateway.url}/api/v1/places/search", params={"q": "Berlin"}, headers=who)
                for _ in range(4)
            ]
    assert [answer.status_code for answer in answers] == [503, 503, 503, 429]
    assert error_of(answers[0], 503)["message"] == "the place search is unavailable; retry shortly"
    assert answers[0].headers["Retry-After"] == "2"
    assert error_of(answers[3], 429)["message"] == "more than 3 requests a minute to the place search; retry later"
    assert int(answers[3].headers["Retry-After"]) > 0
