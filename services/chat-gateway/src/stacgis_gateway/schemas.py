"""Request and response bodies of the public API (they make up the OpenAPI document)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

from stacgis_common.geojson import check_feature, check_geometry
from stacgis_common.http_errors import ErrorBody, invalid_fields

from .config import GatewaySettings

# GeoJSON needs about six levels; anything deeper in a user's feature is hostile, not geography.
MAX_JSON_DEPTH = 32
# Far beyond any conversation, and well inside Postgres' bigint OFFSET.
MAX_TURN = 1_000_000


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
    model: CleanText | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The model to answer with, one of GET /models; absent: the default",
    )
    replace_turn: StrictInt | None = Field(
        default=None,
        ge=0,
        le=MAX_TURN,
        description="Regenerate or edit and resend: the question this message replaces, as its 0-based position "
        "among the session's user messages in history order. That question and everything after it are deleted "
        "from the session when the run is admitted; needs `session_id`",
    )


def _error(loc: tuple[str | int, ...], message: str) -> dict[str, Any]:
    """One offending field, as `invalid_fields` reads a validation error."""
    return {"loc": loc, "msg": message}


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
            )
        )
    if request.replace_turn is not None and request.session_id is None:
        errors.append(_error(("body", "replace_turn"), "replace_turn needs the session_id of the conversation"))
    context = request.spatial_context
    if context is not None:
        errors += _geojson_errors(
            context.selected_feature, context.drawn_geometry, ("body", "spatial_context"), settings
        )
    if errors:
        raise invalid_fields(errors)


def _geojson_errors(
    feature: dict[str, Any] | None, geometry: dict[str, Any] | None, at: tuple[str, ...], settings: GatewaySettings
) -> list[dict[str, Any]]:
    """What is wrong with a selected feature and a drawn geometry (size, GeoJSON, WGS84 ranges)."""
    errors: list[dict[str, Any]] = []
    for name, value, check in (
        ("selected_feature", feature, check_feature),
        ("drawn_geometry", geometry, check_geometry),
    ):
        if value is None:
            continue
        loc = (*at, name)
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
    return errors


# A conversation's map: at most this many raster layers, tile URLs per layer, and characters per URL.
MAX_MAP_LAYERS = 20
MAX_TILE_URLS = 4
MAX_URL_CHARS = 2048
BASEMAPS = ("light", "dark", "satellite")


def _web_url(value: str) -> str:
    """An http(s) URL or a path on this site (tiles are served beside the app)."""
    if not (value.startswith(("http://", "https://")) or (value.startswith("/") and not value.startswith("//"))):
        raise ValueError("must be an http(s) URL or a path starting with /")
    return _clean_text(value)


def _basemap(value: str) -> str:
    return value if value in BASEMAPS else _web_url(value)


def _box(value: list[float] | None) -> list[float] | None:
    if value is None:
        return None
    west, south, east, north = value
    if not (-180 <= west <= 180 and -180 <= east <= 180 and -90 <= south <= north <= 90):
        raise ValueError("must be [west, south, east, north] in WGS84 degrees")
    return value


def _absent(value: Any) -> bool:
    return value is None


WebUrl = Annotated[str, Field(min_length=1, max_length=MAX_URL_CHARS), AfterValidator(_web_url)]
Box = Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=4, max_length=4)]


class MapView(BaseModel):
    model_config = STRICT

    center: LatLon
    zoom: float = Field(ge=0, le=24, allow_inf_nan=False)
    bearing: float = Field(default=0, ge=-360, le=360, allow_inf_nan=False, description="Degrees clockwise from north")
    pitch: float = Field(default=0, ge=0, le=85, allow_inf_nan=False)


class MapLayerSource(BaseModel):
    """A raster tile source as MapLibre takes it (from the collection's TileJSON)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: Literal["raster"] = "raster"
    tiles: list[WebUrl] = Field(min_length=1, max_length=MAX_TILE_URLS)
    tile_size: int = Field(default=256, ge=64, le=1024, alias="tileSize")
    # Left out when absent, as MapLibre wants them (it refuses nulls).
    bounds: Annotated[Box | None, AfterValidator(_box)] = Field(default=None, exclude_if=_absent)
    minzoom: float | None = Field(default=None, ge=0, le=24, allow_inf_nan=False, exclude_if=_absent)
    maxzoom: float | None = Field(default=None, ge=0, le=24, allow_inf_nan=False, exclude_if=_absent)
    attribution: CleanText | None = Field(default=None, max_length=1000, exclude_if=_absent)


class MapLayer(BaseModel):
    """A raster layer the agent or the user put on the map."""

    model_config = STRICT

    id: str = Field(pattern=r"^raster:[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", description="raster:<collection id>")
    source: MapLayerSource
    legend: CleanJson = Field(default=None, description="The legend the app drew for it (title, colours, range, units)")
    origin: Literal["agent", "user"]
    visible: StrictBool = True
    opacity: float = Field(default=1, ge=0, le=1, allow_inf_nan=False)


class MapState(BaseModel):
    """A conversation's map: view, basemap, layers bottom to top, and the selection."""

    model_config = STRICT

    view: MapView
    basemap: Annotated[str, Field(max_length=MAX_URL_CHARS), AfterValidator(_basemap)] = Field(
        default="light", description="light, dark, satellite or a style URL"
    )
    basemap_visible: StrictBool = True
    basemap_opacity: float = Field(default=1, ge=0, le=1, allow_inf_nan=False)
    layers: list[MapLayer] = Field(default_factory=list, max_length=MAX_MAP_LAYERS)
    selected_feature: CleanJson = Field(default=None, description="The GeoJSON Feature the user clicked (WGS84)")
    drawn_geometry: CleanJson = Field(default=None, description="A GeoJSON geometry the user drew (WGS84)")


class SavedMapState(BaseModel):
    map_state: MapState | None = Field(description="null until the app first saves the conversation's map")
    updated_at: datetime | None


def check_map_state(state: MapState, settings: GatewaySettings) -> None:
    """The checks whose limits are settings (whole size, GeoJSON of the selection); a 422 naming each field."""
    errors = _geojson_errors(state.selected_feature, state.drawn_geometry, ("body",), settings)
    size = len(state.model_dump_json(by_alias=True))
    if size > settings.max_map_state_bytes:
        errors.append(
            _error(("body",), f"the map state is {size} bytes; at most {settings.max_map_state_bytes} are allowed")
        )
    if errors:
        raise invalid_fields(errors)


class PlaceCandidate(BaseModel):
    """A place the search box offers: what it is, and where (a point or a box)."""

    name: str
    kind: str = Field(description="country, territory, city, state, county, …")
    country: str | None = None
    ref: str = Field(description="<dataset>/<id>, as the tools take a place")
    point: list[float] | None = Field(default=None, description="[lon, lat] of a point place")
    bbox: list[float] | None = Field(default=None, description="[west, south, east, north] of an area")
    population: int | None = None


class PlaceResults(BaseModel):
    query: str
    results: list[PlaceCandidate]


class PlaceLabel(BaseModel):
    """A city name the map draws at its point; the larger city keeps its name where two collide."""

    name: str
    lon: float = Field(ge=-180, le=180)
    lat: float = Field(ge=-90, le=90)
    population: int = Field(ge=0)
    country: str | None = None
    ref: str | None = Field(default=None, description="<dataset>/<id>, as the tools take a place")


class PlaceLabels(BaseModel):
    bbox: list[float] = Field(description="[west, south, east, north] asked for")
    labels: list[PlaceLabel] = Field(description="The most populous cities in the box, largest first")


class PlaceDatasetStatus(BaseModel):
    """One place dataset (countries, cities, …): loaded, loading, or stalled (its load stopped reporting)."""

    id: str
    state: Literal["loaded", "loading", "stalled"]
    stage: Literal["embedding", "writing"] | None = Field(
        default=None, description="What a loading or stalled load is doing: embedding the names, or writing them"
    )
    done: int | None = Field(default=None, ge=0, description="Names of the stage done so far (loading, stalled)")
    total: int | None = Field(default=None, ge=0, description="Names the stage has to do (loading, stalled)")
    features: int | None = Field(default=None, ge=0, description="Places the dataset holds (loaded)")


class PlaceStatus(BaseModel):
    """How far vector-tools' loading of the place names has come; until it ends, the place search and the
    map's city names find only the places loaded."""

    loading: bool = Field(description="Some dataset is still loading (a stalled one does not count)")
    datasets: list[PlaceDatasetStatus]


class Capacity(BaseModel):
    active: int = Field(description="Runs holding a slot, over all replicas")
    max: int
    available: int


class Problem(ErrorBody):
    """Every error answer (`stacgis_common.http_errors`); some add fields of their own."""


class GateFull(Problem, Capacity):
    pass


class ActiveRun(Problem):
    run_id: str = Field(description="The run still going in this session")


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


class ModelList(BaseModel):
    default: str = Field(description="The model a message gets without `model`")
    models: list[str] = Field(description="Every model a message may name, the default first")


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


class RunFailed(Problem):
    run_id: str
    session_id: str
    partial_content: str
