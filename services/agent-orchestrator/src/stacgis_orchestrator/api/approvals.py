"""`POST /v1/approvals/{approval_id}`: a user's decision on an approval-gated tool call."""

from __future__ import annotations

from fastapi import APIRouter, Request
from google.protobuf import json_format

from stacgis_common.arguments import ArgumentError
from stacgis_common.http_errors import Conflict, Missing
from stacgis_proto.v1 import run_pb2

from .. import coordination
from .deps import CallerDep, ServicesDep
from .run_request import parse_json_body

MAX_REASON_CHARS = 2000
DECISION_SCHEMA = {
    "description": "stacgis.v1.ApprovalDecision in the proto3 JSON mapping",
    "content": {
        "application/json": {"schema": {"type": "object"}, "example": {"approved": False, "reason": "not now"}}
    },
    "required": True,
}


router = APIRouter(prefix="/v1")


@router.post("/approvals/{approval_id}", openapi_extra={"requestBody": DECISION_SCHEMA})
async def decide(approval_id: str, request: Request, services: ServicesDep, caller: CallerDep) -> dict[str, str]:
    data = parse_json_body(await request.body())
    if not isinstance(data, dict):
        raise ArgumentError("body", "must be a JSON object (stacgis.v1.ApprovalDecision)")
    if not isinstance(data.get("approved"), bool):
        raise ArgumentError("approved", "is required and must be true or false")
    decision = run_pb2.ApprovalDecision()
    try:
        json_format.ParseDict(data, decision, ignore_unknown_fields=True)
    except json_format.ParseError as error:
        raise ArgumentError("body", str(error)) from None
    if len(decision.reason) > MAX_REASON_CHARS:
        raise ArgumentError("reason", f"longer than {MAX_REASON_CHARS} characters")
    try:
        status = await services.coordinator.decide(approval_id, caller.user_id, decision.approved, decision.reason)
    except coordination.NotFound:
        raise Missing(f"no pending approval {approval_id}") from None
    except coordination.Conflict as state:
        raise Conflict(f"approval {approval_id} is already {state}") from None
    return {"approvalId": approval_id, "status": status}
