"""Every tool schema the product offers a model, collected from the real code.

The four MCP servers are built in this process (building one connects to nothing: the databases
and catalogs are only used when a tool runs) and asked for their `tools/list`; the frontend tools
come from the orchestrator's own definitions. Each group is returned in Ollama's tool format, with
the schema as the server publishes it and, separately, as the orchestrator rewrites it for a model.
"""

from __future__ import annotations

import importlib
from typing import Any

from stacgis_orchestrator.llm.schema import sanitize_schema


def ollama_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


async def _mcp_tools(server: Any) -> list[dict[str, Any]]:
    return [ollama_tool(t.name, t.description or "", dict(t.input_schema)) for t in await server.list_tools()]


async def product_tool_groups() -> dict[str, list[dict[str, Any]]]:
    """Tool group name -> tools, as each server publishes them."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for group, module in (
        ("vector-tools", "stacgis_vector.server"),
        ("knowledge-tools", "stacgis_knowledge.server"),
        ("memory-tools", "stacgis_memory.server"),
    ):
        groups[group] = await _mcp_tools(importlib.import_module(module).server)

    from stacgis_common.mcp_app import create_mcp_server
    from stacgis_raster.app import build_service
    from stacgis_raster.settings import RasterSettings
    from stacgis_raster.tools import register_tools

    raster_settings = RasterSettings()
    raster = create_mcp_server("raster-tools", raster_settings)
    register_tools(raster, build_service(raster_settings), raster_settings)
    groups["raster-tools"] = await _mcp_tools(raster)

    from stacgis_orchestrator.tools.frontend import FRONTEND_TOOLS

    groups["frontend"] = [ollama_tool(t.name, t.description, t.input_schema) for t, _ in FRONTEND_TOOLS]
    return groups


def as_offered_by_orchestrator(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        ollama_tool(t["function"]["name"], t["function"]["description"], sanitize_schema(t["function"]["parameters"]))
        for t in tools
    ]
