"""What the agent knows about one tool, wherever it runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..llm.types import ToolSpec

ToolKind = Literal["mcp", "frontend", "builtin"]


@dataclass(frozen=True)
class RegisteredTool:
    # Name the model uses; differs from `remote_name` only after a name collision.
    name: str
    description: str
    input_schema: dict[str, Any]
    kind: ToolKind
    server: str = ""
    remote_name: str = ""
    read_only: bool = False
    requires_approval: bool = False
    # Extra words matched by keyword scoring (split name, parameter names).
    keywords: tuple[str, ...] = field(default=())

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.input_schema)

    def embedding_text(self) -> str:
        """What is embedded for dynamic tool selection: name and description. Argument names were
        tried too and lowered recall at small K (docs/benchmarks/tool-selection.md)."""
        return f"{self.name.replace('_', ' ')}: {self.description}"
