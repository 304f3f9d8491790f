"""`GET /v1/tools` and `GET /v1/tools/select`: what the agent can call, and what a text would select."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from google.protobuf import json_format

from stacgis_common.arguments import ArgumentError
from stacgis_proto.v1 import tools_pb2

from ..events import struct, whole_numbers
from .deps import CallerDep, ServicesDep

MAX_QUERY_CHARS = 4000


router = APIRouter(prefix="/v1")


@router.get("/tools", response_description="stacgis.v1.ListToolsResponse (proto3 JSON)")
async def list_tools(services: ServicesDep, _: CallerDep) -> dict[str, Any]:
    catalog = services.catalog
    response = tools_pb2.ListToolsResponse()
    for tool in catalog.all():
        response.tools.append(
            tools_pb2.ToolInfo(
                name=tool.name,
                server=tool.server,
                description=tool.description,
                input_schema=struct(tool.input_schema),
                requires_approval=catalog.requires_approval(tool),
                read_only=tool.read_only,
                kind=tool.kind,
            )
        )
    for status in services.pool.status():
        response.servers.append(tools_pb2.ToolServerStatus(**status))
    result: dict[str, Any] = whole_numbers(json_format.MessageToDict(response))
    return result


@router.get("/tools/select", response_description="stacgis.v1.SelectToolsResponse (proto3 JSON)")
async def select_tools(
    services: ServicesDep,
    _: CallerDep,
    q: str = Query(description="The text to select tools for (a user message)"),
    k: int | None = Query(default=None, description="How many MCP tools; default the configured tool_top_k"),
) -> dict[str, Any]:
    if not q.strip():
        raise ArgumentError("q", "must not be empty")
    if len(q) > MAX_QUERY_CHARS:
        raise ArgumentError("q", f"longer than {MAX_QUERY_CHARS} characters")
    top_k = services.settings.tool_top_k if k is None else k
    if not 1 <= top_k <= 100:
        raise ArgumentError("k", "must be between 1 and 100")
    catalog = services.catalog
    always = catalog.always_included()
    always_names = {tool.name for tool in always}
    candidates = [t for t in catalog.mcp_tools() if t.name not in always_names and services.pool.available(t)]
    ranked = await services.selector.rank(q, candidates)
    response = tools_pb2.SelectToolsResponse(query=q, k=top_k)
    for item in ranked[:top_k]:
        response.tools.append(
            tools_pb2.ScoredTool(
                name=item.tool.name,
                server=item.tool.server,
                score=round(item.score, 6),
                similarity=round(item.similarity, 6),
                keyword_score=round(item.keyword_score, 6),
            )
        )
    for tool in always:
        response.tools.append(tools_pb2.ScoredTool(name=tool.name, server=tool.server, always_included=True))
    result: dict[str, Any] = whole_numbers(json_format.MessageToDict(response))
    return result
