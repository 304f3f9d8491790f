"""Starting runs: POST /chat/stream (SSE) and POST /chat/ (the whole answer at once), and the gate's capacity."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from fastapi import APIRouter
from sse_starlette import EventSourceResponse

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import Conflict, RateLimited, TimedOut, Unavailable, UpstreamFailed

from ..contract import RunSummary
from ..deps import Gateway, GatewayDep, UserId
from ..fanout import UNREADABLE
from ..metrics import REJECTIONS
from ..models import ModelsUnavailable
from ..runs import RunSpec
from ..schemas import (
    ActiveRun,
    Capacity,
    ChatAnswer,
    ChatRequest,
    GateFull,
    Problem,
    RunFailed,
    TokenUsage,
    check_chat_request,
)
from ..sessions import SessionNotFound, title_of
from ..streaming import RUN_ID_HEADER, follow_entries, sse_response, tail_run
from .errors import not_found

router = APIRouter(prefix="/chat", tags=["chat"])

# Suggested wait before retrying when every slot is taken (the browser polls capacity meanwhile).
RETRY_AFTER_SECONDS = 5
log = logging.getLogger(__name__)

RUN_REFUSALS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No such session for this user"},
    409: {"model": ActiveRun, "description": "The session already has a run in progress"},
    422: {"model": Problem, "description": "Invalid input; `field` names the first offending field, `message` each"},
    429: {"model": Problem, "description": "Too many runs started by this user in the last minute"},
    503: {"model": GateFull, "description": "Every model slot is busy; retry after `Retry-After` seconds"},
}


async def _check_model(gateway: Gateway, user_id: str, model: str) -> None:
    """A 422 naming `model` unless the orchestrator offers it (a 503 when it cannot say)."""
    try:
        choices = await gateway.models.choices(user_id)
    except ModelsUnavailable as error:
        raise Unavailable(
            f"the chosen model cannot be checked now ({error}); retry shortly",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        ) from None
    if model not in choices.models:
        listed = f"GET /api/v1/models lists the {len(choices.models)} offered"
        raise ArgumentError("model", f"unknown model {model!r}; {listed}")


async def _check_turn(gateway: Gateway, session_id: str, turn: int) -> None:
    """A 422 naming `replace_turn` unless the session has that question (checked under the session's run lock)."""
    questions = await gateway.store.question_count(session_id)
    if turn >= questions:
        message = f"the session has {questions} questions; replace_turn must be below that"
        raise ArgumentError("replace_turn", message)


async def admit_run(gateway: Gateway, user_id: str, body: ChatRequest) -> RunSpec:
    """Every check a new run passes, in order: input, model, rate, session, one run per session, the question
    to replace, the gate."""
    settings = gateway.settings
    check_chat_request(body, settings)
    if body.model is not None:
        await _check_model(gateway, user_id, body.model)
    decision = await gateway.limiter.hit(user_id)
    if not decision.allowed:
        REJECTIONS.labels("rate_limited").inc()
        raise RateLimited(
            f"at most {settings.rate_limit_per_minute} runs per minute; retry later",
            headers={"Retry-After": str(decision.retry_after_seconds)},
        )
    new_session = body.session_id is None
    if body.session_id is None:
        session = gateway.sessions.new(user_id)
    else:
        try:
            session = await gateway.sessions.load(str(body.session_id), user_id)
        except SessionNotFound:
            raise not_found("session") from None
    run_id = str(uuid.uuid4())
    holder = await gateway.sessions.lock_run(session.id, run_id)
    if holder is not None:
        REJECTIONS.labels("session_busy").inc()
        raise Conflict("this session already has a run in progress", run_id=holder)
    try:
        if body.replace_turn is not None:
            await _check_turn(gateway, session.id, body.replace_turn)
        try:
            admission = await gateway.gate.acquire(run_id, user_id)
        except BaseException:
            # The script may have admitted the run before the reply was lost: never leave that slot held.
            await gateway.gate.release_quietly(run_id, user_id)
            raise
        if admission.user_limited:
            REJECTIONS.labels("user_concurrency").inc()
            raise RateLimited(
                f"at most {settings.max_concurrent_runs_per_user} runs at once per user; wait for one to finish",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if not admission.admitted:
            REJECTIONS.labels("gate_full").inc()
            capacity: dict[str, Any] = admission.capacity.as_dict()  # active, max, available beside the message
            raise Unavailable(
                "all model slots are busy; retry shortly",
                code="gate_full",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                **capacity,
            )
        try:
            if new_session:
                await gateway.sessions.save_new(session, title_of(body.message))
            elif body.replace_turn is not None:
                # Only now that the run is admitted: a refused request must not cost the old turn.
                await gateway.sessions.replace_from(session, body.replace_turn, body.message)
            context = body.spatial_context.model_dump(mode="json") if body.spatial_context else None
            spec = RunSpec(run_id, user_id, session, body.message, context, body.model)
            await gateway.manager.start(spec)
        except BaseException:
            await gateway.gate.release_quietly(run_id, user_id)
            raise
    except BaseException:
        try:
            await gateway.sessions.unlock_run(session.id, run_id)
        except Exception:
            log.exception("could not release a session lock; its TTL will", extra={"run_id": run_id})
        raise
    return spec


@router.post(
    "/stream",
    summary="Send a message and stream the run as Server-Sent Events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": (
                "Events `session`, `thinking`, `tool_start`, `tool_result`, `tool_error`, `content`, "
                "`approval_required`, `frontend_tool`, `done`, `error`; each `data` is the proto3 JSON of "
                "stacgis.v1.AgentEvent and each `id` can be sent back as Last-Event-ID to resume. "
                "`: ping` comments keep idle connections open."
            ),
            "headers": {
                RUN_ID_HEADER: {
                    "description": "The run's id, to resume (GET /chat/runs/{run_id}/events) or cancel it "
                    "even when the connection breaks before the first event",
                    "schema": {"type": "string"},
                }
            },
        },
        **RUN_REFUSALS,
    },
)
async def chat_stream(body: ChatRequest, gateway: GatewayDep, user_id: UserId) -> EventSourceResponse:
    received = time.perf_counter()
    spec = await admit_run(gateway, user_id, body)
    events = tail_run(gateway.hub, spec.run_id, "0-0", received)
    return sse_response(events, run_id=spec.run_id)


