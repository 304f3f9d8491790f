"""Cancellation: from another replica through Redis, or by the caller closing the stream; either
stops the in-flight model call at once (the model server sees the connection close)."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
import pytest
from orchestrator_helpers import RunStream, auth, content, model_requests, set_rules, terminal

from stacgis_common.testing import error_of

LONG_TEXT = "The elevation of Luxembourg ranges from the Moselle valley to the Ardennes. " * 8


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


async def wait_disconnected(model_url: str, message: str, timeout: float = 10) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        requests = await model_requests(model_url, contains=message)
        if requests and requests[-1]["client_disconnected"]:
            return requests[-1]
        await asyncio.sleep(0.1)
    raise AssertionError(f"the model server never saw the client go: {requests[-1] if requests else None}")


@pytest.mark.asyncio
async def test_cancel_sent_to_another_replica_stops_the_model_stream(orch, orch_b, model_url) -> None:
    message = unique("long story")
    await set_rules(
        model_url,
        {
            "name": "slow",
            "match": {"last_user": "long story"},
            "content": LONG_TEXT,
            "chunk_chars": 10,
            "delay_ms": 150,
        },
    )
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        stream = RunStream(response)
        first = await stream.until("content")
        await stream.until("content")
        cancelled_at = time.monotonic()
        reply = await client.post(orch_b.url + f"/v1/runs/{first.proto.run_id}/cancel", headers=auth("alice"))
        assert reply.status_code == 202, reply.text
        events = await stream.rest()
    assert time.monotonic() - cancelled_at < 3
    done = terminal(events).proto.done
    assert done.finish_reason == "cancelled"
    assert done.content == content(events) and 0 < len(done.content) < len(LONG_TEXT)
    entry = await wait_disconnected(model_url, message)
    assert entry["chunks_sent"] < len(LONG_TEXT) // 10
    again = httpx.post(orch.url + f"/v1/runs/{first.proto.run_id}/cancel", headers=auth("alice"))
    # A finished run can no longer be cancelled.
    assert error_of(again, 404)["message"] == f"no run {first.proto.run_id} in progress"


@pytest.mark.asyncio
async def test_closing_the_stream_cancels_the_run_and_its_model_call(orch, model_url) -> None:
    message = unique("then hang")
    await set_rules(
        model_url,
        {
            "name": "hang",
            "match": {"last_user": "then hang"},
            "content": "Two chunks then silence",
            "chunk_chars": 4,
            "stall": True,
            "stall_after_chunks": 2,
        },
    )
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        run_id = (await RunStream(response).until("content")).proto.run_id
        # The response is closed here, as a browser tab or gateway would.
    entry = await wait_disconnected(model_url, message)
    assert entry["outcome"] == "client_disconnected"
    deadline = time.monotonic() + 5
    while httpx.post(orch.url + f"/v1/runs/{run_id}/cancel", headers=auth("alice")).status_code != 404:
        assert time.monotonic() < deadline, "the run is still registered after its caller left"
        await asyncio.sleep(0.1)


@pytest.mark.asyncio
async def test_cancel_during_a_tool_call_ends_the_run_promptly(orch, orch_b, model_url) -> None:
    message = unique("slow tool")
    await set_rules(
        model_url,
        {
            "name": "slow tool",
            "match": {"last_user": "slow tool", "step": 0},
            "tool_calls": [{"name": "slow_operation", "arguments": {"seconds": 30}}],
        },
    )
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        stream = RunStream(response)
        start = await stream.until("tool_start")
        await asyncio.sleep(0.3)
        began = time.monotonic()
        reply = await client.post(orch_b.url + f"/v1/runs/{start.proto.run_id}/cancel", headers=auth("alice"))
        assert reply.status_code == 202
        events = await stream.rest()
    assert time.monotonic() - began < 3
    done = terminal(events).proto.done
    assert done.finish_reason == "cancelled"
    # The unanswered tool call is left out, so the history the caller stores stays valid.
    assert all(not m.tool_calls for m in done.new_messages)


@pytest.mark.asyncio
async def test_only_the_owner_cancels_and_run_ids_are_unique(orch, orch_b, model_url) -> None:
    message = unique("wait for it")
    run_id = f"run-{uuid.uuid4().hex}"
    await set_rules(model_url, {"name": "stall", "match": {"last_user": "wait for it"}, "stall": True})
    async with httpx.AsyncClient(timeout=30) as client:
        body = {"message": message, "runId": run_id}
        async with client.stream("POST", orch.url + "/v1/runs", json=body, headers=auth("alice")) as response:
            stream = RunStream(response)
            assert (await stream.until("run_started")).proto.run_id == run_id
            duplicate = await client.post(orch_b.url + "/v1/runs", json=body, headers=auth("alice"))
            assert error_of(duplicate, 409)["message"] == f"run {run_id} already exists"
            foreign = await client.post(orch_b.url + f"/v1/runs/{run_id}/cancel", headers=auth("bob"))
            assert error_of(foreign, 404)["message"] == f"no run {run_id} in progress"
            assert (await client.post(orch.url + f"/v1/runs/{run_id}/cancel", headers=auth("alice"))).status_code == 202
            events = await stream.rest()
    assert terminal(events).proto.done.finish_reason == "cancelled"
    unknown = httpx.post(orch.url + "/v1/runs/run-unknown/cancel", headers=auth("alice"))
    assert error_of(unknown, 404) == {"field": None, "message": "no run run-unknown in progress", "code": "not_found"}
    assert error_of(httpx.post(orch.url + f"/v1/runs/{run_id}/cancel"), 401)["code"] == "unauthenticated"
