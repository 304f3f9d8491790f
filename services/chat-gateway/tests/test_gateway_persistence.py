"""Postgres is the record: history survives a flushed Redis and restarts of the gateway and the orchestrator."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
import redis
from gateway_helpers import Gateways, chat, database, gateway_env, new_user, resume, services, user

from stacgis_common.testing import error_of, free_port

HERE = Path(__file__).parent


@pytest.mark.asyncio
async def test_history_survives_redis_flushdb(gateways: Gateways, redis_client: redis.Redis, pg_dsn: str) -> None:
    kate = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        first = await chat(client, gateways.a.url, "[tool] first question", user(kate))
        await chat(client, gateways.b.url, "second question", user(kate), session_id=first.session_id)
        url = f"{gateways.a.url}/api/v1/chat/session/{first.session_id}/history"
        before = (await client.get(url, headers=user(kate))).json()
        assert len(before["messages"]) == 6

        redis_client.flushdb()  # sessions, run streams, gate: all gone

        assert (await client.get(url, headers=user(kate))).json() == before
        sessions = (await client.get(f"{gateways.b.url}/api/v1/chat/sessions", headers=user(kate))).json()
        assert [s["id"] for s in sessions] == [first.session_id]
        # The conversation goes on from Postgres: the model gets the whole history again.
        third = await chat(client, gateways.b.url, "third question", user(kate), session_id=first.session_id)
        assert third.status == 200 and third.names[-1] == "done"
        runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
        sent = next(run for run in runs if run["run_id"] == third.run_id)["history"]
        assert [(m["role"], m.get("content", "")) for m in sent] == [
            (m["role"], m["content"]) for m in before["messages"]
        ]
        assert sent[1]["toolCalls"][0]["name"] == "list_raster_collections"
        after = (await client.get(url, headers=user(kate))).json()
        assert after["messages"][:6] == before["messages"] and len(after["messages"]) == 8
        # Other users still cannot see it, cache or no cache.
        assert error_of(await client.get(url, headers=user(new_user())), 404)["message"] == "session not found"
    async with database(pg_dsn) as db:
        per_run = await db.fetch(
            "SELECT run_id, count(*) AS n FROM gateway.messages WHERE session_id = $1 GROUP BY run_id",
            uuid.UUID(first.session_id),
        )
    assert sorted(row["n"] for row in per_run) == [2, 2, 4]  # each run stored once


@pytest.mark.asyncio
async def test_history_survives_restarting_gateway_and_orchestrator(pg_dsn: str, redis_url: str) -> None:
    orchestrator_port, gateway_port = free_port(), free_port()
    orchestrator_env = {"ORCH_PORT": str(orchestrator_port), "PYTHONPATH": str(HERE)}
    env = gateway_env(
        gateway_port, pg_dsn, redis_url, f"http://127.0.0.1:{orchestrator_port}", GATEWAY_REDIS_KEY_PREFIX="restart:"
    )
    liam = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        with services(
            ("gateway_test_orchestrator", orchestrator_env, orchestrator_port),
            ("stacgis_gateway", env, gateway_port),
        ) as (_, gateway):
            first = await chat(client, gateway.url, "before the restart", user(liam))
            assert first.names[-1] == "done"
            url = f"{gateway.url}/api/v1/chat/session/{first.session_id}/history"
            before = (await client.get(url, headers=user(liam))).json()
        # Both processes are gone now (SIGTERM); start them again on the same ports.
        with services(
            ("gateway_test_orchestrator", orchestrator_env, orchestrator_port),
            ("stacgis_gateway", env, gateway_port),
        ) as (orchestrator, gateway):
            assert (await client.get(url, headers=user(liam))).json() == before
            second = await chat(client, gateway.url, "after the restart", user(liam), session_id=first.session_id)
            assert second.status == 200 and second.names[-1] == "done"
            runs = (await client.get(f"{orchestrator.url}/_scripted/runs")).json()
            assert runs[0]["history"] == [
                {"role": "user", "content": "before the restart"},
                {"role": "assistant", "content": "Echo: before the restart"},
            ]
            assert len((await client.get(url, headers=user(liam))).json()["messages"]) == 4


@pytest.mark.asyncio
async def test_grounding_is_forwarded_and_kept_with_the_answer(gateways: Gateways) -> None:
    lena = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        stream = await chat(client, gateways.a.url, "[grounded] mean 348 m, max 9999 m", user(lena))
        done = stream.events[-1].data["done"]
        numbers = done["grounding"]["numbers"]
        answer = done["content"]
        assert [n["text"] for n in numbers] == ["348", "9999"]
        assert all(answer[n["start"] : n["end"]] == n["text"] for n in numbers)
        assert done["grounding"]["unsupportedCount"] == 1

        url = f"{gateways.b.url}/api/v1/chat/session/{stream.session_id}/history"
        history = (await client.get(url, headers=user(lena))).json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert "grounding" not in history[0]
        assert history[1]["content"] == answer and history[1]["grounding"] == done["grounding"]

        # The next run's model history carries the answer but never the check.
        follow = await chat(client, gateways.a.url, "and the min?", user(lena), session_id=stream.session_id)
        runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
        sent = next(run for run in runs if run["run_id"] == follow.run_id)["history"]
        assert sent[-1]["content"] == answer and "grounding" not in sent[-1]


@pytest.mark.asyncio
async def test_history_keeps_whether_each_call_ran_was_rejected_or_failed(gateways: Gateways) -> None:
    mona = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        ran = await chat(client, gateways.a.url, "[tool] what collections?", user(mona))
        session = ran.session_id
        head = await chat(
            client, gateways.a.url, "[tool][approval] again", user(mona), session_id=session, stop_after=3
        )
        approval_id = head.events[-1].data["approvalRequired"]["approvalId"]
        refused = await client.post(
            f"{gateways.b.url}/api/v1/chat/approvals/{approval_id}", json={"approved": False}, headers=user(mona)
        )
        assert refused.status_code == 200
        rest = await resume(client, gateways.b.url, head.run_id, head.events[-1].id, user(mona))
        assert rest.names[-1] == "done"
        await chat(client, gateways.b.url, "[toolfail] once more", user(mona), session_id=session)

        url = f"{gateways.b.url}/api/v1/chat/session/{session}/history"
        history = (await client.get(url, headers=user(mona))).json()["messages"]
        calls = [call for m in history if m["role"] == "assistant" for call in m.get("tool_calls", [])]
        assert [(c["name"], c["status"]) for c in calls] == [
            ("list_raster_collections", "ok"),
            ("list_raster_collections", "rejected"),
            ("list_raster_collections", "failed"),
        ]
        assert "error" not in calls[0]
        assert calls[1]["error"] == "rejected by the user" and calls[1]["error_kind"] == "rejected"
        assert "unreachable" in calls[2]["error"] and calls[2]["error_kind"] == "tool_failed"

        # The model's history carries the calls as the contract has them: no outcome fields.
        follow = await chat(client, gateways.a.url, "and now?", user(mona), session_id=session)
        runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
        sent = next(run for run in runs if run["run_id"] == follow.run_id)["history"]
        sent_calls = [call for m in sent for call in m.get("toolCalls", [])]
        assert len(sent_calls) == 3 and all(set(call) <= {"id", "name", "arguments"} for call in sent_calls)
