"""The loop's building blocks, in process: stream filtering, text tool calls, schema sanitising,
argument validation, memory, the context guard, the breaker, charts and prompt pieces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from stacgis_orchestrator.context_window import estimate_tokens, fit_to_context
from stacgis_orchestrator.llm.errors import model_http_error
from stacgis_orchestrator.llm.repetition import RepetitionGuard, without_repetition
from stacgis_orchestrator.llm.schema import sanitize_schema, schema_problems
from stacgis_orchestrator.llm.stream_filter import ContentFilter
from stacgis_orchestrator.llm.text_tools import parse_json_answer, parse_tool_blocks
from stacgis_orchestrator.llm.types import Message, ModelError, TextDelta, ThinkingDelta, ToolCall
from stacgis_orchestrator.memory import ConversationMemory, consistent_history
from stacgis_orchestrator.prompts import parse_memories, spatial_context_message, summarize_resource
from stacgis_orchestrator.questions import is_concept_question, memory_note
from stacgis_orchestrator.tools.breaker import CircuitBreaker
from stacgis_orchestrator.tools.frontend import FrontendToolError, chart_config
from stacgis_orchestrator.tools.periods import compared_periods, settle_period
from stacgis_orchestrator.tools.places import remembered_place
from stacgis_orchestrator.tools.validation import repair_arguments, validate_arguments


def run_filter(chunks: list[str], detect: bool = False) -> tuple[str, str, ContentFilter]:
    content_filter = ContentFilter(detect_text_tools=detect)
    out: list[ThinkingDelta | TextDelta] = []
    for chunk in chunks:
        out += content_filter.feed(chunk)
    out += content_filter.finish()
    visible = "".join(d.text for d in out if isinstance(d, TextDelta))
    thinking = "".join(d.text for d in out if isinstance(d, ThinkingDelta))
    return visible, thinking, content_filter


def chunks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 64])
def test_think_tags_split_across_chunks_become_thinking(size: int) -> None:
    text = "<think>Read the DEM; x < y.</think>\n\nThe answer is <b>42</b>."
    visible, thinking, _ = run_filter(chunks_of(text, size))
    assert thinking == "Read the DEM; x < y."
    assert visible == "The answer is <b>42</b>."


def test_thought_tags_and_an_unterminated_think_block_are_thinking() -> None:
    assert run_filter(["<thought>plan</thought>Answer"])[:2] == ("Answer", "plan")
    assert run_filter(["<think>cut off mid-thou", "ght"])[:2] == ("", "cut off mid-thought")


@pytest.mark.parametrize("size", [1, 4, 100])
def test_tool_call_blocks_are_hidden_and_parsed(size: int) -> None:
    text = 'Let me check. <tool_call>{"name": "get_raster_info", "arguments": {"collection_id": "lux-dem"}}</tool_call>'
    visible, _, content_filter = run_filter(chunks_of(text, size), detect=True)
    assert visible == "Let me check. "
    calls = parse_tool_blocks(content_filter.tool_blocks)
    assert [(c.name, c.arguments) for c in calls] == [("get_raster_info", {"collection_id": "lux-dem"})]


def test_json_looking_answers_are_held_until_the_end() -> None:
    visible, _, content_filter = run_filter(
        ['  {"name": "query_raster_point", ', '"arguments": {"lon": 1, "lat": 2}}'], True
    )
    assert visible == ""
    calls = parse_json_answer(content_filter.held_text(), {"query_raster_point"})
    assert calls[0].arguments == {"lon": 1, "lat": 2}
    # Without tool detection the same text is just the answer.
    assert run_filter(['{"a": 1}'])[0] == '{"a": 1}'


@pytest.mark.parametrize(
    "text",
    [
        '[TOOL_CALLS] [{"name": "list_raster_collections", "arguments": {}}]',
        '{"function": {"name": "list_raster_collections", "arguments": "{}"}}',
        '[{"name": "list_raster_collections", "parameters": {}}]',
        # Doubled braces, as the embedded model wrote a zoom_to_location call.
        '{{"name": "list_raster_collections", "arguments": {"bbox": [1, 2, 3, 4]}}}',
        # ... and with a closing brace too many (seen in an eval run: "Take the map to Berlin").
        '{{"name": "list_raster_collections", "arguments": {"bbox": [1, 2, 3, 4]}}}}',
    ],
)
def test_other_text_tool_call_dialects_are_understood(text: str) -> None:
    calls = parse_json_answer(text, {"list_raster_collections"})
    assert [c.name for c in calls] == ["list_raster_collections"]


def test_a_call_in_tools_tags_with_a_bracket_too_many_is_still_a_call() -> None:
    # As the embedded model wrote it (eval run 23, jacksboro-min-box): JSON inside <tools>, with the
    # polygon's coordinates closed by one bracket too many. Unparsed, the whole call was the answer.
    written = (
        '<tools>\n{"name": "compute_zonal_stats", "arguments": {"collection_id": "jacksboro-dem", '
        '"geometry": {"type": "Polygon", "coordinates": [[-84.35, 36.5], [-84.15, 36.5], [-84.15, 36.7], '
        '[-84.35, 36.7], [-84.35, 36.5]]], "bbox": [-84.35, 36.5, -84.15, 36.7]}}\n</tools>'
    )
    visible, _, content_filter = run_filter(chunks_of(written, 7), detect=True)
    assert visible == ""
    calls = parse_json_answer(content_filter.held_text(), {"compute_zonal_stats"})
    assert [c.name for c in calls] == ["compute_zonal_stats"]
    assert calls[0].arguments["collection_id"] == "jacksboro-dem"
    assert calls[0].arguments["geometry"]["coordinates"][0] == [-84.35, 36.5]
    assert calls[0].arguments_error is None
    # A missing closing brace at the end, the other slip seen from small models.
    missing = '{"name": "get_raster_info", "arguments": {"collection_id": "lux-dem"}'
    assert [c.arguments for c in parse_json_answer(missing, {"get_raster_info"})] == [{"collection_id": "lux-dem"}]
    # Repair never turns prose or an unknown name into a call.
    assert parse_json_answer('{"name": "Jacksboro", "arguments": {"x": [1, 2]]}', {"compute_zonal_stats"}) == []
    assert parse_json_answer("<tools>The lowest elevation is 256 m.</tools>", {"compute_zonal_stats"}) == []


def test_json_with_an_unknown_name_is_not_a_tool_call_and_bad_arguments_are_flagged() -> None:
    assert parse_json_answer('{"name": "Berlin", "arguments": {}}', {"list_raster_collections"}) == []
    calls = parse_tool_blocks(['{"name": "get_raster_info", "arguments": "{broken"}', "not json at all"])
    assert calls[0].arguments_error and "not valid JSON" in calls[0].arguments_error
    assert calls[1].arguments_error and calls[1].name == "(unparsable)"


PYDANTIC_STYLE = {
    "$defs": {
        "Point": {
            "title": "Point",
            "type": "object",
            "properties": {"lon": {"title": "Lon", "type": "number"}, "lat": {"title": "Lat", "type": "number"}},
            "required": ["lon", "lat"],
        }
    },
    "title": "toolArguments",
    "type": "object",
    "properties": {
        "collection_id": {"title": "Collection Id", "type": "string"},
        "band": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "Band"},
        "where": {"$ref": "#/$defs/Point"},
        "area": {
            "anyOf": [{"type": "array", "items": {"type": "number"}}, {"type": "object"}, {"type": "null"}],
            "description": "bbox or GeoJSON",
        },
        "tags": {"type": ["string", "null"]},
    },
    "required": ["collection_id"],
    "x_requires_approval": True,
}


def test_schema_sanitising_removes_what_ollama_rejects_and_keeps_the_meaning() -> None:
    clean = sanitize_schema(PYDANTIC_STYLE)
    assert schema_problems(clean) == []
    assert clean["properties"]["band"] == {"type": "integer"}
    assert clean["properties"]["where"]["properties"]["lat"] == {"type": "number"}
    assert clean["properties"]["where"]["required"] == ["lon", "lat"]
    assert clean["properties"]["area"]["type"] == "array"
    assert "may also be: object" in clean["properties"]["area"]["description"]
    assert clean["properties"]["tags"]["type"] == "string"
    assert "x_requires_approval" not in clean and "$defs" not in clean
    assert PYDANTIC_STYLE["properties"]["band"]["anyOf"], "the original schema is left untouched"
    empty = sanitize_schema({"type": "object", "properties": {}, "required": [], "title": "x"})
    assert empty == {"type": "object", "properties": {}}


def test_arguments_are_repaired_then_validated_with_named_problems() -> None:
    schema = {
        "type": "object",
        "properties": {
            "lat": {"type": "number", "minimum": -90, "maximum": 90},
            "zoom": {"type": "integer"},
            "flag": {"type": "boolean"},
            "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4},
            "band": {"type": "integer"},
        },
        "required": ["lat"],
    }
    repaired = repair_arguments(
        {"lat": "45.5", "zoom": "7", "flag": "true", "bbox": "[1, 2, 3, 4]", "band": None}, schema
    )
    assert repaired == {"lat": 45.5, "zoom": 7, "flag": True, "bbox": [1, 2, 3, 4]}
    assert validate_arguments(repaired, schema) == []
    problems = validate_arguments({"lat": 95, "bbox": [1, 2]}, schema)
    assert problems == ["bbox: [1, 2] is too short", "lat: 95 is greater than the maximum of 90"]
    assert validate_arguments({}, schema) == ["arguments: 'lat' is required"]
    # Optional arguments left empty (the 1.5B model's visualize_collection call, eval run 18) are absent;
    # a required one stays, and its problem is named.
    schema["properties"]["datetime"] = {"type": "string", "pattern": "^[0-9TZ:/.-]+$"}
    assert repair_arguments({"lat": 1, "datetime": "", "zoom": " "}, schema) == {"lat": 1}
    assert validate_arguments(repair_arguments({"lat": ""}, schema), schema) == ["lat: '' is not of type 'number'"]


def filled_memory(window: int) -> ConversationMemory:
    memory = ConversationMemory(window=window, max_tool_result_chars=20)
    memory.add_system("system prompt")
    memory.add_user("first")
    memory.add_assistant("", [ToolCall(id="c1", name="get_raster_info", arguments={"collection_id": "lux-dem"})])
    _, truncated = memory.add_tool_result("c1", "get_raster_info", "x" * 50)
    assert truncated
    memory.add_user("second")
    memory.add_assistant("answer")
    return memory


def test_memory_window_slides_without_separating_a_call_from_its_result() -> None:
    wide = filled_memory(window=4)
    assert [m.role for m in wide.get_messages()] == ["system", "assistant", "tool", "user", "assistant"]
    narrow = filled_memory(window=3)
    # The window would start at the result; it goes without its call, so the result goes too.
    assert [m.role for m in narrow.get_messages()] == ["system", "user", "assistant"]
    tool = filled_memory(window=10).get_messages()[3]
    assert tool.content.startswith("x" * 20) and "first 20 of 50 characters" in tool.content


def test_memory_serialises_and_restores() -> None:
    memory = filled_memory(window=10)
    restored = ConversationMemory.from_dict(json.loads(json.dumps(memory.to_dict())))
    assert restored.get_messages() == memory.get_messages()


def test_history_with_unanswered_calls_or_orphan_results_is_made_consistent() -> None:
    history = [
        Message("user", "q"),
        Message("assistant", "", [ToolCall("a", "t", {}), ToolCall("b", "t", {})]),
        Message("tool", "ra", tool_call_id="a", name="t"),
        Message("tool", "orphan", tool_call_id="zzz", name="t"),
        Message("assistant", "", [ToolCall("c", "t", {})]),
        Message("assistant", "done"),
    ]
    cleaned = consistent_history(history)
    assert [(m.role, [c.id for c in m.tool_calls], m.content) for m in cleaned] == [
        ("user", [], "q"),
        ("assistant", ["a"], ""),
        ("tool", [], "ra"),
        ("assistant", [], "done"),
    ]


def conversation(results: int, size: int) -> list[Message]:
    messages = [Message("system", "S" * 400), Message("user", "old question")]
    for index in range(results):
        messages.append(Message("assistant", "", [ToolCall(f"c{index}", "t", {})]))
        messages.append(Message("tool", "R" * size, tool_call_id=f"c{index}", name="t"))
    messages.append(Message("assistant", "old answer"))
    messages.append(Message("user", "new question"))
    return messages


def test_context_guard_compacts_oldest_results_first_and_keeps_pairs() -> None:
    messages = conversation(results=4, size=3000)
    assert estimate_tokens(messages, []) > 2500
    fitted, changed = fit_to_context(messages, [], num_ctx=3000, reserve_output=500, protect_from=len(messages) - 1)
    assert changed >= 1 and estimate_tokens(fitted, []) <= 2500
    tool_contents = [m.content for m in fitted if m.role == "tool"]
    assert tool_contents[0].startswith("R" * 400 + "\n[truncated: showing the first 400 of 3000"), (
        "oldest result shortened to a summary first"
    )
    assert tool_contents[-1] == "R" * 3000, "the newest result survives when it fits"
    # Harder (a smaller window): summaries give way to removal, oldest first.
    fitted, _ = fit_to_context(messages, [], num_ctx=1700, reserve_output=500, protect_from=len(messages) - 1)
    tool_contents = [m.content for m in fitted if m.role == "tool"]
    assert tool_contents[0].startswith("[result removed") and estimate_tokens(fitted, []) <= 1200
    assert len([m for m in fitted if m.role == "tool"]) == len([m for m in fitted if m.tool_calls])


def test_context_guard_drops_old_exchanges_then_fails_with_numbers() -> None:
    messages = [*conversation(results=1, size=10), Message("assistant", "x" * 9000), Message("user", "latest")]
    fitted, _ = fit_to_context(messages, [], num_ctx=2000, reserve_output=200, protect_from=len(messages) - 1)
    assert fitted[0].role == "system" and fitted[-1].content == "latest"
    with pytest.raises(ModelError) as error:
        fit_to_context([Message("system", "s"), Message("user", "y" * 20000)], [], 2000, 200, protect_from=1)
    assert error.value.code == "context_too_long" and "1800" in error.value.message


def test_breaker_opens_after_threshold_and_probes_once_after_reset() -> None:
    now = [0.0]
    changes: list[str] = []
    breaker = CircuitBreaker(threshold=2, reset_seconds=10, on_change=changes.append, clock=lambda: now[0])
    breaker.record_failure()
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    now[0] = 10.5
    assert breaker.state == "half_open"
    assert breaker.allow() and not breaker.allow(), "one probe at a time"
    breaker.record_failure()
    assert breaker.state == "open"
    now[0] = 21
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and changes == ["open", "half_open", "open", "half_open", "closed"]


def test_chart_config_is_a_valid_chart_js_configuration() -> None:
    config = chart_config(
        {"chart_type": "bar", "title": "Rain", "labels": ["Jan", "Feb"], "datasets": [{"label": "mm", "data": [1, 2]}]}
    )
    assert config["type"] == "bar" and config["data"]["labels"] == ["Jan", "Feb"]
    assert config["data"]["datasets"][0]["data"] == [1, 2]
    scatter = chart_config({"chart_type": "scatter", "labels": [1, 2], "datasets": [{"data": [5, 6]}]})
    assert scatter["data"]["datasets"][0]["data"] == [{"x": 1.0, "y": 5}, {"x": 2.0, "y": 6}]
    with pytest.raises(FrontendToolError, match=r"datasets.0.data: has 3 values but there are 2 labels"):
        chart_config({"chart_type": "line", "labels": ["a", "b"], "datasets": [{"data": [1, 2, 3]}]})


def test_prompt_pieces() -> None:
    assert parse_memories('{"memories": [{"id": "1", "content": "likes feet"}, "plain"]}') == ["likes feet", "plain"]
    assert parse_memories("- one\n- two") == ["one", "two"]
    listing = summarize_resource(json.dumps([{"id": "lux-dem", "title": "Luxembourg DEM", "units": "m"}] * 3), 1000)
    assert listing.splitlines()[0] == "- lux-dem: Luxembourg DEM (units: m)"
    long = summarize_resource(json.dumps([{"id": f"c{i}", "title": "t" * 50} for i in range(200)]), 500)
    assert len(long) < 600 and long.endswith("(more available through the tools)")
    polygon = {"type": "Polygon", "coordinates": [[[5.9, 49.5], [6.5, 49.5], [6.5, 50.1], [5.9, 49.5]]]}
    text = spatial_context_message((49.6, 6.1), 8, None, polygon)
    # The model gets a summary and the place name to use, never coordinates to copy into a call.
    assert text is not None and "bbox [5.9, 49.5, 6.5, 50.1]" in text and 'place: "drawn area"' in text
    assert '"type":"Polygon"' not in text and "[5.9, 49.5], [6.5" not in text


def real_style_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "bbox": {"anyOf": [{"items": {"type": "number"}, "type": "array"}, {"type": "null"}], "default": None}
        },
    }


def test_sanitised_schemas_still_accept_valid_arguments() -> None:
    jsonschema.validate({"bbox": [1, 2, 3, 4]}, sanitize_schema(real_style_schema()))


@pytest.mark.parametrize(
    ("status", "text", "code"),
    [
        (404, 'model "qwen3" not found, try pulling it first', "model_unavailable"),
        (400, '"tiny" does not support tools', "tools_unsupported"),
        (400, "the prompt is 5000 tokens, more than the context window of 4096 (options.num_ctx)", "context_too_long"),
        (503, "loading", "model_unavailable"),
        (500, "CUDA out of memory", "model_error"),
    ],
)
def test_model_server_errors_are_classified(status: int, text: str, code: str) -> None:
    error = model_http_error(status, text, "qwen3", "http://ollama:11434")
    assert error.code == code and text in error.message


def test_the_request_being_answered_never_slides_out_of_the_window() -> None:
    memory = ConversationMemory(window=4)
    memory.add_user("old question")
    memory.add_assistant("old answer")
    memory.add_user("current request")
    for index in range(5):
        memory.add_assistant("", [ToolCall(f"c{index}", "t", {})])
        memory.add_tool_result(f"c{index}", "t", "result")
    roles = [m.content or m.role for m in memory.get_messages()]
    assert roles[0] == "current request" and len(roles) == 11
    assert memory.current_request_index() == 0


# Premises: the question's variable and years against the catalogue (listing shaped as raster-tools serves it).

CATALOGUE = json.dumps(
    {
        "collections": [
            {
                "id": "bcsd-temperature-1999",
                "title": "Monthly mean air temperature 1999",
                "keywords": ["temperature", "air temperature"],
                "band_names": ["tas"],
                "time": "1999-01-01T00:00:00Z/1999-12-31T23:59:59Z",
                "bbox": [-85.0, 33.0, -74.875, 37.125],
            },
            {
                "id": "oisst-sst",
                "title": "NOAA OISST global sea surface temperature",
                "keywords": ["sea surface temperature", "sst", "sea ice"],
                "band_names": ["sst", "anom", "err", "ice"],
                "time": "1981-12-31T00:00:00Z/1981-12-31T23:59:59Z",
                "bbox": [-180, -90, 180, 90],
            },
            {
                "id": "lux-dem",
                "title": "Luxembourg DEM",
                "keywords": ["elevation"],
                "time": "not time-resolved",
                "bbox": [5.74, 49.44, 6.53, 50.19],
            },
        ]
    }
)


def test_a_failed_call_is_made_again_only_on_another_catalogue_collection_it_could_name() -> None:
    from stacgis_orchestrator.draft_review import in_collection
    from stacgis_orchestrator.premises import Catalog

    catalog = Catalog.from_resource(CATALOGUE)
    failed = ToolCall("c1", "query_raster_point", {"collection_id": "oisst-sst", "lon": 6.1, "lat": 49.6})
    fix = in_collection(failed, "lux-dem", catalog)
    assert fix is not None and fix.id != failed.id and fix.name == failed.name
    assert fix.arguments == {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}
    assert failed.arguments["collection_id"] == "oisst-sst", "the failed call is left as it was"
    assert in_collection(failed, "oisst-sst", catalog) is None, "the same call again"
    assert in_collection(failed, "no-such-dem", catalog) is None, "not a collection of the catalogue"
    # A tool taking a list of collections is never given a collection_id it does not take.
    several = ToolCall("c2", "query_multiple_rasters_point", {"collection_ids": ["oisst-sst"], "lon": 6.1, "lat": 49.6})
    assert in_collection(several, "lux-dem", catalog) is None


def test_the_variables_a_question_names_leave_out_place_names_and_collection_ids() -> None:
    from stacgis_orchestrator.premises import asked_variables, asked_years

    assert asked_variables("Snowfall in Oslo?") == [("snow", "snowfall")]
    assert asked_variables("What is the elevation of Snow Hill, NC?") == [("elevation", "elevation")]
    assert asked_variables("What was the sea surface temperature at -140, 0?") == [
        ("sea surface temperature", "sea surface temperature")
    ]
    assert asked_variables("The humidity in the bcsd-temperature-1999 collection") == [("humidity", "humidity")]
    assert asked_variables("What was the PM2.5 level in Berlin?") == [("air quality", "pm2.5")]
    assert asked_years("rain in July 1999 or 2005-07 from bcsd-precipitation-1999 above 2000 m") == [1999, 2005]


def test_catalogue_gaps_name_a_missing_variable_or_year_and_leave_covered_questions_alone() -> None:
    from stacgis_orchestrator.premises import Catalog, call_gap, catalogue_gaps

    catalog = Catalog.from_resource(CATALOGUE)
    (snow,) = catalogue_gaps("How much snow fell in Luxembourg?", catalog)
    assert snow.kind == "variable" and snow.missing == "snow"
    assert "(they hold: elevation, air temperature, sea surface temperature, sea ice)" in snow.refusal
    (year,) = catalogue_gaps("What was the air temperature over Tennessee in July 2010?", catalog)
    assert year.kind == "period" and "2010" in year.refusal and "bcsd-temperature-1999 covers 1999" in year.refusal
    assert catalogue_gaps("What was the sea ice concentration in January 2020?", catalog)[0].missing == "2020"
    # Covered, not time-resolved, no variable named, or no catalogue at all: nothing to say.
    assert catalogue_gaps("Temperature in Raleigh in July 1999?", catalog) == []
    assert catalogue_gaps("The elevation of Luxembourg in 2023?", catalog) == []
    assert catalogue_gaps("What happened in 2010?", catalog) == []
    assert catalogue_gaps("How much snow fell?", Catalog()) == []
    # A call on another variable's collection, when one that holds it exists; "warmer" is temperature.
    refused = call_gap("How much warmer was July than January?", catalog, "lux-dem")
    assert refused is not None and "'lux-dem' (Luxembourg DEM) holds no air temperature data" in refused
    assert "bcsd-temperature-1999, oisst-sst" in refused
    assert call_gap("What is the sea surface temperature at -140, 0?", catalog, "oisst-sst") is None
    assert call_gap("What is at -140, 0?", catalog, "lux-dem") is None, "no variable asked: nothing to compare"
    assert call_gap("How much snow fell?", catalog, "lux-dem") is None, "no collection holds it: the refusal's job"
    # A draft that already refuses and names what is missing stands.
    assert snow.answered_by("The catalogue has no snow data.")
    assert not snow.answered_by("Snowfall was 350 m.") and not snow.answered_by("There is no data.")


def test_map_style_urls_pass_only_for_the_hosts_a_deployment_allows() -> None:
    from stacgis_orchestrator.tools.frontend import prepare_frontend_command

    allowed = ["tiles.example.org", "*.maptiler.com"]
    for url in ("https://tiles.example.org/style.json", "https://api.maptiler.com/maps/streets/style.json"):
        assert prepare_frontend_command("set_map_style", {"style": url}, allowed).arguments == {"style": url}
    for url in ("https://maptiler.com.evil.example/style.json", "https://example.org/style.json"):
        with pytest.raises(FrontendToolError, match="is not allowed"):
            prepare_frontend_command("set_map_style", {"style": url}, allowed)
    assert prepare_frontend_command("set_map_style", {"style": "satellite"}).arguments == {"style": "satellite"}


def test_the_browser_knows_every_frontend_tool_by_the_orchestrator_s_names() -> None:
    """The browser's list (whose names its handler table must cover) is generated from FRONTEND_TOOLS."""
    generator = Path(__file__).resolve().parents[3] / "scripts" / "gen_frontend_tools.py"
    result = subprocess.run([sys.executable, str(generator), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_scene_layer_carries_the_expression_and_period_to_the_browser() -> None:
    from stacgis_orchestrator.tools.frontend import FRONTEND_TOOLS, prepare_frontend_command
    from stacgis_orchestrator.tools.validation import validate_arguments

    ndvi = "(nir08 - red) / (nir08 + red)"
    args = {"collection_id": "landsat7-olinda-scenes", "expression": ndvi, "datetime": "2000"}
    command = prepare_frontend_command("visualize_collection", args)
    assert command.arguments == args
    assert "as (nir08 - red) / (nir08 + red)" in command.acknowledgement
    schema = next(tool.input_schema for tool, _ in FRONTEND_TOOLS if tool.name == "visualize_collection")
    assert validate_arguments(args, schema) == []
    refused = validate_arguments({**args, "expression": "red; import os"}, schema)
    assert refused and "expression" in refused[0]


def test_a_place_gap_names_a_place_no_collection_of_the_variable_reaches_in_the_years_asked() -> None:
    from stacgis_orchestrator.premises import Catalog, place_gap

    catalog = Catalog.from_resource(CATALOGUE)
    nairobi = (36.82, -1.28, 36.82, -1.28)
    gap = place_gap("What is the elevation of Nairobi?", catalog, "Nairobi", nairobi)
    assert gap is not None and gap.missing == "Nairobi"
    assert gap.refusal.endswith(
        "no elevation data covers Nairobi (the collections with elevation: lux-dem: Luxembourg DEM)."
    )
    # Reached, but not in the year asked: the sea surface collection is global, and of 1981.
    tokyo = (139.69, 35.69, 139.69, 35.69)
    late = place_gap("What was the air temperature in Tokyo in July 1999?", catalog, "Tokyo", tokyo)
    assert (
        late is not None
        and "covers Tokyo in 1999" in late.refusal
        and "oisst-sst: NOAA OISST global sea surface temperature" in late.refusal
    )
    raleigh = (-78.64, 35.77, -78.64, 35.77)
    assert place_gap("Temperature in Raleigh in July 1999?", catalog, "Raleigh", raleigh) is None
    assert place_gap("The elevation of Luxembourg?", catalog, "Luxembourg", (5.7, 49.4, 6.5, 50.2)) is None
    assert place_gap("What is in Nairobi?", catalog, "Nairobi", nairobi) is None, "no variable asked"


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("What is NDVI and which bands is it computed from?", True),
        ("What are zonal statistics?", True),
        ("In STAC, what is an item?", True),
        ("What is a Cloud-Optimized GeoTIFF and why is it fast?", True),
        ("Explain what a digital elevation model is", True),
        ("How is NDVI computed?", True),
        ("Who produced the 1999 monthly precipitation observations?", True),
        ("What NDVI values does open water usually have?", True),
        ("What is the mean elevation of Luxembourg?", False),
        ("What is elevation in Nairobi?", False),
        ("What is the NDVI in Luxembourg?", False),
        ("Zoom to Nairobi", False),
        ("Remember that I prefer metres for elevations.", False),
    ],
)
def test_concept_questions_are_told_from_questions_about_data(question: str, concept: bool) -> None:
    assert is_concept_question(question) is concept


