"""The OpenAI-compatible endpoints, so an OpenAI provider can be tested against a real protocol peer."""

from __future__ import annotations

import json

import httpx
import pytest
from model_server_helpers import add_rules, stream_sse, tool_schema, user

pytestmark = pytest.mark.asyncio


async def test_stream_is_sse_data_chunks_ending_with_done(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "hi", "content": "Hello from the stream", "chunk_chars": 5})

    payloads = await stream_sse(
        client,
        {"model": "scripted", "stream": True, "stream_options": {"include_usage": True}, "messages": [user("hi")]},
    )

    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0]["role"] == "assistant"
    assert "".join(d.get("content", "") for d in deltas) == "Hello from the stream"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == [] and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


async def test_tool_call_deltas_assemble_into_the_call(client: httpx.AsyncClient) -> None:
    arguments = {"collection": "landsat-7", "bbox": [5.7, 49.4, 6.5, 50.2], "note": "a long enough value to be split"}
    await add_rules(client, {"name": "call", "tool_calls": [{"name": "get_raster_statistics", "arguments": arguments}]})

    payloads = await stream_sse(
        client,
        {
            "model": "scripted",
            "stream": True,
            "messages": [user("stats please")],
            "tools": [tool_schema("get_raster_statistics", collection="string")],
        },
    )

    chunks = [json.loads(p) for p in payloads[:-1]]
    pieces = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert len(pieces) > 2  # the name, then the arguments in several fragments
    assert pieces[0]["id"].startswith("call_") and pieces[0]["function"]["name"] == "get_raster_statistics"
    assert all(piece["index"] == 0 for piece in pieces)
    assembled = "".join(piece["function"].get("arguments", "") for piece in pieces)
    assert json.loads(assembled) == arguments
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_openai_history_with_tool_results_feeds_templates(client: httpx.AsyncClient) -> None:
    await add_rules(
        client,
        {
            "name": "answer",
            "match": {"last_tool": "get_raster_info"},
            "content": "CRS is {{tool:get_raster_info:crs}}.",
        },
    )
    messages = [
        user("crs?"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_raster_info", "arguments": '{"id": "dem"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"crs": "EPSG:2169"}'},
    ]

    response = await client.post("/v1/chat/completions", json={"model": "scripted", "messages": messages})

    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "CRS is EPSG:2169."
    assert body["choices"][0]["finish_reason"] == "stop"


async def test_non_streaming_tool_call_has_json_string_arguments(client: httpx.AsyncClient) -> None:
    await add_rules(
        client, {"name": "call", "tool_calls": [{"name": "zoom_to_location", "arguments": {"location": "Oslo"}}]}
    )

    body = (await client.post("/v1/chat/completions", json={"model": "scripted", "messages": [user("x")]})).json()

    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"location": "Oslo"}
    assert body["choices"][0]["finish_reason"] == "tool_calls"


async def test_reasoning_effort_streams_reasoning_deltas(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "t", "thinking": "pondering", "content": "answer"})

    payloads = await stream_sse(
        client, {"model": "scripted", "stream": True, "reasoning_effort": "low", "messages": [user("x")]}
    )

    deltas = [json.loads(p)["choices"][0]["delta"] for p in payloads[:-1]]
    assert "".join(d.get("reasoning", "") for d in deltas) == "pondering"
    assert "".join(d.get("content", "") for d in deltas) == "answer"


async def test_errors_use_the_openai_shape(client: httpx.AsyncClient) -> None:
    missing = await client.post("/v1/chat/completions", json={"model": "gpt-9", "messages": [user("x")]})
    bad_args = await client.post(
        "/v1/chat/completions",
        json={
            "model": "scripted",
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}],
                }
            ],
        },
    )

    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    assert bad_args.status_code == 400
    assert "messages.0.tool_calls.0.function.arguments" in bad_args.json()["error"]["message"]


async def test_requests_on_v1_are_logged_too(client: httpx.AsyncClient) -> None:
    await add_rules(client, {"name": "any", "content": "ok"})

    await client.post("/v1/chat/completions", json={"model": "scripted", "messages": [user("logged via openai")]})

    entries = (await client.get("/_scripted/requests", params={"contains": "logged via openai"})).json()["requests"]
    assert len(entries) == 1 and entries[0]["path"] == "/v1/chat/completions" and entries[0]["rule"] == "any"
