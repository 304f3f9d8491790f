"""The primary path: POST /chat/stream against the scripted orchestrator, end to end over real processes."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
import redis
from gateway_helpers import Gateways, chat, database, new_user, stream_id_key, user

from stacgis_common.testing import error_of

SPATIAL = {
    "map_center": {"lat": 48.14, "lon": 11.58},
    "zoom": 9,
    "selected_feature": {
        "type": "Feature",
        "id": "munich",
        "geometry": {"type": "Point", "coordinates": [11.58, 48.14]},
        "properties": {"name": "Munich"},
    },
    "drawn_geometry": {
        "type": "Polygon",
        "coordinates": [[[11.0, 48.0], [12.0, 48.0], [12.0, 48.5], [11.0, 48.0]]],
    },
}


@pytest.mark.asyncio
async def test_stream_sends_contract_events_and_stores_the_run(
    gateways: Gateways, pg_dsn: str, redis_client: redis.Redis
) -> None:
    alice = new_user()
    async with httpx.AsyncClient() as client:
        stream = await chat(
            client,
            gateways.a.url,
            "[thinking][tool][frontend] What is the terrain near Munich?",
            user(alice),
            spatial_context=SPATIAL,
        )
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-cache"
        assert stream.headers["x-accel-buffering"] == "no"

        names = stream.names
        assert names[0] == "session" and names[-1] == "done"
        assert names[1:3] == ["thinking", "thinking"]
        assert names[3:5] == ["tool_start", "tool_result"]
        assert "frontend_tool" in names and "content" in names
        started = stream.events[0].data["runStarted"]
        session_id = started["sessionId"]
        assert uuid.UUID(session_id) and started["model"] == "scripted"
        # Every event of the run: same run id, seq 1..N, SSE ids increasing (they are the resume cursor).
        assert {event.data["runId"] for event in stream.events} == {stream.run_id}
        assert stream.seqs() == list(range(1, len(stream.events) + 1))
        ids = [stream_id_key(str(event.id)) for event in stream.events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert stream.content() == "Echo: What is the terrain near Munich?"

        # The orchestrator got a valid RunRequest, a token for this user and session, and the map context.
        runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
        request = next(run for run in runs if run["run_id"] == stream.run_id)
        assert request["user_id"] == alice and request["session_id"] == session_id
        assert request["history"] == []
        context = request["spatial_context"]
        assert context["mapCenter"] == {"lat": 48.14, "lon": 11.58} and context["zoom"] == 9
        assert context["selectedFeature"]["properties"] == {"name": "Munich"}
        assert context["drawnGeometry"]["type"] == "Polygon"

        history = await client.get(f"{gateways.b.url}/api/v1/chat/session/{session_id}/history", headers=user(alice))
        assert history.status_code == 200
        messages = history.json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
        assert messages[0]["content"] == "[thinking][tool][frontend] What is the terrain near Munich?"
        assert messages[1]["tool_calls"] == [
            {
                "id": messages[1]["tool_calls"][0]["id"],
                "name": "list_raster_collections",
                "arguments": {"bbox": [5.8, 47.3, 15.0, 55.1]},
                "status": "ok",
            }
        ]
        assert messages[2]["tool_call_id"] == messages[1]["tool_calls"][0]["id"]
        assert messages[3]["content"] == "Echo: What is the terrain near Munich?"
        assert all("created_at" in m for m in messages)

        sessions = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(alice))).json()
        assert sessions == [
            {
                "id": session_id,
                "title": "[thinking][tool][frontend] What is the terrain near Munich?",
                "created_at": sessions[0]["created_at"],
                "updated_at": sessions[0]["updated_at"],
                "message_count": 2,
            }
        ]
        usage = (await client.get(f"{gateways.a.url}/api/v1/usage", headers=user(alice))).json()
        assert usage["runs"] == 1 and usage["tool_calls"] == 1 and usage["failed_runs"] == 0
        assert usage["input_tokens"] == 10 and usage["output_tokens"] == 4

    async with database(pg_dsn) as db:
        stored = await db.fetchval("SELECT count(*) FROM gateway.messages WHERE run_id = $1", stream.run_id)
    assert stored == 4  # persisted exactly once
    # The finished run's events expire; the session stays cached for its TTL.
    assert 0 < redis_client.ttl(f"{gateways.prefix}run:{stream.run_id}:events") <= 900
    assert 3500 < redis_client.ttl(f"{gateways.prefix}chat:session:{session_id}") <= 3600
    assert redis_client.zcard(f"{gateways.prefix}chat:active_slots") == 0


@pytest.mark.asyncio
async def test_follow_up_carries_the_history_and_renames(gateways: Gateways) -> None:
    bob = new_user()
    async with httpx.AsyncClient() as client:
        first = await chat(client, gateways.a.url, "Where is Lisbon?", user(bob))
        second = await chat(client, gateways.b.url, "And Porto?", user(bob), session_id=first.session_id)
        assert second.status == 200 and second.session_id == first.session_id
        runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
        request = next(run for run in runs if run["run_id"] == second.run_id)
        assert request["history"] == [
            {"role": "user", "content": "Where is Lisbon?"},
            {"role": "assistant", "content": "Echo: Where is Lisbon?"},
        ]
        renamed = await client.patch(
            f"{gateways.a.url}/api/v1/chat/session/{first.session_id}", json={"title": "  Iberia  "}, headers=user(bob)
        )
        assert renamed.status_code == 200 and renamed.json()["title"] == "Iberia"
        listed = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(bob))).json()
        assert [(s["title"], s["message_count"]) for s in listed] == [("Iberia", 4)]

        deleted = await client.delete(f"{gateways.b.url}/api/v1/chat/session/{first.session_id}", headers=user(bob))
        assert deleted.status_code == 204
        gone = await client.get(f"{gateways.a.url}/api/v1/chat/session/{first.session_id}/history", headers=user(bob))
        assert error_of(gone, 404)["message"] == "session not found"
        again = await chat(client, gateways.a.url, "Hello?", user(bob), session_id=first.session_id)
        assert again.error(404) == {"field": None, "message": "session not found", "code": "not_found"}


@pytest.mark.asyncio
async def test_idle_stream_sends_heartbeats(gateways: Gateways) -> None:
    async with httpx.AsyncClient() as client:
        stream = await chat(client, gateways.a.url, "[slow=1.6][deltas=2] take your time", user(new_user()))
    assert stream.names[-1] == "done"
    assert "ping" in stream.comments  # `: ping` while the answer paused (heartbeat 0.5 s here)


@pytest.mark.asyncio
async def test_second_message_while_running_gets_409_and_cancel_ends_the_run(gateways: Gateways) -> None:
    carol = new_user()
    async with httpx.AsyncClient() as client:
        first_events = asyncio.create_task(chat(client, gateways.a.url, "[hang][deltas=4] a long one", user(carol)))
        for _ in range(100):
            sessions = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(carol))).json()
            if sessions:
                break
            await asyncio.sleep(0.05)
        session_id = sessions[0]["id"]
        busy = await client.post(
            f"{gateways.b.url}/api/v1/chat/stream",
            json={"message": "me too", "session_id": session_id},
            headers=user(carol),
        )
        refusal = error_of(busy, 409)
        assert refusal["message"] == "this session already has a run in progress" and refusal["code"] == "conflict"
        run_id = refusal["run_id"]

        cancelled = await client.post(f"{gateways.b.url}/api/v1/chat/runs/{run_id}/cancel", headers=user(carol))
        assert cancelled.status_code == 202 and cancelled.json() == {"run_id": run_id, "status": "cancelling"}
        stream = await asyncio.wait_for(first_events, 20)
        assert stream.names[-1] == "done"
        assert stream.events[-1].data["done"]["finishReason"] == "cancelled"
        assert stream.run_id == run_id

        capacity = (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json()
        assert capacity == {"active": 0, "max": 10, "available": 10}
        after = await chat(client, gateways.b.url, "now?", user(carol), session_id=session_id)
        assert after.status == 200 and after.names[-1] == "done"
        again = await client.post(f"{gateways.a.url}/api/v1/chat/runs/{run_id}/cancel", headers=user(carol))
        assert again.json()["status"] == "finished"
        history = (
            await client.get(f"{gateways.a.url}/api/v1/chat/session/{session_id}/history", headers=user(carol))
        ).json()
        assert [(m["role"], m["content"]) for m in history["messages"]][:2] == [
            ("user", "[hang][deltas=4] a long one"),
            ("assistant", stream.content()),
        ]


@pytest.mark.asyncio
async def test_closing_the_browser_does_not_end_the_run(gateways: Gateways) -> None:
    dave = new_user()
    async with httpx.AsyncClient() as client:
        partial = await chat(client, gateways.a.url, "[slow=1.2][deltas=6] keep going", user(dave), stop_after=2)
        assert partial.names == ["session", "content"]
        session_id = partial.session_id
        for _ in range(60):
            history = (
                await client.get(f"{gateways.b.url}/api/v1/chat/session/{session_id}/history", headers=user(dave))
            ).json()
            if len(history["messages"]) == 2:
                break
            await asyncio.sleep(0.1)
        assert history["messages"][1]["content"] == "Echo: keep going"


async def _active_streams(client: httpx.AsyncClient, base: str) -> float:
    text = (await client.get(f"{base}/metrics")).text
    lines = text.splitlines()
    return float(next(line.split()[1] for line in lines if line.startswith("stacgis_gateway_active_streams ")))


@pytest.mark.asyncio
async def test_a_browser_that_leaves_is_let_go_at_once_while_its_run_goes_on(gateways: Gateways) -> None:
    fay = new_user()
    async with httpx.AsyncClient() as client:
        before = await _active_streams(client, gateways.a.url)
        partial = await chat(client, gateways.a.url, "[slow=6][deltas=2] take your time", user(fay), stop_after=2)
        assert partial.names == ["session", "content"]
        # Noticed at once: not at the run's next event (3 s away) nor its end, and a send to a client that
        # left does not fail.
        for _ in range(20):
            if await _active_streams(client, gateways.a.url) == before:
                break
            await asyncio.sleep(0.1)
        assert await _active_streams(client, gateways.a.url) == before
        # The run itself went on to its end (and freed its slot), as with any browser that leaves.
        for _ in range(150):
            if (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json()["active"] == 0:
                break
            await asyncio.sleep(0.1)
        path = f"/api/v1/chat/session/{partial.session_id}/history"
        history = await client.get(f"{gateways.b.url}{path}", headers=user(fay))
        assert history.json()["messages"][1]["content"] == "Echo: take your time"


@pytest.mark.asyncio
async def test_runs_longer_than_the_slot_ttl_are_kept_alive_by_the_processs_one_timer(gateways: Gateways) -> None:
    # The suite's gateways prune a slot (and declare its run lost) after 6 s without a refresh; these
    # runs last about 13 s, so the process's keep-alive rounds (one pipeline for all of its runs) must
    # refresh each of them several times.
    async with httpx.AsyncClient() as client:
        streams = await asyncio.gather(
            *(chat(client, gateways.a.url, "[slow=13][deltas=5] stay", user(new_user())) for _ in range(3))
        )
        for stream in streams:
            assert stream.names[0] == "session" and stream.names[-1] == "done", stream.names
        assert (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json()["active"] == 0


@pytest.mark.asyncio
async def test_model_error_ends_with_error_event_and_saves_the_partial_answer(gateways: Gateways) -> None:
    erin = new_user()
    async with httpx.AsyncClient() as client:
        stream = await chat(client, gateways.a.url, "[error][deltas=4] fail halfway", user(erin))
        assert stream.names[0] == "session" and stream.names[-1] == "error"
        assert stream.events[-1].data["error"]["code"] == "model_unavailable"
        partial = stream.content()
        assert partial and partial != "Echo: fail halfway"
        history = (
            await client.get(f"{gateways.a.url}/api/v1/chat/session/{stream.session_id}/history", headers=user(erin))
        ).json()
        assert [(m["role"], m["content"]) for m in history["messages"]] == [
            ("user", "[error][deltas=4] fail halfway"),
            ("assistant", partial),
        ]
        usage = (await client.get(f"{gateways.a.url}/api/v1/usage", headers=user(erin))).json()
        assert usage["runs"] == 1 and usage["failed_runs"] == 1
        assert (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json()["active"] == 0


@pytest.mark.asyncio
async def test_sync_chat_returns_the_whole_answer(gateways: Gateways) -> None:
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"{gateways.b.url}/api/v1/chat/", json={"message": "[tool] sum it up"}, headers=user(new_user()), timeout=30
        )
        assert answer.status_code == 200
        body = answer.json()
        assert body["content"] == "Echo: sum it up" and body["finish_reason"] == "completed"
        assert body["tool_calls"] == 1 and body["usage"] == {"input_tokens": 10, "output_tokens": 4}
        failed = await client.post(
            f"{gateways.b.url}/api/v1/chat/", json={"message": "[error] no luck"}, headers=user(new_user()), timeout=30
        )
        ended = error_of(failed, 502)
        assert ended["code"] == "model_unavailable" and ended["partial_content"].startswith("Echo")
        assert ended["message"] == "the model went away" and ended["run_id"] and ended["session_id"]


@pytest.mark.asyncio
async def test_info_capacity_openapi_and_metrics(gateways: Gateways) -> None:
    async with httpx.AsyncClient() as client:
        info = (await client.get(f"{gateways.a.url}/api/v1/info")).json()
        assert info == {"model": "scripted", "provider": "ollama", "auth_mode": "trusted-header"}
        assert (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json() == {
            "active": 0,
            "max": 10,
            "available": 10,
        }
        paths = set((await client.get(f"{gateways.a.url}/api/v1/openapi.json")).json()["paths"])
        assert paths >= {
            "/api/v1/chat/",
            "/api/v1/chat/stream",
            "/api/v1/chat/capacity",
            "/api/v1/chat/sessions",
            "/api/v1/chat/session/{session_id}",
            "/api/v1/chat/session/{session_id}/history",
            "/api/v1/chat/runs/{run_id}/events",
            "/api/v1/chat/runs/{run_id}/cancel",
            "/api/v1/chat/approvals/{approval_id}",
            "/api/v1/info",
            "/api/v1/usage",
        }
        ready = await client.get(f"{gateways.a.url}/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"redis": "ok", "postgres": "ok", "orchestrator": "ok"}
        metrics = (await client.get(f"{gateways.a.url}/metrics")).text
    for name in (
        "stacgis_gateway_active_streams",
        "stacgis_gateway_gate_slots_in_use",
        "stacgis_gateway_gate_capacity 10.0",
        'stacgis_gateway_events_sent_total{event="content"}',
        "stacgis_gateway_time_to_first_token_seconds_count",
        "stacgis_gateway_resumes_total",
        'http_server_requests_total{method="POST",route="/api/v1/chat/stream",service="chat-gateway",status="200"}',
    ):
        assert name in metrics, name
