"""Every tool the agent can use: the live MCP tool pool, frontend tools and built-in tools."""

from __future__ import annotations

import json
from typing import Any

from ..settings import OrchestratorSettings
from .frontend import FRONTEND_TOOL_NAMES, frontend_tools
from .pool import ToolPool
from .registry import RegisteredTool

LIST_TOOLS = RegisteredTool(
    name="list_available_tools",
    description="List every tool available right now (name, server, what it does, whether it is reachable).",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    kind="builtin",
    read_only=True,
)
BUILTIN_TOOLS = [LIST_TOOLS]


class ToolCatalog:
    def __init__(self, pool: ToolPool, settings: OrchestratorSettings) -> None:
        self.pool = pool
        self.settings = settings
        self._local = {tool.name: tool for tool in [*frontend_tools(), *BUILTIN_TOOLS]}

    @property
    def version(self) -> int:
        return self.pool.version

    def all(self) -> list[RegisteredTool]:
        # Local tools win a name clash: the UI contract must not be shadowed by a server.
        remote = [tool for tool in self.pool.tools() if tool.name not in self._local]
        return [*remote, *self._local.values()]

    def get(self, name: str) -> RegisteredTool | None:
        return self._local.get(name) or self.pool.get(name)

    def mcp_tools(self) -> list[RegisteredTool]:
        return [tool for tool in self.pool.tools() if tool.name not in self._local]

    def always_included(self) -> list[RegisteredTool]:
        names = list(self.settings.always_include_tools)
        if self.settings.always_include_frontend_tools:
            names = [*FRONTEND_TOOL_NAMES, *names]
        tools = [self.get(name) for name in dict.fromkeys(names)]
        return [tool for tool in tools if tool is not None]

    def requires_approval(self, tool: RegisteredTool) -> bool:
        return tool.requires_approval or tool.name in self.settings.approval_tools

    def describe(self) -> str:
        """Answer of the built-in list_available_tools."""
        entries: list[dict[str, Any]] = []
        for tool in self.all():
            entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
            if tool.kind == "mcp":
                entry["server"] = tool.server
                if not self.pool.available(tool):
                    entry["available"] = False
            else:
                entry["kind"] = tool.kind
            if self.requires_approval(tool):
                entry["requires_approval"] = True
            entries.append(entry)
        return json.dumps({"tools": entries}, ensure_ascii=False, separators=(",", ":"))
