"""Parsing and checking `stacgis.v1.RunRequest` bodies (proto3 JSON) into the run's `RunInput`."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from google.protobuf import json_format

from stacgis_common.arguments import ArgumentError
from stacgis_common.auth import Identity
from stacgis_common.geojson import check_feature, check_geometry
from stacgis_proto.v1 import run_pb2

from ..events import message_from_proto
from ..run_context import RunInput, SpatialInput
from ..settings import OrchestratorSettings

RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
MODEL_NAME = re.compile(r"^[A-Za-z0-9._:/@-]{1,200}$")
ROLES = ("system", "user", "assistant", "tool")
MAX_GEOJSON_CHARS = 1_000_000
MAX_STEPS_LIMIT = 100


def parse_json_body(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError as error:
        raise ArgumentError("body", f"not valid JSON: {error}") from None


def parse_run_request(raw: bytes, settings: OrchestratorSettings, caller: Identity) -> RunInput:
    """The run a RunRequest body asks for, on behalf of the verified `caller`, or a 422 naming the field."""
    request = _proto_request(raw)
    run_id, message, history, spatial, max_steps, model = _validated_inputs(request, settings)
    # The session comes from the verified token; a body value only fills in when the token has none.
    identity = Identity(caller.user_id, caller.session_id or request.session_id or None)
    return RunInput(run_id, identity, message, history, spatial, max_steps, model)


def _proto_request(raw: bytes) -> run_pb2.RunRequest:
    data = parse_json_body(raw)
    if not isinstance(data, dict):
        raise ArgumentError("body", "must be a JSON object (stacgis.v1.RunRequest)")
    request = run_pb2.RunRequest()
    try:
        # Unknown fields are ignored so an older orchestrator accepts requests from a newer gateway.
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        raise ArgumentError(_field_of(str(error)), str(error)) from None
    return request


def _field_of(message: str) -> str:
    match = re.search(r"Failed to parse (\w+) field", message)
    return match.group(1) if match else "body"


def _check_geojson(field: str, value: dict[str, Any], feature: bool) -> None:
    if len(json.dumps(value)) > MAX_GEOJSON_CHARS:
        raise ArgumentError(field, f"larger than {MAX_GEOJSON_CHARS} characters of GeoJSON")
    try:
        (check_feature if feature else check_geometry)(value)
    except ValueError as error:
        raise ArgumentError(field, str(error)) from None


def _validated_inputs(
    request: run_pb2.RunRequest, settings: OrchestratorSettings
) -> tuple[str, str, list[Any], SpatialInput, int, str]:
    """Run id, message, history, spatial context, step budget and model of a request, or 422."""
    message = request.message.strip()
    if not message:
        raise ArgumentError("message", "must not be empty")
    if len(message) > settings.max_message_chars:
        raise ArgumentError("message", f"longer than {settings.max_message_chars} characters")
    if len(request.history) > settings.max_history_messages:
        raise ArgumentError("history", f"more than {settings.max_history_messages} messages")
    for index, item in enumerate(request.history):
        if item.role not in ROLES:
            raise ArgumentError(f"history.{index}.role", f"must be one of {', '.join(ROLES)}, got {item.role!r}")
    if request.run_id and not RUN_ID.match(request.run_id):
        raise ArgumentError("runId", "must be 1-100 letters, digits, '-' or '_'")
    run_id = request.run_id or f"run_{uuid.uuid4().hex}"

    spatial = SpatialInput()
    if request.HasField("spatial_context"):
        context = request.spatial_context
        center = None
        if context.HasField("map_center"):
            lat, lon = context.map_center.lat, context.map_center.lon
            if not -90 <= lat <= 90:
                raise ArgumentError("spatialContext.mapCenter.lat", f"must be between -90 and 90, got {lat}")
            if not -180 <= lon <= 180:
                raise ArgumentError("spatialContext.mapCenter.lon", f"must be between -180 and 180, got {lon}")
            center = (lat, lon)
        if not 0 <= context.zoom <= 24:
            raise ArgumentError("spatialContext.zoom", f"must be between 0 and 24, got {context.zoom}")
        feature = json_format.MessageToDict(context.selected_feature) if context.HasField("selected_feature") else None
        drawn = json_format.MessageToDict(context.drawn_geometry) if context.HasField("drawn_geometry") else None
        if feature:
            _check_geojson("spatialContext.selectedFeature", feature, feature=True)
        if drawn:
            _check_geojson("spatialContext.drawnGeometry", drawn, feature=False)
        spatial = SpatialInput(center, context.zoom or None, feature or None, drawn or None)

    max_steps = settings.max_steps
    model = settings.llm_model
    if request.HasField("options"):
        if not 0 <= request.options.max_steps <= MAX_STEPS_LIMIT:
            raise ArgumentError("options.maxSteps", f"must be between 0 (service default) and {MAX_STEPS_LIMIT}")
        max_steps = request.options.max_steps or max_steps
        if request.options.model:
            if not MODEL_NAME.match(request.options.model):
                raise ArgumentError("options.model", "is not a valid model name")
            model = request.options.model
    history = [message_from_proto(item) for item in request.history]
    return run_id, message, history, spatial, max_steps, model
