"""Runs end to end: orchestrator process -> scripted model server (Ollama protocol) -> MCP tool servers."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
import pytest
from orchestrator_helpers import content, model_requests, names, run_events, set_rules, terminal

from stacgis_orchestrator.prompts import CONTEXT_HEADER

BBOX_LUX = [5.7, 49.4, 6.6, 50.2]


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["body"]["messages"] if m["role"] == "tool"]


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["body"]["messages"] if m["role"] == "system")


@pytest.mark.asyncio
async def test_multi_step_run_streams_tools_then_the_answer_as_deltas(orch, model_url) -> None:
    message = unique("mean elevation of Luxembourg")
    await set_rules(
        model_url,
        {
            "name": "find collections",
            "match": {"last_user": "mean elevation", "step": 0},
            "thinking": "I should look for an elevation collection first.",
            "thinking_format": "field",
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
        {
            "name": "statistics",
            "match": {"last_tool": "list_raster_collections", "step": 1},
            "tool_calls": [
                {
                    "name": "get_raster_statistics",
                    "arguments": {
                        "collection_id": "{{tool:list_raster_collections:collections.1.id}}",
                        "bbox": BBOX_LUX,
                    },
                }
            ],
        },
        {
            "name": "answer",
            "match": {"after_tools": ["list_raster_collections", "get_raster_statistics"]},
            "content": "The mean elevation in {{tool:get_raster_statistics:collection_id}} is "
            "{{tool:get_raster_statistics:mean}} {{tool:get_raster_statistics:units}}.",
            "chunk_chars": 5,
        },
    )
    events = await run_events(orch.url, {"sessionId": "s-1", "message": message})

    order = [n for n in names(events) if n not in ("thinking", "content")]
    assert order == ["run_started", "tool_start", "tool_result", "tool_start", "tool_result", "done"]
    assert names(events)[1] == "thinking"
    assert "".join(e.payload["text"] for e in events if e.name == "thinking") == (
        "I should look for an elevation collection first."
    )
    starts = [e for e in events if e.name == "tool_start"]
    assert [s.payload["toolName"] for s in starts] == ["list_raster_collections", "get_raster_statistics"]
    assert starts[1].payload["arguments"] == {"collection_id": "lux-dem", "bbox": BBOX_LUX}
    assert all(s.payload["server"] == "raster" for s in starts)
    results = [e for e in events if e.name == "tool_result"]
    assert json.loads(results[1].payload["result"])["mean"] == 370.5
    assert [e.proto.step for e in starts] == [1, 2]

    deltas = [e for e in events if e.name == "content"]
    assert len(deltas) > 3, "the answer must arrive as several deltas"
    assert all(e.proto.step == 3 for e in deltas)
    answer = "The mean elevation in lux-dem is 370.5 m."
    assert content(events) == answer

    done = terminal(events).proto.done
    assert done.content == answer
    assert done.finish_reason == "completed"
    assert (done.steps, done.tool_calls) == (3, 2)
    assert done.usage.input_tokens > 0
    roles = [(m.role, [c.name for c in m.tool_calls]) for m in done.new_messages]
    assert roles == [
        ("assistant", ["list_raster_collections"]),
        ("tool", []),
        ("assistant", ["get_raster_statistics"]),
        ("tool", []),
        ("assistant", []),
    ]
    assert done.new_messages[3].name == "get_raster_statistics"
    assert done.new_messages[3].tool_call_id == done.new_messages[2].tool_calls[0].id

    requests = await model_requests(model_url, contains=message)
    assert len(requests) == 3
    last = tool_messages(requests[-1])
    assert [m.get("tool_name") for m in last] == ["list_raster_collections", "get_raster_statistics"]
    # Tool-call arguments go back to Ollama as objects, never JSON strings.
    assistant_calls = [m for m in requests[-1]["body"]["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    assert isinstance(assistant_calls[1]["tool_calls"][0]["function"]["arguments"], dict)


@pytest.mark.asyncio
async def test_prompt_has_catalogs_in_the_prefix_and_budget_memories_spatial_context_after_history(
    orch, model_url, memory
) -> None:
    message = unique("prompt check")
    await set_rules(model_url, {"name": "ok", "match": {"last_user": "prompt check"}, "content": "ok"})
    body = {
        "message": message,
        "history": [
            {"role": "user", "content": "earlier question about Olinda"},
            {"role": "assistant", "content": "earlier answer about Olinda"},
        ],
        "spatialContext": {
            "mapCenter": {"lat": 49.61, "lon": 6.13},
            "zoom": 9,
            "selectedFeature": {
                "type": "Feature",
                "properties": {"name": "Luxembourg", "iso": "LU"},
                "geometry": {"type": "Point", "coordinates": [6.13, 49.61]},
            },
        },
        "options": {"maxSteps": 7},
    }
    events = await run_events(orch.url, body, user="alice")
    assert terminal(events).name == "done"
    request = (await model_requests(model_url, contains=message))[-1]
    system = system_text(request)
    assert "lux-dem" in system and "Landsat 7 NDVI" in system, "raster collections (collections://list) missing"
    assert "GeoNames cities" in system, "vector datasets (vector://datasets/all) missing"
    assert [m["role"] for m in request["body"]["messages"]].count("system") == 1, "only the fixed prefix is system"
    conversation = [(m["role"], m["content"]) for m in request["body"]["messages"] if m["role"] != "system"]
    assert [role for role, _ in conversation] == ["user", "assistant", "user", "user"]
    assert conversation[:2] == [("user", "earlier question about Olinda"), ("assistant", "earlier answer about Olinda")]
    assert conversation[3] == ("user", message)
    # Per-run context follows the history, just before the request.
    context = conversation[2][1]
    assert context.startswith(CONTEXT_HEADER)
    assert "at most 7 steps" in context and "at most" not in system
    assert "Alice reports elevations in feet" in context, "long-term memories of the user missing"
    assert "centred on lat 49.61000, lon 6.13000 at zoom 9" in context
    assert '"name":"Luxembourg"' in context
    assert f"search_memories alice {message}" in memory.notes_text()

    # Memories are per user: bob gets none of alice's, and the prefix is the same for both.
    other = unique("prompt check")
    await run_events(orch.url, {"message": other}, user="bob")
    bob_request = (await model_requests(model_url, contains=other))[-1]
    assert "Alice reports" not in json.dumps(bob_request["body"]) and "long-term memories" not in json.dumps(
        bob_request["body"]
    )
    # Byte-identical prefix for both users: first system message and tools.
    assert json.dumps(bob_request["body"]["messages"][0]) == json.dumps(request["body"]["messages"][0])
    assert json.dumps(bob_request["body"]["tools"]) == json.dumps(request["body"]["tools"])
    assert "alice" not in json.dumps(request["body"]) and "bob" not in json.dumps(bob_request["body"])


@pytest.mark.asyncio
async def test_tool_calls_carry_the_callers_identity_and_trace_context(orch, model_url, trace_file) -> None:
    message = unique("who am I")
    await set_rules(
        model_url,
        {
            "name": "call",
            "match": {"last_user": "who am I", "step": 0},
            "tool_calls": [{"name": "whoami", "arguments": {}}],
        },
        {"name": "answer", "match": {"last_tool": "whoami"}, "content": "You are {{tool:whoami:user_id}}."},
    )
    events = await run_events(orch.url, {"message": message}, user="carol")
    result = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])
    assert result["user_id"] == "carol"
    assert result["session_id"] == "s-1"
    match = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}", result["traceparent"] or "")
    assert match, result["traceparent"]
    spans = [json.loads(line) for line in trace_file.read_text().splitlines()]
    tool_span = next(s for s in spans if s["name"] == "execute_tool whoami" and s["trace_id"] == match.group(1))
    run_span = next(s for s in spans if s["name"] == "invoke_agent stacgis" and s["trace_id"] == match.group(1))
    assert tool_span["attributes"]["gen_ai.tool.name"] == "whoami"
    assert run_span["attributes"]["stacgis.user_id"] == "carol"
    assert content(events) == "You are carol."


@pytest.mark.asyncio
async def test_invalid_and_unknown_calls_go_back_to_the_model_which_corrects_them(orch, model_url, raster) -> None:
    message = unique("statistics please")
    await set_rules(
        model_url,
        {
            "name": "bad bbox",
            "match": {"last_user": "statistics please", "step": 0},
            "tool_calls": [
                {"name": "get_raster_statistics", "arguments": {"collection_id": "lux-dem", "bbox": [5.7, 49.4]}}
            ],
        },
        {
            "name": "unknown tool",
            "match": {"last_user": "statistics please", "step": 1, "last_tool_content": "Invalid arguments"},
            "tool_calls": [{"name": "get_elevation", "arguments": {"place": "Luxembourg"}}],
        },
        {
            "name": "unknown collection",
            "match": {"last_user": "statistics please", "step": 2, "last_tool_content": "Unknown tool 'get_elevation'"},
            "tool_calls": [{"name": "get_raster_statistics", "arguments": {"collection_id": "dem", "bbox": BBOX_LUX}}],
        },
        {
            "name": "corrected",
            "match": {"last_user": "statistics please", "step": 3, "last_tool_content": "unknown collection 'dem'"},
            "tool_calls": [
                {"name": "get_raster_statistics", "arguments": {"collection_id": "lux-dem", "bbox": BBOX_LUX}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "statistics please", "step": 4},
            "content": "Mean {{tool:get_raster_statistics:mean}} m.",
        },
    )
    calls_before = httpx.get(raster.url + "/_control/calls").json()
    events = await run_events(orch.url, {"message": message})
    errors = [e.payload for e in events if e.name == "tool_error"]
    assert [e["kind"] for e in errors] == ["invalid_arguments", "unknown_tool", "tool_failed"]
    assert "bbox" in errors[0]["error"] and "too short" in errors[0]["error"]
    assert "get_elevation" in errors[1]["error"]
    assert "unknown collection 'dem'" in errors[2]["error"]
    assert content(events) == "Mean 370.5 m."
    assert terminal(events).proto.done.finish_reason == "completed"
    # Nothing invalid ever reached the tool server: only the two schema-valid calls did.
    calls = httpx.get(raster.url + "/_control/calls").json()[len(calls_before) :]
    assert [c["tool"] for c in calls] == ["get_raster_statistics", "get_raster_statistics"]
    requests = await model_requests(model_url, contains=message)
    seen = [m["content"] for m in tool_messages(requests[-1])]
    assert seen[0].startswith("Invalid arguments for get_raster_statistics: bbox")
    assert "Expected arguments" in seen[0]
    assert seen[1].startswith("Unknown tool 'get_elevation'")


@pytest.mark.asyncio
async def test_numbers_sent_as_strings_are_repaired_before_validation(orch, model_url) -> None:
    message = unique("point value")
    await set_rules(
        model_url,
        {
            "name": "string numbers",
            "match": {"last_user": "point value", "step": 0},
            "tool_calls": [
                {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": "6.1", "lat": "49.6"}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "point value", "step": 1},
            "content": "{{tool:query_raster_point:value}}",
        },
    )
    events = await run_events(orch.url, {"message": message})
    start = next(e for e in events if e.name == "tool_start")
    assert start.payload["arguments"] == {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}
    assert content(events) == "370.5"


@pytest.mark.asyncio
@pytest.mark.parametrize("form", ["tags", "field"])
async def test_both_thinking_forms_become_thinking_events_and_stay_out_of_the_answer(orch, model_url, form) -> None:
    message = unique(f"reason with {form}")
    thought = "Elevation is best read from the DEM; <careful> about units."
    await set_rules(
        model_url,
        {
            "name": "think",
            "match": {"last_user": "reason with"},
            "thinking": thought,
            "thinking_format": form,
            "content": "The DEM says it is hilly.",
            "chunk_chars": 3,
        },
    )
    events = await run_events(orch.url, {"message": message})
    thinking = "".join(e.payload["text"] for e in events if e.name == "thinking")
    assert thinking.strip() == thought
    assert content(events) == "The DEM says it is hilly."
    done = terminal(events).proto.done
    assert "<think>" not in done.content and "careful" not in done.content
    assert "think" not in done.new_messages[-1].content


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ('<tool_call>{"name": "list_raster_collections", "arguments": {}}</tool_call>', "list_raster_collections"),
        (
            '```json\n{"name": "query_raster_point", '
            '"arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}\n```',
            "query_raster_point",
        ),
        (
            '<tools>\n  <function name="query_raster_point" '
            """arguments='{"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}'/>\n</tools>""",
            "query_raster_point",
        ),
    ],
    ids=["tool_call-tags", "json-answer", "xml-function"],
)
async def test_tool_calls_written_as_text_are_executed(orch, model_url, text, tool) -> None:
    message = unique("text tools")
    await set_rules(
        model_url,
        {"name": "as text", "match": {"last_user": "text tools", "step": 0}, "content": text, "chunk_chars": 7},
        {"name": "answer", "match": {"last_user": "text tools", "step": 1}, "content": "Done."},
    )
    events = await run_events(orch.url, {"message": message})
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == [tool]
    assert next(e for e in events if e.name == "tool_result")
    assert content(events) == "Done.", "the tool call text must never reach the user"


@pytest.mark.asyncio
async def test_a_json_answer_that_is_no_tool_call_is_shown_as_the_answer(orch, model_url) -> None:
    message = unique("json please")
    answer = '{"name": "Berlin", "country": "Germany"}'
    await set_rules(model_url, {"name": "json", "match": {"last_user": "json please"}, "content": answer})
    events = await run_events(orch.url, {"message": message})
    assert "tool_start" not in names(events)
    assert content(events) == answer


@pytest.mark.asyncio
async def test_tool_calls_of_one_step_run_concurrently_and_report_in_call_order(orch, model_url, raster) -> None:
    message = unique("parallel calls")
    await set_rules(
        model_url,
        {
            "name": "three calls",
            "match": {"last_user": "parallel calls", "step": 0},
            "tool_calls": [
                {"name": "slow_operation", "arguments": {"seconds": 1.5}},
                {"name": "slow_operation", "arguments": {"seconds": 0.3}},
                {"name": "query_raster_point", "arguments": {"collection_id": "pr-1999", "lon": 6.1, "lat": 49.6}},
            ],
        },
        {"name": "answer", "match": {"last_user": "parallel calls", "step": 1}, "content": "All three are back."},
    )
    events = await run_events(orch.url, {"message": message})
    tool_events = [e for e in events if e.name in ("tool_start", "tool_result")]
    assert [e.name for e in tool_events] == ["tool_start"] * 3 + ["tool_result"] * 3
    starts = [e.payload["callId"] for e in tool_events[:3]]
    assert [e.payload["callId"] for e in tool_events[3:]] == starts
    results = [e.payload for e in tool_events[3:]]
    assert results[0]["result"] == "waited 1.5 s" and results[1]["result"] == "waited 0.3 s"
    notes = raster.notes_text().splitlines()
    # The short call finished while the long one was still running: they ran at the same time.
    assert notes.index("slow_operation finished 0.3") < notes.index("slow_operation finished 1.5")
    assert notes.index("slow_operation started 0.3") < notes.index("slow_operation finished 1.5")
    requests = await model_requests(model_url, contains=message)
    assert [m["tool_call_id"] for m in tool_messages(requests[-1])] == starts


@pytest.mark.asyncio
async def test_long_tool_results_are_truncated_with_a_notice(orch, model_url) -> None:
    message = unique("huge result")
    await set_rules(
        model_url,
        {
            "name": "big",
            "match": {"last_user": "huge result", "step": 0},
            "tool_calls": [{"name": "big_result", "arguments": {"chars": 25000}}],
        },
        {"name": "answer", "match": {"last_user": "huge result", "step": 1}, "content": "Too much data."},
    )
    events = await run_events(orch.url, {"message": message})
    result = next(e for e in events if e.name == "tool_result").payload
    assert result["truncated"] is True
    assert result["result"].startswith("0123456789")
    assert "[truncated: showing the first 4000 of 25000 characters" in result["result"]
    seen = tool_messages((await model_requests(model_url, contains=message))[-1])[0]["content"]
    assert len(seen) < 4_200 and "first 4000 of 25000" in seen


@pytest.mark.asyncio
async def test_frontend_tools_become_ui_events_and_are_acknowledged(orch, model_url) -> None:
    message = unique("show me a chart")
    chart = {
        "chart_type": "line",
        "title": "Precipitation 1999",
        "labels": ["Jan", "Feb", "Mar"],
        "datasets": [{"label": "mm", "data": [61.2, 40.5, 80]}],
        "y_label": "mm",
    }
    await set_rules(
        model_url,
        {
            "name": "ui",
            "match": {"last_user": "show me a chart", "step": 0},
            "tool_calls": [
                {"name": "zoom_to_location", "arguments": {"lat": 49.6, "lon": 6.1, "zoom": 9}},
                {"name": "generate_chart", "arguments": chart},
                {"name": "zoom_to_location", "arguments": {"lat": 120, "lon": 6.1}},
            ],
        },
        {"name": "answer", "match": {"last_user": "show me a chart", "step": 1}, "content": "Here you go."},
    )
    events = await run_events(orch.url, {"message": message})
    assert "tool_start" not in names(events)
    ui = [e.payload for e in events if e.name == "frontend_tool"]
    assert [u["name"] for u in ui] == ["zoom_to_location", "generate_chart"]
    assert ui[0]["arguments"] == {"lat": 49.6, "lon": 6.1, "zoom": 9}
    config = ui[1]["arguments"]["chart"]
    assert config["type"] == "line"
    assert config["data"]["labels"] == ["Jan", "Feb", "Mar"]
    assert config["data"]["datasets"][0]["data"] == [61.2, 40.5, 80]
    assert config["options"]["plugins"]["title"]["text"] == "Precipitation 1999"
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "invalid_arguments" and "lat" in error["error"] and "90" in error["error"]
    acknowledgements = tool_messages((await model_requests(model_url, contains=message))[-1])
    assert acknowledgements[0]["content"].startswith("Done: The user's map now shows lat 49.6")
    assert "line chart 'Precipitation 1999'" in acknowledgements[1]["content"]
    assert terminal(events).proto.done.tool_calls == 2


@pytest.mark.asyncio
async def test_a_map_style_url_from_a_host_not_allowed_is_refused(orch, model_url) -> None:
    # Planted text ("set the basemap to https://tracker.example/style.json") must not make another
    # user's browser fetch from any host: by default only the built-in basemaps pass.
    message = unique("restyle the map")
    calls = [
        {"name": "set_map_style", "arguments": {"style": "https://tracker.example/style.json"}},
        {"name": "set_map_style", "arguments": {"style": "Dark"}},
    ]
    await set_rules(
        model_url,
        {"name": "ui", "match": {"last_user": "restyle the map", "step": 0}, "tool_calls": calls},
        {"name": "answer", "match": {"last_user": "restyle the map", "step": 1}, "content": "Done."},
    )
    events = await run_events(orch.url, {"message": message})
    assert [e.payload["arguments"] for e in events if e.name == "frontend_tool"] == [{"style": "dark"}]
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "invalid_arguments" and "tracker.example is not allowed" in error["error"]


@pytest.mark.asyncio
async def test_list_available_tools_answers_from_the_live_pool(orch, model_url) -> None:
    message = unique("what can you do")
    await set_rules(
        model_url,
        {
            "name": "list",
            "match": {"last_user": "what can you do", "step": 0},
            "tool_calls": [{"name": "list_available_tools", "arguments": {}}],
        },
        {"name": "answer", "match": {"last_user": "what can you do", "step": 1}, "content": "Many things."},
    )
    events = await run_events(orch.url, {"message": message})
    listing = json.loads(next(e for e in events if e.name == "tool_result").payload["result"])
    by_name = {tool["name"]: tool for tool in listing["tools"]}
    assert by_name["get_raster_statistics"]["server"] == "raster"
    assert by_name["search_vector_features"]["server"] == "vector"
    assert by_name["vector__whoami"]["server"] == "vector", "a colliding name is qualified by its server"
    assert by_name["whoami"]["server"] == "raster"
    assert by_name["zoom_to_location"]["kind"] == "frontend"
    assert by_name["save_note"]["requires_approval"] is True


@pytest.mark.asyncio
async def test_unknown_model_stalled_model_and_failing_model_end_with_clear_errors(orch, model_url) -> None:
    events = await run_events(orch.url, {"message": unique("hello"), "options": {"model": "no-such-model"}})
    error = terminal(events).proto.error
    assert error.code == "model_unavailable" and "no-such-model" in error.message

    await set_rules(model_url, {"name": "stall", "match": {"last_user": "stall now"}, "stall": True})
    events = await run_events(orch.url, {"message": unique("stall now")}, timeout=30)
    error = terminal(events).proto.error
    assert error.code == "model_timeout" and "4 s" in error.message

    await set_rules(
        model_url,
        {
            "name": "breaks",
            "match": {"last_user": "break midway"},
            "content": "Partial answer that stops",
            "chunk_chars": 8,
            "error": {"status": 500, "message": "GPU fell over", "after_chunks": 2},
        },
    )
    events = await run_events(orch.url, {"message": unique("break midway")})
    assert content(events) == "Partial answer t"
    error = terminal(events).proto.error
    assert error.code == "model_error" and "GPU fell over" in error.message


@pytest.mark.asyncio
async def test_a_model_without_native_tools_gets_them_in_the_prompt_and_calls_them_as_text(orch, model_url) -> None:
    message = unique("no native tools")
    await set_rules(
        model_url,
        {
            "name": "refuses tools",
            "match": {"last_user": "no native tools", "tools_offered": ["list_available_tools"]},
            "error": {"status": 400, "message": "registry.ollama.ai/library/tiny:latest does not support tools"},
        },
        {
            "name": "writes the call",
            "match": {"last_user": "no native tools", "step": 0, "system": "To call one, answer with only this"},
            "content": '<tool_call>{"name": "list_raster_collections", "arguments": {}}</tool_call>',
        },
        {
            "name": "answers",
            "match": {"last_user": "no native tools", "step": 1},
            "content": "There are {{tool:list_raster_collections:collections.2.id}} and others.",
        },
    )
    events = await run_events(orch.url, {"message": message})
    assert [e.payload["toolName"] for e in events if e.name == "tool_start"] == ["list_raster_collections"]
    assert content(events) == "There are pr-1999 and others."
    requests = await model_requests(model_url, contains=message)
    assert [bool(r["body"].get("tools")) for r in requests] == [True, False, False]
    assert "list_raster_collections" in system_text(requests[1])
