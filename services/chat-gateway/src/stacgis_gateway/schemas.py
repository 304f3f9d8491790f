"""Request and response bodies of the public API (they make up the OpenAPI document)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, StrictBool

from .config import GatewaySettings
from .geo import check_feature, check_geometry


class LatLon(BaseModel):
    lat: float = Field(ge=-90, le=90, allow_inf_nan=False, description="Latitude, WGS84 degrees")
    lon: float = Field(ge=-180, le=180, allow_inf_nan=False, description="Longitude, WGS84 degrees")


class SpatialContext(BaseModel):
    map_center: LatLon | None = Field(default=None, description="Centre of the map the user is looking at")
    zoom: float | None = Field(default=None, ge=0, le=24, allow_inf_nan=False, description="Web map zoom level")
    selected_feature: dict[str, Any] | None = Field(
        default=None, description="The GeoJSON Feature the user clicked (WGS84)"
    )
    drawn_geometry: dict[str, Any] | None = Field(default=None, description="A GeoJSON geometry the user drew (WGS84)")


class ChatRequest(BaseModel):
    message: str = Field(min_length=1, description="The user's message")
    session_id: uuid.UUID | None = Field(
        default=None, description="Session to continue; null starts a new one (its id comes in the `session` event)"
    )
    spatial_context: SpatialContext | None = None


def _error(loc: tuple[str | int, ...], message: str, kind: str = "value_error") -> dict[str, Any]:
    return {"type": kind, "loc": loc, "msg": message, "input": None}


def check_chat_request(request: ChatRequest, settings: GatewaySettings) -> None:
    """The checks whose limits are settings; raises a 422 naming every offending field."""
    errors: list[dict[str, Any]] = []
    if not request.message.strip():
        errors.append(_error(("body", "message"), "message must not be blank"))
    if "\x00" in request.message:
        errors.append(_error(("body", "message"), "message must not contain NUL characters"))
    if len(request.message) > settings.max_message_chars:
        errors.append(
            _error(
                ("body", "message"),
                f"message is {len(request.message)} characters long; at most {settings.max_message_chars} are allowed",
                "string_too_long",
            )
        )
    context = request.spatial_context
    if context is not None:
        for name, check in (("selected_feature", check_feature), ("drawn_geometry", check_geometry)):
            value = getattr(context, name)
            if value is None:
                continue
            loc = ("body", "spatial_context", name)
            size = len(json.dumps(value, separators=(",", ":")))
            if size > settings.max_geojson_bytes:
                errors.append(
                    _error(loc, f"{name} is {size} bytes of GeoJSON; at most {settings.max_geojson_bytes} are allowed")
                )
                continue
            try:
                check(value)
            except ValueError as error:
                errors.append(_error(loc, str(error)))
    if errors:
        raise RequestValidationError(errors)


class Capacity(BaseModel):
    active: int = Field(description="Runs holding a slot, over all replicas")
    max: int
    available: int


class GateFull(Capacity):
    detail: str


class ActiveRun(BaseModel):
    detail: str
    run_id: str = Field(description="The run still going in this session")


class Problem(BaseModel):
    detail: str


class SessionSummary(BaseModel):
    id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int = Field(description="User messages and assistant answers with text")


class SessionOut(BaseModel):
    id: str
    title: str | None
    created_at: datetime
    updated_at: datetime


class ToolCallOut(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any]


class HistoryMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[ToolCallOut] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    created_at: datetime


class History(BaseModel):
    session_id: str
    title: str | None
    messages: list[HistoryMessage]


class RenameRequest(BaseModel):
    title: str = Field(min_length=1, description="New title of the session")


class ApprovalRequest(BaseModel):
    approved: StrictBool
    reason: str | None = Field(default=None, max_length=2000)


class ApprovalOut(BaseModel):
    approval_id: str
    run_id: str
    approved: bool


class CancelOut(BaseModel):
    run_id: str
    status: Literal["cancelling", "finished"]


class Info(BaseModel):
    model: str
    provider: str
    auth_mode: str


class Usage(BaseModel):
    runs: int
    failed_runs: int
    input_tokens: int
    output_tokens: int
    tool_calls: int
    last_run_at: datetime | None
    since: datetime | None


class TokenUsage(BaseModel):
    input_tokens: int
    output_tokens: int


class ChatAnswer(BaseModel):
    session_id: str
    run_id: str
    content: str
    finish_reason: str
    usage: TokenUsage
    steps: int
    tool_calls: int


class RunFailed(BaseModel):
    detail: str
    code: str
    run_id: str
    session_id: str
    partial_content: str
