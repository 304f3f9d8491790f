"""A frontend tool: the model moves the user's map, and the browser gets the command as an event."""

from __future__ import annotations

import json

import pytest

from .client import ChatUser, ScriptedModel
from .conftest import require
from .reference import vector_feature


def zoom_rules(tag: str) -> list[dict[str, object]]:
    return [
        {
            "name": f"{tag}-done",
            "match": {"last_user": tag, "last_tool": "zoom_to_location"},
            "content": "The map now shows {{tool:search_vector_features:results.0.name}}.",
        },
        {
            "name": f"{tag}-zoom",
            "match": {"last_user": tag, "last_tool": "search_vector_features"},
            "tool_calls": [
                {
                    "name": "zoom_to_location",
                    "arguments": {
                        "lat": "{{tool:search_vector_features:results.0.coordinates.1}}",
                        "lon": "{{tool:search_vector_features:results.0.coordinates.0}}",
                        "zoom": 10,
                    },
                }
            ],
        },
        {
            "name": f"{tag}-search",
            "match": {"last_user": tag, "step": 0},
            "tool_calls": [
                {
                    "name": "search_vector_features",
                    "arguments": {"query": "{{last_user:(?i)zoom to (\\w+)}}", "dataset": "cities", "limit": 1},
                }
            ],
        },
    ]


@pytest.mark.asyncio
async def test_zoom_to_berlin_sends_the_map_to_berlins_coordinates(
    user: ChatUser, scripted: ScriptedModel, tag: str
) -> None:
    await require("vector-tools")
    await scripted.add(*zoom_rules(tag))

    run = await user.chat(f"Zoom to Berlin [{tag}]")

    run.done()
    commands = run.tools("frontend_tool")
    assert [c["name"] for c in commands] == ["zoom_to_location"], run.describe()
    arguments = commands[0]["arguments"]

    found = run.tools("tool_result")[0]
    assert found["toolName"] == "search_vector_features"
    starts = run.tools("tool_start")
    assert starts[0]["arguments"]["query"] == "Berlin"
    ref = json.loads(found["result"])["results"][0]["ref"]
    feature = await vector_feature(ref["dataset"], ref["id"])
    assert feature["properties"]["name"] == "Berlin"
    lon, lat = feature["geometry"]["coordinates"]
    assert arguments["lat"] == pytest.approx(lat, abs=1e-5)
    assert arguments["lon"] == pytest.approx(lon, abs=1e-5)
    # Germany's Berlin (not one of the smaller Berlins elsewhere).
    assert arguments["lat"] == pytest.approx(52.52, abs=0.05) and arguments["lon"] == pytest.approx(13.40, abs=0.05)
    assert "Berlin" in run.content
