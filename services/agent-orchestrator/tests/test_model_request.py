"""A model request is assembled from each offered tool's entry encoded once, and the model server
receives exactly the bytes it received when the whole body was encoded on every call.

Each provider sends two turns and a warm-up for each of several offered-tool lists in a row (the
product's tools from the orchestrator's catalog snapshot, selections of them, none, a next snapshot
whose tool keeps its name but not its schema) through a recording front
(tests/servers/recording_model.py) to the real local model server. The same front then receives the
reference bodies, built as the providers built them before (every tool's entry made on each call,
the whole dictionary encoded by httpx's `json=`): path, content type and bytes must be equal.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, Iterator
from importlib import resources
from typing import Any

import httpx
import pytest

from conftest import SERVERS
from stacgis_common.testing import RunningService, free_port, run_service
from stacgis_orchestrator.llm import ollama, openai
from stacgis_orchestrator.llm.base import ChatProvider
from stacgis_orchestrator.llm.schema import sanitize_schema
from stacgis_orchestrator.llm.types import Message, ModelTurn, StreamEvent, ToolCall, ToolSpec

MODEL = "scripted"
NUM_CTX, KEEP_ALIVE, TEMPERATURE, MAX_TOKENS = 8192, "5m", 0.0, 64
MESSAGES = [
    Message(role="system", content="You are stacgis. Température moyenne à Zürich — réponds « brièvement »."),
    Message(role="user", content="request-encoding: mean elevation of Luxembourg?"),
    Message(
        role="assistant",
        tool_calls=[ToolCall(id="call_1", name="get_raster_statistics", arguments={"place": "Luxembourg"})],
    ),
    Message(role="tool", content='{"mean": 297.4}', tool_call_id="call_1", name="get_raster_statistics"),
]
# A tool the catalog snapshot lacks: an approval flag, a `$ref` and non-ASCII text to keep as they are.
GATED = ToolSpec(
    "delete_layer",
    "Löscht eine Ebene (needs the user's approval)",
    {
        "type": "object",
        "x_requires_approval": True,
        "$defs": {"Layer": {"type": "object", "properties": {"id": {"type": "string", "title": "Id"}}}},
        "properties": {
            "layer": {"$ref": "#/$defs/Layer"},
            "reason": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Reason"},
        },
        "required": ["layer"],
    },
)


def product_specs() -> list[ToolSpec]:
    catalog = json.loads(resources.files("stacgis_orchestrator").joinpath("data/tool_catalog.json").read_text())
    specs = [
        ToolSpec(tool["name"], tool.get("description", ""), tool.get("inputSchema", {}))
        for entry in catalog["servers"].values()
        for tool in entry["tools"]
    ]
    return sorted([*specs, GATED], key=lambda spec: spec.name)


def tool_lists() -> list[tuple[str, list[ToolSpec]]]:
    specs = product_specs()
    selection = specs[3:9]
    first = specs[0]
    relisted = ToolSpec(
        first.name,
        first.description + " (relisted)",
        {**first.parameters, "properties": {**first.parameters["properties"], "page": {"type": "integer"}}},
    )
    return [
        ("every tool", specs),
        ("a new list of the same specs", list(specs)),
        ("a selection", selection),
        ("the selection reversed", selection[::-1]),
        ("no tools", []),
        ("the next snapshot: its first tool relisted with another schema", [relisted, *specs[1:]]),
        ("the first snapshot again", specs),
    ]


def ollama_reference(tools: list[ToolSpec], warm: bool) -> dict[str, Any]:
    options: dict[str, Any] = {"num_ctx": NUM_CTX, "temperature": TEMPERATURE, "num_predict": MAX_TOKENS}
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": ollama.format_messages(MESSAGES),
        "stream": not warm,
        "options": {**options, "num_predict": 1} if warm else options,
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": sanitize_schema(t.parameters)},
            }
            for t in tools
        ]
    body["think"] = False
    body["keep_alive"] = KEEP_ALIVE
    return body


def openai_reference(tools: list[ToolSpec], warm: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": openai.format_messages(MESSAGES)}
    if warm:
        body["max_tokens"] = 1
    else:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": {k: v for k, v in t.parameters.items() if k != "x_requires_approval"},
                },
            }
            for t in tools
        ]
        body["tool_choice"] = "auto"
    if not warm:
        body |= {"temperature": TEMPERATURE, "max_tokens": MAX_TOKENS}
    return body


@pytest.fixture(scope="module")
def recorder(model_server: RunningService) -> Iterator[RunningService]:
    port = free_port()
    env = {"RECORD_UPSTREAM": model_server.url, "RECORD_PORT": str(port), "PYTHONPATH": str(SERVERS)}
    with run_service("recording_model", env, port) as service:
        yield service


def provider_for(name: str, url: str) -> tuple[ChatProvider, str]:
    if name == "ollama":
        return ollama.OllamaProvider(url, 30, NUM_CTX, KEEP_ALIVE, TEMPERATURE, MAX_TOKENS), "/api/chat"
    return openai.OpenAIProvider(url, 30, None, TEMPERATURE, MAX_TOKENS), "/v1/chat/completions"


async def final_turn(stream: AsyncGenerator[StreamEvent, None]) -> ModelTurn:
    events = [event async for event in stream]
    assert isinstance(events[-1], ModelTurn)
    return events[-1]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["ollama", "openai"])
async def test_the_model_server_receives_the_same_bytes_as_when_each_body_was_encoded_whole(
    recorder: RunningService, name: str
) -> None:
    provider, path = provider_for(name, recorder.url)
    reference = ollama_reference if name == "ollama" else openai_reference
    expected: list[tuple[str, list[ToolSpec], dict[str, Any]]] = []
    async with httpx.AsyncClient(base_url=recorder.url, timeout=30) as http:
        await http.delete("/_recorded")
        try:
            for label, tools in tool_lists():
                for turn in ("turn 1", "turn 2"):
                    answered = await final_turn(provider.stream(MESSAGES, tools, MODEL, False))
                    assert "request-encoding" in answered.content  # the real server read the request
                    expected.append((f"{label}, {turn}", tools, reference(tools, False)))
                await provider.warm(MESSAGES, tools, MODEL, False)
                expected.append((f"{label}, warm-up", tools, reference(tools, True)))
        finally:
            await provider.aclose()
        sent = (await http.get("/_recorded")).json()
        await http.delete("/_recorded")
        for _, _, body in expected:
            await http.post(path, json=body)  # the model server's answer does not matter here
        wanted = (await http.get("/_recorded")).json()
    assert len(sent) == len(wanted) == len(expected)
    for (label, tools, _), got, want in zip(expected, sent, wanted, strict=True):
        body = json.loads(base64.b64decode(got["body"]))
        assert [tool["function"]["name"] for tool in body.get("tools", [])] == [t.name for t in tools], label
        assert [tool["function"]["description"] for tool in body.get("tools", [])] == [t.description for t in tools], (
            label
        )
        assert got == want, label


def test_each_tools_entry_is_encoded_once_and_a_lists_array_reused() -> None:
    """Every turn of every run of a snapshot offers the same spec objects in a new list
    (`prefix.all_tools`): their tools array is built once; another list gets its own."""
    specs = product_specs()
    provider = ollama.OllamaProvider("http://127.0.0.1:9", 30, NUM_CTX, KEEP_ALIVE)
    first = provider._body(MESSAGES, list(specs), MODEL, None)["tools"]
    assert provider._body(MESSAGES[:2], list(specs), MODEL, None)["tools"] is first
    assert json.loads(first) == ollama_reference(specs, False)["tools"]
    fewer = provider._body(MESSAGES, specs[1:], MODEL, None)["tools"]
    assert json.loads(fewer) == ollama_reference(specs[1:], False)["tools"]
    assert specs[1].encoded(ollama.format_tool) is specs[1].encoded(ollama.format_tool)
    compatible = openai.OpenAIProvider("http://127.0.0.1:9", 30)
    assert json.loads(compatible._body(MESSAGES, specs, MODEL)["tools"]) == openai_reference(specs, False)["tools"]
