"""The one error table of the plain-HTTP routes: each answer's status and body, through a real
Starlette app under the OpenTelemetry middleware the tool servers run."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stacgis_common.arguments import ArgumentError, NotFoundError
from stacgis_common.http_errors import ARGUMENT_ROWS, ErrorRow, ErrorTable, reason_of
from stacgis_common.logs import TraceContextFilter


class Stalled(Exception):
    limit = "TOY_TIMEOUT_SECONDS"


class Unreadable(Exception):
    pass


TABLE = ErrorTable(
    (*ARGUMENT_ROWS, ErrorRow(Stalled, 504, "deadline_exceeded"), ErrorRow(Unreadable, 502, "upstream_unreadable")),
    what="the toy request",
)
RAISED: dict[str, Exception] = {
    "bad": ArgumentError("zoom", "must be 0..24, got 30"),
    "missing": NotFoundError("collection_id", "no collection 'luxemburg-dem'"),
    "slow": Stalled("the read took longer than 3 s"),
    "upstream": Unreadable("not a GeoTIFF"),
    "bug": KeyError("band"),
}


async def toy(request: Request) -> Response:
    if (case := request.path_params["case"]) == "ok":
        return JSONResponse({"ok": True})
    raise RAISED[case]


def get(path: str) -> httpx.Response:
    app = Starlette(
        routes=[Route("/toy/{case}", TABLE.answering(toy))],
        middleware=[Middleware(OpenTelemetryMiddleware, tracer_provider=TracerProvider())],
    )

    async def request() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://toy") as client:
            return await client.get(path)

    return asyncio.run(request())


@pytest.mark.parametrize(
    ("case", "status", "code", "field"),
    [
        ("bad", 400, "invalid_argument", "zoom"),
        ("missing", 404, "not_found", "collection_id"),
        ("slow", 504, "deadline_exceeded", None),
        ("upstream", 502, "upstream_unreadable", None),
    ],
)
def test_each_known_failure_has_its_status_and_one_body(case: str, status: int, code: str, field: str | None) -> None:
    response = get(f"/toy/{case}")
    assert response.status_code == status
    body = response.json()
    extra = {"limit": Stalled.limit} if case == "slow" else {}
    assert body == {"field": field, "message": str(RAISED[case]), "code": code, **extra}


def test_an_unexpected_error_is_a_500_logged_with_its_trace_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.handler.addFilter(TraceContextFilter("toy"))
    with caplog.at_level(logging.ERROR, logger="stacgis_common.http_errors"):
        response = get("/toy/bug")
    assert response.status_code == 500
    body = response.json()
    assert body["field"] is None and body["code"] == "internal"
    assert body["message"] == "the toy request failed: KeyError"
    assert len(body["trace_id"]) == 32
    [logged] = [r for r in caplog.records if r.exc_info and r.exc_info[0] is KeyError]
    assert logged.trace_id == body["trace_id"]  # type: ignore[attr-defined]


def test_an_answer_passes_through_unchanged() -> None:
    response = get("/toy/ok")
    assert response.status_code == 200 and response.json() == {"ok": True}


@pytest.mark.parametrize("case", ["bad", "missing", "slow", "upstream"])
def test_a_caller_reads_back_the_field_and_the_words_without_it(case: str) -> None:
    raised = RAISED[case]
    field = raised.argument if isinstance(raised, ArgumentError) else None
    words = raised.detail if isinstance(raised, ArgumentError) else str(raised)
    assert reason_of(get(f"/toy/{case}").json()) == (field, words)


def test_a_body_without_a_message_has_no_reason() -> None:
    assert reason_of({"detail": "q: these words"}) is None
    assert reason_of(None) is None
    # A message that does not start with its field is kept whole.
    assert reason_of({"field": "q", "message": "limit: too many", "code": "x"}) == ("q", "limit: too many")
