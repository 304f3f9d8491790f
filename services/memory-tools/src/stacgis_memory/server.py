"""The memory-tools MCP server. The user is taken from the verified internal token only."""

# No `from __future__ import annotations`: the tools' annotations use register_tools' locals (limits
# from settings), which the MCP SDK resolves from the live annotations, not from strings.
import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette

from stacgis_common.auth import current_identity
from stacgis_common.mcp_app import build_tool_server_app, compact_result, create_mcp_server
from stacgis_common.pgvector_runtime import PgvectorRuntime
from stacgis_memory.metrics import MEMORY_WRITES, TOOLS
from stacgis_memory.service import MemoryService
from stacgis_memory.settings import MemorySettings
from stacgis_memory.store import EMBEDDINGS

INSTRUCTIONS = (
    "Long-term memories of the current user (preferences, facts about their work, places they care about). "
    "Memories belong to the authenticated user only. Store durable facts with add_memory; restating a "
    "memory updates it instead of adding a copy."
)

Runtime = PgvectorRuntime[MemorySettings, MemoryService]


def register_tools(server: MCPServer[Any], runtime: Runtime, settings: MemorySettings) -> None:
    """The tools and resource; limits in their schemas come from `settings`."""
    default_limit = settings.default_limit

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False))
    async def add_memory(
        content: Annotated[str, Field(description="One durable fact, e.g. 'Prefers elevations in feet'.")],
        kind: Annotated[
            Literal["fact", "preference", "place", "note"] | None,
            Field(description="What the memory is about (default: fact)."),
        ] = None,
    ) -> CallToolResult:
        """Use for "remember ...", "note for later ..." and the user's preferences, e.g. units."""
        user = current_identity().user_id
        result = await runtime.get().add(user, content, kind)
        MEMORY_WRITES.labels(result["status"]).inc()
        return compact_result(result)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))
    async def search_memories(
        query: Annotated[str, Field(description="What to recall, e.g. 'preferred units'.")],
        limit: Annotated[
            int, Field(ge=1, le=settings.max_limit, description="Maximum number of memories.")
        ] = default_limit,
    ) -> CallToolResult:
        """Use for recalling what the user asked you to remember."""
        return compact_result(await runtime.get().search(current_identity().user_id, query, limit))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    async def forget_memory(
        memory_id: Annotated[str, Field(description="The id of one of the user's memories.")],
    ) -> CallToolResult:
        """Use for "forget ...": deletes one memory by id from search_memories."""
        result = await runtime.get().forget(current_identity().user_id, memory_id)
        MEMORY_WRITES.labels("forgotten").inc()
        return compact_result(result)

    @server.resource(
        "memory://recent",
        name="recent-memories",
        description="The current user's most recently added or updated memories.",
        mime_type="application/json",
    )
    async def recent_memories() -> str:
        return json.dumps(await runtime.get().recent(current_identity().user_id))


def build_server(settings: MemorySettings) -> tuple[MCPServer[Any], Runtime]:
    """The MCP server with its tools registered, and the runtime its tools use (started by the app's lifespan)."""
    server = create_mcp_server("memory-tools", settings, instructions=INSTRUCTIONS, tool_metrics=TOOLS)
    runtime: Runtime = PgvectorRuntime("memory-tools", settings, EMBEDDINGS, MemoryService)
    register_tools(server, runtime, settings)
    return server, runtime


def create_app(settings: MemorySettings) -> Starlette:
    server, runtime = build_server(settings)
    return build_tool_server_app(server, settings, readiness=runtime.readiness(), lifespan=runtime.lifespan)
