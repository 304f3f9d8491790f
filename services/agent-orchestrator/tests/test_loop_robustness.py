"""The loop never fails the user for its own reasons, and keeps the prompt prefix byte-stable.

An orchestrator runs against a model server with a small context window (tests/servers/window_model.py:
the Ollama protocol in front of the real scripted model server, counting tokens its own way and
answering HTTP 400 on overflow) and the small real MCP tool servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from orchestrator_helpers import (
    Event,
    call_then_answer,
    content,
    model_requests,
    names,
    run_events,
    set_rules,
    terminal,
)

from conftest import SERVERS, ToolServer, orchestrator, orchestrator_env, tool_server
from stacgis_common.testing import RunningService, free_port, run_service
from stacgis_orchestrator.context_window import RETRY_SHRINK
from stacgis_orchestrator.llm.ollama import OllamaProvider
from stacgis_orchestrator.prompts import (
    CONTEXT_HEADER,
    FAILED_CALL,
    FORCE_ANSWER,
    FORCE_ANSWER_AGAIN,
    NO_DATA_ANSWER,
    PLACE_BY_LOOKUP,
    PLACE_BY_NAME,
    STILL_LOADING_ANSWER,
    SUMMARY_HEADER,
    UNGROUNDED_DRAFT,
)

FORCED = "Answer my question now"
UNGROUNDED_MARK = UNGROUNDED_DRAFT.split(":")[0]
FAILED_MARK = FAILED_CALL.split(":")[0]


def payload_of(events: list[Event], name: str) -> dict[str, Any]:
    (found,) = [e.payload for e in events if e.name == name]
    return found


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


@pytest.fixture(scope="module")
def window_model(model_server: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = {
        "WINDOW_UPSTREAM": model_server.url,
        "WINDOW_TOKENS": "1000000",
        "WINDOW_PORT": str(port),
        "PYTHONPATH": str(SERVERS),
    }
    with run_service("window_model", env, port) as service:
        yield service


@pytest.fixture(scope="module")
def small_orch(
    window_model: RunningService,
    model_server: RunningService,
    redis_url: str,
    raster: ToolServer,
    vector: ToolServer,
    memory: ToolServer,
) -> Iterator[RunningService]:
    servers = {"raster": raster.mcp, "vector": vector.mcp, "memory": memory.mcp}
    env = orchestrator_env(
        window_model.url, redis_url, servers, llm_num_ctx="32768", embedding_base_url=model_server.url
    )
    with orchestrator(env) as service:
        yield service


def window_log(window_model: RunningService) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = httpx.get(window_model.url + "/_window/log", timeout=10).json()
    return data


def set_window(window_model: RunningService, tokens: int) -> None:
    httpx.put(window_model.url + "/_window/size", json={"tokens": tokens}, timeout=10).raise_for_status()


def of_message(log: list[dict[str, Any]], marker: str) -> list[dict[str, Any]]:
    return [entry for entry in log if marker in json.dumps(entry["body"]["messages"])]


@contextlib.contextmanager
def window(window_model: RunningService, tokens: int) -> Iterator[None]:
    set_window(window_model, tokens)
    try:
        yield
    finally:
        set_window(window_model, 1_000_000)


@pytest.mark.asyncio
async def test_the_prefix_is_warmed_and_byte_identical_across_users_runs_and_steps(
    small_orch, window_model, model_url
) -> None:
    deadline = time.monotonic() + 30
    while not (warm := [e for e in window_log(window_model) if e["body"].get("stream") is False]):
        assert time.monotonic() < deadline, "no warm-up request reached the model server"
        await asyncio.sleep(0.5)
    assert warm[0]["body"]["options"]["num_predict"] == 1
    assert [m["role"] for m in warm[0]["body"]["messages"]] == ["system"]

    first, second = unique("prefix one"), unique("prefix two")
    users = [f"user-{uuid.uuid4().hex[:10]}", f"user-{uuid.uuid4().hex[:10]}"]
    await set_rules(
        model_url,
        {
            "name": "tool",
            "match": {"last_user": "prefix one", "step": 0},
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
        {"name": "answer", "match": {"last_user": "prefix (one|two)"}, "content": "ok"},
    )
    await run_events(small_orch.url, {"message": first}, user=users[0])
    await run_events(small_orch.url, {"message": second, "options": {"maxSteps": 4}}, user=users[1])
    log = window_log(window_model)
    requests = [*warm, *of_message(log, first), *of_message(log, second)]
    assert len(requests) == 4, "warm-up, two steps of the first run, one of the second"
    prefixes = {
        (json.dumps(r["body"]["messages"][0], ensure_ascii=False), json.dumps(r["body"]["tools"], ensure_ascii=False))
        for r in requests
    }
    assert len(prefixes) == 1, "system message and tools must be byte-identical in every request"
    tools = [tool["function"]["name"] for tool in requests[0]["body"]["tools"]]
    assert tools == sorted(tools) and {"zoom_to_location", "list_available_tools", "save_note"} <= set(tools)
    for request in requests:
        text = json.dumps(request["body"])
        assert users[0] not in text and users[1] not in text, "the model must never see user ids"
    # The per-run budget comes after the history, in the context message before the request.
    messages = of_message(log, second)[0]["body"]["messages"]
    assert messages[-2]["role"] == "user" and messages[-2]["content"].startswith(CONTEXT_HEADER)
    assert "at most 4 steps" in messages[-2]["content"] and "at most" not in messages[0]["content"]


@pytest.mark.asyncio
async def test_a_context_overflow_is_compacted_and_retried_then_avoided_by_calibration(
    small_orch, window_model, model_url
) -> None:
    # Measure this setup's prompt, then give the model a window that holds it even after the shrink of
    # a retry (RETRY_SHRINK of the window less the answer's reserve), but not with a long history.
    probe = unique("measure the prompt")
    await set_rules(
        model_url, {"name": "ok", "match": {"last_user": "measure the prompt|long history"}, "content": "ok"}
    )
    await run_events(small_orch.url, {"message": probe, "options": {"model": "probe-model"}})
    (measured,) = of_message(window_log(window_model), probe)
    # An earlier exchange of 11,000 characters (5,500 of the server's tokens) no longer fits.
    history = [
        {"role": "user", "content": "earlier question " + "about rivers " * 760},
        {"role": "assistant", "content": "earlier answer " + "on rivers " * 100},
    ]
    size = math.ceil(measured["tokens"] / RETRY_SHRINK) + 1024 + 200
    with window(window_model, size):
        message = unique("long history")
        events = await run_events(
            small_orch.url, {"message": message, "history": history, "options": {"model": "small-model"}}
        )
        assert names(events)[-1] == "done", [e.payload for e in events if e.name == "error"]
        assert content(events) == "ok"
        attempts = of_message(window_log(window_model), message)
        assert [a["status"] for a in attempts] == [400, 200], "one overflow, then a compacted retry"
        assert attempts[1]["tokens"] <= attempts[1]["window"] < attempts[0]["tokens"]
        sent = json.dumps(attempts[1]["body"]["messages"])
        assert "earlier question" not in sent, "the oldest exchange was dropped to fit"

        # The overflow taught the orchestrator this model's real token count: no overflow now.
        again = unique("long history")
        events = await run_events(
            small_orch.url, {"message": again, "history": history, "options": {"model": "small-model"}}
        )
        assert content(events) == "ok"
        assert [a["status"] for a in of_message(window_log(window_model), again)] == [200]


@pytest.mark.asyncio
async def test_a_repeated_call_is_not_run_again_and_the_next_step_answers(orch, model_url, raster) -> None:
    message = unique("repeat point")
    call = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "first", "match": {"last_user": "repeat point", "step": 0}, "tool_calls": [call]},
        {"name": "again", "match": {"last_user": "repeat point", "step": 1}, "tool_calls": [call]},
        {
            "name": "forced",
            "match": {"last_user": FORCED},
            "content": "Answered from the first result.",
        },
    )
    calls_before = len(httpx.get(raster.url + "/_control/calls").json())
    events = await run_events(orch.url, {"message": message})
    calls = httpx.get(raster.url + "/_control/calls").json()[calls_before:]
    assert [c["tool"] for c in calls] == ["query_raster_point"], "the repeat never reached the tool server"
    error = next(e.payload for e in events if e.name == "tool_error")
    first = next(e.payload for e in events if e.name == "tool_start")
    assert error["kind"] == "repeated_call"
    assert first["callId"] in error["error"] and "already called query_raster_point" in error["error"]
    value = json.loads(next(e.payload for e in events if e.name == "tool_result")["result"])["value"]
    done = terminal(events).proto.done
    assert done.content == "Answered from the first result." and done.finish_reason == "completed"
    requests = await model_requests(model_url, contains=message)
    assert len(requests) == 3
    seen = [m["content"] for m in requests[2]["body"]["messages"] if m["role"] == "tool"]
    assert json.loads(seen[0])["value"] == value and seen[1] == error["error"]
    assert requests[2]["body"]["messages"][-1] == {"role": "user", "content": FORCE_ANSWER}
    assert requests[2]["body"]["tools"] == requests[0]["body"]["tools"], "a forced answer keeps the prefix"


@pytest.mark.asyncio
async def test_a_rejected_call_made_again_unchanged_is_a_loop_too(orch, model_url) -> None:
    message = unique("repeat unknown")
    call = {"name": "get_elevation", "arguments": {"place": "Luxembourg"}}
    await set_rules(
        model_url,
        {"name": "first", "match": {"last_user": "repeat unknown", "step": 0}, "tool_calls": [call]},
        {"name": "again", "match": {"last_user": "repeat unknown", "step": 1}, "tool_calls": [call]},
        {"name": "forced", "match": {"last_user": FORCED}, "content": "No elevation tool by that name."},
    )
    events = await run_events(orch.url, {"message": message})
    assert [e.payload["kind"] for e in events if e.name == "tool_error"] == ["unknown_tool", "repeated_call"]
    assert content(events) == "No elevation tool by that name."
    assert terminal(events).proto.done.steps == 3


@pytest.mark.asyncio
async def test_at_the_step_budget_the_model_answers_with_the_same_tools_offered(orch, model_url) -> None:
    message = unique("budget run")
    await set_rules(
        model_url,
        {
            "name": "collections",
            "match": {"last_user": "budget run", "step": 0},
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
        {
            "name": "point",
            "match": {"last_user": "budget run", "step": 1},
            "tool_calls": [
                {"name": "query_raster_point", "arguments": {"collection_id": "pr-1999", "lon": 6.1, "lat": 49.6}}
            ],
        },
        {"name": "final", "match": {"last_user": FORCED}, "content": "Final answer from what I have."},
    )
    events = await run_events(orch.url, {"message": message, "options": {"maxSteps": 3}})
    done = terminal(events).proto.done
    assert done.finish_reason == "step_budget"
    assert (done.steps, done.tool_calls) == (3, 2)
    assert done.content == "Final answer from what I have."
    requests = await model_requests(model_url, contains=message)
    assert len(requests) == 3
    assert all(r["body"]["tools"] == requests[0]["body"]["tools"] for r in requests)
    assert [r["body"]["messages"][-1]["content"] == FORCE_ANSWER for r in requests] == [False, False, True]


@pytest.mark.asyncio
async def test_a_model_that_keeps_calling_tools_when_forced_gets_a_marked_summary(orch, model_url) -> None:
    message = unique("stubborn model")
    await set_rules(
        model_url,
        {
            "name": "always tools",
            "match": {"system": "stacgis"},
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
    )
    events = await run_events(orch.url, {"message": message, "options": {"maxSteps": 2}})
    done = terminal(events).proto.done
    assert done.finish_reason == "step_budget"
    assert names(events).count("tool_start") == 1, "calls on the forced step are never run"
    listing = next(e.payload for e in events if e.name == "tool_result")["result"]
    first_id = json.loads(listing)["collections"][0]["id"]
    assert done.content.startswith(SUMMARY_HEADER)
    assert "list_raster_collections" in done.content and first_id in done.content
    requests = await model_requests(model_url, contains=message)
    assert [m["content"] for m in requests[-1]["body"]["messages"][-2:]] == [FORCE_ANSWER, FORCE_ANSWER_AGAIN]
    assert len(requests) == 3, "one step, one forced answer, one second attempt"


@pytest.mark.asyncio
async def test_the_done_event_carries_the_grounding_of_the_answer(orch, model_url) -> None:
    message = unique("grounded stats")
    answer = (
        "1. Mean {{tool:get_raster_statistics:mean}} m, highest {{tool:get_raster_statistics:max}} m "
        "in 2021, and a made-up 1929 m."
    )
    await set_rules(
        model_url,
        # The draft is withdrawn once for its made-up number; written again, it stands, marked.
        {"name": "again", "match": {"last_user": UNGROUNDED_MARK}, "content": answer},
        {
            "name": "stats",
            "match": {"last_user": "grounded stats", "step": 0},
            "tool_calls": [
                {
                    "name": "get_raster_statistics",
                    "arguments": {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.6, 50.2]},
                }
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "grounded stats", "step": 1},
            "content": answer,
        },
    )
    events = await run_events(orch.url, {"message": message})
    assert [bool(e.payload.get("replace")) for e in events if e.name == "content"].count(True) == 1
    result = json.loads(next(e.payload for e in events if e.name == "tool_result")["result"])
    call_id = next(e.payload for e in events if e.name == "tool_start")["callId"]
    done = terminal(events).proto.done
    grounding = done.grounding
    by_value = {n.value: n for n in grounding.numbers}
    assert set(by_value) == {result["mean"], result["max"], 1929.0}, "list number and year are not checked"
    for value in (result["mean"], result["max"]):
        number = by_value[value]
        assert number.supported and number.call_id == call_id and number.tool_name == "get_raster_statistics"
        assert number.unit == "m" and number.match == "exact" and number.source_value == value
        assert done.content[number.start : number.end] == number.text
    assert not by_value[1929.0].supported and by_value[1929.0].text == "1929 m"
    assert (grounding.supported_count, grounding.unsupported_count) == (2, 1)
    assert content(events) == done.content and done.content.count("1929") == 1
    answers = [m for m in done.new_messages if m.role == "assistant" and not m.tool_calls]
    assert [m.content for m in answers] == [done.content], "the withdrawn draft is not kept in the history"


@pytest.mark.asyncio
async def test_an_answer_with_invented_numbers_is_withdrawn_and_the_model_looks_them_up(orch, model_url) -> None:
    message = unique("invented elevation")
    await set_rules(
        model_url,
        {
            "name": "lookup",
            "match": {"last_user": UNGROUNDED_MARK, "step": 0},
            "tool_calls": [
                {
                    "name": "get_raster_statistics",
                    "arguments": {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.6, 50.2]},
                }
            ],
        },
        {
            "name": "grounded",
            "match": {"last_user": UNGROUNDED_MARK, "step": 1},
            "content": "The mean elevation is {{tool:get_raster_statistics:mean}} m.",
        },
        {"name": "guess", "match": {"last_user": "invented elevation"}, "content": "It is about 1,929 m high."},
    )
    events = await run_events(orch.url, {"message": message})
    mean = json.loads(next(e.payload for e in events if e.name == "tool_result")["result"])["mean"]
    deltas = [e.payload for e in events if e.name == "content"]
    (withdrawn,) = [i for i, delta in enumerate(deltas) if delta.get("replace")]
    assert "".join(d["text"] for d in deltas[:withdrawn]) == "It is about 1,929 m high."
    assert not deltas[withdrawn].get("text"), "no earlier step wrote text, so nothing is kept"
    thinking = " ".join(e.payload["text"] for e in events if e.name == "thinking")
    assert "Draft withdrawn" in thinking and "1,929 m" in thinking
    done = terminal(events).proto.done
    assert done.content == content(events) == f"The mean elevation is {mean} m."
    assert (done.grounding.supported_count, done.grounding.unsupported_count) == (1, 0)
    assert done.steps == 3 and done.finish_reason == "completed"
    requests = await model_requests(model_url, contains=message)
    correction = requests[1]["body"]["messages"][-1]
    assert correction["role"] == "user" and "1,929 m" in correction["content"] and message in correction["content"]
    assert requests[1]["body"]["messages"][-2] == {"role": "assistant", "content": "It is about 1,929 m high."}
    assert requests[1]["body"]["tools"] == requests[0]["body"]["tools"], "the check keeps the prefix"
    assert all(m.content != "It is about 1,929 m high." for m in done.new_messages)


@pytest.mark.asyncio
async def test_dynamic_selection_offers_the_top_k_tools_per_step(
    model_server, model_url, redis_url, raster, vector, memory
) -> None:
    servers = {"raster": raster.mcp, "vector": vector.mcp, "memory": memory.mcp}
    env = orchestrator_env(
        model_server.url, redis_url, servers, tool_selection="dynamic", tool_top_k="2", llm_warmup="false"
    )
    message = unique("dynamic selection of statistics")
    await set_rules(model_url, {"name": "ok", "match": {"last_user": "dynamic selection"}, "content": "ok"})
    with orchestrator(env) as service:
        await run_events(service.url, {"message": message})
        (request,) = await model_requests(model_url, contains=message)
    offered = [tool["function"]["name"] for tool in request["body"]["tools"]]
    always = {"list_available_tools", "add_memory", "zoom_to_location", "generate_chart"}
    assert always <= set(offered)
    mcp_ranked = offered[:2]
    assert "get_raster_statistics" in mcp_ranked, offered
    assert "big_result" not in offered and "delete_collection" not in offered, "only the top 2 MCP tools"


@pytest.mark.asyncio
async def test_grounding_reads_map_acknowledgements_and_earlier_turns_results(orch, model_url) -> None:
    message = unique("in kilometres and on the map")
    history = [
        {"role": "user", "content": "mean elevation of Luxembourg?"},
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "call_earlier", "name": "get_raster_statistics", "arguments": {"collection_id": "x"}}],
        },
        {
            "role": "tool",
            "toolCallId": "call_earlier",
            "name": "get_raster_statistics",
            "content": json.dumps({"mean": 370.5, "units": "m"}),
        },
        {"role": "assistant", "content": "370.5 m."},
    ]
    await set_rules(
        model_url,
        {
            "name": "zoom",
            "match": {"last_user": "in kilometres", "step": 0},
            "tool_calls": [{"name": "zoom_to_location", "arguments": {"lat": 49.61, "lon": 6.13, "zoom": 9}}],
        },
        {
            "name": "answer",
            "match": {"last_user": "in kilometres", "step": 1},
            "content": "That is 0.37 km; the map is centred on 49.61, 6.13.",
        },
    )
    events = await run_events(orch.url, {"message": message, "history": history})
    frontend_call = next(e.payload for e in events if e.name == "frontend_tool")["callId"]
    numbers = {n.text: n for n in terminal(events).proto.done.grounding.numbers}
    assert set(numbers) == {"0.37 km", "49.61", "6.13"}
    assert numbers["0.37 km"].call_id == "call_earlier" and numbers["0.37 km"].match == "converted m->km"
    assert numbers["49.61"].call_id == frontend_call and numbers["6.13"].tool_name == "zoom_to_location"
    assert all(n.supported for n in numbers.values())


@pytest.mark.asyncio
async def test_the_context_window_is_read_from_api_show(model_server, window_model) -> None:
    show = httpx.post(model_server.url + "/api/show", json={"model": "scripted"}, timeout=10).json()
    expected = next(v for k, v in show["model_info"].items() if k.endswith(".context_length"))
    for url, model, window_size in [
        (model_server.url, "scripted", expected),
        (window_model.url, "any-model", 1_000_000),
        (model_server.url, "no-such-model", None),
    ]:
        provider = OllamaProvider(url, 10, 8192, None)
        try:
            assert await provider.context_length(model) == window_size, (url, model)
        finally:
            await provider.aclose()


@pytest.mark.asyncio
async def test_a_tool_server_that_comes_up_after_the_orchestrator_is_awaited_before_ready(
    model_server, model_url, redis_url, tool_folder
) -> None:
    port = free_port()
    servers = {"raster": f"http://127.0.0.1:{port}/mcp"}
    env = orchestrator_env(model_server.url, redis_url, servers, tool_listing_grace_seconds="120", llm_warmup="false")
    with orchestrator(env) as service:
        early = httpx.get(service.url + "/readyz", timeout=10)
        assert early.status_code == 503 and "raster" in early.json()["checks"]["tools"], early.text
        with tool_server("raster", tool_folder, port):
            deadline = time.monotonic() + 60
            while (ready := httpx.get(service.url + "/readyz", timeout=10)).status_code != 200:
                assert time.monotonic() < deadline, ready.text
                await asyncio.sleep(0.5)
            assert ready.json()["checks"]["tools"] == "ok"
            message = unique("late tools")
            await set_rules(model_url, {"name": "ok", "match": {"last_user": "late tools"}, "content": "ok"})
            await run_events(service.url, {"message": message})
            (request,) = await model_requests(model_url, contains=message)
            offered = {tool["function"]["name"] for tool in request["body"]["tools"]}
            assert "query_raster_point" in offered, "the first run has the late server's tools"


@pytest.mark.asyncio
async def test_a_misremembered_tool_name_runs_as_the_tool_its_arguments_fit_or_gets_the_nearest_name(
    orch, model_url
) -> None:
    # The 1.5B model called "get_raster_point" with a point's arguments: only query_raster_point
    # takes them and shares its words, so that is what runs.
    message = unique("misnamed tool")
    call = {"name": "get_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "wrong", "match": {"last_user": "misnamed tool", "step": 0}, "tool_calls": [call]},
        {"name": "answer", "match": {"last_user": "misnamed tool", "step": 1}, "content": "done"},
    )
    events = await run_events(orch.url, {"message": message})
    assert not [e for e in events if e.name == "tool_error"]
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["query_raster_point"]
    assert "get_raster_point is not a tool: running query_raster_point" in "".join(
        e.payload.get("text", "") for e in events if e.name == "thinking"
    )
    assert content(events) == "done"
    # Arguments no tool takes: an error naming the nearest tool, and the model calls it.
    message = unique("misspelt tool")
    typo = {"name": "query_raster_pont", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6, "zoom": 3}}
    right = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "wrong", "match": {"last_user": "misspelt tool", "step": 0}, "tool_calls": [typo]},
        {"name": "right", "match": {"last_user": "misspelt tool", "step": 1}, "tool_calls": [right]},
        {"name": "answer", "match": {"last_user": "misspelt tool", "step": 2}, "content": "done"},
    )
    events = await run_events(orch.url, {"message": message})
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "unknown_tool" and "Did you mean query_raster_point?" in error["error"]
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["query_raster_point"]


@pytest.mark.asyncio
async def test_a_forced_answer_with_invented_numbers_is_withdrawn_too(orch, model_url) -> None:
    message = unique("forced invention")
    call = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "first", "match": {"last_user": "forced invention", "step": 0}, "tool_calls": [call]},
        {"name": "again", "match": {"last_user": "forced invention", "step": 1}, "tool_calls": [call]},
        {
            "name": "honest",
            "match": {"last_user": FORCED, "any_message": UNGROUNDED_MARK},
            "content": "The tool gave the height at that point only.",
        },
        {"name": "invented", "match": {"last_user": FORCED}, "content": "It is 999 m high."},
    )
    events = await run_events(orch.url, {"message": message})
    done = terminal(events).proto.done
    assert done.content == "The tool gave the height at that point only." and done.finish_reason == "completed"
    assert sum(1 for e in events if e.name == "content" and e.payload.get("replace")) == 1
    assert done.grounding.unsupported_count == 0


@pytest.mark.asyncio
async def test_advice_after_a_failed_call_is_withdrawn_and_the_model_fixes_the_call(orch, model_url) -> None:
    message = unique("fix the call")
    bad = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": "oops", "lat": 49.6}}
    good = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "fixed", "match": {"last_user": FAILED_MARK, "step": 0}, "tool_calls": [good]},
        {
            "name": "answer",
            "match": {"last_user": FAILED_MARK, "step": 1},
            "content": "{{tool:query_raster_point:value}} m.",
        },
        {"name": "bad", "match": {"last_user": "fix the call", "step": 0}, "tool_calls": [bad]},
        {"name": "advice", "match": {"last_user": "fix the call", "step": 1}, "content": "You should give a number."},
    )
    events = await run_events(orch.url, {"message": message})
    value = json.loads(next(e.payload for e in events if e.name == "tool_result")["result"])["value"]
    done = terminal(events).proto.done
    assert done.content == f"{value} m." and done.grounding.unsupported_count == 0
    assert [e.payload["kind"] for e in events if e.name == "tool_error"] == ["invalid_arguments"]
    requests = await model_requests(model_url, contains=message)
    nudge = requests[2]["body"]["messages"][-1]["content"]
    assert "oops" in nudge and message in nudge, "the error and the question are repeated to the model"


@pytest.mark.asyncio
async def test_advice_naming_the_collection_to_use_is_followed_by_the_orchestrator(orch, model_url) -> None:
    # The 1.5B model, told "no collection 'pr-2000'", keeps writing "you should use pr-1999 instead".
    message = unique("advised fix")
    bad = {"name": "get_raster_statistics", "arguments": {"collection_id": "pr-2000", "bbox": [5, 49, 6, 50]}}
    await set_rules(
        model_url,
        {
            "name": "answer",
            "match": {"last_user": FAILED_MARK, "step": 1},
            "content": "{{tool:get_raster_statistics:mean}} mm.",
        },
        {"name": "bad", "match": {"last_user": "advised fix", "step": 0}, "tool_calls": [bad]},
        {
            "name": "advice",
            "match": {"last_user": "advised fix", "step": 1},
            "content": "You should use the pr-1999 collection instead.",
        },
    )
    events = await run_events(orch.url, {"message": message})
    starts = [e.payload for e in events if e.name == "tool_start"]
    assert [s["arguments"]["collection_id"] for s in starts] == ["pr-2000", "pr-1999"]
    mean = json.loads([e.payload for e in events if e.name == "tool_result"][-1]["result"])["mean"]
    done = terminal(events).proto.done
    assert done.content == f"{mean} mm." and "pr-1999 instead" not in done.content


@pytest.mark.asyncio
async def test_a_refusal_after_a_failed_call_stands(orch, model_url) -> None:
    message = unique("refuse after error")
    outside = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 36.8, "lat": -1.3}}
    refusal = "The Luxembourg elevation model does not cover Nairobi."
    await set_rules(
        model_url,
        {"name": "call", "match": {"last_user": "refuse after error", "step": 0}, "tool_calls": [outside]},
        {"name": "refuse", "match": {"last_user": "refuse after error", "step": 1}, "content": refusal},
    )
    events = await run_events(orch.url, {"message": message})
    assert terminal(events).proto.done.content == refusal
    assert not [e for e in events if e.name == "content" and e.payload.get("replace")]


LOADING = "the place names of cities (embedding 5,120 of 34,006)"


@pytest.fixture(scope="module")
def loading_orch(
    model_server: RunningService, redis_url: str, raster: ToolServer, memory: ToolServer, tool_folder: Path
) -> Iterator[RunningService]:
    """An orchestrator whose vector server is still loading its place names (a first start)."""
    with tool_server("vector", tool_folder, loading=LOADING) as loading_vector:
        servers = {"raster": raster.mcp, "vector": loading_vector.mcp, "memory": memory.mcp}
        with orchestrator(orchestrator_env(model_server.url, redis_url, servers)) as service:
            yield service


@pytest.mark.asyncio
async def test_a_call_failing_on_data_still_loading_is_answered_by_saying_so(loading_orch, model_url) -> None:
    # The 1.5B model, told the place names were still loading, answered "I can't help with that".
    search = {"name": "search_vector_features", "arguments": {"query": "Qxzyville"}}
    await set_rules(
        model_url,
        {"name": "search", "match": {"last_user": "still loading", "step": 0}, "tool_calls": [search]},
        {
            "name": "shrug",
            "match": {"last_user": "still loading shrug", "step": 1},
            "content": "I'm sorry, but I can't help with that.",
        },
        {
            "name": "relay",
            "match": {"last_user": "still loading relay", "step": 1},
            "content": "Qxzyville is not loaded yet: the place names are still loading.",
        },
    )
    shrugged = await run_events(loading_orch.url, {"message": unique("still loading shrug")})
    assert terminal(shrugged).proto.done.content == STILL_LOADING_ANSWER.format(what=LOADING)
    assert [e.payload["toolName"] for e in shrugged if e.name == "tool_error"] == ["search_vector_features"]
    # A draft that passes it on stands as written.
    relayed = await run_events(loading_orch.url, {"message": unique("still loading relay")})
    assert terminal(relayed).proto.done.content == "Qxzyville is not loaded yet: the place names are still loading."
    assert replaced(relayed) == 0


# Premises: the data an answer used must cover the question's variable and period (`premises`).
# The raster test server lists lux-dem (elevation), landsat-ndvi (NDVI) and pr-1999 (precipitation, 1999).


def replaced(events: list[Any]) -> int:
    return sum(1 for e in events if e.name == "content" and e.payload.get("replace"))


@pytest.mark.asyncio
async def test_an_answer_for_a_variable_no_collection_holds_becomes_a_refusal_naming_it(orch, model_url) -> None:
    message = unique("How much snow fell in Luxembourg?")
    call = {"name": "get_raster_statistics", "arguments": {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.5, 50.2]}}
    await call_then_answer(model_url, "snow fell", [call], "{{tool:get_raster_statistics:mean}} m.")
    events = await run_events(orch.url, {"message": message})
    done = terminal(events).proto.done
    assert done.finish_reason == "completed" and replaced(events) == 1
    assert "none of the catalogue's collections holds snow data" in done.content
    assert "elevation" in done.content and "precipitation" in done.content, "it says what the catalogue holds"
    assert "370.5" not in done.content and done.grounding.unsupported_count == 0
    assert [m.content for m in done.new_messages if m.role == "assistant" and m.content] == [done.content]
    # The model was told before it started.
    requests = await model_requests(model_url, contains=message)
    context = next(m["content"] for m in requests[0]["body"]["messages"] if CONTEXT_HEADER in (m["content"] or ""))
    assert "Catalogue check: none of the catalogue's collections holds snow data" in context


@pytest.mark.asyncio
async def test_an_answer_from_another_year_becomes_a_refusal_naming_the_year(orch, model_url) -> None:
    message = unique("What was the precipitation over the box 5, 49, 6, 50 in July 2005?")
    call = {"name": "get_raster_statistics", "arguments": {"collection_id": "pr-1999", "bbox": [5, 49, 6, 50]}}
    await call_then_answer(model_url, "July 2005", [call], "{{tool:get_raster_statistics:mean}} mm.")
    events = await run_events(orch.url, {"message": message})
    done = terminal(events).proto.done
    assert replaced(events) == 1
    assert "no precipitation data covers 2005 (pr-1999 covers 1999)" in done.content


@pytest.mark.asyncio
async def test_a_call_on_another_variables_collection_runs_on_the_one_that_holds_it(orch, model_url) -> None:
    message = unique("What is the NDVI at longitude -34.85, latitude -8.0?")
    wrong = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": -34.85, "lat": -8.0}}
    await set_rules(
        model_url,
        {"name": "wrong", "match": {"last_user": "What is the NDVI", "step": 0}, "tool_calls": [wrong]},
        {
            "name": "answer",
            "match": {"last_user": "What is the NDVI", "step": 1},
            "content": "The NDVI is {{tool:query_raster_point:value}}.",
        },
    )
    events = await run_events(orch.url, {"message": message})
    assert not [e for e in events if e.name == "tool_error"]
    assert payload_of(events, "tool_start")["arguments"]["collection_id"] == "landsat-ndvi"
    results = [json.loads(e.payload["result"]) for e in events if e.name == "tool_result"]
    assert [r["collection_id"] for r in results] == ["landsat-ndvi"], "lux-dem holds no NDVI: never asked"
    assert terminal(events).proto.done.content == f"The NDVI is {results[0]['value']}."


@pytest.mark.asyncio
async def test_a_call_on_another_variables_collection_is_refused_with_the_ones_that_hold_it(orch, model_url) -> None:
    # Two variables asked, each held by another collection: which one is meant is the model's to say.
    message = unique("What are the NDVI and the precipitation at longitude -34.85, latitude -8.0?")
    wrong = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": -34.85, "lat": -8.0}}
    right = {"name": "query_raster_point", "arguments": {"collection_id": "landsat-ndvi", "lon": -34.85, "lat": -8.0}}
    await set_rules(
        model_url,
        {"name": "wrong", "match": {"last_user": "What are the NDVI", "step": 0}, "tool_calls": [wrong]},
        {"name": "right", "match": {"last_user": "What are the NDVI", "step": 1}, "tool_calls": [right]},
        {
            "name": "answer",
            "match": {"last_user": "What are the NDVI", "step": 2},
            "content": "The NDVI is {{tool:query_raster_point:value}}.",
        },
    )
    events = await run_events(orch.url, {"message": message})
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "invalid_arguments"
    assert "'lux-dem' (Luxembourg elevation model) holds no ndvi or precipitation data" in error["error"]
    assert "landsat-ndvi" in error["error"] and "pr-1999" in error["error"]
    results = [json.loads(e.payload["result"]) for e in events if e.name == "tool_result"]
    assert [r["collection_id"] for r in results] == ["landsat-ndvi"], "the refused call never ran"


@pytest.mark.asyncio
async def test_a_refusal_that_names_the_gap_and_a_concept_answer_stand(orch, model_url) -> None:
    call = {"name": "get_raster_statistics", "arguments": {"collection_id": "lux-dem", "bbox": [2.2, 48.8, 2.5, 48.9]}}
    refusal = "There is no snow data in the catalogue, so I cannot say how much snow fell."
    await set_rules(
        model_url,
        {"name": "list", "match": {"last_user": "snow in Paris", "step": 0}, "tool_calls": [call]},
        {"name": "refuse", "match": {"last_user": "snow in Paris", "step": 1}, "content": refusal},
        {"name": "concept", "match": {"last_user": "What is snow"}, "content": "Snow is frozen precipitation."},
    )
    events = await run_events(orch.url, {"message": unique("How much snow in Paris?")})
    assert terminal(events).proto.done.content == refusal and replaced(events) == 0
    events = await run_events(orch.url, {"message": unique("What is snow?")})
    assert terminal(events).proto.done.content == "Snow is frozen precipitation." and replaced(events) == 0
    # Data asked for but the call failed, then advice: still the refusal (the catalogue has no snow).
    failing = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 200, "lat": 0}}
    await set_rules(
        model_url,
        {"name": "fail", "match": {"last_user": "snow in Oslo", "step": 0}, "tool_calls": [failing]},
        {"name": "advice", "match": {"last_user": "snow in Oslo"}, "content": "Use the land mask instead."},
    )
    events = await run_events(orch.url, {"message": unique("How much snow in Oslo?")})
    assert "none of the catalogue's collections holds snow data" in terminal(events).proto.done.content


@pytest.mark.asyncio
async def test_numbers_for_a_variable_no_collection_holds_become_a_refusal_without_a_data_call(orch, model_url) -> None:
    # The model looked Berlin up and gave its coordinates as "the PM2.5 level": grounded numbers,
    # but no tool result speaks of PM2.5 and no collection holds it.
    look_up = {"name": "search_vector_features", "arguments": {"query": "Berlin"}}
    coordinates = "The PM2.5 level in Berlin: {{tool:search_vector_features:features.0.lat}}, 13.405."
    await set_rules(
        model_url,
        {
            "name": "look",
            "match": {"last_user": "PM2.5 level in Berlin", "step": 0},
            "content": "Berlin lies at about 52.5 N, 13.4 E; looking it up.",
            "tool_calls": [look_up],
        },
        {"name": "answer", "match": {"last_user": "PM2.5 level in Berlin", "step": 1}, "content": coordinates},
        {"name": "concept", "match": {"last_user": "What is PM2.5"}, "content": "PM2.5 are particles under 2.5 µm."},
    )
    events = await run_events(orch.url, {"message": unique("What was the PM2.5 level in Berlin?")})
    answer = terminal(events).proto.done.content
    assert "none of the catalogue's collections holds pm2.5 data" in answer
    assert answer.startswith("I cannot answer") and "52.5" not in answer, "the refusal is the whole answer"
    # A concept question keeps its answer, numbers and all.
    events = await run_events(orch.url, {"message": unique("What is PM2.5?")})
    assert terminal(events).proto.done.content == "PM2.5 are particles under 2.5 µm."


@pytest.mark.asyncio
async def test_with_place_names_off_the_model_sees_no_place_argument_and_is_told_to_look_places_up(
    stack_env: dict[str, str], orch, model_url
) -> None:
    message = unique("Zoom to Nairobi")
    await set_rules(model_url, {"name": "answer", "match": {"last_user": "Zoom to Nairobi"}, "content": "Done."})
    with orchestrator({**stack_env, "ORCHESTRATOR_PLACE_NAMES": "false"}) as without:
        await run_events(without.url, {"message": message})
    await run_events(orch.url, {"message": message})
    hidden, shown = await model_requests(model_url, contains=message)

    def zoom_arguments(request: dict[str, Any]) -> set[str]:
        tool = next(t for t in request["body"]["tools"] if t["function"]["name"] == "zoom_to_location")
        return set(tool["function"]["parameters"]["properties"])

    assert "place" in zoom_arguments(shown) and zoom_arguments(hidden) == zoom_arguments(shown) - {"place"}
    system = [request["body"]["messages"][0]["content"] for request in (hidden, shown)]
    assert PLACE_BY_LOOKUP in system[0] and PLACE_BY_NAME not in system[0]
    assert PLACE_BY_NAME in system[1] and PLACE_BY_LOOKUP not in system[1]


@pytest.mark.asyncio
async def test_a_model_caught_repeating_itself_is_stopped_and_the_answer_keeps_one_copy(orch, model_url) -> None:
    first = "Zonal statistics summarise a raster inside a polygon."
    loop = " Border cells count by the share of the cell the polygon covers."
    # 200 copies at 40 characters every 20 ms: about 6 s of looping if nobody stops it.
    await set_rules(
        model_url,
        {
            "name": "loop",
            "match": {"last_user": "border cells looping"},
            "content": first + loop * 200,
            "chunk_chars": 40,
            "delay_ms": 20,
        },
    )
    events = await run_events(orch.url, {"message": unique("How are border cells counted? border cells looping")})
    done = terminal(events).proto.done
    assert done.content.startswith(first) and done.content.count("Border cells") == 1
    assert done.finish_reason == "completed"
    (request,) = await model_requests(model_url, contains="border cells looping")
    assert request["outcome"] == "client_disconnected", "the model's stream was closed, not read to the end"


@pytest.mark.asyncio
async def test_numbers_written_when_no_call_returned_anything_are_replaced_by_saying_so(orch, model_url) -> None:
    # Every call failed and the model, told once its number had no source, guessed again.
    message = unique("guess after errors")
    bad = {"name": "query_raster_point", "arguments": {"collection_id": "no-such-dem", "lon": 6.1, "lat": 49.6}}
    await set_rules(
        model_url,
        {"name": "again", "match": {"last_user": UNGROUNDED_MARK}, "content": "It is about 412 m."},
        {"name": "bad", "match": {"last_user": "guess after errors", "step": 0}, "tool_calls": [bad]},
        {"name": "guess", "match": {"last_user": "guess after errors", "step": 1}, "content": "It is 350 m."},
    )
    events = await run_events(orch.url, {"message": message})
    done = terminal(events).proto.done
    assert [e.payload["kind"] for e in events if e.name == "tool_error"]
    assert done.content == NO_DATA_ANSWER, [(e.name, e.payload) for e in events]
    assert done.grounding.unsupported_count == 0 and "412" not in done.content


@pytest.mark.asyncio
async def test_a_point_query_over_a_box_the_user_typed_runs_as_the_box_statistics(orch, model_url) -> None:
    message = unique("What is the highest elevation anywhere in the box 5.8, 49.5, 6.4, 50.1")
    sent = {"collection_id": "lux-dem", "bbox": [5.8, 49.5, 6.4, 50.1], "place": "box"}
    await call_then_answer(
        model_url,
        "highest elevation anywhere in the box",
        [{"name": "query_raster_point", "arguments": sent}],
        "The highest elevation there is {{tool:get_raster_statistics:max}} m.",
    )
    events = await run_events(orch.url, {"message": message})
    start = payload_of(events, "tool_start")
    assert start["toolName"] == "get_raster_statistics"
    assert start["arguments"]["bbox"] == [5.8, 49.5, 6.4, 50.1] and "place" not in start["arguments"]
    highest = json.loads(payload_of(events, "tool_result")["result"])["max"]
    done = terminal(events).proto.done
    assert done.content == f"The highest elevation there is {highest} m." and done.grounding.unsupported_count == 0


@pytest.mark.asyncio
async def test_a_refusal_that_quotes_numbers_no_tool_gave_becomes_the_plain_refusal(orch, model_url) -> None:
    # Seen in the eval: "you cannot query the PM2.5 level" beside Berlin's coordinates and the extent
    # a tool error quoted.
    outside = {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 20, "lat": 60}}
    draft = "You cannot query the PM2.5 level: Berlin at 13.3888° E, 52.5244° N is outside the data."
    await set_rules(
        model_url,
        {"name": "again", "match": {"last_user": UNGROUNDED_MARK}, "content": draft},
        {"name": "call", "match": {"last_user": "PM2.5 level in Berlin", "step": 0}, "tool_calls": [outside]},
        {"name": "refuse", "match": {"last_user": "PM2.5 level in Berlin", "step": 1}, "content": draft},
    )
    events = await run_events(orch.url, {"message": unique("What was the PM2.5 level in Berlin?")})
    done = terminal(events).proto.done
    assert done.content.startswith("I cannot answer") and "pm2.5" in done.content.lower(), done.content
    assert "52.5244" not in done.content and done.grounding.unsupported_count == 0