@router.post(
    "/",
    summary="Send a message and wait for the whole answer",
    response_model=ChatAnswer,
    responses={
        502: {"model": RunFailed, "description": "The run ended with an error (partial answer included)"},
        504: {"model": ActiveRun, "description": "No answer in time; the run goes on (resume or cancel it by id)"},
        **RUN_REFUSALS,
    },
)
async def chat(body: ChatRequest, gateway: GatewayDep, user_id: UserId) -> ChatAnswer:
    spec = await admit_run(gateway, user_id, body)
    summary = RunSummary()
    closed: str | None = None
    try:
        async with asyncio.timeout(gateway.settings.sync_timeout_seconds):
            async for delivery in follow_entries(gateway.hub, spec.run_id, "0-0"):
                for entry in delivery.entries:
                    summary.add_json(entry.data)
                closed = delivery.closed
    except TimeoutError:
        raise TimedOut("no answer in time; the run goes on", run_id=spec.run_id) from None
    if summary.done is None:
        if summary.error is not None:
            code, message = summary.error.code or "internal", summary.error.message or "the run failed"
        elif closed == UNREADABLE:
            code, message = "stream_unavailable", "the run's events cannot be read (Redis unavailable)"
        else:
            code, message = "run_lost", "the run's events expired"
        raise UpstreamFailed(
            message, code=code, run_id=spec.run_id, session_id=spec.session.id, partial_content=summary.partial
        )
    done = summary.done
    return ChatAnswer(
        session_id=spec.session.id,
        run_id=spec.run_id,
        content=done.content or summary.partial,
        finish_reason=done.finish_reason or "completed",
        usage=TokenUsage(input_tokens=done.usage.input_tokens, output_tokens=done.usage.output_tokens),
        steps=done.steps,
        tool_calls=done.tool_calls,
    )


@router.get("/capacity", summary="Model slots in use and free, over all replicas", response_model=Capacity)
async def capacity(gateway: GatewayDep) -> Capacity:
    current = await gateway.gate.capacity()
    return Capacity(**current.as_dict())
