"""Features by id, by box (checked against shapely on the source files) and the internal endpoint."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import shapely
from vector_helpers import MIN_POPULATION, intersecting, source_cities, source_countries

from stacgis_common.testing import RunningService, call_tool, error_of, token_for


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "box",
    [
        [5.3, 45.7, 15.2, 55.3],  # central Europe
        [-75.1, -34.2, -40.3, 6.1],  # most of South America
        [170.3, -21.7, -170.4, -8.9],  # across the antimeridian: Fiji, Tonga, Samoa ...
        [-0.05, 51.3, 0.05, 51.7],  # a sliver over London: the UK only
    ],
)
async def test_countries_in_box_are_exactly_those_shapely_finds(
    vector_server: RunningService, cache_dir: Path, box: list[float]
) -> None:
    error, result = await call_tool(
        vector_server.url, "query_vector_by_bbox", {"dataset": "countries", "bbox": box, "limit": 500}
    )
    assert not error, result
    west, south, east, north = box
    parts = [(west, south, east, north)] if west <= east else [(west, south, 180, north), (-180, south, east, north)]
    expected = intersecting(source_countries(cache_dir), parts)
    got = {feature["ref"]["id"] for feature in result["features"]}
    assert got == expected
    assert result["matched"] == len(expected) and not result["truncated"]


@pytest.mark.asyncio
async def test_box_prefilter_alone_would_be_wrong_here(vector_server: RunningService, cache_dir: Path) -> None:
    # Norway's bbox (with Svalbard and Jan Mayen) covers this patch of the North Sea, its land does not.
    box = [1.3, 57.1, 3.2, 58.2]
    countries = source_countries(cache_dir)
    assert shapely.box(*countries["NOR"].bounds).intersects(shapely.box(*box))
    error, result = await call_tool(vector_server.url, "query_vector_by_bbox", {"dataset": "countries", "bbox": box})
    assert not error, result
    assert "NOR" not in {feature["ref"]["id"] for feature in result["features"]}
    assert {feature["ref"]["id"] for feature in result["features"]} == intersecting(countries, [tuple(box)])


@pytest.mark.asyncio
async def test_cities_in_box_match_the_source_and_come_largest_first(
    vector_server: RunningService, cache_dir: Path
) -> None:
    box = [-10.5, 35.2, 30.3, 60.1]
    error, result = await call_tool(
        vector_server.url, "query_vector_by_bbox", {"dataset": "cities", "bbox": box, "limit": 500}
    )
    assert not error, result
    cities = source_cities(cache_dir, MIN_POPULATION)
    expected = {key for key, (lon, lat) in cities.items() if box[0] <= lon <= box[2] and box[1] <= lat <= box[3]}
    assert {feature["ref"]["id"] for feature in result["features"]} == expected
    populations = [feature["properties"]["population"] for feature in result["features"]]
    assert populations == sorted(populations, reverse=True)

    error, small = await call_tool(
        vector_server.url, "query_vector_by_bbox", {"dataset": "cities", "bbox": box, "limit": 2}
    )
    assert not error, small
    assert small["returned"] == 2 and small["matched"] == len(expected) and small["truncated"]
    assert [f["ref"] for f in small["features"]] == [f["ref"] for f in result["features"][:2]]


@pytest.mark.asyncio
async def test_small_geometry_comes_whole_large_one_simplified(vector_server: RunningService, cache_dir: Path) -> None:
    countries = source_countries(cache_dir)
    error, lux = await call_tool(vector_server.url, "get_vector_feature", {"dataset": "countries", "feature_id": "LUX"})
    assert not error, lux
    assert lux["geometry_simplification"] is None
    assert lux["properties"]["iso_a3"] == "LUX" and lux["properties"]["pop_est"] > 500_000
    geometry = shapely.geometry.shape(lux["geometry"])
    # Stored coordinates are rounded to 1e-7 degrees: the outlines agree to a millionth of the area.
    assert geometry.symmetric_difference(countries["LUX"]).area < 1e-6 * countries["LUX"].area

    error, canada = await call_tool(
        vector_server.url, "get_vector_feature", {"dataset": "countries", "feature_id": "CAN"}
    )
    assert not error, canada
    simplification = canada["geometry_simplification"]
    assert simplification["original_vertices"] == shapely.get_num_coordinates(countries["CAN"])
    assert simplification["vertices"] <= 500 < simplification["original_vertices"]
    assert simplification["tolerance_degrees"] > 0
    simplified = shapely.geometry.shape(canada["geometry"])
    assert simplified.is_valid
    # Within the stated tolerance of the real outline, give or take dropped islets.
    assert countries["CAN"].buffer(simplification["tolerance_degrees"] * 1.01).contains(simplified)
    # 500 vertices cannot hold every Arctic island: the smallest go (and are counted), the shape stays.
    assert simplification["dropped_parts"] > 0
    assert simplified.area == pytest.approx(countries["CAN"].area, rel=0.15)

    error, coarse = await call_tool(
        vector_server.url, "get_vector_feature", {"dataset": "countries", "feature_id": "DEU", "simplify": 0.1}
    )
    assert not error, coarse
    assert coarse["geometry_simplification"]["tolerance_degrees"] == 0.1
    assert coarse["geometry_simplification"]["vertices"] < coarse["geometry_simplification"]["original_vertices"]


@pytest.mark.asyncio
async def test_internal_endpoint_resolves_a_search_ref_to_the_full_geometry(
    vector_server: RunningService, cache_dir: Path
) -> None:
    error, result = await call_tool(vector_server.url, "search_vector_features", {"query": "Canada", "limit": 1})
    assert not error, result
    ref = result["results"][0]["ref"]
    url = f"{vector_server.url}/features/{ref['dataset']}/{ref['id']}"
    async with httpx.AsyncClient(timeout=30) as http:
        for refused in (await http.get(url), await http.get(url, headers={"Authorization": "Bearer forged"})):
            refusal = error_of(refused, 401)
            assert refusal["code"] == "unauthenticated" and refusal["message"].startswith("invalid internal token: ")
        response = await http.get(url, headers={"Authorization": f"Bearer {token_for('raster-tools')}"})
        caller = {"Authorization": f"Bearer {token_for('x')}"}
        missing = await http.get(f"{vector_server.url}/features/countries/NOPE", headers=caller)
        no_dataset = await http.get(f"{vector_server.url}/features/rivers/{ref['id']}", headers=caller)
    assert response.status_code == 200
    feature = response.json()
    assert feature["type"] == "Feature" and feature["id"] == "CAN"
    geometry = shapely.geometry.shape(feature["geometry"])
    source = source_countries(cache_dir)["CAN"]
    assert shapely.get_num_coordinates(geometry) == shapely.get_num_coordinates(source)
    assert geometry.symmetric_difference(source).area < 1e-6 * source.area
    assert error_of(missing, 404, "feature_id")["message"] == "feature_id: dataset 'countries' has no feature 'NOPE'"
    assert error_of(no_dataset, 404, "dataset")["message"] == f"dataset: dataset 'rivers' has no feature '{ref['id']}'"
