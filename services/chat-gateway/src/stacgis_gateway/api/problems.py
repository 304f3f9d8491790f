"""Error answers with a body of their own (not only `detail`), e.g. the 503 that carries the capacity."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse


class ApiProblem(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(body.get("detail", ""))
        self.status = status
        self.body = body
        self.headers = headers or {}


async def problem_handler(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiProblem)
    return JSONResponse(error.body, status_code=error.status, headers=error.headers)


def not_found(what: str) -> ApiProblem:
    # Someone else's session, run or approval is reported exactly like one that does not exist.
    return ApiProblem(404, {"detail": f"{what} not found"})
