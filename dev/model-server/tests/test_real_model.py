"""The real back end (Qwen2.5-Coder-1.5B-Instruct through llama-cpp-python), and the server without it.

Prompts are short and answers capped so each test takes seconds once the model is loaded (once per
session: the `real_server` fixture of conftest.py). A prompt over the window is refused after
tokenizing, before any evaluation, so the overflow check costs no prompt reading.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from model_server_helpers import REAL, REAL_CONTEXT, real_env, real_model_problem, stream_ndjson, tool_schema, user

from stacgis_common.testing import RunningService, free_port, run_service
from stacgis_model_server.model_file import DEFAULT_MODEL_PATH

needs_model = pytest.mark.skipif(real_model_problem() is not None, reason=str(real_model_problem()))


def weather_tools() -> list[dict[str, Any]]:
    return [tool_schema("get_weather", city="string"), tool_schema("zoom_to_location", location="string")]


@needs_model
@pytest.mark.asyncio
async def test_a_request_with_tools_gets_a_native_tool_call(real: httpx.AsyncClient) -> None:
    response = await real.post(
        "/api/chat",
        json={
            "model": REAL,
            "stream": False,
            "messages": [user("What is the weather in Toronto?")],
            "tools": weather_tools(),
            "options": {"num_predict": 60, "temperature": 0},
        },
    )

    assert response.status_code == 200, response.text
    body = response.json()
    calls = body["message"].get("tool_calls", [])
    assert [call["function"]["name"] for call in calls] == ["get_weather"], body
    assert "toronto" in json.dumps(calls[0]["function"]["arguments"]).lower()
    assert "<tool_call>" not in body["message"]["content"]
    assert 0 < body["eval_count"] <= 60


@needs_model
@pytest.mark.asyncio
async def test_openai_wire_gets_the_tool_call_too(real: httpx.AsyncClient) -> None:
    response = await real.post(
        "/v1/chat/completions",
        json={
            "model": REAL,
            "messages": [user("Zoom the map to Berlin.")],
            "tools": weather_tools(),
            "max_tokens": 60,
            "temperature": 0,
        },
    )

    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]["function"]
    assert call["name"] == "zoom_to_location"
    assert "berlin" in call["arguments"].lower()


def expected_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The prompt length computed independently: the GGUF's tokenizer and template, loaded here."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = Llama(model_path=str(DEFAULT_MODEL_PATH), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(vocab.metadata["tokenizer.chat_template"], eos_token="", bos_token="")
    prompt = formatter(messages=messages).prompt
    return len(vocab.tokenize(prompt.encode(), add_bos=False, special=True))


@needs_model
@pytest.mark.asyncio
async def test_text_streams_token_by_token_with_real_counts(real: httpx.AsyncClient) -> None:
    messages = [user("Name three large rivers of Europe.")]
    chunks = await stream_ndjson(
        real, {"model": REAL, "messages": messages, "options": {"num_predict": 24, "temperature": 0}}
    )

    text_chunks = [c["message"]["content"] for c in chunks if not c["done"]]
    assert len(text_chunks) >= 5  # token by token, not one block
    assert len("".join(text_chunks).strip()) > 10
    final = chunks[-1]
    assert final["done"] is True and final["done_reason"] in {"stop", "length"}
    assert len(text_chunks) <= final["eval_count"] <= 24
    assert final["prompt_eval_count"] == expected_prompt_tokens(messages)


@needs_model
@pytest.mark.asyncio
async def test_a_prompt_longer_than_the_window_is_a_400_with_the_numbers(real: httpx.AsyncClient) -> None:
    long_text = " ".join(f"river{i}" for i in range(REAL_CONTEXT))
    response = await real.post("/api/chat", json={"model": REAL, "messages": [user(long_text)], "stream": False})

    assert response.status_code == 400
    match = re.search(r"the prompt is (\d+) tokens, more than the context window of (\d+)", response.json()["error"])
    assert match is not None, response.text
    assert int(match.group(2)) == REAL_CONTEXT and int(match.group(1)) > REAL_CONTEXT

    smaller = await real.post(
        "/api/chat",
        json={"model": REAL, "messages": [user(" ".join(["word"] * 300))], "options": {"num_ctx": 256}},
    )
    assert smaller.status_code == 400 and "context window of 256" in smaller.json()["error"]


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for level in range(depth):
        schema = {"type": "object", "properties": {f"level{level}": schema}}
    return schema


def any_of_tree(depth: int) -> dict[str, Any]:
    if depth == 0:
        return {"type": "string", "pattern": "^[a-z]+$"}
    return {"anyOf": [any_of_tree(depth - 1), any_of_tree(depth - 1), {"type": "integer"}]}


def hostile_tools() -> list[dict[str, Any]]:
    def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": f"{name} tool", "parameters": parameters}}

    return [
        tool("deep", {"type": "object", "properties": {"root": nested(25)}}),
        tool(
            "long_text",
            {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10**9, "minLength": 5000}}},
        ),
        tool("patterned", {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+(b|c)*$"}}}),
        tool("choices", {"type": "object", "properties": {"value": any_of_tree(3)}}),
        tool(
            "recursive",
            {
                "type": "object",
                "properties": {"node": {"$ref": "#/$defs/node"}},
                "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
            },
        ),
        tool("self_ref", {"$ref": "#"}),
    ]


@needs_model
@pytest.mark.asyncio
async def test_hostile_tool_schemas_get_an_answer_or_a_clear_error_and_the_server_lives(
    real: httpx.AsyncClient, real_server: RunningService
) -> None:
    # All in one request: every schema reaches the prompt, and the prompt is read once.
    tools = hostile_tools()
    response = await real.post(
        "/api/chat",
        json={
            "model": REAL,
            "stream": False,
            "messages": [user("Call patterned with the code aab.")],
            "tools": tools,
            "options": {"num_predict": 48, "temperature": 0},
        },
    )
    outcomes = [(response.status_code, response.text[:300])]
    assert response.status_code in (200, 400), outcomes
    if response.status_code == 400:
        assert response.json()["error"], outcomes
    else:
        names = {tool["function"]["name"] for tool in tools}
        calls = response.json()["message"].get("tool_calls", [])
        assert all(call["function"]["name"] in names for call in calls), outcomes
    # Too deep for any JSON parser: a clear 400, not a 500.
    too_deep = '{"model": "' + REAL + '", "messages": [], "tools": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    response = await real.post("/api/chat", content=too_deep, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "nested too deeply" in response.json()["error"]

    assert real_server.process.poll() is None, outcomes
    after = await real.post(
        "/api/chat",
        json={"model": REAL, "stream": False, "messages": [user("Say OK.")], "options": {"num_predict": 4}},
    )
    assert after.status_code == 200 and after.json()["eval_count"] >= 1


@needs_model
@pytest.mark.asyncio
async def test_disconnect_stops_the_real_model(real: httpx.AsyncClient) -> None:
    body = {
        "model": REAL,
        "messages": [user("Write a long story about a river.")],
        "options": {"num_predict": 500, "temperature": 1.0},
    }
    async with real.stream("POST", "/api/chat", json=body) as response:
        lines = response.aiter_lines()
        first = [json.loads(await anext(lines)) for _ in range(3)]
    assert all(not chunk["done"] for chunk in first)

    entry: dict[str, object] = {}
    for _ in range(100):
        entry = (await real.get("/_scripted/requests")).json()["requests"][-1]
        if entry["outcome"] != "in_progress":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.5)  # long enough for many tokens, had generation gone on
    after = (await real.get("/_scripted/requests")).json()["requests"][-1]

    assert entry["client_disconnected"] is True
    assert int(after["generated"]) - int(entry["generated"]) <= 1
    assert int(after["generated"]) < 100


@needs_model
@pytest.mark.asyncio
async def test_show_reports_the_real_context_and_thinking_is_refused(real: httpx.AsyncClient) -> None:
    show = (await real.post("/api/show", json={"model": REAL})).json()
    assert show["model_info"]["qwen2.context_length"] == REAL_CONTEXT
    assert set(show["capabilities"]) == {"completion", "tools"}

    response = await real.post("/api/chat", json={"model": REAL, "think": True, "messages": [user("hi")]})
    assert response.status_code == 400
    assert response.json() == {"error": f'"{REAL}" does not support thinking'}


async def timed_request(url: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        response = await http.post(
            "/api/chat",
            json={"model": REAL, "stream": False, "messages": messages, "options": {"num_predict": 2}},
        )
    assert response.status_code == 200, response.text
    return dict(response.json())


@needs_model
@pytest.mark.asyncio
async def test_a_computed_prefix_is_saved_and_a_restarted_server_is_warm(tmp_path: Path) -> None:
    system = {
        "role": "system",
        "content": "You answer questions about maps. " + " ".join(f"Rule {i}: be brief." for i in range(30)),
    }
    state_dir = tmp_path / "states"
    port = free_port()
    env = real_env(port, state_dir, state_min_tokens="100", state_keep="1")
    with run_service("stacgis_model_server", env, port) as first:
        cold = await timed_request(first.url, [system, user("Hi")])
        for _ in range(100):  # saved in the background after the answer
            if list(state_dir.glob("*.npz")):
                break
            await asyncio.sleep(0.2)
        # Same prefix again: nothing new to save, and only one state kept anyway.
        await timed_request(first.url, [system, user("Hello there")])
    saved = list(state_dir.glob("*.npz"))
    assert len(saved) == 1, saved

    port = free_port()
    env = real_env(port, state_dir, state_min_tokens="100", state_keep="1")
    with run_service("stacgis_model_server", env, port) as second:
        started = time.monotonic()
        warm = await timed_request(second.url, [system, user("Good morning")])
        assert "restored the prompt cache" in second.logs()
    assert warm["prompt_eval_count"] > 100
    # Only the user turn is read after a restore: a fraction of the cold prompt reading.
    assert warm["prompt_eval_duration"] < cold["prompt_eval_duration"] / 3, (cold, warm, time.monotonic() - started)


def test_a_missing_model_file_is_reported_as_not_available(tmp_path: Path) -> None:
    port = free_port()
    missing = tmp_path / "absent.gguf"
    with run_service(
        "stacgis_model_server", {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_GGUF_PATH": str(missing)}, port
    ) as service:
        real = httpx.post(f"{service.url}/api/chat", json={"model": REAL, "messages": [user("hi")]}, timeout=30)
        show = httpx.post(f"{service.url}/api/show", json={"model": REAL}, timeout=30)
        tags = httpx.get(f"{service.url}/api/tags", timeout=30).json()["models"]

    assert real.status_code == 404 and show.status_code == 404
    assert real.json()["error"].startswith(f'model "{REAL}" is not available here: the model file {missing} is missing')
    assert REAL not in {model["name"] for model in tags}


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


@needs_model
def test_a_bad_saved_state_is_dropped_and_the_server_still_serves(tmp_path: Path) -> None:
    import numpy as np

    state_dir = tmp_path / "states"
    state_dir.mkdir()
    key = f"{DEFAULT_MODEL_PATH.stem}-{DEFAULT_MODEL_PATH.stat().st_size}-ctx{REAL_CONTEXT}"
    bad = state_dir / f"{key}.1.npz"
    np.savez(bad, tokens=np.arange(10, dtype=np.int32), state=np.zeros(100, dtype=np.uint8))
    port = free_port()
    with run_service("stacgis_model_server", real_env(port, state_dir), port) as service:
        response = httpx.post(
            f"{service.url}/api/chat",
            json={"model": REAL, "stream": False, "messages": [user("Say OK.")], "options": {"num_predict": 4}},
            timeout=300,
        )
        logs = service.logs()

    assert response.status_code == 200 and response.json()["eval_count"] >= 1, response.text
    assert "cannot restore the prompt cache" in logs
    assert not bad.exists()
