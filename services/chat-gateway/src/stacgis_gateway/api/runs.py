"""Following a run after the fact: resume its events, cancel it, answer its approval requests."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query
from sse_starlette import EventSourceResponse
from starlette.exceptions import HTTPException

from stacgis_common.arguments import ArgumentError
from stacgis_common.auth import Identity, mint_for
from stacgis_common.http_errors import Conflict, Missing, Unavailable, message_of

from ..deps import Gateway, GatewayDep, UserId
from ..metrics import RESUMES
from ..orchestrator import OrchestratorError
from ..runstore import STREAM_ID, RunMeta
from ..schemas import ApprovalOut, ApprovalRequest, CancelOut, Problem
from ..streaming import sse_response, tail_run
from .errors import not_found

router = APIRouter(prefix="/chat", tags=["runs"])

RunId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="Run id (the runId of its events)")]
ApprovalId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:-]{1,128}$")]
# After the orchestrator accepted a cancel, how long it has to end the run itself before the gateway does.
CANCEL_GRACE_SECONDS = 5.0
ORCHESTRATOR_RETRY_AFTER_SECONDS = 2
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": "No such run for this user"}}


async def _owned_run(gateway: Gateway, run_id: str, user_id: str) -> RunMeta:
    meta = await gateway.runs.meta(run_id)
    if meta is None or meta.user_id != user_id:
        raise not_found("run")
    return meta


def _token(gateway: Gateway, user_id: str, session_id: str | None) -> str:
    return mint_for(gateway.settings, Identity(user_id=user_id, session_id=session_id))


@router.get(
    "/runs/{run_id}/events",
    summary="Resume a run's event stream after the last event received",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "The events after Last-Event-ID, then the stream ends",
        },
        **NOT_FOUND,
    },
)
async def resume(
    run_id: RunId,
    gateway: GatewayDep,
    user_id: UserId,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[str | None, Query(alias="last_event_id", description="Same as the Last-Event-ID header")] = None,
) -> EventSourceResponse:
    cursor = last_event_id or after or "0-0"
    if cursor != "0" and not STREAM_ID.match(cursor):
        raise ArgumentError("Last-Event-ID" if last_event_id else "last_event_id", "not an event id of this stream")
    await _owned_run(gateway, run_id, user_id)
    RESUMES.inc()
    return sse_response(tail_run(gateway.hub, run_id, cursor, check_now=True))


@router.post(
    "/runs/{run_id}/cancel",
    summary="Cancel a run (the stream then ends with its final event)",
    response_model=CancelOut,
    status_code=202,
    responses=NOT_FOUND,
)
async def cancel(run_id: RunId, gateway: GatewayDep, user_id: UserId) -> CancelOut:
    meta = await _owned_run(gateway, run_id, user_id)
    if meta.status == "finished":
        return CancelOut(run_id=run_id, status="finished")
    try:
        answer = await gateway.orchestrator.cancel(run_id, _token(gateway, user_id, meta.session_id))
        accepted = 200 <= answer.status < 300
    except OrchestratorError:
        accepted = False
    # Whichever replica runs it stops it itself if the orchestrator could not (or does not in time).
    await gateway.runs.request_cancel(run_id, time.time() + (CANCEL_GRACE_SECONDS if accepted else 0.0))
    return CancelOut(run_id=run_id, status="cancelling")


@router.post(
    "/approvals/{approval_id}",
    summary="Approve or reject a tool call the run is waiting on",
    response_model=ApprovalOut,
    responses={
        404: {"model": Problem, "description": "No such pending approval for this user"},
        409: {"model": Problem, "description": "Already answered"},
        503: {"model": Problem, "description": "The orchestrator cannot be reached"},
    },
)
async def answer_approval(
    approval_id: ApprovalId, body: ApprovalRequest, gateway: GatewayDep, user_id: UserId
) -> ApprovalOut:
    owner = await gateway.runs.approval_owner(approval_id)
    if owner is None or owner[1] != user_id:
        raise not_found("approval")
    run_id = owner[0]
    meta = await gateway.runs.meta(run_id)
    token = _token(gateway, user_id, meta.session_id if meta else None)
    try:
        answer = await gateway.orchestrator.answer_approval(approval_id, body.approved, body.reason, token)
    except OrchestratorError as error:
        raise Unavailable(
            f"could not reach the orchestrator: {error}; retry shortly",
            headers={"Retry-After": str(ORCHESTRATOR_RETRY_AFTER_SECONDS)},
        ) from None
    if 200 <= answer.status < 300:
        return ApprovalOut(approval_id=approval_id, run_id=run_id, approved=body.approved)
    said = message_of(answer.body)  # the orchestrator's own words (stacgis_common.http_errors)
    if answer.status == 404:
        raise Missing(said or "approval not found or expired")
    if answer.status == 409:
        raise Conflict(said or "approval already answered")
    if answer.status < 500:
        # Any other refusal keeps the orchestrator's status (its own words when it gave them).
        raise HTTPException(answer.status, said or "the orchestrator refused the answer")
    raise Unavailable(
        f"the orchestrator failed (HTTP {answer.status}); retry shortly",
        headers={"Retry-After": str(ORCHESTRATOR_RETRY_AFTER_SECONDS)},
    )
