"""`place` arguments settled by the orchestrator, against the real vector-tools (loaded from the source
packages) and raster-tools: zoom_to_location by name, and "selection" / "drawn area" from the run's
spatial context, each compared with the same call made directly with the resolved values."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from orchestrator_helpers import Event, call_then_answer, model_requests, run_events, set_rules, terminal

from conftest import orchestrator, orchestrator_env
from stacgis_common.testing import REPO_ROOT, RunningService, call_tool, free_port, run_module, run_service

CACHE = REPO_ROOT / ".local" / "cache"
DATA = REPO_ROOT / ".local" / "data"
# A small square in central Luxembourg, inside the Luxembourg elevation model.
SQUARE = {"type": "Polygon", "coordinates": [[[6.0, 49.6], [6.2, 49.6], [6.2, 49.8], [6.0, 49.8], [6.0, 49.6]]]}
MARKER = {"type": "Point", "coordinates": [6.1, 49.7]}


@pytest.fixture(scope="module")
def real_vector(pg_dsn: str, app_dsn: str, model_server: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = {
        "VECTOR_PORT": str(port),
        "VECTOR_DATABASE_URL": pg_dsn,
        "VECTOR_EMBEDDING_PROVIDER": "ollama",
        "VECTOR_EMBEDDING_BASE_URL": model_server.url,
        "VECTOR_EMBEDDING_MODEL": "all-minilm",
        "VECTOR_EMBEDDING_DIMENSION": "384",
        "VECTOR_LOG_LEVEL": "WARNING",
    }
    load = run_module("stacgis_vector.load", "--cache", str(CACHE), "--min-population", "1000000", env=env)
    assert load.returncode == 0, load.stdout[-2000:] + load.stderr[-2000:]
    # Loaded (and migrated) as the owner; served as the application role, as deployed.
    env["VECTOR_DATABASE_URL"] = app_dsn
    with run_service("stacgis_vector", env, port, ready_path="/readyz") as service:
        yield service


@pytest.fixture(scope="module")
def placed_raster(real_vector: RunningService) -> Iterator[RunningService]:
    build = subprocess.run(
        [sys.executable, "-m", "stacgis_raster.demo_data", "--cache", str(CACHE), "--out", str(DATA)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(DATA / "stac" / "catalog.json"),
        "RASTER_VECTOR_TOOLS_URL": real_vector.url,
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service


@pytest.fixture(scope="module")
def places_orch(
    model_server: RunningService, redis_url: str, real_vector: RunningService, placed_raster: RunningService
) -> Iterator[RunningService]:
    servers = {"raster": placed_raster.url + "/mcp", "vector": real_vector.url + "/mcp"}
    with orchestrator(orchestrator_env(model_server.url, redis_url, servers)) as service:
        yield service


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


async def one_call(
    orch: RunningService, model_url: str, tag: str, name: str, arguments: dict[str, Any], **body: Any
) -> list[Event]:
    """A run whose model makes one tool call, then answers 'ok'."""
    await call_then_answer(model_url, tag, [{"name": name, "arguments": arguments}], "ok")
    events = await run_events(orch.url, {"message": unique(tag), **body}, timeout=120)
    assert terminal(events).name == "done", [e.name for e in events]
    return events


def payload(events: list[Event], name: str) -> dict[str, Any]:
    found = [e.payload for e in events if e.name == name]
    assert len(found) == 1, [(e.name, e.payload) for e in events]
    return found[0]


@pytest.mark.asyncio
async def test_zoom_to_a_named_place_moves_the_map_to_what_vector_tools_resolves(
    places_orch: RunningService, real_vector: RunningService, model_url: str
) -> None:
    error, nairobi = await call_tool(real_vector.url, "resolve_place", {"place": "Nairobi"})
    assert not error, nairobi
    events = await one_call(places_orch, model_url, "zoom nairobi", "zoom_to_location", {"place": "Nairobi"})
    command = payload(events, "frontend_tool")
    lon, lat = nairobi["place"]["point"]
    assert command["name"] == "zoom_to_location"
    assert (command["arguments"]["lon"], command["arguments"]["lat"]) == pytest.approx((lon, lat), abs=1e-5)
    assert command["arguments"]["zoom"] == 10
    assert nairobi["place"]["ref"] in command["arguments"]["place"]

    error, germany = await call_tool(real_vector.url, "resolve_place", {"place": "Deutschland"})
    assert not error, germany
    events = await one_call(places_orch, model_url, "zoom germany", "zoom_to_location", {"place": "Deutschland"})
    arguments = payload(events, "frontend_tool")["arguments"]
    west, south, east, north = germany["place"]["bbox"]
    assert (arguments["lon"], arguments["lat"]) == pytest.approx(((west + east) / 2, (south + north) / 2), abs=1e-4)
    assert 4 <= arguments["zoom"] <= 7, "a country of about 9 degrees fits at zoom 5"


@pytest.mark.asyncio
async def test_a_layer_shown_over_a_named_place_centres_the_map_there(
    places_orch: RunningService, real_vector: RunningService, model_url: str
) -> None:
    error, luxembourg = await call_tool(real_vector.url, "resolve_place", {"place": "Luxembourg"})
    assert not error, luxembourg
    arguments = {"collection_id": "luxembourg-dem", "colormap": "terrain", "place": "Luxembourg"}
    events = await one_call(places_orch, model_url, "layer luxembourg", "visualize_collection", arguments)
    command = payload(events, "frontend_tool")
    shown = command["arguments"]
    assert command["name"] == "visualize_collection"
    assert (shown["collection_id"], shown["colormap"]) == ("luxembourg-dem", "terrain")
    resolved = luxembourg["place"]
    if resolved.get("point"):
        expected = (resolved["point"][0], resolved["point"][1])
    else:
        west, south, east, north = resolved["bbox"]
        expected = ((west + east) / 2, (south + north) / 2)
    assert (shown["lon"], shown["lat"]) == pytest.approx(expected, abs=1e-4)
    assert resolved["ref"] in shown["place"]
    requests = await model_requests(model_url, contains="layer luxembourg")
    acknowledgement = [m["content"] for m in requests[-1]["body"]["messages"] if m["role"] == "tool"][-1]
    assert "luxembourg-dem" in acknowledgement and str(shown["lat"]) in acknowledgement


@pytest.mark.asyncio
async def test_coordinates_the_user_typed_win_over_a_place_the_model_added(
    places_orch: RunningService, model_url: str
) -> None:
    box = [5.8, 49.5, 6.2, 49.9]
    typed = {"collection_id": "luxembourg-dem", "bbox": box, "place": "Luxembourg"}
    message = "mean in the box 5.8, 49.5, 6.2, 49.9"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", typed)
    start = payload(events, "tool_start")["arguments"]
    assert "place" not in start and start["bbox"] == box
    result = json.loads(payload(events, "tool_result")["result"])
    assert "place" not in result and "note" not in result

    # Coordinates the model typed itself (not in the message) lose to the place, and the tool says so.
    events = await one_call(places_orch, model_url, "mean over Luxembourg please", "get_raster_statistics", typed)
    assert payload(events, "tool_start")["arguments"]["place"] == "Luxembourg"
    result = json.loads(payload(events, "tool_result")["result"])
    assert result["place"]["ref"] == "countries/LUX" and "bbox ignored" in result["place"]["note"]

    # "selection" with nothing selected, beside coordinates: the coordinates are used, not an error.
    point = {"collection_id": "luxembourg-dem", "lon": 6.0, "lat": 49.7, "place": "selection"}
    events = await one_call(places_orch, model_url, "height here", "query_raster_point", point)
    start = payload(events, "tool_start")["arguments"]
    assert "place" not in start and (start["lon"], start["lat"]) == (6.0, 49.7)
    assert not [e for e in events if e.name == "tool_error"]


@pytest.mark.asyncio
async def test_a_place_named_only_in_the_collection_id_is_dropped_with_the_box_the_model_made_up(
    places_orch: RunningService, model_url: str
) -> None:
    # The 1.5B model, asked for the highest elevation "in the luxembourg-dem collection", added
    # place "Luxembourg" and an invented box: the country's maximum is not the collection's.
    made_up = {"collection_id": "luxembourg-dem", "bbox": [4, 49, 4.5, 50], "place": "Luxembourg"}
    message = "highest elevation in the luxembourg-dem collection"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", made_up)
    assert payload(events, "tool_start")["arguments"] == {"collection_id": "luxembourg-dem"}
    whole = json.loads(payload(events, "tool_result")["result"])
    assert "place" not in whole
    # Named in the question as well: the country it is.
    events = await one_call(
        places_orch, model_url, "highest elevation of Luxembourg in luxembourg-dem", "get_raster_statistics", made_up
    )
    country = json.loads(payload(events, "tool_result")["result"])
    assert country["place"]["ref"] == "countries/LUX"
    assert country["statistics"]["max"] < whole["statistics"]["max"], "the collection reaches beyond the border"


@pytest.mark.asyncio
async def test_a_box_written_as_the_place_or_geometry_is_used_as_the_box(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model, asked for "the share of the box -82, 25, -79, 28 that is land", wrote the box
    # into place and geometry of compute_zonal_stats, which takes no bbox.
    box = [-82, 25, -79, 28]
    asked = {"collection_id": "global-land-mask", "place": "[-82, 25, -79, 28]", "geometry": box}
    events = await one_call(places_orch, model_url, "land share of the box", "compute_zonal_stats", asked)
    sent = payload(events, "tool_start")["arguments"]
    ring = [[-82, 25], [-79, 25], [-79, 28], [-82, 28], [-82, 25]]
    assert sent == {"collection_id": "global-land-mask", "geometry": {"type": "Polygon", "coordinates": [ring]}}
    error, direct = await call_tool(
        placed_raster.url, "get_raster_statistics", {"collection_id": "global-land-mask", "bbox": box}
    )
    assert not error, direct
    zonal = json.loads(payload(events, "tool_result")["result"])
    assert zonal["statistics"]["classes"] == direct["statistics"]["classes"]  # the land share of the box

    # A tool with a bbox gets it there.
    events = await one_call(
        places_orch,
        model_url,
        "land share please",
        "get_raster_statistics",
        {"collection_id": "global-land-mask", "place": box},
    )
    assert payload(events, "tool_start")["arguments"] == {"collection_id": "global-land-mask", "bbox": box}
    assert json.loads(payload(events, "tool_result")["result"])["statistics"] == direct["statistics"]


@pytest.mark.asyncio
async def test_a_question_comparing_two_months_runs_detect_change_over_them(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model made one statistics call for January and answered "how much warmer" with it.
    box = [-84, 34, -78, 36.5]
    asked = {"collection_id": "bcsd-temperature-1999", "bbox": box, "datetime": "1999-01"}
    message = "How much warmer was July than January 1999 over the box -84, 34, -78, 36.5?"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", asked)
    start = payload(events, "tool_start")
    assert start["toolName"] == "detect_change"
    expected = {"collection_id": "bcsd-temperature-1999", "bbox": box, "period_a": "1999-01", "period_b": "1999-07"}
    assert start["arguments"] == expected
    change = json.loads(payload(events, "tool_result")["result"])["change"]
    means = {}
    for month in ("1999-01", "1999-07"):
        error, stats = await call_tool(placed_raster.url, "get_raster_statistics", {**asked, "datetime": month})
        assert not error, stats
        means[month] = stats["statistics"]["mean"]
    assert change["mean"] == pytest.approx(means["1999-07"] - means["1999-01"], abs=0.01)


@pytest.mark.asyncio
async def test_a_question_counting_scenes_runs_an_item_search_with_its_cloud_limit(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model answered "how many scenes ... at most 2 % cloud cover" with a scene time series.
    box = [-34.9, -8.02, -34.86, -7.98]
    asked = {"collection_id": "landsat7-olinda-scenes", "expression": "ndvi", "bbox": box}
    message = (
        "How many scenes of landsat7-olinda-scenes cover the box -34.9, -8.02, -34.86, -7.98 "
        "with at most 2 % cloud cover?"
    )
    events = await one_call(places_orch, model_url, message, "get_scene_timeseries", asked)
    start = payload(events, "tool_start")
    assert start["toolName"] == "search_items"
    sent = {"collection_id": "landsat7-olinda-scenes", "bbox": box, "max_cloud_cover": 2.0}
    assert start["arguments"] == sent
    error, direct = await call_tool(placed_raster.url, "search_items", sent)
    assert not error, direct
    counted = json.loads(payload(events, "tool_result")["result"])
    assert counted["count"] == direct["count"]
    # The filter is what the user wrote: fewer scenes than without it.
    error, unfiltered = await call_tool(placed_raster.url, "search_items", {**sent, "max_cloud_cover": None})
    assert not error and 0 < direct["count"] < unfiltered["count"], (direct["count"], unfiltered["count"])


@pytest.mark.asyncio
async def test_a_question_naming_a_composite_runs_scene_statistics_with_it(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model's own call: the zonal tool, a median composite, `place: "box"` beside the box.
    box = [-84.0, 34.0, -78.0, 36.5]
    asked = {
        "collection_id": "bcsd-1999-scenes",
        "bbox": box,
        "place": "box",
        "datetime": "1999",
        "composite": "median",
        "cloud_mask": True,
    }
    message = (
        "From the climate scenes bcsd-1999-scenes, make the maximum composite of precipitation over 1999 "
        "and give its mean inside the box -84, 34, -78, 36.5."
    )
    events = await one_call(places_orch, model_url, message, "compute_zonal_stats", asked)
    start = payload(events, "tool_start")
    assert start["toolName"] == "get_scene_statistics"
    sent = start["arguments"]
    assert (sent["composite"], sent["expression"], sent["bbox"]) == ("max", "precipitation", box)
    result = json.loads(payload(events, "tool_result")["result"])
    direct_args = {
        "collection_id": "bcsd-1999-scenes",
        "expression": "pr",
        "bbox": box,
        "datetime": "1999",
        "composite": "max",
    }
    error, direct = await call_tool(placed_raster.url, "get_scene_statistics", direct_args)
    assert not error, direct
    assert result["statistics"]["mean"] == pytest.approx(direct["statistics"]["mean"])
    # The maximum, not the median the model chose.
    error, median = await call_tool(placed_raster.url, "get_scene_statistics", {**direct_args, "composite": "median"})
    assert not error and median["statistics"]["mean"] < direct["statistics"]["mean"]


@pytest.mark.asyncio
async def test_a_question_asking_which_month_had_the_most_runs_the_scene_time_series(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model's own call: one median composite of January with a statistic as the expression;
    # it then answered "January".
    box = [-84.0, 34.0, -78.0, 36.5]
    asked = {
        "collection_id": "bcsd-1999-scenes",
        "bbox": box,
        "place": "box",
        "datetime": "1999-01",
        "composite": "median",
        "cloud_mask": True,
        "expression": "mean",
        "max_cloud_cover": 10.0,
    }
    message = (
        "Using the climate scenes bcsd-1999-scenes, which month of 1999 had the highest mean precipitation "
        "inside the box -84, 34, -78, 36.5?"
    )
    events = await one_call(places_orch, model_url, message, "get_scene_statistics", asked)
    start = payload(events, "tool_start")
    assert start["toolName"] == "get_scene_timeseries"
    sent = start["arguments"]
    assert (sent["expression"], sent["start"], sent["end"], sent["bbox"]) == (
        "precipitation",
        "1999-01",
        "1999-12",
        box,
    )
    assert "max_cloud_cover" not in sent  # the question says nothing of clouds
    series = json.loads(payload(events, "tool_result")["result"])
    # The wettest month, as the monthly means of the single-file collection holding the same pixels give it.
    means = {}
    for month in range(1, 13):
        period = f"1999-{month:02d}"
        error, stats = await call_tool(
            placed_raster.url,
            "get_raster_statistics",
            {"collection_id": "bcsd-precipitation-1999", "bbox": box, "datetime": period},
        )
        assert not error, stats
        means[period] = stats["statistics"]["mean"]
    assert series["summary"]["max"]["date"].startswith(max(means, key=lambda key: means[key]))


@pytest.mark.asyncio
async def test_box_as_the_place_is_the_box_the_question_types(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model's own call: `place: "box"`, a made-up geometry, the cube (which holds no variable
    # without an expression); vector-tools found no place called "box" and the answer had no number.
    asked = {
        "place": "box",
        "datetime": "1999-01",
        "geometry": {"type": "object", "properties": {"east": -78.0, "west": -84.0, "north": 36.5, "south": 34.0}},
        "collection_id": "bcsd-1999-cube",
    }
    message = "What was the highest January 1999 precipitation anywhere in the box -84, 34, -78, 36.5?"
    events = await one_call(places_orch, model_url, message, "compute_zonal_stats", asked)
    start = payload(events, "tool_start")
    sent = start["arguments"]
    assert "place" not in sent and sent.get("bbox", sent.get("geometry")) is not None
    assert sent["collection_id"] == "bcsd-precipitation-1999"
    result = json.loads(payload(events, "tool_result")["result"])
    direct_args = {"collection_id": "bcsd-precipitation-1999", "bbox": [-84, 34, -78, 36.5], "datetime": "1999-01"}
    error, direct = await call_tool(placed_raster.url, "get_raster_statistics", direct_args)
    assert not error, direct
    assert result["statistics"]["max"] == pytest.approx(direct["statistics"]["max"], rel=1e-6)


@pytest.mark.asyncio
async def test_a_made_up_collection_runs_on_the_one_holding_the_variable_and_years(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model's own call: a collection that does not exist, a box over India beside the place,
    # one month for each season; the answer had no number.
    asked = {
        "bbox": [75.0, 30.0, 80.0, 35.0],
        "place": "North Carolina",
        "period_a": "1999-07",
        "period_b": "1999-08",
        "cloud_mask": False,
        "collection_id": "global-temperature-2016",
    }
    message = (
        "How much warmer was summer (July to August 1999) than winter (January to February 1999) over North Carolina?"
    )
    # The question's parentheses are regex syntax: the rule matches it escaped.
    await call_then_answer(model_url, re.escape(message), [{"name": "detect_change", "arguments": asked}], "ok")
    events = await run_events(places_orch.url, {"message": unique(message)}, timeout=120)
    assert terminal(events).name == "done", [e.name for e in events]
    sent = payload(events, "tool_start")["arguments"]
    assert sent["collection_id"] == "bcsd-temperature-1999"
    assert (sent["period_a"], sent["period_b"]) == ("1999-01/1999-02", "1999-07/1999-08")
    result = json.loads(payload(events, "tool_result")["result"])
    error, direct = await call_tool(placed_raster.url, "detect_change", sent)
    assert not error, direct
    assert result["change"] == direct["change"]


@pytest.mark.asyncio
async def test_a_call_on_a_collection_of_other_years_runs_on_the_one_with_the_years_asked(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    box = [-84, 34, -78, 36.5]
    asked = {"collection_id": "global-precipitation-2016", "bbox": box, "datetime": "1999-03"}
    message = "Mean precipitation over the box -84, 34, -78, 36.5 in March 1999?"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", asked)
    sent = payload(events, "tool_start")["arguments"]
    assert sent == {**asked, "collection_id": "bcsd-precipitation-1999"}
    error, direct = await call_tool(placed_raster.url, "get_raster_statistics", sent)
    assert not error, direct
    assert json.loads(payload(events, "tool_result")["result"])["statistics"] == direct["statistics"]


@pytest.mark.asyncio
async def test_a_question_about_one_typed_point_runs_as_a_point_query(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # The 1.5B model sent a small box beside a country, or asked the collection's info with a place.
    message = "What is the elevation at longitude 6.13, latitude 49.61 in the Luxembourg DEM?"
    boxed = {"collection_id": "luxembourg-dem", "bbox": [6.1, 49.6, 6.2, 49.7], "place": "Luxembourg"}
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", boxed)
    start = payload(events, "tool_start")
    assert start["toolName"] == "query_raster_point"
    assert start["arguments"] == {"collection_id": "luxembourg-dem", "lon": 6.13, "lat": 49.61}
    error, direct = await call_tool(placed_raster.url, "query_raster_point", start["arguments"])
    assert not error, direct
    assert json.loads(payload(events, "tool_result")["result"]) == direct

    message = "Is the point at longitude 0, latitude 0 land or water in the global land mask?"
    info = {"collection_id": "global-land-mask", "place": "0, 0"}
    events = await one_call(places_orch, model_url, message, "get_raster_info", info)
    assert payload(events, "tool_start")["arguments"] == {"collection_id": "global-land-mask", "lon": 0.0, "lat": 0.0}

    # A question about a box keeps its area statistic; the info without a location stays info.
    message = "Mean elevation in the box 6.0, 49.6, 6.2, 49.8 near longitude 6.1, latitude 49.7?"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", boxed)
    assert payload(events, "tool_start")["toolName"] == "get_raster_statistics"
    message = "How many bands has the land mask at longitude 0, latitude 0?"
    events = await one_call(places_orch, model_url, message, "get_raster_info", {"collection_id": "global-land-mask"})
    assert payload(events, "tool_start")["toolName"] == "get_raster_info"


@pytest.mark.asyncio
async def test_a_city_given_to_an_area_statistic_over_time_runs_as_its_series(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    # "The wettest month of 2016 in Nairobi": one mean over time of a circle around the city cannot
    # answer it; the months at the city can.
    asked = {"collection_id": "global-precipitation-2016", "place": "Nairobi", "datetime": "2016"}
    events = await one_call(places_orch, model_url, "wettest month 2016 in Nairobi", "get_raster_statistics", asked)
    start = payload(events, "tool_start")
    assert start["toolName"] == "get_timeseries"
    assert start["arguments"] == {
        "collection_id": "global-precipitation-2016",
        "place": "Nairobi",
        "start": "2016-01",
        "end": "2016-12",
    }
    error, direct = await call_tool(placed_raster.url, "get_timeseries", start["arguments"])
    assert not error, direct
    assert json.loads(payload(events, "tool_result")["result"]) == direct
    assert direct["place"]["ref"].startswith("cities/")

    # A month the model chose, where the question names the year only: the year.
    chosen = {**asked, "datetime": "2016-01", "bbox": [36.8, -1.3, 36.8, -1.3]}  # and a box it made up
    events = await one_call(places_orch, model_url, "wettest month 2016 in Nairobi", "get_raster_statistics", chosen)
    assert payload(events, "tool_start")["arguments"] == start["arguments"]

    # A collection without the variable first becomes the one that holds it, then the city's series.
    elsewhere = {**chosen, "collection_id": "luxembourg-dem"}
    message = "highest monthly precipitation of 2016 in Nairobi"
    events = await one_call(places_orch, model_url, message, "get_raster_statistics", elsewhere)
    assert payload(events, "tool_start")["arguments"] == start["arguments"]

    # One month at a city: the city's cell.
    month = {"collection_id": "global-precipitation-2016", "place": "Nairobi", "datetime": "2016-03"}
    events = await one_call(places_orch, model_url, "statistics please", "compute_zonal_stats", month)
    start = payload(events, "tool_start")
    assert (start["toolName"], start["arguments"]) == ("query_raster_point", month)

    # Not for a country (an area) or a collection without time steps.
    kept = [
        {"collection_id": "global-precipitation-2016", "place": "Kenya", "datetime": "2016"},
        {"collection_id": "global-land-mask", "place": "Nairobi"},
    ]
    for arguments in kept:
        events = await one_call(places_orch, model_url, "statistics please", "compute_zonal_stats", arguments)
        assert payload(events, "tool_start")["toolName"] == "compute_zonal_stats", arguments


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("place", "fragments"),
    [("Fuzhou", ["cities/1810820", "cities/1810821"]), ("Atlantis Qwertyville", ["no country, city"])],
)
async def test_zoom_to_an_ambiguous_or_unknown_name_is_a_tool_error(
    places_orch: RunningService, model_url: str, place: str, fragments: list[str]
) -> None:
    events = await one_call(places_orch, model_url, f"zoom {place}", "zoom_to_location", {"place": place})
    assert not [e for e in events if e.name == "frontend_tool"]
    failure = payload(events, "tool_error")
    assert failure["kind"] == "invalid_arguments"
    for fragment in fragments:
        assert fragment in failure["error"], failure


@pytest.mark.asyncio
async def test_the_selected_vector_feature_is_passed_as_its_ref(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    selected = {
        "type": "Feature",
        "id": "LUX",
        "properties": {"dataset": "countries", "name": "Luxembourg"},
        "geometry": SQUARE,
    }
    events = await one_call(
        places_orch,
        model_url,
        "stats of selection",
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "place": "selection"},
        spatialContext={"selectedFeature": selected},
    )
    assert payload(events, "tool_start")["arguments"]["place"] == "countries/LUX"
    result = json.loads(payload(events, "tool_result")["result"])
    error, direct = await call_tool(
        placed_raster.url, "compute_zonal_stats", {"collection_id": "luxembourg-dem", "place": "countries/LUX"}
    )
    assert not error, direct
    assert result["place"]["ref"] == "countries/LUX"
    assert result["statistics"] == direct["statistics"]


@pytest.mark.asyncio
async def test_the_drawn_area_is_passed_as_geometry_and_its_centre_to_the_map(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    events = await one_call(
        places_orch,
        model_url,
        "stats of drawn area",
        "get_raster_statistics",
        {"collection_id": "luxembourg-dem", "place": "drawn area"},
        spatialContext={"drawnGeometry": SQUARE},
    )
    arguments = payload(events, "tool_start")["arguments"]
    assert arguments["geometry"] == SQUARE and "place" not in arguments
    result = json.loads(payload(events, "tool_result")["result"])
    error, direct = await call_tool(
        placed_raster.url, "get_raster_statistics", {"collection_id": "luxembourg-dem", "geometry": SQUARE}
    )
    assert not error, direct
    assert result["statistics"] == direct["statistics"]

    events = await one_call(
        places_orch,
        model_url,
        "zoom to drawn area",
        "zoom_to_location",
        {"place": "drawn area"},
        spatialContext={"drawnGeometry": SQUARE},
    )
    command = payload(events, "frontend_tool")["arguments"]
    assert (command["lon"], command["lat"]) == pytest.approx((6.1, 49.7))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "arguments", "body", "fragment"),
    [
        (
            "get_raster_statistics",
            {"collection_id": "luxembourg-dem", "place": "selection"},
            {},
            "nothing is selected",
        ),
        ("zoom_to_location", {"place": "drawn area"}, {}, "drawn nothing"),
        (
            "query_raster_point",
            {"collection_id": "luxembourg-dem", "place": "drawn area"},
            {"spatialContext": {"drawnGeometry": SQUARE}},
            "needs a point",
        ),
        (
            "get_raster_statistics",
            {"collection_id": "luxembourg-dem", "place": "selection"},
            {"spatialContext": {"selectedFeature": {"type": "Feature", "properties": {}, "geometry": MARKER}}},
            "needs an area",
        ),
    ],
)
async def test_a_missing_or_unfit_selection_is_a_clear_tool_error(
    places_orch: RunningService,
    model_url: str,
    name: str,
    arguments: dict[str, Any],
    body: dict[str, Any],
    fragment: str,
) -> None:
    events = await one_call(places_orch, model_url, f"no selection {name}", name, arguments, **body)
    failure = payload(events, "tool_error")
    assert failure["kind"] == "invalid_arguments" and "place" in failure["error"] and fragment in failure["error"]
    assert not [e for e in events if e.name in ("tool_start", "frontend_tool")]


@pytest.mark.asyncio
async def test_a_place_no_collection_of_the_variable_reaches_ends_in_a_refusal_naming_it(
    places_orch: RunningService, model_url: str
) -> None:
    # The real catalogue: four small elevation models (Olinda, Luxembourg, Rocky Mountains, Jacksboro).
    call = {"collection_id": "luxembourg-dem", "place": "Nairobi"}
    tag = "What is the elevation of Nairobi"
    await set_rules(
        model_url,
        {
            "name": "call",
            "match": {"last_user": tag, "step": 0},
            "tool_calls": [{"name": "query_raster_point", "arguments": call}],
        },
        {"name": "advice", "match": {"last_user": tag}, "content": "Try the global land mask for Nairobi."},
    )
    events = await run_events(places_orch.url, {"message": unique(tag + "?")}, timeout=120)
    assert [e.payload["kind"] for e in events if e.name == "tool_error"] == ["tool_failed"]
    answer = terminal(events).proto.done.content
    assert answer.startswith("I cannot answer that from the data here: no elevation data covers Nairobi (")
    for dem in ("olinda-dem", "luxembourg-dem", "rmnp-dem", "jacksboro-dem"):
        assert f"{dem}: " in answer
    assert terminal(events).proto.done.grounding.unsupported_count == 0, "the refusal quotes no coordinates"
    # Covered: the same kind of call stands.
    tag = "What is the elevation of Luxembourg"
    statistics = {
        "name": "get_raster_statistics",
        "arguments": {"collection_id": "luxembourg-dem", "place": "Luxembourg"},
    }
    await call_then_answer(model_url, tag, [statistics], "{{tool:get_raster_statistics:statistics.mean}} m")
    events = await run_events(places_orch.url, {"message": unique(tag + "?")}, timeout=120)
    assert "cannot answer" not in terminal(events).proto.done.content


@pytest.mark.asyncio
async def test_a_layer_for_a_question_asking_no_data_is_a_zoom_and_a_made_up_place_is_left_out(
    places_orch: RunningService, real_vector: RunningService, model_url: str
) -> None:
    error, nairobi = await call_tool(real_vector.url, "resolve_place", {"place": "Nairobi"})
    assert not error, nairobi
    layer = {"collection_id": "nlcd-puerto-rico", "colormap": "viridis", "place": "Nairobi", "lat": 1.0, "lon": 2.0}
    events = await one_call(places_orch, model_url, "Show me Nairobi on the map", "visualize_collection", layer)
    command = payload(events, "frontend_tool")
    assert command["name"] == "zoom_to_location"
    lon, lat = nairobi["place"]["point"]
    assert (command["arguments"]["lon"], command["arguments"]["lat"]) == pytest.approx((lon, lat), abs=1e-5)

    # The question names no place: the one the model added is left out, the layer shows at its extent.
    shown = {"collection_id": "bcsd-precipitation-1999", "place": "South-eastern United States"}
    tag = "Display the monthly precipitation of 1999 on the map"
    events = await one_call(places_orch, model_url, tag, "visualize_collection", shown)
    command = payload(events, "frontend_tool")
    assert command["name"] == "visualize_collection"
    assert command["arguments"]["collection_id"] == "bcsd-precipitation-1999"
    assert not {"place", "lat", "lon"} & set(command["arguments"]), command
    assert not [e for e in events if e.name == "tool_error"]


@pytest.mark.asyncio
async def test_a_place_looked_up_without_a_data_call_is_checked_against_the_variable_asked(
    places_orch: RunningService, model_url: str
) -> None:
    # Land cover exists only for Puerto Rico; the model looked Nairobi up as a boundary and guessed.
    tag = "Which land cover class is at Nairobi"
    lookup = {"name": "query_vector_by_bbox", "arguments": {"place": "Nairobi", "dataset": "countries"}}
    await call_then_answer(model_url, tag, [lookup], "The land cover class at Nairobi is urban.")
    events = await run_events(places_orch.url, {"message": unique(tag + "?")}, timeout=120)
    answer = terminal(events).proto.done.content
    assert answer.startswith("I cannot answer that from the data here: no land cover data covers Nairobi ("), answer
    assert "nlcd-puerto-rico" in answer and "urban" not in answer


@pytest.mark.asyncio
async def test_an_answer_that_does_not_name_the_class_at_the_point_is_withdrawn(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    point = {"collection_id": "global-land-mask", "lon": 0, "lat": 0}
    error, direct = await call_tool(placed_raster.url, "query_raster_point", point)
    assert not error, direct
    truth = direct["class_at_point"]
    wrong = next(c for c in ("Land", "Water") if c != truth)
    tag = "Is the point at longitude 0, latitude 0 land or water"
    await set_rules(
        model_url,
        {
            "name": "again",
            "match": {"last_user": "Answer again with the class the tool gave", "step": 0},
            "content": "It is {{tool:query_raster_point:class_at_point}}.",
        },
        {
            "name": "point",
            "match": {"last_user": tag, "step": 0},
            "tool_calls": [{"name": "query_raster_point", "arguments": point}],
        },
        {"name": "guess", "match": {"last_user": tag}, "content": f"It is {wrong.lower()}."},
    )
    events = await run_events(places_orch.url, {"message": unique(tag + "?")}, timeout=120)
    thinking = " ".join(e.payload["text"] for e in events if e.name == "thinking")
    assert f"Draft withdrawn: the data gives the class {truth}" in thinking, [(e.name, e.payload) for e in events]
    assert terminal(events).proto.done.content == f"It is {truth}."


@pytest.mark.asyncio
async def test_an_answer_that_describes_a_call_instead_of_making_it_is_withdrawn_and_the_call_made(
    places_orch: RunningService, placed_raster: RunningService, model_url: str
) -> None:
    point = {"collection_id": "global-land-mask", "lon": 0, "lat": 0}
    error, direct = await call_tool(placed_raster.url, "query_raster_point", point)
    assert not error, direct
    truth = direct["class_at_point"]
    tag = "Which class does the land mask give at longitude 0, latitude 0"
    correction = "Do not tell me which tool to use"
    await set_rules(
        model_url,
        {
            "name": "answer",
            "match": {"last_user": correction, "step": 1},
            "content": "It is {{tool:query_raster_point:class_at_point}}.",
        },
        {
            "name": "call",
            "match": {"last_user": correction, "step": 0},
            "tool_calls": [{"name": "query_raster_point", "arguments": point}],
        },
        {
            "name": "describe",
            "match": {"last_user": tag},
            "content": "You can use the `query_raster_point` function with the collection id global-land-mask.",
        },
    )
    events = await run_events(places_orch.url, {"message": unique(tag + "?")}, timeout=120)
    thinking = " ".join(e.payload["text"] for e in events if e.name == "thinking")
    assert "Draft withdrawn: the answer describes a call to query_raster_point" in thinking, [
        (e.name, e.payload) for e in events
    ]
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["query_raster_point"]
    assert terminal(events).proto.done.content == f"It is {truth}."


@pytest.mark.asyncio
async def test_an_answer_telling_how_to_make_a_call_already_made_gives_way_to_its_result(
    places_orch: RunningService, model_url: str
) -> None:
    # Eval run 20: the series came back with its wettest month named, and the model answered with
    # the call's arguments under "you can use the `query_scene_timeseries` function" (a name of its own).
    box = [-84.0, 34.0, -78.0, 36.5]
    asked = {
        "collection_id": "bcsd-1999-scenes",
        "expression": "precipitation",
        "bbox": box,
        "start": "1999-01",
        "end": "1999-12",
    }
    advice = (
        "To find the month of 1999 with the highest mean precipitation inside the box, you can use the "
        f"`query_scene_timeseries` function with the following arguments:\n```json\n{json.dumps(asked)}\n```"
    )
    message = "Which month of 1999 had the highest mean precipitation inside the box -84, 34, -78, 36.5?"
    for answers_after_being_told in (True, False):
        tag = uuid.uuid4().hex[:8]
        rules = [
            {
                "name": "call",
                "match": {"last_user": tag, "step": 0},
                "tool_calls": [{"name": "query_scene_timeseries", "arguments": asked}],
            },
            {"name": "advice", "match": {"last_user": tag, "step": 1}, "content": advice},
        ]
        if answers_after_being_told:
            rules.insert(
                0,
                {
                    "name": "told",
                    "match": {"last_user": "you already called it"},
                    "content": "September: {{tool:get_scene_timeseries:summary.text}}",
                },
            )
        else:
            rules.insert(0, {"name": "again", "match": {"last_user": "you already called it"}, "content": advice})
        await set_rules(model_url, *rules)
        events = await run_events(places_orch.url, {"message": f"{message} [{tag}]"}, timeout=120)
        done = terminal(events).proto.done
        series = json.loads(payload(events, "tool_result")["result"])
        wettest = series["summary"]["max"]["date"][:7]
        assert "you can use" not in done.content and "```" not in done.content
        assert wettest in done.content  # the month, from the result itself
        if answers_after_being_told:
            assert done.content.startswith("September: ")
