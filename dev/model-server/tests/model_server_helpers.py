"""Helpers for the model server tests (a distinct module name: test folders share sys.path)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import httpx

from stacgis_model_server.model_file import DEFAULT_MODEL_PATH, is_verified

REAL = "qwen2.5-coder:1.5b"
# One context for every real-model server of the suite: the largest product tool group as published
# (raster-tools, about 4,400 tokens with its system prompt) fits, so one loaded model serves every test.
REAL_CONTEXT = 8192


def real_model_problem() -> str | None:
    """Why the real back end cannot run here, or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None or not is_verified(DEFAULT_MODEL_PATH):
        return f"llama-cpp-python or the verified model file {DEFAULT_MODEL_PATH} is missing (make setup builds both)"
    return None


def real_env(port: int, state_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a model server that preloads the real model with the suite's context."""
    return {
        "MODEL_SERVER_PORT": str(port),
        "MODEL_SERVER_LLAMA_CONTEXT": str(REAL_CONTEXT),
        "MODEL_SERVER_STATE_DIR": str(state_dir),
        "MODEL_SERVER_PRELOAD": "true",
        # No embedding model (a folder without one): these servers answer chats only, and preloading
        # sentence-transformers and torch would add seconds to every start.
        "MODEL_SERVER_EMBEDDING_PATH": str(state_dir / "no-embedding-model"),
        **{f"MODEL_SERVER_{key.upper()}": value for key, value in extra.items()},
    }


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
