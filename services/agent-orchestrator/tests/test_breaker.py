"""Failing tool servers: retries for read-only tools only, and a circuit breaker that opens when a
server dies mid-run and closes again once it is back."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from orchestrator_helpers import RunStream, auth, content, run_events, set_rules, terminal

from conftest import ToolServer, orchestrator, orchestrator_env, tool_server
from stacgis_common.testing import RunningService, free_port


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


@pytest.fixture(scope="module")
def flaky_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def flaky(tool_folder: Path, flaky_port: int) -> Iterator[ToolServer]:
    with tool_server("raster", tool_folder, port=flaky_port) as server:
        yield server


@pytest.fixture(scope="module")
def orch_c(model_server: RunningService, redis_url: str, flaky: ToolServer) -> Iterator[RunningService]:
    env = orchestrator_env(model_server.url, redis_url, {"raster": flaky.mcp}, approval_tools="[]")
    with orchestrator(env) as service:
        yield service


def calls_of(server_url: str, tool: str) -> int:
    return sum(1 for call in httpx.get(server_url + "/_control/calls").json() if call["tool"] == tool)


def breaker_state(orch_url: str) -> str:
    servers = httpx.get(orch_url + "/v1/tools", headers=auth()).json()["servers"]
    return str(next(s for s in servers if s["name"] == "raster")["breakerState"])


@pytest.mark.asyncio
async def test_a_read_only_tool_is_retried_through_transient_failures(orch_c, flaky, model_url) -> None:
    message = unique("retry the point")
    await set_rules(
        model_url,
        {
            "name": "point",
            "match": {"last_user": "retry the point", "step": 0},
            "tool_calls": [
                {"name": "query_raster_point", "arguments": {"collection_id": "lux-dem", "lon": 6.1, "lat": 49.6}}
            ],
        },
        {
            "name": "answer",
            "match": {"last_user": "retry the point", "step": 1},
            "content": "{{tool:query_raster_point:value}}",
        },
    )
    before = calls_of(flaky.url, "query_raster_point")
    httpx.post(flaky.url + "/_control/fail", json={"count": 2, "status": 503})
    events = await run_events(orch_c.url, {"message": message})
    assert content(events) == "370.5"
    assert "tool_error" not in [e.name for e in events]
    assert calls_of(flaky.url, "query_raster_point") - before == 3, "two failed attempts and the one that worked"
    assert breaker_state(orch_c.url) == "closed"


@pytest.mark.asyncio
async def test_a_write_tool_is_never_retried(orch_c, flaky, model_url) -> None:
    message = unique("write once")
    await set_rules(
        model_url,
        {
            "name": "write",
            "match": {"last_user": "write once", "step": 0},
            "tool_calls": [{"name": "save_note", "arguments": {"text": "once"}}],
        },
        {"name": "answer", "match": {"last_user": "write once", "step": 1}, "content": "Could not save."},
    )
    before = calls_of(flaky.url, "save_note")
    httpx.post(flaky.url + "/_control/fail", json={"count": 1, "status": 503})
    events = await run_events(orch_c.url, {"message": message})
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "unavailable" and "503" in error["error"]
    assert calls_of(flaky.url, "save_note") - before == 1
    assert "save_note" not in flaky.notes_text()
    assert terminal(events).proto.done.content == "Could not save."


@pytest.mark.asyncio
async def test_server_killed_mid_run_opens_the_breaker_and_the_next_run_uses_it_again(
    orch_c, flaky, flaky_port, tool_folder, model_url
) -> None:
    message = unique("long analysis")
    await set_rules(
        model_url,
        {
            "name": "slow",
            "match": {"last_user": "long analysis", "step": 0},
            "tool_calls": [{"name": "slow_operation", "arguments": {"seconds": 5}}],
        },
        {
            "name": "try another",
            "match": {"last_user": "long analysis", "step": 1, "last_tool_content": "could not run"},
            "tool_calls": [
                {
                    "name": "get_raster_statistics",
                    "arguments": {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.6, 50.2]},
                }
            ],
        },
        {
            "name": "give up",
            "match": {"last_user": "long analysis", "step": 2, "last_tool_content": "circuit open"},
            "content": "The raster server is down, so I cannot compute this now.",
        },
        {
            "name": "back",
            "match": {"last_user": "is it back", "step": 0},
            "tool_calls": [{"name": "list_raster_collections", "arguments": {}}],
        },
        {
            "name": "back answer",
            "match": {"last_user": "is it back", "step": 1},
            "content": "First: {{tool:list_raster_collections:collections.0.id}}",
        },
    )
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", orch_c.url + "/v1/runs", json={"message": message}, headers=auth()) as response,
    ):
        stream = RunStream(response)
        await stream.until("tool_start")
        await asyncio.sleep(0.5)
        flaky.service.kill()
        events = await stream.rest()
    errors = [e.payload for e in events if e.name == "tool_error"]
    assert [e["toolName"] for e in errors] == ["slow_operation", "get_raster_statistics"]
    assert errors[0]["kind"] == "unavailable"
    assert "circuit open" in errors[1]["error"] and errors[1].get("durationMs", "0") == "0", (
        "an open circuit fails fast"
    )
    assert terminal(events).proto.done.content == "The raster server is down, so I cannot compute this now."
    assert breaker_state(orch_c.url) == "open"
    metrics = httpx.get(orch_c.url + "/metrics").text
    assert 'stacgis_circuit_breaker_state{server="raster"} 2.0' in metrics

    with tool_server("raster", tool_folder, port=flaky_port):
        deadline = time.monotonic() + 10
        while breaker_state(orch_c.url) == "open":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        events = await run_events(orch_c.url, {"message": unique("is it back")})
        assert content(events) == "First: landsat-ndvi"
        assert breaker_state(orch_c.url) == "closed"
        assert 'stacgis_circuit_breaker_state{server="raster"} 0.0' in httpx.get(orch_c.url + "/metrics").text
