"""The knowledge-tools MCP server."""

# No `from __future__ import annotations`: the tools' annotations use register_tools' locals (limits
# from settings), which the MCP SDK resolves from the live annotations, not from strings.
import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette

from stacgis_common.auth import current_identity
from stacgis_common.mcp_app import build_tool_server_app, compact_result, create_mcp_server
from stacgis_common.pgvector_runtime import PgvectorRuntime
from stacgis_knowledge.metrics import DOCUMENTS_ADDED, TOOLS
from stacgis_knowledge.service import KnowledgeService
from stacgis_knowledge.settings import KnowledgeSettings
from stacgis_knowledge.store import EMBEDDINGS

INSTRUCTIONS = (
    "The product's knowledge base: its datasets (what each raster and vector collection holds, units, "
    "resolution, sources) and the concepts users ask about (NDVI, DEMs, land-cover classes, CRS, resolution, "
    "how statistics, zonal statistics and change detection are computed, STAC). Search it before explaining "
    "a dataset or a method, and cite the source of what you use. Documents a user adds are private to them."
)

Runtime = PgvectorRuntime[KnowledgeSettings, KnowledgeService]


def register_tools(server: MCPServer[Any], runtime: Runtime, settings: KnowledgeSettings) -> None:
    """The tools and resource; limits in their schemas come from `settings`."""
    default_limit = settings.default_limit

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    async def search_knowledge(
        query: Annotated[str, Field(description="The question, e.g. 'what is NDVI?'")],
        limit: Annotated[
            int, Field(ge=1, le=settings.max_limit, description="Maximum number of passages.")
        ] = default_limit,
    ) -> CallToolResult:
        """Use for concept and definition questions, e.g. 'what is NDVI', 'what does a DEM measure'."""
        return compact_result(await runtime.get().search(query, limit, current_identity().user_id))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False))
    async def add_knowledge(
        title: Annotated[str, Field(description="Document title.")],
        content: Annotated[str, Field(description="Markdown or plain text; split into passages at its headings.")],
        source: Annotated[str | None, Field(description="Where the text comes from (URL, file, citation).")] = None,
        tags: Annotated[list[str] | None, Field(description="Keywords, e.g. ['ndvi', 'landsat'].")] = None,
    ) -> CallToolResult:
        """Use for adding a document the user gives to their own knowledge (only they can search it)."""
        identity = current_identity()
        result = await runtime.get().add(title, content, source, tags, identity.user_id)
        DOCUMENTS_ADDED.labels(result["status"]).inc()
        return compact_result(result)

    @server.resource(
        "knowledge://documents",
        name="knowledge-documents",
        description=(
            "Titles, sources and tags of the documents the current user can search (theirs and the shared ones)."
        ),
        mime_type="application/json",
    )
    async def documents_resource() -> str:
        return json.dumps(await runtime.get().list_documents(current_identity().user_id))


def build_server(settings: KnowledgeSettings) -> tuple[MCPServer[Any], Runtime]:
    """The MCP server with its tools registered, and the runtime its tools use (started by the app's lifespan)."""
    server = create_mcp_server("knowledge-tools", settings, instructions=INSTRUCTIONS, tool_metrics=TOOLS)
    runtime: Runtime = PgvectorRuntime("knowledge-tools", settings, EMBEDDINGS, KnowledgeService)
    register_tools(server, runtime, settings)
    return server, runtime


def create_app(settings: KnowledgeSettings) -> Starlette:
    server, runtime = build_server(settings)
    return build_tool_server_app(server, settings, readiness=runtime.readiness(), lifespan=runtime.lifespan)
