"""Runs outlive connections: resume on the other replica exactly once and in order; approvals; cancel."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from gateway_helpers import Gateways, Stream, chat, new_user, read_stream, resume, stream_id_key, user

from stacgis_common.testing import error_of


@pytest.mark.asyncio
async def test_resume_on_the_other_gateway_delivers_the_rest_exactly_once_in_order(gateways: Gateways) -> None:
    henry = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        # Gateway A: read the start and three answer deltas, then drop the connection.
        head = await chat(client, gateways.a.url, "[slow=2][deltas=10] a long answer", user(henry), stop_after=4)
        assert head.names == ["session", "content", "content", "content"]
        # Gateway B: carry on from the last event id received.
        tail = await resume(client, gateways.b.url, head.run_id, head.events[-1].id, user(henry))
        assert tail.status == 200 and tail.headers["x-accel-buffering"] == "no"
        assert tail.names[-1] == "done" and "session" not in tail.names

        combined = head.events + tail.events
        assert [int(e.data["seq"]) for e in combined] == list(range(1, len(combined) + 1))  # none lost, none twice
        ids = [stream_id_key(str(e.id)) for e in combined]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        answer = "".join(e.data["content"]["text"] for e in combined if e.event == "content")
        assert answer == "Echo: a long answer" == tail.events[-1].data["done"]["content"]

        # A replay from the start (query parameter form) is the same stream, id for id.
        async with client.stream(
            "GET", f"{gateways.a.url}/api/v1/chat/runs/{head.run_id}/events?last_event_id=0", headers=user(henry)
        ) as response:
            replay = Stream(response.status_code, response.headers)
            await read_stream(response, replay)
        assert [(e.id, e.event) for e in replay.events] == [(e.id, e.event) for e in combined]

        # Resuming after the final event ends at once instead of hanging.
        nothing = await asyncio.wait_for(
            resume(client, gateways.b.url, head.run_id, tail.events[-1].id, user(henry)), 10
        )
        assert nothing.status == 200 and nothing.events == []

        metrics = (await client.get(f"{gateways.b.url}/metrics")).text
        assert "stacgis_gateway_resumes_total 0.0" not in metrics


@pytest.mark.asyncio
async def test_approval_answered_through_the_other_gateway(gateways: Gateways) -> None:
    iris = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        head = await chat(client, gateways.a.url, "[tool][approval] list what you have", user(iris), stop_after=3)
        assert head.names == ["session", "tool_start", "approval_required"]
        approval = head.events[-1].data["approvalRequired"]
        assert approval["toolName"] == "list_raster_collections" and approval["timeoutSeconds"] == 30
        approval_id = approval["approvalId"]

        intruder = await client.post(
            f"{gateways.b.url}/api/v1/chat/approvals/{approval_id}", json={"approved": True}, headers=user(new_user())
        )
        assert error_of(intruder, 404) == {"field": None, "message": "approval not found", "code": "not_found"}

        answered = await client.post(
            f"{gateways.b.url}/api/v1/chat/approvals/{approval_id}",
            json={"approved": False, "reason": "not now"},
            headers=user(iris),
        )
        assert answered.status_code == 200
        assert answered.json() == {"approval_id": approval_id, "run_id": head.run_id, "approved": False}
        twice = await client.post(
            f"{gateways.a.url}/api/v1/chat/approvals/{approval_id}", json={"approved": True}, headers=user(iris)
        )
        # The orchestrator's own words, read from its error body.
        assert error_of(twice, 409)["message"] == f"approval {approval_id} is already decided"

        rest = await resume(client, gateways.b.url, head.run_id, head.events[-1].id, user(iris))
        assert rest.names[0] == "tool_error" and rest.names[-1] == "done"
        assert rest.events[0].data["toolError"]["error"] == "rejected by the user"


@pytest.mark.asyncio
async def test_cancel_through_the_other_gateway_keeps_the_partial_answer(gateways: Gateways) -> None:
    jack = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        head = await chat(client, gateways.a.url, "[hang][deltas=3] stop me", user(jack), stop_after=2)
        cancelled = await client.post(f"{gateways.b.url}/api/v1/chat/runs/{head.run_id}/cancel", headers=user(jack))
        assert cancelled.status_code == 202
        rest = await resume(client, gateways.a.url, head.run_id, head.events[-1].id, user(jack))
        assert rest.names == ["done"]
        done = rest.events[0].data["done"]
        assert done["finishReason"] == "cancelled" and done["content"] == head.content()
        history = (
            await client.get(f"{gateways.b.url}/api/v1/chat/session/{head.session_id}/history", headers=user(jack))
        ).json()
        assert [(m["role"], m["content"]) for m in history["messages"]] == [
            ("user", "[hang][deltas=3] stop me"),
            ("assistant", head.content()),
        ]
