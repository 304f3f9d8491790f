"""One table from exception to HTTP answer, and one error body for every plain-HTTP route of a
tool server (titiler's `DEFAULT_STATUS_CODES` and its one handler are the model).

Every error body is `{"field", "message", "code"}`: the argument at fault (null when none), what is
wrong in words, and a stable code; `limit` names the setting that was exceeded when there is one.
An exception the table does not name is our own bug: logged with its traceback (the log line
carries the trace id) and answered 500 with the trace id, never disguised as an upstream's 502.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .arguments import ArgumentError, NotFoundError

log = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class ErrorRow:
    kinds: type[Exception] | tuple[type[Exception], ...]
    status: int
    code: str


# Rows every table ends with: a name that finds nothing, then any other bad argument.
ARGUMENT_ROWS = (
    ErrorRow(NotFoundError, 404, "not_found"),
    ErrorRow(ArgumentError, 400, "invalid_argument"),
)


def current_trace_id() -> str | None:
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def error_body(field: str | None, message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"field": field, "message": message, "code": code, **extra}


class ErrorTable:
    """First matching row wins, so a subclass's row goes before its base's."""

    def __init__(self, rows: Sequence[ErrorRow], what: str) -> None:
        self.rows = tuple(rows)
        self.what = what  # what failed, for the 500's message: "the tile request"

    def response(self, exc: Exception) -> JSONResponse:
        for row in self.rows:
            if isinstance(exc, row.kinds):
                field = exc.argument if isinstance(exc, ArgumentError) else None
                extra = {"limit": limit} if isinstance(limit := getattr(exc, "limit", None), str) else {}
                if row.status >= 500:
                    log.warning("%s failed upstream (%s): %s", self.what, row.code, exc)
                return JSONResponse(error_body(field, str(exc), row.code, **extra), status_code=row.status)
        log.error("%s failed: %s", self.what, type(exc).__name__, exc_info=exc)
        body = error_body(None, f"{self.what} failed: {type(exc).__name__}", "internal")
        if trace_id := current_trace_id():
            body["trace_id"] = trace_id
        return JSONResponse(body, status_code=500)

    def answering(self, endpoint: Endpoint) -> Endpoint:
        """The endpoint with every exception it raises answered from this table."""

        @functools.wraps(endpoint)
        async def answered(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception as exc:  # noqa: BLE001 - the table answers every exception (unknown ones: logged 500)
                return self.response(exc)

        return answered
