"""The gateway in front of the real agent-orchestrator (its ReAct loop over the local model server's
scripted back end, which speaks the Ollama protocol): the contract holds end to end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from gateway_helpers import chat, gateway_env, new_user, resume, services, user

from stacgis_common.testing import RunningService, free_port

RULES = {
    "rules": [
        {
            "name": "zoom-call",
            "match": {"last_user": "(?i)zoom to munich", "step": 0},
            "thinking": "Munich is in Bavaria.",
            "tool_calls": [{"name": "zoom_to_location", "arguments": {"lat": 48.14, "lon": 11.58, "zoom": 9}}],
        },
        {
            "name": "zoom-answer",
            "match": {"after_tools": ["zoom_to_location"]},
            "content": "The map now shows Munich.",
            "chunk_chars": 6,
        },
        {
            "name": "slow",
            "match": {"last_user": "(?i)slowly"},
            "content": "One two three four five six seven eight nine ten.",
            "chunk_chars": 5,
            "delay_ms": 120,
        },
        {
            "name": "forever",
            "match": {"last_user": "(?i)forever"},
            "content": "Starting, then nothing more.",
            "chunk_chars": 9,
            "stall": True,
            "stall_after_chunks": 1,
        },
        {"name": "recall", "match": {"last_user": "(?i)what did i ask"}, "content": "You asked about Munich."},
    ]
}


@dataclass
class RealStack:
    model: RunningService
    orchestrator: RunningService
    a: RunningService
    b: RunningService
    orchestrator_env: dict[str, str]


def orchestrator_env(model_url: str, redis_url: str) -> dict[str, str]:
    return {
        "ORCHESTRATOR_REDIS_URL": redis_url,
        "ORCHESTRATOR_LLM_BASE_URL": model_url,
        "ORCHESTRATOR_LLM_MODEL": "scripted",
        "ORCHESTRATOR_EMBEDDING_BASE_URL": model_url,
        "ORCHESTRATOR_MCP_SERVERS": "{}",  # frontend tools only: they need no tool server
        "ORCHESTRATOR_LOG_LEVEL": "WARNING",
    }


@pytest.fixture(scope="module")
def real(pg_dsn: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealStack]:
    rules: Path = tmp_path_factory.mktemp("model") / "rules.json"
    rules.write_text(json.dumps(RULES))
    model_port, orchestrator_port, port_a, port_b = free_port(), free_port(), free_port(), free_port()
    model_env = {
        "MODEL_SERVER_PORT": str(model_port),
        "MODEL_SERVER_BACKEND": "scripted",
        "MODEL_SERVER_RULES_PATH": str(rules),
    }
    env = orchestrator_env(f"http://127.0.0.1:{model_port}", redis_url)
    orchestrator_url = f"http://127.0.0.1:{orchestrator_port}"
    settings = {"GATEWAY_REDIS_KEY_PREFIX": "real:"}
    # All at once: the orchestrator and the gateways need their upstreams only when a run starts.
    with services(
        ("stacgis_model_server", model_env, model_port),
        ("stacgis_orchestrator", {**env, "ORCHESTRATOR_PORT": str(orchestrator_port)}, orchestrator_port),
        ("stacgis_gateway", gateway_env(port_a, pg_dsn, redis_url, orchestrator_url, **settings), port_a),
        ("stacgis_gateway", gateway_env(port_b, pg_dsn, redis_url, orchestrator_url, **settings), port_b),
    ) as (model, orchestrator, a, b):
        yield RealStack(model, orchestrator, a, b, env)


@pytest.mark.asyncio
async def test_real_run_with_a_frontend_tool_and_follow_up(real: RealStack) -> None:
    rosa = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        stream = await chat(
            client,
            real.a.url,
            "Zoom to Munich please",
            user(rosa),
            spatial_context={"map_center": {"lat": 50.0, "lon": 10.0}, "zoom": 5},
        )
        assert stream.status == 200, stream.body
        names = stream.names  # every event already parsed strictly as stacgis.v1.AgentEvent
        assert names[0] == "session" and names[-1] == "done"
        assert "thinking" in names and "frontend_tool" in names and "content" in names
        assert stream.events[0].data["runStarted"]["model"] == "scripted"
        command = next(e.data["frontendTool"] for e in stream.events if e.event == "frontend_tool")
        assert command["name"] == "zoom_to_location"
        assert command["arguments"]["lat"] == 48.14 and command["arguments"]["lon"] == 11.58
        assert stream.content() == "The map now shows Munich."
        assert stream.seqs() == list(range(1, len(stream.events) + 1))
        done = stream.events[-1].data["done"]
        assert done["finishReason"] == "completed" and int(done["usage"]["outputTokens"]) > 0

        history = (
            await client.get(f"{real.b.url}/api/v1/chat/session/{stream.session_id}/history", headers=user(rosa))
        ).json()
        roles = [m["role"] for m in history["messages"]]
        assert roles[0] == "user" and roles[-1] == "assistant"
        assert history["messages"][-1]["content"] == "The map now shows Munich."
        calls = [c for m in history["messages"] for c in m.get("tool_calls") or []]
        assert [c["name"] for c in calls] == ["zoom_to_location"]

        follow = await chat(client, real.b.url, "What did I ask before?", user(rosa), session_id=stream.session_id)
        assert follow.content() == "You asked about Munich."
        asked = (await client.get(f"{real.model.url}/_scripted/requests", params={"contains": "What did I ask"})).json()
        sent = asked["requests"][-1]["body"]["messages"]
        assert any(m["role"] == "user" and m["content"] == "Zoom to Munich please" for m in sent)
        usage = (await client.get(f"{real.a.url}/api/v1/usage", headers=user(rosa))).json()
        assert usage["runs"] == 2 and usage["tool_calls"] >= 1 and usage["input_tokens"] > 0


@pytest.mark.asyncio
async def test_real_resume_on_the_other_gateway_and_cancel(real: RealStack) -> None:
    sam = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        head = await chat(client, real.a.url, "Count slowly", user(sam), stop_after=3)
        assert head.names == ["session", "content", "content"]
        tail = await resume(client, real.b.url, head.run_id, head.events[-1].id, user(sam))
        combined = head.events + tail.events
        assert [int(e.data["seq"]) for e in combined] == list(range(1, len(combined) + 1))
        assert tail.names[-1] == "done"
        text = "".join(e.data["content"]["text"] for e in combined if e.event == "content")
        assert text == "One two three four five six seven eight nine ten."

        stuck = await chat(client, real.a.url, "Wait forever", user(sam), stop_after=2)
        assert stuck.names == ["session", "content"]
        cancelled = await client.post(f"{real.b.url}/api/v1/chat/runs/{stuck.run_id}/cancel", headers=user(sam))
        assert cancelled.status_code == 202
        rest = await asyncio.wait_for(resume(client, real.a.url, stuck.run_id, stuck.events[-1].id, user(sam)), 20)
        final = rest.events[-1]
        assert (final.event == "done" and final.data["done"]["finishReason"] == "cancelled") or (
            final.event == "error" and final.data["error"]["code"] == "cancelled"
        ), final
        assert (await client.get(f"{real.a.url}/api/v1/chat/capacity")).json()["active"] == 0
        history = (
            await client.get(f"{real.a.url}/api/v1/chat/session/{stuck.session_id}/history", headers=user(sam))
        ).json()
        first = history["messages"][0]
        assert (first["role"], first["content"]) == ("user", "Wait forever")


@pytest.mark.asyncio
async def test_real_orchestrator_killed_mid_run(real: RealStack, pg_dsn: str, redis_url: str) -> None:
    tara = new_user()
    orchestrator_port, gateway_port = free_port(), free_port()
    env = gateway_env(
        gateway_port, pg_dsn, redis_url, f"http://127.0.0.1:{orchestrator_port}", GATEWAY_REDIS_KEY_PREFIX="realkill:"
    )
    with services(
        (
            "stacgis_orchestrator",
            {**real.orchestrator_env, "ORCHESTRATOR_PORT": str(orchestrator_port)},
            orchestrator_port,
        ),
        ("stacgis_gateway", env, gateway_port),
    ) as (doomed, gateway):
        async with httpx.AsyncClient(timeout=30) as client:
            head = await chat(client, gateway.url, "Count slowly", user(tara), stop_after=3)
            doomed.kill()
            tail = await resume(client, gateway.url, head.run_id, head.events[-1].id, user(tara))
            assert tail.names[-1] == "error"
            assert tail.events[-1].data["error"]["code"] in {"orchestrator_unavailable", "orchestrator_disconnected"}
            combined = head.events + tail.events
            assert [int(e.data["seq"]) for e in combined] == list(range(1, len(combined) + 1))
            partial = "".join(e.data["content"]["text"] for e in combined if e.event == "content")
            assert partial and partial != "One two three four five six seven eight nine ten."
            history = (
                await client.get(f"{gateway.url}/api/v1/chat/session/{head.session_id}/history", headers=user(tara))
            ).json()
            assert [(m["role"], m["content"]) for m in history["messages"]] == [
                ("user", "Count slowly"),
                ("assistant", partial),
            ]
            assert (await client.get(f"{gateway.url}/api/v1/chat/capacity")).json()["active"] == 0


@pytest.mark.asyncio
async def test_a_run_the_orchestrator_refuses_ends_with_its_reason(
    real: RealStack, pg_dsn: str, redis_url: str
) -> None:
    # An orchestrator taking shorter messages than the gateway: its 422 names the field, in its error body.
    orchestrator_port, gateway_port = free_port(), free_port()
    strict = {
        **real.orchestrator_env,
        "ORCHESTRATOR_PORT": str(orchestrator_port),
        "ORCHESTRATOR_MAX_MESSAGE_CHARS": "40",
    }
    env = gateway_env(
        gateway_port, pg_dsn, redis_url, f"http://127.0.0.1:{orchestrator_port}", GATEWAY_REDIS_KEY_PREFIX="strict:"
    )
    message = "Zoom to Munich and tell me about the Isar valley please"
    with services(("stacgis_orchestrator", strict, orchestrator_port), ("stacgis_gateway", env, gateway_port)) as (
        _,
        gateway,
    ):
        async with httpx.AsyncClient(timeout=30) as client:
            refused = await chat(client, gateway.url, message, user(new_user()))
    assert refused.names == ["session", "error"]
    error = refused.events[-1].data["error"]
    assert error["code"] == "orchestrator_unavailable"
    assert error["message"] == "orchestrator refused the run (HTTP 422): message: longer than 40 characters"
