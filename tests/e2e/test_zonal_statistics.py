"""A question answered by two tool servers in a chain: vector-tools finds the country, raster-tools
computes zonal statistics over the feature it returned, and the number reaches the browser."""

from __future__ import annotations

import re

import pytest

from .client import ChatUser, ScriptedModel
from .conftest import require
from .reference import area_weighted_mean, cog_path, feature_geometry, vector_feature

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def elevation_rules(tag: str) -> list[dict[str, object]]:
    """The model looks the place up, passes the feature reference on, then states the mean."""
    return [
        {
            "name": f"{tag}-answer",
            "match": {"last_user": tag, "after_tools": ["search_vector_features", "compute_zonal_stats"]},
            "content": "The mean elevation of Luxembourg is {{tool:compute_zonal_stats:statistics.mean}} m.",
            "chunk_chars": 7,
        },
        {
            "name": f"{tag}-zonal",
            "match": {"last_user": tag, "last_tool": "search_vector_features"},
            "tool_calls": [
                {
                    "name": "compute_zonal_stats",
                    "arguments": {
                        "collection_id": "luxembourg-dem",
                        "geometry": "{{tool:search_vector_features:results.0.ref}}",
                    },
                }
            ],
        },
        {
            "name": f"{tag}-search",
            "match": {"last_user": tag, "step": 0},
            "thinking": "First find the country's outline, then average the elevation model over it.",
            "tool_calls": [
                {
                    "name": "search_vector_features",
                    "arguments": {
                        "query": "{{last_user:(?i)mean elevation of (\\w+)}}",
                        "dataset": "countries",
                        "limit": 1,
                    },
                }
            ],
        },
    ]


@pytest.mark.asyncio
async def test_mean_elevation_of_luxembourg_matches_an_independent_computation(
    user: ChatUser, scripted: ScriptedModel, tag: str
) -> None:
    await require("vector-tools", "raster-tools")
    await scripted.add(*elevation_rules(tag))

    run = await user.chat(f"What is the mean elevation of Luxembourg? [{tag}]")

    done = run.done()
    starts = run.tools("tool_start")
    assert [s["toolName"] for s in starts] == ["search_vector_features", "compute_zonal_stats"], run.describe()
    assert not run.of("tool_error"), run.describe()
    assert starts[0]["arguments"]["query"] == "Luxembourg"
    reference_arg = starts[1]["arguments"]["geometry"]
    assert reference_arg["dataset"] == "countries", reference_arg

    feature = await vector_feature(reference_arg["dataset"], reference_arg["id"])
    assert feature["properties"]["name"] == "Luxembourg"
    expected = area_weighted_mean(cog_path("luxembourg-dem"), feature_geometry(feature))

    answer = run.content
    assert answer == done["content"], "the streamed deltas differ from the final answer"
    numbers = [float(n) for n in NUMBER.findall(answer)]
    assert numbers, f"no number in the answer: {answer!r}"
    assert abs(numbers[0] - expected) < 0.01, f"answer {answer!r}, independent computation {expected:.6f}"
    # A real, plausible figure: Luxembourg's terrain lies between about 130 and 560 m.
    assert 200 < expected < 500
