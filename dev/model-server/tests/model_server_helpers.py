"""Helpers for the model server tests (a distinct module name: test folders share sys.path)."""

from __future__ import annotations

import json
from typing import Any

import httpx


async def add_rules(client: httpx.AsyncClient, *rules: dict[str, Any]) -> None:
    response = await client.post("/_scripted/rules", json={"rules": list(rules)})
    assert response.status_code == 200, response.text


async def stream_ndjson(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with client.stream("POST", "/api/chat", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("application/x-ndjson")
        return [json.loads(line) async for line in response.aiter_lines() if line]


async def stream_sse(client: httpx.AsyncClient, body: dict[str, Any]) -> list[str]:
    """The `data:` payloads of an OpenAI-style stream, in order (including the final [DONE])."""
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        text = (await response.aread()).decode()
    events = [block for block in text.split("\n\n") if block]
    assert all(block.startswith("data: ") for block in events), events
    return [block.removeprefix("data: ") for block in events]


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def tool_schema(name: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }
