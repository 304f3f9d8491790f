"""`POST /v1/runs` (the event stream) and `POST /v1/runs/{run_id}/cancel`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse

from stacgis_common.http_errors import Conflict, Missing

from ..coordination import NotFound
from ..events import EventSink, event_name, to_json
from ..loop import AgentRun
from .deps import CallerDep, ServicesDep
from .run_request import parse_run_request

log = logging.getLogger(__name__)

RUN_REQUEST_SCHEMA = {
    "description": "stacgis.v1.RunRequest in the proto3 JSON mapping (see proto/stacgis/v1/run.proto)",
    "content": {
        "application/json": {
            "schema": {"type": "object"},
            "example": {
                "sessionId": "s-1",
                "message": "What is the mean elevation of Luxembourg?",
                "spatialContext": {"mapCenter": {"lat": 49.61, "lon": 6.13}, "zoom": 8},
            },
        }
    },
    "required": True,
}


router = APIRouter(prefix="/v1")


@router.post(
    "/runs",
    openapi_extra={"requestBody": RUN_REQUEST_SCHEMA},
    responses={200: {"description": "text/event-stream of stacgis.v1.AgentEvent (proto3 JSON)"}},
)
async def create_run(request: Request, services: ServicesDep, caller: CallerDep) -> EventSourceResponse:
    settings = services.settings
    run_input = parse_run_request(await request.body(), settings, caller)
    run_id = run_input.run_id
    sink = EventSink(run_id)
    run = AgentRun(services, run_input, sink)
    holder: dict[str, asyncio.Task[None]] = {}

    def on_cancel() -> None:
        run.request_cancel()
        task = holder.get("task")
        if task is not None and not task.done():
            task.cancel()

    if not await services.coordinator.register_run(run_id, caller.user_id, run_input.identity.session_id, on_cancel):
        raise Conflict(f"run {run_id} already exists")

    async def stream() -> AsyncIterator[dict[str, str]]:
        holder["task"] = asyncio.create_task(run.execute(), name=f"run-{run_id}")
        try:
            while True:
                event = await sink.queue.get()
                if event is None:
                    break
                yield {"event": event_name(event), "data": to_json(event), "id": str(event.seq)}
        finally:
            # The caller went away (or the run ended): stop the run now, model stream included.
            with anyio.CancelScope(shield=True):
                task = holder["task"]
                if not task.done():
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        pass
                    except Exception:  # the run already failed; the caller is gone, so log it
                        log.exception("run failed while being stopped", extra={"run_id": run_id})
                await services.coordinator.finish_run(run_id)

    return EventSourceResponse(
        stream(),
        ping=int(max(1, settings.sse_ping_seconds)),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "X-Run-Id": run_id},
    )


@router.post("/runs/{run_id}/cancel", status_code=202)
async def cancel_run(run_id: str, services: ServicesDep, caller: CallerDep) -> JSONResponse:
    try:
        await services.coordinator.request_cancel(run_id, caller.user_id)
    except NotFound:
        raise Missing(f"no run {run_id} in progress") from None
    return JSONResponse({"runId": run_id, "status": "cancelling"}, status_code=202)
