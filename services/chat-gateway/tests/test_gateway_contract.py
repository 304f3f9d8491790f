"""The contract typed: RunRequest from the generated types, events parsed once (either JSON name style),
and the one fold of a run's events that finishing, declaring a run lost and POST /chat/ share."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from stacgis_gateway.contract import InvalidEvent, RunSummary, event_json, parse_event, run_request
from stacgis_gateway.messages import ChatMessage
from stacgis_proto.v1 import run_pb2


def test_run_request_is_built_from_the_proto_types_and_parses_strictly() -> None:
    history = [
        ChatMessage(role="user", content="where is Berlin?"),
        ChatMessage(
            role="assistant",
            tool_calls=[{"id": "c1", "name": "zoom_to_location", "arguments": {"lat": 52.5, "lon": 13.4}}],
        ),
        ChatMessage(role="tool", content="ok", tool_call_id="c1", name="zoom_to_location"),
    ]
    spatial = {
        "map_center": {"lat": 52.5, "lon": 13.4},
        "zoom": 9,
        "selected_feature": {"type": "Feature", "geometry": None, "properties": {"name": "Mitte"}},
        "drawn_geometry": None,
    }
    body = run_request("run-1", "session-1", "and Munich?", history, spatial)
    parsed = json_format.Parse(json.dumps(body), run_pb2.RunRequest())  # no unknown field, right types
    assert parsed.run_id == "run-1" and parsed.session_id == "session-1" and parsed.message == "and Munich?"
    assert [m.role for m in parsed.history] == ["user", "assistant", "tool"]
    assert parsed.history[1].tool_calls[0].arguments["lat"] == 52.5
    assert parsed.history[2].tool_call_id == "c1"
    assert parsed.spatial_context.map_center.lat == 52.5 and parsed.spatial_context.zoom == 9
    assert parsed.spatial_context.selected_feature["properties"]["name"] == "Mitte"
    assert not parsed.spatial_context.HasField("drawn_geometry")
    assert "spatialContext" in body and "runId" in body  # proto3 JSON names
    assert "spatialContext" not in run_request("r", "s", "m", [], None)


def test_an_event_parses_once_in_either_name_style_and_is_written_in_camel_case() -> None:
    camel = {"runId": "r", "seq": "3", "step": 1, "toolStart": {"callId": "c", "toolName": "t"}, "newField": 1}
    snake = {"run_id": "r", "seq": 3, "step": 1, "tool_start": {"call_id": "c", "tool_name": "t"}}
    for data in (camel, snake):
        name, message = parse_event(data)
        assert name == "tool_start" and message.seq == 3 and message.tool_start.tool_name == "t"
        assert event_json(message) == {
            "runId": "r",
            "seq": "3",
            "step": 1,
            "toolStart": {"callId": "c", "toolName": "t"},
        }
    assert parse_event({"runId": "r", "runStarted": {}})[0] == "session"
    for bad in ({"runId": "r"}, {"seq": "x", "content": {}}, {"content": {"text": 5}}):
        with pytest.raises(InvalidEvent):
            parse_event(bad)


def test_one_fold_gives_the_summary_of_a_finished_a_failed_and_a_lost_run() -> None:
    events = [
        {"seq": "1", "runStarted": {"sessionId": "s"}},
        {"seq": "2", "step": 1, "toolStart": {"callId": "c", "toolName": "t"}},
        {"seq": "3", "step": 2, "content": {"text": "draft"}},
        {"seq": "4", "step": 2, "content": {"text": "Mean ", "replace": True}},
        {"seq": "5", "step": 2, "content": {"text": "is 300 m."}},
    ]
    partial = RunSummary()
    for event in events:
        partial.add_json(json.dumps(event))
    assert partial.started and partial.last_seq == 5 and partial.step == 2 and partial.tool_calls == 1
    assert partial.partial == "Mean is 300 m." and not partial.finished
    lost = partial.record_fields()
    assert lost["outcome"] == "error" and lost["error_code"] == "internal" and lost["steps"] == 2
    assert [(m.role, m.content) for m in partial.answer_messages("r")] == [("assistant", "Mean is 300 m.")]

    partial.add(parse_event({"seq": "6", "error": {"code": "cancelled", "message": "stop"}})[1])
    assert partial.record_fields()["outcome"] == "cancelled"

    done = RunSummary()
    for event in events:
        done.add(parse_event(event)[1])
    done.add(
        parse_event(
            {
                "seq": "6",
                "done": {
                    "content": "Mean is 300 m.",
                    "newMessages": [{"role": "assistant", "content": "Mean is 300 m."}],
                    "usage": {"inputTokens": "120", "outputTokens": "7"},
                    "steps": 2,
                    "toolCalls": 1,
                    "finishReason": "stop",
                    "grounding": {"supportedCount": 1},
                },
            }
        )[1]
    )
    fields = done.record_fields()
    assert fields == {
        "outcome": "done",
        "finish_reason": "stop",
        "error_code": None,
        "input_tokens": 120,
        "output_tokens": 7,
        "tool_calls": 1,
        "steps": 2,
    }
    [answer] = done.answer_messages("r")
    assert answer.content == "Mean is 300 m." and answer.grounding == {"supportedCount": 1}
