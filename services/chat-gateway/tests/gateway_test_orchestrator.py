"""A scripted agent-orchestrator speaking the real contract, run as its own process by the gateway tests.

It serves `POST /v1/runs` (body: proto3 JSON of stacgis.v1.RunRequest, parsed strictly; bearer internal
token verified) and streams SSE whose data are AgentEvent messages serialised by protobuf itself, plus
`POST /v1/runs/{id}/cancel` and `POST /v1/approvals/{id}`. What a run does is scripted by directives in
the user's message:

    [deltas=N]   answer in N content deltas (default 4)     [slow=S]   spread the answer over S seconds
    [tool]       call a (pretend) MCP tool first             [frontend] emit a frontend_tool event
    [approval]   wait for an approval before the tool        [thinking] stream some thinking first
    [toolfail]   the tool call fails (a tool_error of kind tool_failed)
    [error]      end with an error event after half the answer
    [die]        exit the whole process after half the answer (the orchestrator dying mid-run)
    [hang]       after the first delta, wait until cancelled

`GET /_scripted/runs` lists the requests received (with the verified identity) for assertions; `GET /v1/models`
offers two models (`GET /_scripted/models`: who asked).

It also stands in for vector-tools' internal place search (`GET /places/search?q=&limit=`, internal token
verified) over three places; the words `slow`, `broken` and `refused` make it hang, fail (500) or refuse (422).
Its `GET /places/labels?bbox=&limit=` gives the three cities of LABELS whose point is in the box (largest first);
a box whose west is 1, 2 or 3 hangs, fails or refuses naming limit; `GET /_scripted/labels` lists the requests.
Its `GET /places/status` answers each user what `PUT /_scripted/place_status/{user}` set (`body`, with
`status` and a `delay` in seconds), by default PLACES_LOADED; `GET /_scripted/place_status` lists who asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from google.protobuf import json_format
from sse_starlette import EventSourceResponse, ServerSentEvent

from stacgis_common.arguments import ArgumentError
from stacgis_common.auth import Identity, identity_dependency
from stacgis_common.http_errors import (
    REFUSAL_ROWS,
    Conflict,
    ErrorMiddleware,
    ErrorTable,
    Forbidden,
    Missing,
    answer_errors,
)
from stacgis_common.settings import ServiceSettings
from stacgis_proto.v1 import events_pb2, run_pb2

DIRECTIVE = re.compile(r"\[(\w+)(?:=([\d.]+))?\]")
MODEL = "scripted"
# What GET /v1/models offers, the default first (as the orchestrator lists its provider's models).
MODELS = [MODEL, "scripted-large"]

app = FastAPI()
# Errors in the orchestrator's one body (stacgis_common.http_errors), as the gateway reads them.
ERRORS = ErrorTable(REFUSAL_ROWS, what="the scripted orchestrator request")
answer_errors(app, ERRORS)
app.add_middleware(ErrorMiddleware, table=ERRORS)
settings = ServiceSettings()
verified = identity_dependency(settings)
received: list[dict[str, Any]] = []
cancels: dict[str, asyncio.Event] = {}
approvals: dict[str, asyncio.Future[tuple[bool, str | None]]] = {}


def directives(message: str) -> dict[str, float]:
    return {name: float(value) if value else 1.0 for name, value in DIRECTIVE.findall(message)}


class Emitter:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seq = 0
        self.step = 0

    def event(self, **payload: Any) -> ServerSentEvent:
        self.seq += 1
        message = events_pb2.AgentEvent(run_id=self.run_id, seq=self.seq, step=self.step, **payload)
        data = json.dumps(json_format.MessageToDict(message), separators=(",", ":"))
        name = message.WhichOneof("payload")
        return ServerSentEvent(data=data, event="session" if name == "run_started" else name, sep="\n")


def answer_of(message: str) -> str:
    text = DIRECTIVE.sub("", message).strip()
    return f"Echo: {text}" if text else "Echo."


def grounding_of(content: str) -> events_pb2.Grounding:
    """Every number of the answer, the first one supported by a pretend tool call, the others not."""
    numbers = [
        events_pb2.GroundedNumber(
            text=match.group(),
            value=float(match.group()),
            start=match.start(),
            end=match.end(),
            supported=index == 0,
            call_id="call-ground" if index == 0 else "",
            tool_name="get_raster_statistics" if index == 0 else "",
            source_value=float(match.group()) if index == 0 else 0.0,
            match="exact" if index == 0 else "",
        )
        for index, match in enumerate(re.finditer(r"\d+(?:\.\d+)?", content))
    ]
    supported = sum(1 for number in numbers if number.supported)
    return events_pb2.Grounding(numbers=numbers, supported_count=supported, unsupported_count=len(numbers) - supported)


def split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


async def script(request: run_pb2.RunRequest, run_id: str) -> AsyncIterator[ServerSentEvent]:
    plan = directives(request.message)
    emit = Emitter(run_id)
    cancelled = cancels.setdefault(run_id, asyncio.Event())
    answer = answer_of(request.message)
    deltas = split(answer, int(plan.get("deltas", 4)))
    delay = plan.get("slow", 0.0) / max(1, len(deltas))
    new_messages: list[run_pb2.ChatMessage] = []
    tool_calls = 0
    sent: list[str] = []

    yield emit.event(
        run_started=events_pb2.RunStarted(session_id=request.session_id, model=request.options.model or MODEL)
    )
    emit.step = 1
    if "thinking" in plan:
        for piece in ("Let me ", "think."):
            yield emit.event(thinking=events_pb2.Thinking(text=piece))
    if "tool" in plan or "toolfail" in plan:
        arguments = {"bbox": [5.8, 47.3, 15.0, 55.1]}
        call_id = f"call-{run_id[:8]}"
        yield emit.event(
            tool_start=events_pb2.ToolStart(
                call_id=call_id, tool_name="list_raster_collections", arguments=arguments, server="raster-tools"
            )
        )
        approved = True
        if "approval" in plan:
            approval_id = f"appr-{run_id}"
            future: asyncio.Future[tuple[bool, str | None]] = asyncio.get_running_loop().create_future()
            approvals[approval_id] = future
            yield emit.event(
                approval_required=events_pb2.ApprovalRequired(
                    approval_id=approval_id,
                    call_id=call_id,
                    tool_name="list_raster_collections",
                    arguments=arguments,
                    timeout_seconds=30,
                )
            )
            approved, _ = await asyncio.wait_for(future, 30)
        tool_calls += 1
        if "toolfail" in plan:
            result = "raster-tools failed: the catalog is unreachable"
            yield emit.event(
                tool_error=events_pb2.ToolError(
                    call_id=call_id, tool_name="list_raster_collections", error=result, kind="tool_failed"
                )
            )
        elif approved:
            result = '{"collections": ["dem"]}'
            yield emit.event(
                tool_result=events_pb2.ToolResult(
                    call_id=call_id, tool_name="list_raster_collections", result=result, duration_ms=12
                )
            )
        else:
            result = "rejected by the user"
            yield emit.event(
                tool_error=events_pb2.ToolError(
                    call_id=call_id, tool_name="list_raster_collections", error=result, kind="rejected"
                )
            )
        call = run_pb2.ToolCall(id=call_id, name="list_raster_collections", arguments=arguments)
        new_messages.append(run_pb2.ChatMessage(role="assistant", content="", tool_calls=[call]))
        new_messages.append(
            run_pb2.ChatMessage(role="tool", content=result, tool_call_id=call_id, name="list_raster_collections")
        )
        emit.step = 2
    if "frontend" in plan:
        yield emit.event(
            frontend_tool=events_pb2.FrontendTool(
                call_id="fe-1", name="zoom_to_location", arguments={"lat": 48.1, "lon": 11.6, "zoom": 9}
            )
        )
    for index, piece in enumerate(deltas):
        if cancelled.is_set():
            break
        if index == len(deltas) // 2 and index > 0:
            if "error" in plan:
                yield emit.event(error=events_pb2.Error(code="model_unavailable", message="the model went away"))
                return
            if "die" in plan:
                await asyncio.sleep(0.2)  # let the deltas so far leave the socket
                os._exit(3)
        sent.append(piece)
        yield emit.event(content=events_pb2.ContentDelta(text=piece))
        if "hang" in plan and index == 0:
            await cancelled.wait()
            break
        if delay:
            await asyncio.sleep(delay)
    finish = "cancelled" if cancelled.is_set() else "completed"
    content = "".join(sent)
    new_messages.append(run_pb2.ChatMessage(role="assistant", content=content))
    grounding = grounding_of(content) if "grounded" in plan else None
    yield emit.event(
        done=events_pb2.Done(
            grounding=grounding,
            content=content,
            new_messages=new_messages,
            usage=events_pb2.TokenUsage(input_tokens=10 + 5 * len(request.history), output_tokens=len(sent)),
            steps=emit.step,
            tool_calls=tool_calls,
            finish_reason=finish,
        )
    )


@app.post("/v1/runs")
async def start_run(request: Request, identity: Annotated[Identity, Depends(verified)]) -> EventSourceResponse:
    body = await request.json()
    run = run_pb2.RunRequest()
    try:
        json_format.ParseDict(body, run)  # strict: unknown fields are a contract violation
    except json_format.ParseError as error:
        raise ArgumentError("body", f"not a RunRequest: {error}") from None
    if identity.session_id != run.session_id:
        raise Forbidden("internal token is for another session")
    run_id = run.run_id or f"orch-{time.time_ns()}"
    received.append(
        {
            "run_id": run_id,
            "user_id": identity.user_id,
            "session_id": run.session_id,
            "message": run.message,
            "history": json_format.MessageToDict(run).get("history", []),
            "spatial_context": json_format.MessageToDict(run).get("spatialContext"),
            "model": run.options.model or None,
        }
    )
    return EventSourceResponse(script(run, run_id), ping=0, sep="\n")


@app.post("/v1/runs/{run_id}/cancel", status_code=202)
async def cancel(run_id: str, _: Annotated[Identity, Depends(verified)]) -> dict[str, str]:
    if run_id not in cancels:
        raise Missing(f"no run {run_id} in progress")
    cancels[run_id].set()
    return {"run_id": run_id, "status": "cancelling"}


@app.post("/v1/approvals/{approval_id}")
async def approve(approval_id: str, request: Request, _: Annotated[Identity, Depends(verified)]) -> dict[str, Any]:
    decision = run_pb2.ApprovalDecision()
    try:
        json_format.ParseDict(await request.json(), decision)  # strict, like the run request
    except json_format.ParseError as error:
        raise ArgumentError("body", f"not an ApprovalDecision: {error}") from None
    future = approvals.get(approval_id)
    if future is None:
        raise Missing(f"no pending approval {approval_id}")
    if future.done():
        raise Conflict(f"approval {approval_id} is already decided")
    future.set_result((decision.approved, decision.reason or None))
    return {"approvalId": approval_id, "status": "approved" if decision.approved else "rejected"}


PLACES = [
    {"name": "Luxembourg", "kind": "country", "ref": "countries/LUX", "bbox": [5.73, 49.45, 6.53, 50.18]},
    {"name": "Luxembourg", "kind": "city", "country": "Luxembourg", "ref": "cities/2960316", "point": [6.13, 49.61]},
    {"name": "Berlin", "kind": "city", "country": "Germany", "ref": "cities/2950159", "point": [13.41, 52.52]},
]
place_searches: list[dict[str, Any]] = []


@app.get("/places/search")
async def places(q: str, limit: int, identity: Annotated[Identity, Depends(verified)]) -> Any:
    place_searches.append({"q": q, "limit": limit, "user_id": identity.user_id})
    if "slow" in q:
        await asyncio.sleep(30)
    if "broken" in q:
        raise HTTPException(500, "the place index is broken")
    if "refused" in q:
        raise ArgumentError("q", "these words are refused")  # vector-tools' 422, in the one error body
    found = [{**place, "dataset": place["ref"].split("/")[0], "matched_by": "name"} for place in PLACES]
    results = [place for place in found if str(place["name"]).lower().startswith(q.lower())][:limit]
    return {"query": q, "results": results, "count": len(results)}


LABELS: list[dict[str, Any]] = [
    {"name": "Berlin", "lon": 13.41, "lat": 52.52, "population": 3426354, "country": "Germany", "ref": "cities/1"},
    {"name": "Hamburg", "lon": 10.0, "lat": 53.55, "population": 1739117, "country": "Germany", "ref": "cities/2"},
    {"name": "Luxembourg", "lon": 6.13, "lat": 49.61, "population": 76684, "ref": "cities/3"},
]
# A box whose west is one of these makes the stand-in hang, fail or refuse naming limit.
SLOW_WEST, BROKEN_WEST, REFUSED_WEST = 1.0, 2.0, 3.0
label_requests: list[dict[str, Any]] = []


@app.get("/places/labels")
async def place_labels(bbox: str, limit: int, identity: Annotated[Identity, Depends(verified)]) -> Any:
    label_requests.append({"bbox": bbox, "limit": limit, "user_id": identity.user_id})
    west, south, east, north = (float(value) for value in bbox.split(","))
    if west == SLOW_WEST:
        await asyncio.sleep(30)
    if west == BROKEN_WEST:
        raise HTTPException(500, "the place index is broken")
    if west == REFUSED_WEST:
        raise ArgumentError("limit", "must be an integer from 1 to 3")
    inside = [label for label in LABELS if south <= label["lat"] <= north and west <= label["lon"] <= east]
    return {"bbox": [west, south, east, north], "labels": inside[:limit], "count": len(inside[:limit])}


@app.get("/_scripted/labels")
async def asked_labels() -> list[dict[str, Any]]:
    return label_requests


@app.get("/_scripted/places")
async def searched() -> list[dict[str, Any]]:
    return place_searches


# vector-tools' load status with nothing loading: every place dataset in.
PLACES_LOADED: dict[str, Any] = {
    "loading": False,
    "datasets": [
        {"id": "countries", "state": "loaded", "features": 258},
        {"id": "cities", "state": "loaded", "features": 33602},
    ],
}
place_status_scripts: dict[str, dict[str, Any]] = {}
place_status_requests: list[str] = []


@app.get("/places/status")
async def place_status(identity: Annotated[Identity, Depends(verified)]) -> Any:
    place_status_requests.append(identity.user_id)
    script = place_status_scripts.get(identity.user_id, {})
    await asyncio.sleep(script.get("delay", 0))
    return JSONResponse(script.get("body", PLACES_LOADED), status_code=script.get("status", 200))


@app.put("/_scripted/place_status/{user_id}")
async def script_place_status(user_id: str, request: Request) -> None:
    place_status_scripts[user_id] = await request.json()


@app.get("/_scripted/place_status")
async def asked_place_status() -> list[str]:
    return place_status_requests


models_asked: list[str] = []


@app.get("/v1/models")
async def models(identity: Annotated[Identity, Depends(verified)]) -> dict[str, Any]:
    models_asked.append(identity.user_id)
    return {"provider": "scripted", "default": MODEL, "models": MODELS, "listed": True}


@app.get("/_scripted/models")
async def asked_models() -> list[str]:
    return models_asked


@app.get("/_scripted/runs")
async def runs() -> list[dict[str, Any]]:
    return received


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["ORCH_PORT"]), log_level="warning")
