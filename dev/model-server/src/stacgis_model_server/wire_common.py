"""Helpers shared by the two HTTP dialects: request validation and the rendering contract."""

from __future__ import annotations

import json
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from .conversation import BackendError, ChatEvent

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "body"
        parts.append(f"{location}: {item['msg']}")
    return "; ".join(parts)


async def read_json(request: Request) -> Any:
    body = await request.body()
    try:
        return json.loads(body or b"null")
    except ValueError as error:
        raise BackendError(400, f"invalid JSON body: {error}") from None
    except RecursionError:
        raise BackendError(400, "invalid JSON body: nested too deeply") from None


def validate(model: type[M], data: Any) -> M:
    if not isinstance(data, dict):
        raise BackendError(400, "the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise BackendError(400, f"invalid request: {describe_validation_error(error)}") from None


class ChatRenderer(Protocol):
    """Turns back-end events into one HTTP dialect's bytes (streamed) or one JSON body."""

    media_type: str

    def render(self, event: ChatEvent) -> list[bytes]: ...

    def closing(self) -> list[bytes]: ...

    def error_line(self, error: BackendError) -> bytes: ...

    def error_response(self, error: BackendError) -> Response: ...

    def collect(self, event: ChatEvent) -> None: ...

    def collected(self) -> dict[str, Any]: ...
