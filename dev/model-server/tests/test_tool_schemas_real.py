"""Every tool schema of the product, and hostile ones, offered to the real back end (the embedded model).

A schema must never take the process down: each request gets an answer or a 4xx that says why (and
names the tool when one tool is the reason), and the server still answers its health check after
all of them. Requests for constrained output (Ollama `format`, OpenAI `response_format`, a forced
`tool_choice`) are refused with a 400, since this back end builds no grammars.

The server (conftest.py's `real_server`) runs with an 8k context so every group of product tools
fits; answers are capped at a few tokens, so the time goes into reading the prompts. The model
reuses the longest prefix a prompt shares with the previous one, so requests that offer the same
tools are sent one after the other (the OpenAI test first, then the product groups with the
frontend first, each group as published and then as the orchestrator offers it).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from model_server_helpers import REAL, REAL_CONTEXT, real_model_problem, user
from product_tools import as_offered_by_orchestrator, ollama_tool, product_tool_groups, unchanged_first

from stacgis_common.testing import RunningService
from stacgis_model_server.capabilities import MAX_SCHEMA_DEPTH, json_depth

ANSWER_TOKENS = 4

pytestmark = [pytest.mark.slow, pytest.mark.skipif(real_model_problem() is not None, reason=str(real_model_problem()))]


def assert_alive(server: RunningService) -> None:
    assert server.process.poll() is None, server.logs()[-4000:]
    assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200


def chat_body(tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": REAL,
        "stream": False,
        "messages": [user("Show the elevation of Luxembourg as a chart.")],
        "tools": tools,
        "options": {"num_predict": ANSWER_TOKENS, "temperature": 0},
        **extra,
    }


def error_of(response: httpx.Response) -> str:
    body = response.json()
    error = body.get("error")
    return str(error.get("message") if isinstance(error, dict) else error)


# Hostile schemas, each the `parameters` of one tool.


def nested_objects(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": 10**9}
    for level in range(levels):
        schema = {"type": "object", "properties": {f"level{level}": schema}, "required": [f"level{level}"]}
    return schema


def any_of_tree(breadth: int, depth: int) -> dict[str, Any]:
    if depth == 0:
        return {"type": "string", "pattern": "^(a+)+$", "maxLength": 10**6}
    return {"anyOf": [any_of_tree(breadth, depth - 1) for _ in range(breadth)]}


def recursive_ref() -> dict[str, Any]:
    node = {
        "type": "object",
        "properties": {"value": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    }
    return {
        "type": "object",
        "$defs": {"node": node, "loop": {"$ref": "#/$defs/loop"}},
        "properties": {"root": {"$ref": "#/$defs/node"}, "self": {"$ref": "#"}, "loop": {"$ref": "#/$defs/loop"}},
    }


def huge_bounds() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 10**6, "maxLength": 10**18, "pattern": "^([a-z]{1,1000}){1,1000}$"},
            "values": {"type": "array", "items": {"type": "number"}, "minItems": 10**5, "maxItems": 10**12},
            "labels": {
                "type": "array",
                "items": {"type": "string", "maxLength": 100000, "format": "date-time"},
                "maxItems": 2000,
            },
            "count": {"type": "integer", "minimum": -(10**30), "maximum": 10**30, "multipleOf": 7},
        },
        "required": ["text", "values", "labels", "count"],
        "additionalProperties": False,
    }


HOSTILE: dict[str, dict[str, Any]] = {
    "nested_just_within_limit": nested_objects(MAX_SCHEMA_DEPTH // 2 - 2),
    "nested_deep": nested_objects(200),
    "any_of_tree": {"type": "object", "properties": {"choice": any_of_tree(3, 3)}},
    "recursive_ref": recursive_ref(),
    "huge_bounds_and_patterns": huge_bounds(),
    "huge_enum": {
        "type": "object",
        "properties": {"kind": {"type": "string", "enum": [f"k{i}" for i in range(20000)]}},
    },
}


@pytest.mark.asyncio
async def test_the_openai_endpoint_answers_with_every_frontend_tool_and_refuses_constraints(
    real: httpx.AsyncClient, real_server: RunningService
) -> None:
    # The frontend tools in the order the next test sends them first, answered last: that test then
    # reads only its own question (the prompts differ from the user turn on).
    tools = unchanged_first((await product_tool_groups())["frontend"])
    chart = next(t for t in tools if t["function"]["name"] == "generate_chart")
    base = {
        "model": REAL,
        "messages": [user("Chart the monthly rainfall.")],
        "tools": tools,
        "max_tokens": ANSWER_TOKENS,
        "temperature": 0,
    }

    # "none" offers no tools, so the answer is plain text with no tool call.
    no_tools = await real.post("/v1/chat/completions", json={**base, "tool_choice": "none"})
    assert no_tools.status_code == 200, no_tools.text
    assert not no_tools.json()["choices"][0]["message"].get("tool_calls")

    choice = {"type": "function", "function": {"name": "generate_chart"}}
    forced = await real.post("/v1/chat/completions", json={**base, "tool_choice": choice})
    assert forced.status_code == 400, forced.text
    assert "generate_chart" in error_of(forced) and "tool_choice" in error_of(forced)

    schema_format = {"type": "json_schema", "json_schema": {"name": "chart", "schema": chart["function"]["parameters"]}}
    constrained = await real.post("/v1/chat/completions", json={**base, "response_format": schema_format})
    assert constrained.status_code == 400, constrained.text
    assert "response_format" in error_of(constrained)

    answered = await real.post("/v1/chat/completions", json=base)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["role"] == "assistant"
    assert_alive(real_server)


@pytest.mark.asyncio
async def test_every_product_tool_group_gets_an_answer(real: httpx.AsyncClient, real_server: RunningService) -> None:
    groups = await product_tool_groups()
    # Every server and the frontend publish tools: an empty collection would make this test vacuous.
    assert set(groups) == {"raster-tools", "vector-tools", "knowledge-tools", "memory-tools", "frontend"}
    assert all(groups.values()), groups
    # The frontend first (the test above just read its tools), and each group as published then as
    # the orchestrator rewrites it, the tools the rewrite keeps first: each request re-reads only
    # what differs from the one before it.
    for group in sorted(groups, key=lambda name: name != "frontend"):
        tools = unchanged_first(groups[group])
        for variant, offered in (("as published", tools), ("as offered", as_offered_by_orchestrator(tools))):
            response = await real.post("/api/chat", json=chat_body(offered))
            assert response.status_code == 200, f"{group} {variant}: {response.status_code} {response.text}"
            body = response.json()
            assert body["done"] is True and body["message"]["role"] == "assistant", (group, variant, body)
    assert_alive(real_server)


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_a_hostile_tool_schema_gets_an_answer_or_a_named_refusal(
    real: httpx.AsyncClient, real_server: RunningService, case: str
) -> None:
    tool = ollama_tool(f"hostile_{case}", "A tool with a hostile argument schema.", HOSTILE[case])
    response = await real.post("/api/chat", json=chat_body([tool]))

    too_deep = json_depth(tool) > MAX_SCHEMA_DEPTH
    prompt_chars = len(json.dumps(tool))
    if too_deep:
        assert response.status_code == 400, response.text
        # Either the JSON reader refuses the body or the tool check names the tool.
        message = error_of(response)
        assert f"hostile_{case}" in message or "nested too deeply" in message, message
    elif response.status_code == 400:
        # Only a prompt over the window may be refused, and the refusal names the tool that weighs most.
        message = error_of(response)
        assert "context window" in message and f"hostile_{case}" in message, message
        assert prompt_chars > REAL_CONTEXT, prompt_chars
    else:
        assert response.status_code == 200, response.text
        assert response.json()["done"] is True
    assert_alive(real_server)


@pytest.mark.asyncio
async def test_a_schema_nested_thousands_deep_is_refused(real: httpx.AsyncClient, real_server: RunningService) -> None:
    # Deeper than json.dumps can write, so the body is written by hand.
    levels = 5000
    parameters = '{"type":"object","properties":{"a":' * levels + "{}" + "}}" * levels
    tool = '{"type":"function","function":{"name":"hostile_very_deep","parameters":' + parameters + "}}"
    body = f'{{"model":"{REAL}","stream":false,"messages":[{{"role":"user","content":"hi"}}],"tools":[{tool}]}}'
    response = await real.post("/api/chat", content=body, headers={"content-type": "application/json"})

    assert response.status_code == 400, response.text
    message = error_of(response)
    assert "hostile_very_deep" in message or "nested too deeply" in message, message
    assert_alive(real_server)


@pytest.mark.asyncio
@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_a_schema_as_ollama_format_is_refused_with_a_reason(
    real: httpx.AsyncClient, real_server: RunningService, case: str
) -> None:
    body = chat_body([], format=HOSTILE[case])
    response = await real.post("/api/chat", json=body)

    assert response.status_code == 400, response.text
    message = error_of(response)
    assert "format" in message or "nested too deeply" in message, message
    assert_alive(real_server)
