"""The orchestrator against the product's real tool servers: raster-tools on the built demo catalog
(schema sanitising on its real schemas, its collections in the system prompt, a real statistic),
memory-tools on Postgres + pgvector (long-term memories injected per user) and knowledge-tools with
the repository's knowledge/ documents (searched first for a question about a concept)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from orchestrator_helpers import content, model_requests, run_events, set_rules, terminal

from conftest import orchestrator, orchestrator_env
from stacgis_common.arguments import retry_hint
from stacgis_common.testing import (
    REPO_ROOT,
    RunningService,
    free_port,
    mcp_client,
    run_migrations,
    run_service,
    token_for,
)
from stacgis_orchestrator.llm.schema import sanitize_schema, schema_problems
from stacgis_orchestrator.prompts import KNOWLEDGE_ANSWER, PASSAGES_HEADER, UNGROUNDED_DRAFT

DATA = REPO_ROOT / ".local" / "data"
LUXEMBOURG = [5.7, 49.4, 6.6, 50.2]


@pytest.fixture(scope="module")
def real_raster() -> Iterator[RunningService]:
    build = subprocess.run(
        [sys.executable, "-m", "stacgis_raster.demo_data", "--cache", ".local/cache", "--out", ".local/data"],
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
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service


def _store_env(prefix: str, pg_dsn: str, model_server: RunningService) -> dict[str, str]:
    """Settings of a Postgres + embeddings tool server (memory-tools, knowledge-tools) on a free port."""
    return {
        f"{prefix}_PORT": str(free_port()),
        f"{prefix}_DATABASE_URL": pg_dsn,
        f"{prefix}_EMBEDDING_BASE_URL": model_server.url,
        f"{prefix}_LOG_LEVEL": "WARNING",
    }


@pytest.fixture(scope="module")
def real_memory(pg_dsn: str, app_dsn: str, model_server: RunningService) -> Iterator[RunningService]:
    env = _store_env("MEMORY", pg_dsn, model_server)
    # Migrated as the owner; served as the application role, as deployed.
    run_migrations("stacgis_memory", env)
    env["MEMORY_DATABASE_URL"] = app_dsn
    with run_service("stacgis_memory", env, int(env["MEMORY_PORT"]), ready_path="/readyz") as service:
        yield service


@pytest.fixture(scope="module")
def real_knowledge(pg_dsn: str, app_dsn: str, model_server: RunningService) -> Iterator[RunningService]:
    env = _store_env("KNOWLEDGE", pg_dsn, model_server)
    ingest = subprocess.run(
        [sys.executable, "-m", "stacgis_knowledge.ingest", str(REPO_ROOT / "knowledge")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ingest.returncode == 0, ingest.stdout[-2000:] + ingest.stderr[-2000:]
    env["KNOWLEDGE_DATABASE_URL"] = app_dsn
    with run_service("stacgis_knowledge", env, int(env["KNOWLEDGE_PORT"]), ready_path="/readyz") as service:
        yield service


@pytest.fixture(scope="module")
def real_orch(
    model_server: RunningService,
    redis_url: str,
    real_raster: RunningService,
    real_memory: RunningService,
    real_knowledge: RunningService,
) -> Iterator[RunningService]:
    servers = {
        "raster": real_raster.url + "/mcp",
        "memory": real_memory.url + "/mcp",
        "knowledge": real_knowledge.url + "/mcp",
    }
    with orchestrator(orchestrator_env(model_server.url, redis_url, servers)) as service:
        yield service


@pytest.mark.asyncio
async def test_real_raster_schemas_sanitise_cleanly_and_keep_accepting_valid_calls(real_raster) -> None:
    async with mcp_client(real_raster.url + "/mcp", token_for("alice")) as session:
        tools = (await session.list_tools()).tools
    assert len(tools) >= 9
    raw_problems = {tool.name: schema_problems(tool.input_schema) for tool in tools}
    assert any(raw_problems.values()), "the real schemas use anyOf/title/default null: the test must see some"
    for tool in tools:
        assert schema_problems(sanitize_schema(tool.input_schema)) == [], tool.name
    stats = sanitize_schema(next(t for t in tools if t.name == "get_raster_statistics").input_schema)
    assert stats["properties"]["bbox"]["type"] == "array"
    assert stats["required"] == ["collection_id"]


@pytest.mark.asyncio
async def test_a_run_over_real_raster_tools(real_orch, model_url) -> None:
    message = f"Luxembourg relief [{uuid.uuid4().hex[:8]}]"
    await set_rules(
        model_url,
        {
            "name": "stats",
            "match": {"last_user": "Luxembourg relief", "step": 0},
            "tool_calls": [
                {"name": "get_raster_statistics", "arguments": {"collection_id": "luxembourg-dem", "bbox": LUXEMBOURG}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "Luxembourg relief", "step": 1},
            "content": "Elevation {{tool:get_raster_statistics:statistics.min}} to "
            "{{tool:get_raster_statistics:statistics.max}} {{tool:get_raster_statistics:unit}}.",
        },
    )
    events = await run_events(real_orch.url, {"message": message}, timeout=120)
    result = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])
    low, high = result["statistics"]["min"], result["statistics"]["max"]
    assert 100 < low < high < 600, "the Luxembourg DEM spans roughly 130-560 m"
    assert content(events) == f"Elevation {low} to {high} m."
    assert terminal(events).proto.done.finish_reason == "completed"
    request = (await model_requests(model_url, contains=message))[0]
    system = "\n".join(m["content"] for m in request["body"]["messages"] if m["role"] == "system")
    assert "- luxembourg-dem:" in system and "- landsat7-olinda-ndvi:" in system
    offered = request["body"]["tools"]
    assert all(schema_problems(tool["function"]["parameters"]) == [] for tool in offered)


@pytest.mark.asyncio
async def test_the_answer_is_grounded_in_the_real_raster_statistics(real_orch, model_url) -> None:
    message = f"Luxembourg grounded [{uuid.uuid4().hex[:8]}]"
    answer = (
        "The mean elevation is {{tool:get_raster_statistics:statistics.mean}} m "
        "(highest {{tool:get_raster_statistics:statistics.max}} m), not 1,929 m."
    )
    await set_rules(
        model_url,
        # Withdrawn once for the 1,929 m no tool gave; written again, the answer stands with it marked.
        {"name": "again", "match": {"last_user": UNGROUNDED_DRAFT.split(":")[0]}, "content": answer},
        {
            "name": "stats",
            "match": {"last_user": "Luxembourg grounded", "step": 0},
            "tool_calls": [
                {"name": "get_raster_statistics", "arguments": {"collection_id": "luxembourg-dem", "bbox": LUXEMBOURG}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "Luxembourg grounded", "step": 1},
            "content": answer,
        },
    )
    events = await run_events(real_orch.url, {"message": message}, timeout=120)
    statistics = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])["statistics"]
    call_id = next(e for e in events if e.name == "tool_start").payload["callId"]
    done = terminal(events).proto.done
    numbers = {n.value: n for n in done.grounding.numbers}
    assert set(numbers) == {statistics["mean"], statistics["max"], 1929.0}
    for value in (statistics["mean"], statistics["max"]):
        assert numbers[value].supported and numbers[value].call_id == call_id
        assert numbers[value].tool_name == "get_raster_statistics" and numbers[value].unit == "m"
    assert not numbers[1929.0].supported and numbers[1929.0].text == "1,929 m"
    assert (done.grounding.supported_count, done.grounding.unsupported_count) == (2, 1)


@pytest.mark.asyncio
async def test_a_call_whose_error_names_the_collection_to_use_is_made_again_with_it(
    real_orch, real_raster, model_url
) -> None:
    # Eval run 23: Olinda's elevation asked of the Luxembourg DEM. raster-tools' error names the one
    # collection there that holds elevation in metres too; the orchestrator makes that call itself.
    message = f"Olinda height [{uuid.uuid4().hex[:8]}]"
    point = {"lon": -34.86, "lat": -8.0}
    await set_rules(
        model_url,
        {
            "name": "wrong-dem",
            "match": {"last_user": "Olinda height", "step": 0},
            "tool_calls": [{"name": "query_raster_point", "arguments": {"collection_id": "luxembourg-dem", **point}}],
        },
        {
            "name": "answer",
            # Step 2: the fixed call is a turn of its own in the conversation the model reads.
            "match": {"last_user": "Olinda height", "step": 2},
            "content": "The elevation is {{tool:query_raster_point:results.0.values.elevation}} m.",
        },
    )
    events = await run_events(real_orch.url, {"message": message}, timeout=120)
    starts = [e.payload for e in events if e.name == "tool_start"]
    errors = [e.payload for e in events if e.name == "tool_error"]
    results = [e.payload for e in events if e.name == "tool_result"]
    assert [s["arguments"]["collection_id"] for s in starts] == ["luxembourg-dem", "olinda-dem"]
    assert [retry_hint(e["error"]) for e in errors] == [("collection_id", "olinda-dem")]
    elevation = json.loads(results[0]["result"])["results"][0]["values"]["elevation"]
    async with mcp_client(real_raster.url + "/mcp", token_for("alice")) as session:
        direct = await session.call_tool("query_raster_point", {"collection_id": "olinda-dem", **point})
    assert not direct.is_error
    assert elevation == json.loads(direct.content[0].text)["results"][0]["values"]["elevation"]
    assert content(events) == f"The elevation is {elevation} m."
    assert terminal(events).proto.done.grounding.unsupported_count == 0


@pytest.mark.asyncio
async def test_memories_from_real_memory_tools_are_injected_for_their_user_only(
    real_orch, real_memory, model_url
) -> None:
    async with mcp_client(real_memory.url + "/mcp", token_for("dora")) as session:
        saved = await session.call_tool(
            "add_memory", {"content": "Dora wants elevations in feet", "kind": "preference"}
        )
        assert not saved.is_error, saved.content
    await set_rules(model_url, {"name": "echo", "match": {"last_user": "how high"}, "content": "noted"})
    message = f"how high is Luxembourg, in my units? [{uuid.uuid4().hex[:8]}]"
    assert terminal(await run_events(real_orch.url, {"message": message}, user="dora")).name == "done"
    request = (await model_requests(model_url, contains=message))[0]
    context = request["body"]["messages"][-2]["content"]
    assert "- Dora wants elevations in feet" in context

    other = f"how high is Luxembourg? [{uuid.uuid4().hex[:8]}]"
    await run_events(real_orch.url, {"message": other}, user="erin")
    request = (await model_requests(model_url, contains=other))[0]
    assert "Dora" not in json.dumps(request["body"]["messages"])


@pytest.mark.asyncio
async def test_a_question_about_a_concept_is_answered_from_a_knowledge_search_made_first(
    real_orch: RunningService, model_url: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    question = f"In STAC, what is an item? [{tag}]"
    await set_rules(
        model_url,
        {
            "name": "item",
            "match": {"last_user": tag},
            "content": "An item is {{tool:search_knowledge:results.0.chunk}}",
        },
    )
    events = await run_events(real_orch.url, {"message": question}, timeout=120)
    assert terminal(events).name == "done"
    starts = [e.payload for e in events if e.name == "tool_start"]
    assert [s["toolName"] for s in starts] == ["search_knowledge"]
    assert starts[0]["arguments"]["query"] == question
    passages = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])["results"]
    assert passages[0]["source"] == "knowledge/concepts/stac.md"
    # The model's first request already holds the passages: it answers from the documents.
    (first,) = await model_requests(model_url, contains=tag)
    tool_messages = [m["content"] for m in first["body"]["messages"] if m["role"] == "tool"]
    assert any("GeoJSON Feature" in text for text in tool_messages)
    assert json.loads(tool_messages[-1])["note"] == KNOWLEDGE_ANSWER, "the passages close with how to answer"

    # A question about a quantity of a place is the model's to route.
    tag = uuid.uuid4().hex[:8]
    await set_rules(model_url, {"name": "elevation", "match": {"last_user": tag}, "content": "I need a tool."})
    events = await run_events(real_orch.url, {"message": f"What is the mean elevation of Luxembourg? [{tag}]"})
    assert not [e for e in events if e.name == "tool_start"]


@pytest.mark.asyncio
async def test_a_data_tool_called_after_a_concept_search_is_not_run_and_the_model_answers_from_the_passages(
    real_orch: RunningService, model_url: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    question = f"What are zonal statistics and how are border cells counted? [{tag}]"
    demo = {"name": "compute_zonal_stats", "arguments": {"collection_id": "lux-dem", "place": "Luxembourg"}}
    await set_rules(
        model_url,
        {"name": "demo", "match": {"last_user": tag, "step": 1}, "tool_calls": [demo]},
        {
            "name": "answer",
            "match": {"any_message": "not run: this is a question about a concept"},
            "content": "Cells count by coverage.",
        },
    )
    events = await run_events(real_orch.url, {"message": question}, timeout=120)
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["search_knowledge"]
    (refused,) = [e.payload for e in events if e.name == "tool_error"]
    assert refused["toolName"] == "compute_zonal_stats" and refused["kind"] == "not_needed"
    assert terminal(events).proto.done.content == "Cells count by coverage."

    # Eval runs 19 and 20: refused, the model described the call it wanted in prose, or answered about
    # that call's place; the user reads the passages.
    await _refused_demo_gives_way_to_the_passages(
        real_orch,
        model_url,
        demo,
        "To find zonal statistics for Luxembourg you would use compute_zonal_stats with the collection "
        "lux-dem and the place Luxembourg; it returns the mean, minimum and maximum.",
    )
    # Run 20's call: a geometry beside the place (the place is then dropped) and text before the call.
    square = [[[5.123, 49.999], [5.123, 50.001], [5.125, 50.001], [5.125, 49.999], [5.123, 49.999]]]
    run20 = {
        "name": "compute_zonal_stats",
        "arguments": {
            "place": "Luxembourg",
            "geometry": {"type": "Polygon", "coordinates": square},
            "collection_id": "luxembourg-dem",
        },
    }
    await _refused_demo_gives_way_to_the_passages(
        real_orch,
        model_url,
        run20,
        "The zonal statistics for the Luxembourg DEM, using the specified polygon as the zone, include the "
        "mean, standard deviation, min, max, percentiles, and valid fraction for the specified band.",
        "To compute zonal statistics, you can use the `compute_zonal_stats` function, e.g. for the Luxembourg DEM:",
    )


async def _refused_demo_gives_way_to_the_passages(
    real_orch: RunningService, model_url: str, demo: dict[str, Any], described: str, before: str = ""
) -> None:
    tag = uuid.uuid4().hex[:8]
    await set_rules(
        model_url,
        {"name": "demo", "match": {"last_user": tag, "step": 1}, "content": before, "tool_calls": [demo]},
        {
            "name": "describes",
            "match": {"any_message": "not run: this is a question about a concept"},
            "content": described,
        },
    )
    question = f"What are zonal statistics and how are border cells counted? [{tag}]"
    events = await run_events(real_orch.url, {"message": question}, timeout=120)
    done = terminal(events).proto.done
    passages = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])["results"]
    assert described not in done.content
    assert done.content.startswith(PASSAGES_HEADER)
    assert passages[0]["chunk"].split(".")[0] in done.content


@pytest.mark.asyncio
async def test_a_concept_answer_that_keeps_inventing_numbers_gives_way_to_the_passages(
    real_orch: RunningService, model_url: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    question = f"What are zonal statistics and how are border cells counted? [{tag}]"
    invented = "The mean elevation of Luxembourg inside the polygon is 100 meters."
    await set_rules(model_url, {"name": "invents", "match": {"last_user": tag}, "content": invented})
    events = await run_events(real_orch.url, {"message": question}, timeout=120)
    done = terminal(events).proto.done
    passages = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])["results"]
    # Told once that no passage gives 100, the model said it again: the user reads the passages.
    assert "100 meters" not in done.content
    assert done.content.startswith(PASSAGES_HEADER)
    assert passages[0]["chunk"].split(".")[0] in done.content
    assert passages[0]["source"] in done.content
    assert done.grounding.unsupported_count == 0
    requests = await model_requests(model_url, contains=tag)
    assert any("100" in json.dumps(r["body"]["messages"][-1]) for r in requests[1:]), "the model was told first"


@pytest.mark.asyncio
async def test_a_concept_answer_written_as_a_tool_call_gives_way_to_the_passages(
    real_orch: RunningService, model_url: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    question = f"What are zonal statistics and how are border cells counted? [{tag}]"
    # Eval run 18's answer: how to call the tool, not what the passages say.
    shown = (
        "To compute zonal statistics, you can use the `compute_zonal_stats` function. For example, "
        'call `compute_zonal_stats(collection_id="luxembourg-dem", place="Luxembourg")`.'
    )
    await set_rules(model_url, {"name": "shows", "match": {"last_user": tag}, "content": shown})
    events = await run_events(real_orch.url, {"message": question}, timeout=120)
    done = terminal(events).proto.done
    passages = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])["results"]
    assert "compute_zonal_stats(" not in done.content
    assert done.content.startswith(PASSAGES_HEADER)
    assert passages[0]["chunk"].split(".")[0] in done.content
    # A concept answer that explains in its own words, naming the tool, stands.
    tag = uuid.uuid4().hex[:8]
    explained = "Zonal statistics summarise a raster inside a zone; compute_zonal_stats weights border cells."
    await set_rules(model_url, {"name": "explains", "match": {"last_user": tag}, "content": explained})
    events = await run_events(
        real_orch.url, {"message": f"What are zonal statistics and how are border cells counted? [{tag}]"}, timeout=120
    )
    assert terminal(events).proto.done.content == explained


@pytest.mark.asyncio
async def test_a_request_to_remember_is_saved_for_its_user_before_the_model_answers(
    real_orch: RunningService, real_memory: RunningService, model_url: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    await set_rules(model_url, {"name": "noted", "match": {"last_user": tag}, "content": "Noted."})
    message = f"Please remember that my study area is the Jacksboro fault {tag}."
    events = await run_events(real_orch.url, {"message": message}, user="fritz")
    assert terminal(events).name == "done"
    (start,) = [e.payload for e in events if e.name == "tool_start"]
    assert start["toolName"] == "add_memory"
    assert start["arguments"] == {"content": f"My study area is the Jacksboro fault {tag}", "kind": "fact"}
    async with mcp_client(real_memory.url + "/mcp", token_for("fritz")) as session:
        found = await session.call_tool("search_memories", {"query": "study area"})
    assert f"Jacksboro fault {tag}" in found.content[0].text
    async with mcp_client(real_memory.url + "/mcp", token_for("gina")) as session:
        other = await session.call_tool("search_memories", {"query": "study area"})
    assert tag not in other.content[0].text

    # A question about what the user told starts with a search of their memories, whose result the
    # model answers from (eval run 18: with the memory only in its context, the model looked the city up).
    await set_rules(model_url, {"name": "recalled", "match": {"last_user": f"recall {tag}"}, "content": "Jacksboro."})
    events = await run_events(
        real_orch.url, {"message": f"Which study area did I tell you about? recall {tag}"}, user="fritz"
    )
    (start,) = [e.payload for e in events if e.name == "tool_start"]
    assert start["toolName"] == "search_memories"
    (result,) = [e.payload for e in events if e.name == "tool_result"]
    assert f"Jacksboro fault {tag}" in result["result"]
    requests = await model_requests(model_url, contains=f"recall {tag}")
    assert f"Jacksboro fault {tag}" in json.dumps(requests[0]["body"]["messages"][-1])

    # Asking about a memory is not a request to save one: the memories are searched, nothing is added.
    await set_rules(model_url, {"name": "recall", "match": {"last_user": "Do you remember"}, "content": "Yes."})
    events = await run_events(real_orch.url, {"message": f"Do you remember my study area? {tag}"}, user="fritz")
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["search_memories"]


@pytest.mark.asyncio
async def test_a_place_the_user_defined_in_a_memory_is_used_by_its_name(
    real_orch: RunningService, real_memory: RunningService, model_url: str
) -> None:
    async with mcp_client(real_memory.url + "/mcp", token_for("hana")) as session:
        saved = await session.call_tool("add_memory", {"content": "My study area is Luxembourg", "kind": "fact"})
        assert not saved.is_error, saved.content
    tag = uuid.uuid4().hex[:8]
    call = {"name": "get_raster_statistics", "arguments": {"collection_id": "luxembourg-dem", "place": "study area"}}
    await set_rules(
        model_url,
        {"name": "call", "match": {"last_user": tag, "step": 0}, "tool_calls": [call]},
        {"name": "answer", "match": {"last_user": tag, "step": 1}, "content": "Done."},
    )
    events = await run_events(real_orch.url, {"message": f"Mean elevation of my study area? {tag}"}, user="hana")
    start = next(e.payload for e in events if e.name == "tool_start")
    assert start["arguments"]["place"] == "Luxembourg"
    # Another user has no such memory: the name goes to the tool as the model wrote it.
    events = await run_events(real_orch.url, {"message": f"Mean elevation of my study area? {tag}"}, user="ivan")
    assert next(e.payload for e in events if e.name == "tool_start")["arguments"]["place"] == "study area"
