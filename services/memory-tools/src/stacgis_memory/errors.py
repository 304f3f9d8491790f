"""Tool errors that name the argument at fault, as the model needs to correct its call."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError


class ArgumentError(ToolError):
    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