def test_only_a_passage_repeated_at_the_end_is_cut() -> None:
    months = "\n".join(f"- {m} 1999: {v} mm" for m, v in [("January", 91.5), ("February", 80.2), ("March", 120.0)])
    table = "| month | mm |\n|---|---|\n" + "| July | 120.5 |\n" * 2
    for text in (months, table, "Yes. " * 3, "The mean is 348 m."):
        assert without_repetition(text) == text
        guard = RepetitionGuard()
        assert not any(guard.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    looping = "The highest month was July. " + "It rained 120 mm in July 1999 in Asheville. " * 6
    assert without_repetition(looping).count("120 mm") == 1
    guard = RepetitionGuard()
    assert any(guard.feed(looping[i : i + 7]) for i in range(0, len(looping), 7))


@pytest.mark.parametrize(
    ("message", "note"),
    [
        ("Remember that I prefer metres for elevations.", ("I prefer metres for elevations", "preference")),
        ("Note for later: I work on rainfall in North Carolina.", ("I work on rainfall in North Carolina", "note")),
        ("Remember that my home city is Nairobi and tell me its elevation", ("My home city is Nairobi", "fact")),
        ("Do you remember my home city?", None),
        ("Remember what my study area is?", None),
        ("Please remember this", None),
        ("What is the mean elevation of Luxembourg?", None),
    ],
)
def test_requests_to_remember_give_the_note_to_save(message: str, note: tuple[str, str] | None) -> None:
    assert memory_note(message) == note


@pytest.mark.parametrize(
    ("question", "chosen", "settled"),
    [
        ("What was the highest monthly mean temperature of 1999 in Knoxville?", "1999-01", "1999"),
        ("What was the mean precipitation of 2016 over Kenya?", "2016-01-01", "2016"),
        ("What was the mean air temperature in Asheville in July 1999?", "1999-07", "1999-07"),
        ("Mean temperature over Tennessee in 1999-03", "1999-03", "1999-03"),
        ("How much rain fell in summer 1999?", "1999-07", "1999-07"),
        ("Which month of 2000 was coldest?", "1999-01", "1999-01"),
    ],
)
def test_a_month_the_question_never_named_becomes_its_year(question: str, chosen: str, settled: str) -> None:
    call = ToolCall("c1", "get_raster_statistics", {"collection_id": "x", "datetime": chosen})
    assert settle_period(call, question).arguments == {"collection_id": "x", "datetime": settled}


def test_a_place_named_in_a_memory_is_found_by_its_name() -> None:
    memories = ["Prefers elevations in metres", "My study area is the Jacksboro fault", "My home city is Nairobi."]
    assert remembered_place("study area", memories) == "Jacksboro fault"
    assert remembered_place("my home city", memories) == "Nairobi"
    assert remembered_place("Nairobi", memories) is None
    assert remembered_place("farm", memories) is None


@pytest.mark.parametrize(
    ("question", "periods"),
    [
        ("How much wetter was March than October 2005 in Kenya?", ("2005-03", "2005-10")),
        ("Temperature change from February to August 1999 over Ohio", ("1999-02", "1999-08")),
        (
            "Compare winter (December 1998 to February 1999) with summer (June to August 1999)",
            ("1998-12/1999-02", "1999-06/1999-08"),
        ),
        (
            "Compare rain in winter (Jan to Feb 1999) and summer (Jun to Aug 1999), the difference?",
            ("1999-01/1999-02", "1999-06/1999-08"),
        ),
        ("What was the mean temperature in July 1999?", None),
        ("How much warmer was July 1999 than July 1998?", ("1998-07", "1999-07")),
        ("How much warmer was July than January?", None),
    ],
)
def test_the_two_periods_a_question_compares(question: str, periods: tuple[str, str] | None) -> None:
    assert compared_periods(question) == periods


def test_a_scene_collection_with_red_and_nir_holds_ndvi_for_the_scene_tools_only() -> None:
    from stacgis_orchestrator.premises import Catalog, call_gap, sole_holder

    catalog = Catalog.from_resource(
        json.dumps(
            {
                "collections": [
                    {"id": "olinda-ndvi", "title": "NDVI of Olinda", "keywords": ["ndvi"], "band_names": ["ndvi"]},
                    {"id": "olinda", "title": "Landsat 7 scene", "band_names": ["B1", "B2", "B3", "B4"]},
                    {
                        "id": "olinda-scenes",
                        "title": "Landsat tiles",
                        "kind": "scenes",
                        "band_names": ["blue", "green", "red", "nir"],
                    },
                ]
            }
        )
    )
    question = "Show me NDVI statistics for Olinda"
    assert catalog.collections["olinda-scenes"].holds("ndvi")
    assert not catalog.collections["olinda-scenes"].holds("ndvi", band_math=False)
    # A band-math call (with an expression) on the scene collection stands; a call reading stored bands
    # (a point, plain statistics) on the raw scene or on the scenes goes to the one NDVI collection,
    # since only band math makes NDVI of the scenes' bands.
    assert call_gap(question, catalog, "olinda-scenes", band_math=True) is None
    for called in ("olinda", "olinda-scenes"):
        refused = call_gap(question, catalog, called, band_math=False)
        assert refused is not None and "olinda-ndvi" in refused and "olinda-scenes," not in refused
    assert sole_holder(question, catalog, None).id == "olinda-ndvi"  # type: ignore[union-attr]
    assert sole_holder(question, catalog, None, scenes=True).id == "olinda-scenes"  # type: ignore[union-attr]
    # A single-file tool's call on a scene collection of a variable goes to the single-file collection.
    cube = Catalog.from_resource(
        json.dumps(
            {
                "collections": [
                    {"id": "temp-1999", "title": "Temperature 1999", "keywords": ["temperature"]},
                    {"id": "cube-1999", "title": "Temperature cube", "keywords": ["temperature"], "kind": "data cube"},
                ]
            }
        )
    )
    asked = "What was the temperature in July 1999?"
    assert call_gap(asked, cube, "cube-1999", band_math=True) is None
    assert "temp-1999" in (call_gap(asked, cube, "cube-1999") or "")
    assert sole_holder(asked, cube, None).id == "temp-1999"  # type: ignore[union-attr]
    # A band-math call on a collection without NDVI is pointed at the scenes, which derive it.
    refused = call_gap(question, catalog, "olinda", band_math=True)
    assert refused is not None and "collections with ndvi: olinda-scenes" in refused


@pytest.mark.parametrize(
    ("question", "counts", "limit"),
    [
        ("How many scenes of landsat7-olinda-scenes cover the box with at most 2 % cloud cover?", True, 2.0),
        ("How many Landsat images have less than 10% clouds over Olinda?", True, 10.0),
        ("Number of items with cloud cover below 5.5 percent in 2000", True, 5.5),
        ("Count the scenes over Recife", True, None),
        ("What is the mean NDVI of the scenes with cloud cover under 20 %?", False, 20.0),
        ("How many time steps does bcsd-temperature-1999 have?", False, None),
        ("How much rain fell in July?", False, None),
    ],
)
def test_questions_counting_scenes_and_their_cloud_limits(question: str, counts: bool, limit: float | None) -> None:
    from stacgis_orchestrator.tools.scenes import asks_to_count_scenes, cloud_limit

    assert asks_to_count_scenes(question) is counts
    assert cloud_limit(question) == limit


def test_a_scene_count_keeps_the_calls_area_and_period_and_leaves_other_calls_alone() -> None:
    from stacgis_orchestrator.llm.types import ToolCall
    from stacgis_orchestrator.tools.scenes import settle_scene_count

    def scenes(collection_id: str) -> bool:
        return collection_id.endswith("-scenes")

    question = "How many scenes cover Olinda in 2000 with less than 3 % cloud?"
    series = ToolCall(
        "1",
        "get_scene_timeseries",
        {"collection_id": "x-scenes", "expression": "ndvi", "place": "Olinda", "start": "2000-01", "end": "2000-12"},
    )
    settled = settle_scene_count(series, question, scenes)
    assert settled.name == "search_items"
    assert settled.arguments == {
        "collection_id": "x-scenes",
        "place": "Olinda",
        "datetime": "2000-01/2000-12",
        "max_cloud_cover": 3.0,
    }
    search = ToolCall("2", "search_items", {"collection_id": "x-scenes", "place": "Olinda", "max_cloud_cover": 3.0})
    assert settle_scene_count(search, question, scenes) is search
    single_file = ToolCall("3", "get_raster_statistics", {"collection_id": "lux-dem", "place": "Olinda"})
    assert settle_scene_count(single_file, question, scenes) is single_file
    stats = ToolCall("4", "get_scene_statistics", {"collection_id": "x-scenes", "expression": "ndvi"})
    assert settle_scene_count(stats, "What is the mean NDVI of the scenes?", scenes) is stats


def test_a_composite_the_question_names_is_the_one_computed() -> None:
    from stacgis_orchestrator.llm.types import ToolCall
    from stacgis_orchestrator.premises import asked_variables
    from stacgis_orchestrator.tools.scenes import composite_asked, settle_scene_composite

    assert composite_asked("the maximum composite of precipitation") == "max"
    assert composite_asked("a median NDVI composite over 2023") == "median"
    assert composite_asked("the composite of the average") == "mean"
    assert composite_asked("the mean precipitation") is None
    # A cloud limit filters scenes: it does not ask for cloud data.
    assert asked_variables("How many scenes with at most 2 % cloud cover?") == []
    assert asked_variables("What is the cloud cover over Berlin?") == [("cloud cover", "cloud cover")]

    def scenes(collection_id: str) -> bool:
        return collection_id.endswith("-scenes")

    question = "Give the median composite of NDVI over Olinda"
    zonal = ToolCall("1", "compute_zonal_stats", {"collection_id": "x-scenes", "place": "Olinda", "band": "ndvi"})
    settled = settle_scene_composite(zonal, question, scenes, "ndvi")
    assert settled.name == "get_scene_statistics"
    assert settled.arguments == {
        "collection_id": "x-scenes",
        "expression": "ndvi",
        "place": "Olinda",
        "composite": "median",
    }
    right = ToolCall("2", "get_scene_statistics", settled.arguments)
    assert settle_scene_composite(right, question, scenes, "ndvi") is right
    single_file = ToolCall("3", "get_raster_statistics", {"collection_id": "lux-dem", "place": "Olinda"})
    assert settle_scene_composite(single_file, question, scenes, "ndvi") is single_file
    no_expression = ToolCall("4", "get_raster_statistics", {"collection_id": "x-scenes"})
    assert settle_scene_composite(no_expression, question, scenes, None) is no_expression


def test_a_question_asking_which_month_had_the_most_runs_a_scene_time_series() -> None:
    from stacgis_orchestrator.llm.types import ToolCall
    from stacgis_orchestrator.tools.scenes import asks_which_period, settle_scene_series

    assert asks_which_period("Which month of 1999 had the highest mean precipitation inside the box?")
    assert asks_which_period("In which year was NDVI lowest over Olinda?")
    assert asks_which_period("What was the wettest month over the box?")
    assert not asks_which_period("What was the mean precipitation in July 1999?")
    assert not asks_which_period("Which collection has the highest resolution?")

    def scenes(collection_id: str) -> bool:
        return collection_id.endswith("-scenes")

    question = "Using the climate scenes bcsd-1999-scenes, which month of 1999 had the highest mean precipitation?"
    # The 1.5B model's call: one median composite of January, a statistic as the expression.
    asked = {
        "collection_id": "bcsd-1999-scenes",
        "bbox": [-84.0, 34.0, -78.0, 36.5],
        "datetime": "1999-01",
        "composite": "median",
        "cloud_mask": True,
        "expression": "mean",
    }
    settled = settle_scene_series(ToolCall("1", "get_scene_statistics", asked), question, scenes, "precipitation")
    assert settled.name == "get_scene_timeseries"
    assert settled.arguments == {
        "collection_id": "bcsd-1999-scenes",
        "expression": "precipitation",
        "start": "1999-01",
        "end": "1999-12",
        "bbox": [-84.0, 34.0, -78.0, 36.5],
        "cloud_mask": True,
    }
    # The call's own expression and range are kept when they are one.
    ranged = ToolCall("2", "get_scene_statistics", {**asked, "expression": "pr", "datetime": "1999-03/1999-09"})
    kept = settle_scene_series(ranged, question, scenes, "precipitation").arguments
    assert (kept["expression"], kept["start"], kept["end"]) == ("pr", "1999-03", "1999-09")
    series = ToolCall("3", "get_scene_timeseries", settled.arguments)
    assert settle_scene_series(series, question, scenes, "precipitation") is series
    single_file = ToolCall("4", "get_raster_statistics", {"collection_id": "bcsd-precipitation-1999"})
    assert settle_scene_series(single_file, question, scenes, "precipitation") is single_file
    other = ToolCall("5", "get_scene_statistics", asked)
    assert settle_scene_series(other, "What was the mean precipitation in 1999?", scenes, "precipitation") is other


def test_a_cloud_limit_the_question_never_speaks_of_is_dropped() -> None:
    from stacgis_orchestrator.llm.types import ToolCall
    from stacgis_orchestrator.tools.scenes import settle_cloud_limit

    call = ToolCall("1", "get_scene_statistics", {"collection_id": "c", "expression": "pr", "max_cloud_cover": 10})
    dropped = settle_cloud_limit(call, "Which month of 1999 was wettest over the box?")
    assert dropped.arguments == {"collection_id": "c", "expression": "pr"} and dropped.name == call.name
    assert settle_cloud_limit(call, "NDVI of the cloud-free scenes") is call
    bare = ToolCall("2", "get_scene_statistics", {"collection_id": "c", "expression": "pr"})
    assert settle_cloud_limit(bare, "Which month was wettest?") is bare


def test_a_misremembered_tool_name_runs_as_the_offered_tool_sharing_most_of_its_words() -> None:
    from stacgis_orchestrator.llm.types import ToolCall, ToolSpec
    from stacgis_orchestrator.tools.calls import renamed

    class NoSuchTool:
        def get(self, name: str) -> None:
            return None

    area = {
        "type": "object",
        "properties": {"collection_id": {}, "place": {}, "bbox": {}, "datetime": {}},
        "required": ["collection_id"],
    }
    offered = [
        ToolSpec("get_raster_statistics", "", area),
        ToolSpec("query_raster_point", "", {**area, "properties": {**area["properties"], "lon": {}, "lat": {}}}),
        ToolSpec("get_raster_info", "", area),
        ToolSpec("compute_zonal_stats", "", area),
    ]
    # The 1.5B model's call for "the mean air temperature in Asheville in July 1999" (eval run 18):
    # every tool takes its arguments, query_raster_point shares "raster" and "point".
    asheville = {"place": "Asheville", "datetime": "1999-07", "collection_id": "bcsd-temperature-1999"}
    call = ToolCall("1", "get_raster_point", asheville)
    assert renamed(call, offered, NoSuchTool()) == "query_raster_point"  # type: ignore[arg-type]
    # A tie (one shared word each) or no shared word renames nothing.
    assert renamed(ToolCall("2", "raster_values", asheville), offered, NoSuchTool()) is None  # type: ignore[arg-type]
    assert renamed(ToolCall("3", "elevation", asheville), offered, NoSuchTool()) is None  # type: ignore[arg-type]


def test_a_question_about_what_the_user_told_is_recognised() -> None:
    from stacgis_orchestrator.questions import is_recall_question

    for question in (
        "Which city did I tell you is my home city?",
        "What did I say my study area was?",
        "Do you remember my preferred units?",
        "What do you know about me?",
        "Have I mentioned where I live?",
    ):
        assert is_recall_question(question), question
    for question in (
        "Remember that my home city is Nairobi",  # a note to save, not a question
        "What is the mean elevation of my study area?",
        "Did it rain in Nairobi in July?",
        "What is NDVI?",
    ):
        assert not is_recall_question(question), question
