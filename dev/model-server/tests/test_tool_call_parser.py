"""Tool calls found in streamed model text: tags, fenced JSON, several calls, and malformed blocks."""

from __future__ import annotations

import json

from stacgis_model_server.tool_call_parser import ToolCallStream, split_tool_calls

NAMES = {"get_weather", "zoom_to_location"}


def feed_in_pieces(text: str, size: int) -> tuple[list[str], list[tuple[str, dict[str, object]]]]:
    stream = ToolCallStream(NAMES)
    shown = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    shown.append(stream.finish())
    return [piece for piece in shown if piece], [(call.name, call.arguments) for call in stream.calls]


def test_tagged_call_becomes_a_native_call() -> None:
    arguments = {"city": "Toronto", "days": 2}
    text = f'<tool_call>\n{{"name": "get_weather", "arguments": {json.dumps(arguments)}}}\n</tool_call>'
    shown, calls = split_tool_calls(text, NAMES)
    assert shown == ""
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", arguments)]


def test_fenced_json_call_and_several_calls() -> None:
    first = {"name": "zoom_to_location", "arguments": {"location": "Berlin"}}
    second = {"name": "get_weather", "arguments": {"city": "Berlin"}}
    text = f"```json\n{json.dumps(first)}\n```\n<tool_call>{json.dumps(second)}</tool_call>"
    shown, calls = split_tool_calls(text, NAMES)
    assert shown.strip() == ""
    assert [(c.name, c.arguments) for c in calls] == [
        (first["name"], first["arguments"]),
        (second["name"], second["arguments"]),
    ]


def test_two_objects_in_one_block_and_string_arguments() -> None:
    first = json.dumps({"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})})
    body = first + '\n{"name": "zoom_to_location", "arguments": {"location": "Oslo"}}'
    _, calls = split_tool_calls(f"<tool_call>{body}</tool_call>", NAMES)
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("zoom_to_location", {"location": "Oslo"}),
    ]


def test_text_streams_and_only_a_possible_opener_is_held() -> None:
    text = "The answer is 42. <tool_call>"
    stream = ToolCallStream(NAMES)
    assert stream.feed("The answer is 42. <to") == "The answer is 42. "
    assert stream.feed("ol_call>") == ""
    # The call never closed and holds no JSON: it is text after all, not a crash.
    assert stream.finish() == "<tool_call>"
    assert stream.calls == []
    assert "".join([*feed_in_pieces(text, 3)[0]]) == text


def test_malformed_json_is_returned_as_text() -> None:
    text = 'Before <tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> after'
    shown, calls = split_tool_calls(text, NAMES)
    assert calls == []
    assert shown == text


def test_fenced_code_that_is_no_call_stays_text() -> None:
    data = json.dumps({"name": "Lima", "pop": 9})
    text = f"Example:\n```python\nprint('hi')\n```\nand data:\n```json\n{data}\n```"
    shown, calls = split_tool_calls(text, NAMES)
    assert calls == []
    assert shown == text


def test_a_call_shaped_fence_naming_a_tool_not_offered_is_still_a_call() -> None:
    # Seen from the embedded model: a misremembered name. The client answers "unknown tool, did you
    # mean ..."; shown as text, the JSON would have been the user's answer.
    call = {"name": "get_raster_point", "arguments": {"collection_id": "bcsd-temperature-1999", "lon": -78.6}}
    shown, calls = split_tool_calls(f"```json\n{json.dumps(call, indent=2)}\n```", NAMES)
    assert shown == "" and [(c.name, c.arguments) for c in calls] == [(call["name"], call["arguments"])]
    # Anything more or less than a call's two keys stays text.
    for other in ({"name": "x", "arguments": {}, "note": 1}, {"name": "x"}):
        text = f"```json\n{json.dumps(other)}\n```"
        assert split_tool_calls(text, NAMES) == (text, [])


def test_unclosed_block_holding_a_whole_call_counts() -> None:
    call = {"name": "get_weather", "arguments": {"city": "Lima"}}
    shown, calls = feed_in_pieces(f"<tool_call>\n{json.dumps(call)}\n", 5)
    assert shown == []
    assert [(name, arguments) for name, arguments in calls] == [("get_weather", {"city": "Lima"})]


def test_pieces_of_any_size_give_the_same_result() -> None:
    call = {"name": "zoom_to_location", "arguments": {"location": "Rome"}}
    text = f"Sure.\n```json\n{json.dumps(call)}\n```"
    results = {size: feed_in_pieces(text, size) for size in (1, 2, 7, len(text))}
    for shown, calls in results.values():
        assert "".join(shown).strip() == "Sure."
        assert calls == [("zoom_to_location", {"location": "Rome"})]


def test_a_call_inside_the_templates_tools_tag_counts_only_for_offered_tools() -> None:
    # Seen from the embedded model: the tag its chat template puts around the tool list, echoed back.
    call = {"name": "get_weather", "arguments": {"city": "Nairobi"}}
    shown, calls = split_tool_calls(f"<tools>\n{json.dumps(call)}\n</tools>", NAMES)
    assert shown.strip() == "" and [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Nairobi"})]
    echoed = '<tools>{"type": "function", "function": {"name": "drop_tables", "parameters": {}}}</tools>'
    shown, calls = split_tool_calls(echoed, NAMES)
    assert shown == echoed and calls == [], "the tool list echoed back is no call"
    assert feed_in_pieces(f"<tools>{json.dumps(call)}</tools>", 3)[1] == [("get_weather", {"city": "Nairobi"})]


def test_a_fence_of_bare_arguments_after_text_naming_one_tool_is_that_call() -> None:
    # Seen from the embedded model with the product's long prompt.
    arguments = {"city": "Lima", "days": 1}
    text = f"I'll use the `get_weather` function with these arguments:\n```json\n{json.dumps(arguments)}\n```"
    shown, calls = split_tool_calls(text, NAMES)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", arguments)]
    assert "```" not in shown
    assert feed_in_pieces(text, 5)[1] == [("get_weather", arguments)]
    # Two tools named, or none: the fence stays text rather than a guess.
    for lead in ("Use get_weather or zoom_to_location:", "Here is some JSON:"):
        ambiguous = f"{lead}\n```json\n{json.dumps(arguments)}\n```"
        assert split_tool_calls(ambiguous, NAMES) == (ambiguous, [])
