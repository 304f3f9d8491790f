"""/api/chat against the scripted back end: Ollama's wire format, rules, templating, thinking, faults."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from model_server_helpers import add_rules, stream_ndjson, tool_schema, user

pytestmark = pytest.mark.asyncio


async def test_stream_is_ndjson_chunks_ending_with_done(client: httpx.AsyncClient) -> None:
    await add_rules(
        client, {"name": "hello", "match": {"last_user": "hello"}, "content": "Hi there, friend!", "chunk_chars": 4}
    )

    chunks = await stream_ndjson(client, {"model": "scripted", "messages": [user("hello")]})

    assert [c["done"] for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert len(chunks) == 6  # 17 characters in 4-character deltas, then the final chunk
    assert all(c["model"] == "scripted" and c["created_at"].endswith("Z") for c in chunks)
    assert all(c["message"]["role"] == "assistant" for c in chunks)
    assert "".join(c["message"]["content"] for c in chunks) == "Hi there, friend!"
    final = chunks[-1]
    assert final["done_reason"] == "stop"
    for field in ("total_duration", "load_duration", "prompt_eval_count", "eval_count", "eval_duration"):
        assert isinstance(final[field], int), field
    assert final["eval_count"] == 5


async def test_non_streaming_returns_one_object(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "hello", "match": {"last_user": "hello"}, "content": "Hi there!"})

    response = await client.post(
        "/api/chat", json={"model": "scripted:latest", "stream": False, "messages": [user("hello")]}
    )

    assert response.status_code == 200
    body = response.json()
    assert body["done"] is True and body["message"] == {"role": "assistant", "content": "Hi there!"}


async def test_tool_calls_have_dict_arguments(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {
            "name": "zoom",
            "match": {"last_user": "(?i)zoom", "step": 0, "tools_offered": ["zoom_to_location"]},
            "tool_calls": [{"name": "zoom_to_location", "arguments": {"location": "Lisbon", "zoom": 9}}],
        },
    )
    body = {
        "model": "scripted",
        "messages": [user("Zoom to Lisbon")],
        "tools": [tool_schema("zoom_to_location", location="string", zoom="integer")],
    }

    chunks = await stream_ndjson(client, body)

    calls = [call for c in chunks for call in c["message"].get("tool_calls", [])]
    assert len(calls) == 1
    assert calls[0]["function"]["name"] == "zoom_to_location"
    assert calls[0]["function"]["arguments"] == {"location": "Lisbon", "zoom": 9}
    assert chunks[-1]["done"] is True


async def test_step_and_tool_results_choose_the_rule_and_fill_templates(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {
            "name": "search",
            "match": {"last_user": "(?i)elevation of (\\w+)", "step": 0},
            "tool_calls": [
                {"name": "search_vector_features", "arguments": {"query": "{{last_user:(?i)elevation of (\\w+)}}"}}
            ],
        },
        {
            "name": "stats",
            "match": {"last_tool": "search_vector_features", "step": 1},
            "tool_calls": [
                {
                    "name": "compute_zonal_stats",
                    "arguments": {"feature": "{{tool:search_vector_features:features.0.ref}}", "band": 1},
                }
            ],
        },
        {
            "name": "answer",
            "match": {"after_tools": ["search_vector_features", "compute_zonal_stats"], "step": 2},
            "content": (
                "Mean elevation of {{tool:search_vector_features:features.0.name}}"
                " is {{tool:compute_zonal_stats:mean}} m."
            ),
        },
    )
    tools = [
        tool_schema("search_vector_features", query="string"),
        tool_schema("compute_zonal_stats", feature="object"),
    ]
    conversation: list[dict[str, object]] = [user("What is the elevation of Luxembourg?")]

    first = (
        await client.post(
            "/api/chat", json={"model": "scripted", "stream": False, "messages": conversation, "tools": tools}
        )
    ).json()
    call = first["message"]["tool_calls"][0]["function"]
    assert call == {"index": 0, "name": "search_vector_features", "arguments": {"query": "Luxembourg"}}

    ref = {"dataset": "countries", "id": 42}
    conversation += [
        first["message"],
        # No tool_name: the server pairs the result with the call it answers, as Ollama clients send it.
        {"role": "tool", "content": json.dumps({"features": [{"name": "Luxembourg", "ref": ref}]})},
    ]
    second = (
        await client.post(
            "/api/chat", json={"model": "scripted", "stream": False, "messages": conversation, "tools": tools}
        )
    ).json()
    call = second["message"]["tool_calls"][0]["function"]
    assert call["name"] == "compute_zonal_stats"
    assert call["arguments"] == {"feature": ref, "band": 1}  # an object, inserted as an object

    conversation += [
        second["message"],
        {"role": "tool", "tool_name": "compute_zonal_stats", "content": '{"mean": 312.5}'},
    ]
    third = (
        await client.post(
            "/api/chat", json={"model": "scripted", "stream": False, "messages": conversation, "tools": tools}
        )
    ).json()
    assert third["message"]["content"] == "Mean elevation of Luxembourg is 312.5 m."
    assert "tool_calls" not in third["message"]

    log = (await client.get("/_scripted/requests")).json()["requests"]
    assert [entry["rule"] for entry in log] == ["search", "stats", "answer"]


async def test_system_message_values_can_be_echoed(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {
            "name": "memory",
            "match": {"system": "Known about the user"},
            "content": "You prefer {{system:prefers (\\w+) maps}} maps.",
        },
    )
    messages = [{"role": "system", "content": "Known about the user:\n- prefers satellite maps"}, user("which maps?")]

    body = (await client.post("/api/chat", json={"model": "scripted", "stream": False, "messages": messages})).json()

    assert body["message"]["content"] == "You prefer satellite maps."


async def test_missing_template_value_is_a_clear_error(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "needs-tool", "content": "{{tool:get_raster_info:crs}}"})

    response = await client.post("/api/chat", json={"model": "scripted", "messages": [user("hi")]})

    assert response.status_code == 500
    assert "needs-tool" in response.json()["error"] and "get_raster_info" in response.json()["error"]


async def test_thinking_goes_to_the_thinking_field_when_asked(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "t", "thinking": "Let me reason about it.", "content": "Done.", "chunk_chars": 5})

    chunks = await stream_ndjson(client, {"model": "scripted", "think": True, "messages": [user("q")]})

    thinking = "".join(c["message"].get("thinking", "") for c in chunks)
    content = "".join(c["message"]["content"] for c in chunks)
    assert thinking == "Let me reason about it."
    assert content == "Done."
    # Thinking streams first, in its own chunks.
    first_content = next(i for i, c in enumerate(chunks) if c["message"]["content"])
    assert all("thinking" in c["message"] for c in chunks[:first_content])


async def test_thinking_goes_into_think_tags_otherwise(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "t", "thinking": "Let me reason.", "content": "Done."})

    body = (await client.post("/api/chat", json={"model": "scripted", "stream": False, "messages": [user("q")]})).json()

    assert body["message"]["content"] == "<think>Let me reason.</think>\nDone."
    assert "thinking" not in body["message"]


async def test_rule_can_force_tags_even_when_thinking_was_asked(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "t", "thinking": "Hmm.", "thinking_format": "tags", "content": "Ok."})

    body = (
        await client.post(
            "/api/chat", json={"model": "scripted", "think": True, "stream": False, "messages": [user("q")]}
        )
    ).json()

    assert body["message"]["content"] == "<think>Hmm.</think>\nOk."


async def test_no_matching_rule_answers_plainly(client: httpx.AsyncClient) -> None:
    (await client.put("/_scripted/rules", json={"rules": []})).raise_for_status()

    body = (
        await client.post(
            "/api/chat", json={"model": "scripted", "stream": False, "messages": [user("unscripted question")]}
        )
    ).json()

    assert "No scripted rule matched" in body["message"]["content"]
    assert "unscripted question" in body["message"]["content"]


async def test_shipped_greeting_rule(client: httpx.AsyncClient) -> None:
    chunks = await stream_ndjson(client, {"model": "scripted", "messages": [user("Hello!")]})

    assert "".join(c["message"]["content"] for c in chunks).startswith("Hello!")
    assert len(chunks) > 5


async def test_error_rule_gives_http_status_then_later_rules(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {"name": "flaky", "times": 1, "error": {"status": 503, "message": "model is overloaded"}},
        {"name": "fine", "content": "recovered"},
    )
    body = {"model": "scripted", "stream": False, "messages": [user("x")]}

    first = await client.post("/api/chat", json=body)
    second = await client.post("/api/chat", json=body)

    assert first.status_code == 503 and first.json() == {"error": "model is overloaded"}
    assert second.status_code == 200 and second.json()["message"]["content"] == "recovered"


async def test_error_after_chunks_is_an_error_line(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {
            "name": "dies",
            "content": "abcdefgh",
            "chunk_chars": 2,
            "error": {"message": "runner crashed", "after_chunks": 2},
        },
    )

    chunks = await stream_ndjson(client, {"model": "scripted", "messages": [user("x")]})

    assert [c.get("message", {}).get("content") for c in chunks[:2]] == ["ab", "cd"]
    assert chunks[-1] == {"error": "runner crashed"}


async def test_unknown_model_is_404_like_ollama(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"model": "qwen3:8b", "messages": [user("x")]})

    assert response.status_code == 404
    assert response.json() == {"error": 'model "qwen3:8b" not found, try pulling it first'}


async def test_bad_request_names_the_field(client: httpx.AsyncClient) -> None:
    bad_role = await client.post(
        "/api/chat", json={"model": "scripted", "messages": [{"role": "robot", "content": "x"}]}
    )
    bad_args = await client.post(
        "/api/chat",
        json={
            "model": "scripted",
            "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}],
        },
    )
    not_json = await client.post("/api/chat", content=b"{nope", headers={"content-type": "application/json"})

    assert bad_role.status_code == 400 and "messages.0.role" in bad_role.json()["error"]
    assert bad_args.status_code == 400 and "messages.0.tool_calls.0.function.arguments" in bad_args.json()["error"]
    assert not_json.status_code == 400 and "invalid JSON" in not_json.json()["error"]


async def test_bad_rules_are_rejected_naming_the_field(client: httpx.AsyncClient) -> None:
    bad_regex = await client.post(
        "/_scripted/rules", json={"rules": [{"name": "x", "match": {"last_user": "(unclosed"}}]}
    )
    bad_key = await client.put("/_scripted/rules", json={"rules": [{"name": "x", "contents": "typo"}]})

    assert bad_regex.status_code == 400 and "rules.0.match.last_user" in bad_regex.json()["error"]
    assert bad_key.status_code == 400 and "rules.0.contents" in bad_key.json()["error"]
    # The rules in force did not change.
    names = [rule["name"] for rule in (await client.get("/_scripted/rules")).json()["rules"]]
    assert "greeting" in names and "x" not in names


async def test_request_log_records_bodies_and_filters(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "any", "content": "ok"})
    for text in ("first question", "second question"):
        await client.post("/api/chat", json={"model": "scripted", "stream": False, "messages": [user(text)]})

    everything = (await client.get("/_scripted/requests")).json()["requests"]
    second = (await client.get("/_scripted/requests", params={"contains": "second question"})).json()["requests"]

    assert len(everything) == 2
    assert len(second) == 1 and second[0]["body"]["messages"][0]["content"] == "second question"
    assert second[0]["outcome"] == "completed" and second[0]["client_disconnected"] is False
    await client.delete("/_scripted/requests")
    assert (await client.get("/_scripted/requests")).json()["requests"] == []


async def test_disconnect_mid_stream_is_recorded(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "slow", "content": "x" * 40, "chunk_chars": 1, "delay_ms": 50})

    async with client.stream("POST", "/api/chat", json={"model": "scripted", "messages": [user("go")]}) as response:
        lines = response.aiter_lines()
        received = [json.loads(await anext(lines)) for _ in range(3)]
    # Leaving the block closed the connection after three of forty chunks.

    entry = await wait_for_outcome(client)
    assert [c["message"]["content"] for c in received] == ["x", "x", "x"]
    assert entry["client_disconnected"] is True
    assert entry["chunks_sent"] < 40


async def test_stalled_request_never_answers_and_disconnect_is_recorded(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "hang", "stall": True})

    started = time.monotonic()
    try:
        await client.post("/api/chat", json={"model": "scripted", "messages": [user("x")]}, timeout=0.5)
        raise AssertionError("a stalled rule answered")
    except httpx.ReadTimeout:
        pass

    entry = await wait_for_outcome(client)
    assert time.monotonic() - started >= 0.5
    assert entry["rule"] == "hang" and entry["client_disconnected"] is True and entry["chunks_sent"] == 0


async def wait_for_outcome(client: httpx.AsyncClient) -> dict[str, object]:
    for _ in range(50):
        entries = (await client.get("/_scripted/requests")).json()["requests"]
        if entries and entries[-1]["outcome"] != "in_progress":
            return entries[-1]  # type: ignore[no-any-return]
        await asyncio.sleep(0.05)
    raise AssertionError(f"request still in progress: {entries}")
