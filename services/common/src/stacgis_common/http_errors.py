"""One table from exception to HTTP answer, and one error body for every HTTP route of stacgis: the
tool servers' plain routes, the orchestrator's and the gateway's APIs (titiler's
`DEFAULT_STATUS_CODES` and its one handler are the model).

Every error body is `{"field", "message", "code"}`: the argument at fault (null when none), what is
wrong in words (naming the field when there is one), and a stable code; `limit` names the setting
that was exceeded when there is one, and a `Refusal` may add fields of its own (a 409's `run_id`).
An exception the table does not name is our own bug: logged with its traceback (the log line
carries the trace id) and answered 500 with the trace id, never disguised as an upstream's 502.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .arguments import ArgumentError, NotFoundError

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class ErrorRow:
    kinds: type[Exception] | tuple[type[Exception], ...]
    status: int
    code: str


class Refusal(Exception):
    """A request refused on purpose; its kind's row gives the status and code. `field` names the input
    at fault, `code` replaces the row's (a failed run's own code), `extra` adds body fields (a 409's
    `run_id`, a full gate's capacity) and `headers` answer headers (`Retry-After`)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.field = field
        self.code = code
        self.headers = dict(headers or {})
        self.extra = extra


class Unauthenticated(Refusal):
    """No valid credentials (401)."""


class Forbidden(Refusal):
    """Credentials that do not allow this (403)."""


class Missing(Refusal):
    """Nothing of that id for this caller (404); someone else's is reported the same way."""


class Conflict(Refusal):
    """The thing is in a state that forbids this now (409)."""


class RateLimited(Refusal):
    """Too many requests; retry after `Retry-After` (429)."""


class UpstreamFailed(Refusal):
    """What the request was forwarded to failed (502)."""


class Unavailable(Refusal):
    """A dependency cannot be reached now; retry after `Retry-After` (503)."""


class TimedOut(Refusal):
    """No answer in time (504)."""


# Rows every table ends with: a name that finds nothing, then any other bad argument.
ARGUMENT_ROWS = (
    ErrorRow(NotFoundError, 404, "not_found"),
    ErrorRow(ArgumentError, 400, "invalid_argument"),
)
# The refusals of an API (the orchestrator's, the gateway's); a bad argument is a 422 there.
REFUSAL_ROWS = (
    ErrorRow(Unauthenticated, 401, "unauthenticated"),
    ErrorRow(Forbidden, 403, "forbidden"),
    ErrorRow((Missing, NotFoundError), 404, "not_found"),
    ErrorRow(Conflict, 409, "conflict"),
    ErrorRow(RateLimited, 429, "rate_limited"),
    ErrorRow(UpstreamFailed, 502, "upstream_failed"),
    ErrorRow(Unavailable, 503, "unavailable"),
    ErrorRow(TimedOut, 504, "timeout"),
    ErrorRow(ArgumentError, 422, "invalid_argument"),
)
# Where a request's part is, as FastAPI/pydantic name it first in an error's `loc`.
_PLACES = ("body", "query", "path", "header", "cookie")


def current_trace_id() -> str | None:
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


class ErrorBody(BaseModel):
    """The one error body, as an API documents it (its refusals may add fields)."""

    field: str | None = Field(description="The input at fault, as a dotted path (messages.0.content); null if none")
    message: str = Field(description="What is wrong, starting with the field when there is one")
    code: str = Field(description="A stable code: invalid_argument, not_found, conflict, rate_limited, ...")
    trace_id: str | None = Field(default=None, description="On a 500: the trace id it was logged with")


def error_body(field: str | None, message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"field": field, "message": message, "code": code, **extra}


def message_of(body: Any) -> str | None:
    """The message of an error body another stacgis service answered, or None when it has none."""
    message = body.get("message") if isinstance(body, dict) else None
    return message if isinstance(message, str) and message else None


def reason_of(body: Any) -> tuple[str | None, str] | None:
    """The field of an error body another stacgis service answered and its message without the leading
    "<field>: ", for a caller that names the argument its own way; None when the body has no message."""
    message = message_of(body)
    if message is None:
        return None
    named = body.get("field")
    field = named if isinstance(named, str) and named else None
    if field and message.startswith(prefix := f"{field}: ") and len(message) > len(prefix):
        message = message[len(prefix) :]
    return field, message


class ErrorTable:
    """First matching row wins, so a subclass's row goes before its base's."""

    def __init__(self, rows: Sequence[ErrorRow], what: str) -> None:
        self.rows = tuple(rows)
        self.what = what  # what failed, for the 500's message: "the tile request"

    def response(self, exc: Exception) -> JSONResponse:
        for row in self.rows:
            if isinstance(exc, row.kinds):
                return self._answer(exc, row.status, row.code)
        if isinstance(exc, HTTPException):
            # Starlette's own (an unknown route, a method not allowed): it states its status.
            return self._answer(exc, exc.status_code, HTTPStatus(exc.status_code).phrase.lower().replace(" ", "_"))
        log.error("%s failed: %s", self.what, type(exc).__name__, exc_info=exc)
        body = error_body(None, f"{self.what} failed: {type(exc).__name__}", "internal")
        if trace_id := current_trace_id():
            body["trace_id"] = trace_id
        return JSONResponse(body, status_code=500)

    def _answer(self, exc: Exception, status: int, code: str) -> JSONResponse:
        field = exc.argument if isinstance(exc, ArgumentError) else None
        extra: dict[str, Any] = {"limit": limit} if isinstance(limit := getattr(exc, "limit", None), str) else {}
        headers: dict[str, str] = {}
        message = str(exc)
        if isinstance(exc, Refusal):
            field, code, headers = exc.field, exc.code or code, exc.headers
            extra.update(exc.extra)
        elif isinstance(exc, HTTPException):
            message, headers = str(exc.detail), dict(exc.headers or {})
        if status >= 500:
            log.warning("%s failed upstream (%s): %s", self.what, code, message)
        return JSONResponse(error_body(field, message, code, **extra), status_code=status, headers=headers)

    def answering(self, endpoint: Endpoint) -> Endpoint:
        """The endpoint with every exception it raises answered from this table."""

        @functools.wraps(endpoint)
        async def answered(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception as exc:  # noqa: BLE001 - the table answers every exception (unknown ones: logged 500)
                return self.response(exc)

        return answered


class ErrorMiddleware:
    """Answers from `table` whatever exception the app lets through before its answer has started
    (after that, only the connection can end). Put it inside the OpenTelemetry middleware, so an
    unexpected error's 500 and log line carry the request's trace id."""

    def __init__(self, app: ASGIApp, table: ErrorTable) -> None:
        self.app = app
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            await self.table.response(exc)(scope, receive, send)


def field_path(loc: Sequence[str | int]) -> str:
    """A pydantic error's `loc` as the dotted field it names: ("body", "messages", 0, "content") is
    `messages.0.content`; the whole body is `body`."""
    parts = [str(part) for part in (loc[1:] if loc and loc[0] in _PLACES else loc)]
    return ".".join(parts) or (str(loc[0]) if loc else "body")


def invalid_fields(errors: Iterable[Mapping[str, Any]]) -> ArgumentError:
    """Validation errors (FastAPI's, pydantic's) as one bad argument: the first field at fault, and a
    message naming every one ("message: ...; model: ...")."""
    named = [
        ("body" if item.get("type") == "json_invalid" else field_path(item.get("loc", ())), str(item.get("msg", "")))
        for item in errors
    ] or [("body", "is not valid")]
    (field, first), rest = named[0], named[1:]
    return ArgumentError(field, "; ".join([first, *(f"{name}: {message}" for name, message in rest)]))


# FastAPI's 400 for a body it cannot even decode as JSON text (not UTF-8).
BODY_PARSE_ERROR = "There was an error parsing the body"


def answer_errors(app: FastAPI, table: ErrorTable) -> None:
    """Every error of a FastAPI `app` answered from `table`, FastAPI's own included: its validation
    errors (422 naming the field), a body it cannot decode (the same 422 naming `body`), and its
    HTTPExceptions. `ErrorMiddleware` answers the rest."""
    from fastapi.exceptions import RequestValidationError

    async def invalid(_: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        return table.response(invalid_fields(error.errors()))

    async def http_error(_: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 400 and error.detail == BODY_PARSE_ERROR:
            return table.response(ArgumentError("body", "the body is not JSON text (UTF-8)"))
        return table.response(error)

    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
    documented = app.openapi

    def openapi() -> dict[str, Any]:
        # FastAPI documents its own 422 body on every route with parameters: document the one answered.
        schema = documented()
        schemas = schema.get("components", {}).get("schemas", {})
        if "HTTPValidationError" in schemas:
            schemas["HTTPValidationError"] = ErrorBody.model_json_schema()
            schemas.pop("ValidationError", None)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
