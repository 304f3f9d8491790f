"""Place resolution (resolve_place over MCP, the internal /places/resolve endpoint and query_vector_by_bbox's
place) against the real loaded datasets; expectations come from the source files, not from the loader."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
import shapely
from vector_helpers import CITIES_JSON, MIN_POPULATION, source_cities, source_countries

from stacgis_common.testing import RunningService, call_tool, error_of, token_for
from stacgis_vector.names import normalize_name

pytestmark = pytest.mark.asyncio(loop_scope="session")


def big_cities(cache: Path) -> list[dict[str, Any]]:
    cities = json.loads((cache / CITIES_JSON).read_text())
    return [city for city in cities.values() if int(city["population"]) >= MIN_POPULATION]


def ambiguous_city_name(cache: Path) -> tuple[str, set[str]]:
    """A name several loaded cities share with no one of them ten times larger than the next."""
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for city in big_cities(cache):
        by_name[city["name"]].append(city)
    for name in sorted(by_name):
        group = sorted(by_name[name], key=lambda city: -int(city["population"]))
        if len(group) > 1 and int(group[0]["population"]) < 10 * int(group[1]["population"]):
            return name, {str(city["geonameid"]) for city in group}
    raise AssertionError("the source has no ambiguous city name at this population cut-off")


async def resolve(server: RunningService, place: str, **extra: Any) -> tuple[bool, Any]:
    return await call_tool(server.url, "resolve_place", {"place": place, **extra})


async def test_country_names_iso_codes_and_other_languages_resolve_to_the_boundary(
    vector_server: RunningService, cache_dir: Path
) -> None:
    luxembourg = source_countries(cache_dir)["LUX"]
    for place, matched_by in [
        ("Luxembourg", "name"),
        ("luxembourg", "name"),
        ("LUX", "alternate name"),
        ("LU", "alternate name"),
        ("Luxemburg", "alternate name"),
        ("countries/LUX", "reference"),
    ]:
        error, result = await resolve(vector_server, place)
        assert not error, result
        assert result["status"] == "resolved", result
        resolved = result["place"]
        assert (resolved["dataset"], resolved["id"], resolved["kind"]) == ("countries", "LUX", "country"), place
        assert resolved["matched_by"] == matched_by, place
        assert resolved["bbox"] == pytest.approx(list(luxembourg.bounds), abs=1e-3)
        assert "point" not in resolved


async def test_a_code_of_both_a_country_and_a_us_state_is_ambiguous(
    vector_server: RunningService, cache_dir: Path
) -> None:
    canada = source_countries(cache_dir)["CAN"]
    error, california = await resolve(vector_server, "California")
    assert not error and california["place"]["dataset"] == "us-states", california
    error, result = await resolve(vector_server, "CA")
    assert not error, result
    assert result["status"] == "ambiguous", result
    refs = [candidate["ref"] for candidate in result["candidates"]]
    assert refs == ["countries/CAN", california["place"]["ref"]]
    assert all(ref in result["message"] for ref in refs)
    assert result["candidates"][0]["bbox"] == pytest.approx(list(canada.bounds), abs=1e-3)
    # A code only a country has stays that country.
    error, result = await resolve(vector_server, "LU")
    assert not error and result["place"]["ref"] == "countries/LUX", result


async def test_a_city_resolves_to_its_point(vector_server: RunningService, cache_dir: Path) -> None:
    nairobi = next(city for city in big_cities(cache_dir) if city["name"] == "Nairobi")
    error, result = await resolve(vector_server, "Nairobi")
    assert not error, result
    place = result["place"]
    assert place["ref"] == f"cities/{nairobi['geonameid']}"
    assert place["kind"] == "city" and place["country"] == "Kenya"
    assert place["point"] == pytest.approx([nairobi["longitude"], nairobi["latitude"]], abs=1e-4)
    # Nairobi lies south of the equator: the sign a model typing coordinates got wrong.
    assert place["point"][1] < 0


async def test_alternate_city_names_resolve(vector_server: RunningService, cache_dir: Path) -> None:
    cities = big_cities(cache_dir)
    names = {normalize_name(city["name"]) for city in cities}
    # An alternate name that only one loaded city carries and no loaded city or country has as its name.
    counts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for city in cities:
        for alternate in {normalize_name(name) for name in city.get("alternatenames") or []}:
            counts[alternate].append(city)
    alternate, (city,) = next(
        (name, owners)
        for name, owners in sorted(counts.items())
        if len(owners) == 1 and name.isascii() and name.isalpha() and len(name) > 5 and name not in names
    )
    error, result = await resolve(vector_server, alternate, dataset="cities")
    assert not error, result
    assert result["status"] == "resolved", result
    assert result["place"]["ref"] == f"cities/{city['geonameid']}"
    assert result["place"]["matched_by"] == "alternate name"


async def test_an_ambiguous_name_answers_with_the_candidates(vector_server: RunningService, cache_dir: Path) -> None:
    name, ids = ambiguous_city_name(cache_dir)
    error, result = await resolve(vector_server, name, dataset="cities")
    assert not error, result
    assert result["status"] == "ambiguous"
    assert {candidate["id"] for candidate in result["candidates"]} == ids
    assert all({"name", "kind", "country", "ref"} <= set(candidate) for candidate in result["candidates"])
    assert all(candidate["ref"] in result["message"] for candidate in result["candidates"])


async def test_a_country_after_a_comma_picks_one_of_several(vector_server: RunningService, cache_dir: Path) -> None:
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for city in big_cities(cache_dir):
        by_name[city["name"]].append(city)
    name, group = next(
        (name, group) for name, group in sorted(by_name.items()) if len({city["countrycode"] for city in group}) > 1
    )
    for city in group:
        error, result = await resolve(vector_server, f"{name}, {city['countrycode']}")
        assert not error, result
        assert result["status"] == "resolved", result
        assert result["place"]["ref"] == f"cities/{city['geonameid']}"
        assert result["place"]["matched_by"] == "name and qualifier"
        error, named = await resolve(vector_server, f"{name}, {result['place']['country']}")
        assert not error and named["place"]["ref"] == result["place"]["ref"], named


async def test_a_us_state_after_a_comma_picks_the_city_of_that_state(
    vector_server: RunningService, cache_dir: Path
) -> None:
    # "Knoxville, Tennessee" and "Knoxville, TN": the state by name or by postal code. A name several
    # states share is the hard case; the sample may hold none, so single ones are tried too.
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for city in big_cities(cache_dir):
        if city["countrycode"] == "US":
            by_name[city["name"]].append(city)
    shared = [group for _, group in sorted(by_name.items()) if len({city["admin1code"] for city in group}) > 1]
    single = [group for _, group in sorted(by_name.items()) if len(group) == 1]
    assert single, "the sample has no US city"
    for city in [*(shared[0] if shared else []), *single[0], *single[-1]]:
        name = city["name"]
        error, state = await resolve(vector_server, city["admin1code"], dataset="us-states")
        assert not error and state["status"] == "resolved", state
        for qualifier in (state["place"]["name"], city["admin1code"]):
            error, result = await resolve(vector_server, f"{name}, {qualifier}")
            assert not error, result
            assert result["status"] == "resolved", result
            assert result["place"]["ref"] == f"cities/{city['geonameid']}"


async def test_a_country_wins_over_a_state_of_the_same_name_and_says_so(vector_server: RunningService) -> None:
    error, result = await resolve(vector_server, "Georgia")
    assert not error, result
    assert result["place"]["ref"] == "countries/GEO"
    assert result["place"]["other_matches"] >= 1
    error, state = await resolve(vector_server, "Georgia", dataset="us-states")
    assert not error, state
    assert state["place"]["kind"] == "state" and state["place"]["country"] == "United States"


@pytest.mark.parametrize("place", ["Atlantis Qwertyville", "countries/XXX"])
async def test_unknown_places_are_errors_without_a_guess(vector_server: RunningService, place: str) -> None:
    error, text = await resolve(vector_server, place)
    assert error, text
    assert "place: " in text
    assert "no country, city" in text or "has no feature" in text


@pytest.mark.parametrize(
    ("arguments", "field"), [({"place": ""}, "place"), ({"place": "Paris", "dataset": "x"}, "dataset")]
)
async def test_bad_resolve_arguments_name_the_field(
    vector_server: RunningService, arguments: dict[str, Any], field: str
) -> None:
    error, text = await call_tool(vector_server.url, "resolve_place", arguments)
    assert error and field in text, text


async def test_internal_endpoint_gives_the_full_boundary_and_answers_each_case(
    vector_server: RunningService, cache_dir: Path
) -> None:
    url = vector_server.url + "/places/resolve"
    headers = {"Authorization": f"Bearer {token_for('raster-tools')}"}
    async with httpx.AsyncClient(timeout=30) as client:
        anonymous = await client.get(url, params={"place": "Luxembourg"})
        assert error_of(anonymous, 401)["code"] == "unauthenticated"
        found = await client.get(url, params={"place": "Luxembourg"}, headers=headers)
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["place"]["ref"] == "countries/LUX"
        geometry = shapely.geometry.shape(body["feature"]["geometry"])
        source = source_countries(cache_dir)["LUX"]
        assert geometry.symmetric_difference(source).area < 1e-6 * source.area + 1e-9
        name, ids = ambiguous_city_name(cache_dir)
        ambiguous = await client.get(url, params={"place": name, "dataset": "cities"}, headers=headers)
        conflict = error_of(ambiguous, 409, "place")
        assert conflict["code"] == "ambiguous" and name in conflict["message"], conflict
        assert {candidate["id"] for candidate in conflict["candidates"]} == ids
        unknown = await client.get(url, params={"place": "Atlantis Qwertyville"}, headers=headers)
        nowhere = error_of(unknown, 404, "place")
        assert nowhere["code"] == "not_found" and "Atlantis" in nowhere["message"], nowhere
        missing = await client.get(url, headers=headers)
        assert error_of(missing, 422, "place")["code"] == "invalid_argument"


async def test_bbox_query_by_place_uses_the_boundary(vector_server: RunningService, cache_dir: Path) -> None:
    germany = source_countries(cache_dir)["DEU"]
    inside = {
        key
        for key, (lon, lat) in source_cities(cache_dir, MIN_POPULATION).items()
        if germany.intersects(shapely.Point(lon, lat))
    }
    assert inside, "Germany has cities of a million or more"
    error, result = await call_tool(
        vector_server.url, "query_vector_by_bbox", {"dataset": "cities", "place": "Germany", "limit": 500}
    )
    assert not error, result
    assert {feature["ref"]["id"] for feature in result["features"]} == inside
    assert result["place"]["ref"] == "countries/DEU" and result["place"]["used"] == "boundary"
    # The box alone holds more (cities of neighbouring countries inside Germany's bounding box).
    error, boxed = await call_tool(
        vector_server.url, "query_vector_by_bbox", {"dataset": "cities", "bbox": list(germany.bounds), "limit": 500}
    )
    assert not error, boxed
    assert {feature["ref"]["id"] for feature in boxed["features"]} >= inside
    error, both = await call_tool(
        vector_server.url,
        "query_vector_by_bbox",
        {"dataset": "cities", "place": "Germany", "bbox": [0, 0, 1, 1], "limit": 500},
    )
    assert not error and both["place"]["note"] == "place used; bbox ignored", both
    error, text = await call_tool(vector_server.url, "query_vector_by_bbox", {"dataset": "cities", "place": "Nairobi"})
    assert error and "place" in text and "point" in text, text


async def test_internal_place_search_gives_a_search_box_its_candidates(vector_server: RunningService) -> None:
    url = vector_server.url + "/places/search"
    headers = {"Authorization": f"Bearer {token_for('chat-gateway')}"}
    async with httpx.AsyncClient(timeout=30) as client:
        assert error_of(await client.get(url, params={"q": "Luxem"}), 401)["code"] == "unauthenticated"
        found = await client.get(url, params={"q": "Luxem", "limit": 5}, headers=headers)
        assert found.status_code == 200, found.text
        results = found.json()["results"]
        # The name typed so far: the country first (exact names, then prefixes, larger places first).
        country = results[0]
        assert (country["ref"], country["kind"], country["matched_by"]) == ("countries/LUX", "country", "name prefix")
        assert len(country["bbox"]) == 4 and "geometry" not in country
        assert len(results) <= 5
        berlin = (await client.get(url, params={"q": "berlin", "limit": 1}, headers=headers)).json()["results"]
        assert [(p["name"], p["kind"], p["country"], p["matched_by"]) for p in berlin] == [
            ("Berlin", "city", "Germany", "name")
        ]
        assert len(berlin[0]["point"]) == 2
        # Names only: a city whose description mentions Paris is not offered for "Paris".
        paris = (await client.get(url, params={"q": "Paris"}, headers=headers)).json()["results"]
        assert paris and all(p["name"].lower().startswith("paris") for p in paris), paris
        nothing = await client.get(url, params={"q": "Qwertyzxcv"}, headers=headers)
        assert nothing.status_code == 200 and nothing.json()["results"] == []
        for params, name in (
            ({}, "q"),
            ({"q": "  "}, "q"),
            ({"q": "Paris", "limit": "x"}, "limit"),
            ({"q": "Paris", "limit": 0}, "limit"),
        ):
            bad = await client.get(url, params=params, headers=headers)
            assert error_of(bad, 422, name)["code"] == "invalid_argument", params
