"""Approval-gated tools: the decision reaches the waiting run from another orchestrator process."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from orchestrator_helpers import RunStream, auth, content, model_requests, set_rules, terminal

from stacgis_common.testing import error_of

SAVE = {"name": "save_note", "arguments": {"text": "flood extent 2021"}}


def unique(text: str) -> str:
    return f"{text} [{uuid.uuid4().hex[:8]}]"


async def gated_rules(model_url: str, trigger: str, call: dict) -> None:  # type: ignore[type-arg]
    await set_rules(
        model_url,
        {"name": "gated", "match": {"last_user": trigger, "step": 0}, "tool_calls": [call]},
        {
            "name": "after",
            "match": {"last_user": trigger, "step": 1},
            "content": "Outcome: {{tool:" + call["name"] + "}}",
        },
    )


@pytest.mark.asyncio
async def test_approval_sent_to_the_other_replica_lets_the_call_run(orch, orch_b, model_url, raster) -> None:
    message = unique("keep a note")
    await gated_rules(model_url, "keep a note", SAVE)
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        stream = RunStream(response)
        request = (await stream.until("approval_required")).payload
        assert request["toolName"] == "save_note"
        assert request["arguments"] == {"text": "flood extent 2021"}
        assert request["server"] == "raster" and request["timeoutSeconds"] == 5
        assert "save_note" not in raster.notes_text() or message not in raster.notes_text()
        before = raster.notes_text()
        decision = await client.post(
            orch_b.url + f"/v1/approvals/{request['approvalId']}", json={"approved": True}, headers=auth("alice")
        )
        assert decision.status_code == 200, decision.text
        assert decision.json() == {"approvalId": request["approvalId"], "status": "approved"}
        events = await stream.rest()
    names = [e.name for e in events]
    assert names.index("approval_required") < names.index("tool_start") < names.index("tool_result")
    assert raster.notes_text()[len(before) :] == "save_note alice flood extent 2021\n"
    assert content(events) == "Outcome: saved 'flood extent 2021'"
    assert terminal(events).proto.done.finish_reason == "completed"

    # A second decision on the same approval is a conflict, whoever sends it.
    again = httpx.post(
        orch.url + f"/v1/approvals/{request['approvalId']}", json={"approved": False}, headers=auth("alice")
    )
    refused = error_of(again, 409)
    assert (
        refused["code"] == "conflict" and refused["message"] == f"approval {request['approvalId']} is already approved"
    )


@pytest.mark.asyncio
async def test_rejection_with_reason_reaches_the_model_and_nothing_runs(orch, orch_b, model_url, raster) -> None:
    message = unique("delete the collection")
    # delete_collection asks for approval through its own schema (x_requires_approval), not configuration.
    await gated_rules(
        model_url, "delete the collection", {"name": "delete_collection", "arguments": {"collection_id": "pr-1999"}}
    )
    before = raster.notes_text()
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        stream = RunStream(response)
        request = (await stream.until("approval_required")).payload
        # Another user cannot decide it: to them it does not exist.
        foreign = await client.post(
            orch_b.url + f"/v1/approvals/{request['approvalId']}", json={"approved": True}, headers=auth("mallory")
        )
        assert error_of(foreign, 404)["message"] == f"no pending approval {request['approvalId']}"
        decision = await client.post(
            orch_b.url + f"/v1/approvals/{request['approvalId']}",
            json={"approved": False, "reason": "that data is still in use"},
            headers=auth("alice"),
        )
        assert decision.json()["status"] == "rejected"
        events = await stream.rest()
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "rejected" and "that data is still in use" in error["error"]
    assert "tool_start" not in [e.name for e in events]
    assert raster.notes_text() == before, "a rejected call must not run"
    seen = (await model_requests(model_url, contains=message))[-1]["body"]["messages"][-1]
    assert seen["role"] == "tool" and "rejected" in seen["content"] and "still in use" in seen["content"]
    assert terminal(events).name == "done"


@pytest.mark.asyncio
async def test_an_unanswered_approval_times_out_as_a_rejection(orch, model_url, raster) -> None:
    message = unique("note without answer")
    await gated_rules(model_url, "note without answer", SAVE)
    before = raster.notes_text()
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", orch.url + "/v1/runs", json={"message": message}, headers=auth("alice")) as response,
    ):
        stream = RunStream(response)
        request = (await stream.until("approval_required")).payload
        waited_from = time.monotonic()
        events = await stream.rest()
    waited = time.monotonic() - waited_from
    assert 4 < waited < 15, waited
    error = next(e.payload for e in events if e.name == "tool_error")
    assert error["kind"] == "approval_timeout"
    assert raster.notes_text() == before
    assert terminal(events).name == "done"
    late = httpx.post(
        orch.url + f"/v1/approvals/{request['approvalId']}", json={"approved": True}, headers=auth("alice")
    )
    assert error_of(late, 409)["message"] == f"approval {request['approvalId']} is already expired"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "approved"),
        ({"approved": "yes"}, "approved"),
        ({"approved": True, "reason": "x" * 3000}, "reason"),
        ([], "body"),
    ],
)
def test_bad_decisions_get_422_naming_the_field(orch, body, field) -> None:
    response = httpx.post(orch.url + "/v1/approvals/apr_x", json=body, headers=auth("alice"))
    assert error_of(response, 422, field)["code"] == "invalid_argument"


def test_unknown_approval_is_404_and_decisions_need_a_token(orch) -> None:
    unknown = httpx.post(orch.url + "/v1/approvals/apr_nope", json={"approved": True}, headers=auth())
    assert error_of(unknown, 404) == {"field": None, "message": "no pending approval apr_nope", "code": "not_found"}
    anonymous = httpx.post(orch.url + "/v1/approvals/apr_nope", json={"approved": True})
    assert error_of(anonymous, 401)["message"] == "invalid internal token: missing bearer token"
