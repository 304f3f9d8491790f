"""Every tool schema the product offers a model, collected from the real code.

The four MCP servers are built in this process by their factories (building one connects to nothing: the databases
and catalogs are only used when a tool runs) and asked for their `tools/list`; the frontend tools
come from the orchestrator's own definitions. Each group is returned in Ollama's tool format, with
the schema as the server publishes it and, separately, as the orchestrator rewrites it for a model.
"""

from __future__ import annotations

from typing import Any

from stacgis_orchestrator.llm.schema import sanitize_schema


def ollama_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


async def _mcp_tools(server: Any) -> list[dict[str, Any]]:
    return [ollama_tool(t.name, t.description or "", dict(t.input_schema)) for t in await server.list_tools()]


async def product_tool_groups() -> dict[str, list[dict[str, Any]]]:
    """Tool group name -> tools, as each server publishes them."""
    groups: dict[str, list[dict[str, Any]]] = {}
    from stacgis_knowledge.server import build_server as knowledge_server
    from stacgis_knowledge.settings import KnowledgeSettings
    from stacgis_memory.server import build_server as memory_server
    from stacgis_memory.settings import MemorySettings
    from stacgis_vector.server import build_server as vector_server
    from stacgis_vector.settings import VectorSettings

    groups["vector-tools"] = await _mcp_tools(vector_server(VectorSettings())[0])
    groups["knowledge-tools"] = await _mcp_tools(knowledge_server(KnowledgeSettings())[0])
    groups["memory-tools"] = await _mcp_tools(memory_server(MemorySettings())[0])

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


def unchanged_first(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same tools, those the orchestrator's rewrite leaves as they are first (each part in its order).

    A prompt as published and the same prompt as offered then share everything up to the first
    rewritten tool, and the model reuses that prefix instead of reading it again.
    """
    pairs = list(zip(tools, as_offered_by_orchestrator(tools), strict=True))
    return [tool for tool, offered in pairs if tool == offered] + [tool for tool, offered in pairs if tool != offered]
