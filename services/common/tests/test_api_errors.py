"""The one error body on a FastAPI API (the orchestrator's, the gateway's): refusals with their own
fields and headers, FastAPI's validation errors and HTTPExceptions, and unexpected errors, through a
real FastAPI app under the OpenTelemetry middleware the services run."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel, Field

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import (
    REFUSAL_ROWS,
    Conflict,
    ErrorMiddleware,
    ErrorTable,
    Unavailable,
    answer_errors,
    field_path,
)
from stacgis_common.logs import TraceContextFilter

TABLE = ErrorTable(REFUSAL_ROWS, what="the toy request")


class Message(BaseModel):
    role: str
    content: str = Field(min_length=1)


class Chat(BaseModel):
    messages: list[Message]
    zoom: float = Field(default=0, ge=0, le=24)


def toy_app() -> FastAPI:
    app = FastAPI()
    answer_errors(app, TABLE)
    app.add_middleware(ErrorMiddleware, table=TABLE)
    app.add_middleware(OpenTelemetryMiddleware, tracer_provider=TracerProvider())

    @app.post("/chat")
    async def chat(body: Chat) -> dict[str, int]:
        return {"messages": len(body.messages)}

    @app.get("/refuse/{case}")
    async def refuse(case: str) -> None:
        if case == "busy":
            raise Conflict("this session already has a run in progress", run_id="run-7")
        if case == "down":
            raise Unavailable("Redis is unavailable; retry shortly", headers={"Retry-After": "2"})
        if case == "field":
            raise ArgumentError("q", "must not be empty")
        raise KeyError("band")

    return app


def send(method: str, path: str, **kwargs: object) -> httpx.Response:
    async def request() -> httpx.Response:
        transport = httpx.ASGITransport(app=toy_app(), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://toy") as client:
            return await client.request(method, path, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(request())


def test_a_refusal_keeps_its_own_fields_and_headers() -> None:
    busy = send("GET", "/refuse/busy")
    assert busy.status_code == 409
    assert busy.json() == {
        "field": None,
        "message": "this session already has a run in progress",
        "code": "conflict",
        "run_id": "run-7",
    }
    down = send("GET", "/refuse/down")
    assert down.status_code == 503 and down.headers["Retry-After"] == "2"
    assert down.json() == {"field": None, "message": "Redis is unavailable; retry shortly", "code": "unavailable"}


def test_a_bad_argument_is_a_422_naming_it() -> None:
    response = send("GET", "/refuse/field")
    assert response.status_code == 422
    assert response.json() == {"field": "q", "message": "q: must not be empty", "code": "invalid_argument"}


def test_a_validation_error_names_the_dotted_field() -> None:
    response = send("POST", "/chat", json={"messages": [{"role": "user", "content": ""}]})
    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "messages.0.content" and body["code"] == "invalid_argument"
    assert body["message"].startswith("messages.0.content: String should have at least 1 character")


def test_every_field_at_fault_is_named_in_the_message() -> None:
    response = send("POST", "/chat", json={"messages": [{"content": "hi"}], "zoom": 30})
    body = response.json()
    assert response.status_code == 422 and body["field"] == "messages.0.role"
    assert "messages.0.role: Field required" in body["message"] and "; zoom: Input should be" in body["message"]


# b"\xff\xfe" would not do for the second: JSON text may be UTF-16, so it decodes (to nothing).
@pytest.mark.parametrize("content", [b"{not json", b'{"zoom": "\xff"}'], ids=["not JSON", "not UTF-8"])
def test_a_body_that_is_not_json_is_a_422_naming_the_body(content: bytes) -> None:
    response = send("POST", "/chat", content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["field"] == "body" and response.json()["message"].startswith("body: ")


def test_fastapis_own_http_errors_get_the_same_body() -> None:
    response = send("GET", "/nowhere")
    assert response.status_code == 404
    assert response.json() == {"field": None, "message": "Not Found", "code": "not_found"}
    response = send("DELETE", "/chat")
    assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"


def test_an_unexpected_error_is_a_500_with_the_trace_id_it_was_logged_with(caplog: pytest.LogCaptureFixture) -> None:
    caplog.handler.addFilter(TraceContextFilter("toy"))
    with caplog.at_level(logging.ERROR, logger="stacgis_common.http_errors"):
        response = send("GET", "/refuse/bug")
    assert response.status_code == 500
    body = response.json()
    assert body["field"] is None and body["code"] == "internal"
    assert body["message"] == "the toy request failed: KeyError"
    [logged] = [r for r in caplog.records if r.exc_info and r.exc_info[0] is KeyError]
    assert len(body["trace_id"]) == 32 and logged.trace_id == body["trace_id"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("loc", "field"),
    [
        (("body", "messages", 0, "content"), "messages.0.content"),
        (("query", "q"), "q"),
        (("header", "Last-Event-ID"), "Last-Event-ID"),
        (("body",), "body"),
    ],
)
def test_field_path(loc: tuple[str | int, ...], field: str) -> None:
    assert field_path(loc) == field


def test_the_openapi_document_describes_the_422_answered() -> None:
    schemas = send("GET", "/openapi.json").json()["components"]["schemas"]
    assert schemas["HTTPValidationError"]["required"] == ["field", "message", "code"]
    assert "ValidationError" not in schemas
