"""Request and response bodies of the public API (they make up the OpenAPI document)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool

from .config import GatewaySettings
from .geo import check_feature, check_geometry

# GeoJSON needs about six levels; anything deeper in a user's feature is hostile, not geography.
MAX_JSON_DEPTH = 32


def _encodable(text: str) -> str | None:
    """Why `text` cannot be stored or forwarded as UTF-8 (NUL, unpaired surrogates), or None."""
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain unpaired UTF-16 surrogates"
    return None


def _clean_text(text: str) -> str:
    problem = _encodable(text)
    if problem is not None:
        raise ValueError(problem)
    return text


def _check_json_tree(value: Any, depth: int = 0) -> None:
    """Reject what JSON parsers accept but nothing downstream can use: NaN/Infinity, broken strings, deep nesting."""
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must not contain NaN or Infinity")
    if isinstance(value, str):
        problem = _encodable(value)
        if problem is not None:
            raise ValueError(f"text {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json_tree(key, depth + 1)
            _check_json_tree(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json_tree(item, depth + 1)


def _clean_json(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None:
        _check_json_tree(value)
    return value


# Text that can be stored in Postgres and sent on as UTF-8.
CleanText = Annotated[str, AfterValidator(_clean_text)]
CleanJson = Annotated[dict[str, Any] | None, AfterValidator(_clean_json)]
# Public request bodies refuse unknown fields: a client sending context under a wrong name learns it.
STRICT = ConfigDict(extra="forbid")


class LatLon(BaseModel):
    model_config = STRICT

    lat: float = Field(ge=-90, le=90, allow_inf_nan=False, description="Latitude, WGS84 degrees")
    lon: float = Field(ge=-180, le=180, allow_inf_nan=False, description="Longitude, WGS84 degrees")


class SpatialContext(BaseModel):
    model_config = STRICT

    map_center: LatLon | None = Field(default=None, description="Centre of the map the user is looking at")
    zoom: float | None = Field(default=None, ge=0, le=24, allow_inf_nan=False, description="Web map zoom level")
    selected_feature: CleanJson = Field(default=None, description="The GeoJSON Feature the user clicked (WGS84)")
    drawn_geometry: CleanJson = Field(default=None, description="A GeoJSON geometry the user drew (WGS84)")


class ChatRequest(BaseModel):
    model_config = STRICT

    message: CleanText = Field(min_length=1, description="The user's message")
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
    status: Literal["ok", "rejected", "failed"] | None = Field(
        default=None,
        description="How the call ended: ran, rejected by the user at approval (or not approved in time), "
        "or failed; absent in history stored before outcomes were kept",
    )
    error: str | None = Field(default=None, description="Why a rejected or failed call did not run")
    error_kind: str | None = Field(default=None, description="The orchestrator's ToolError kind")


class HistoryMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[ToolCallOut] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    grounding: dict[str, Any] | None = Field(
        default=None, description="For a final answer: its numbers checked against the run's tool results"
    )
    created_at: datetime


class History(BaseModel):
    session_id: str
    title: str | None
    messages: list[HistoryMessage]


class RenameRequest(BaseModel):
    model_config = STRICT

    title: CleanText = Field(min_length=1, description="New title of the session")


class ApprovalRequest(BaseModel):
    model_config = STRICT

    approved: StrictBool
    reason: CleanText | None = Field(default=None, max_length=2000)


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
