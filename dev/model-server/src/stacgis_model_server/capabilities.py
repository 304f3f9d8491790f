"""What the real back end can and cannot do with a request, checked before any token is generated.

The real back end never builds a grammar: a tool schema only reaches the prompt as text, and
nothing constrains generation. So a request that asks for constrained output (a JSON `format`, an
OpenAI `response_format`, a forced `tool_choice`) is refused with a 400 saying so, rather than being
silently answered unconstrained; and a tool schema nested deeper than the chat template can render
is refused by name, so no schema reaches code that could fail on it in an unplanned way.
"""

from __future__ import annotations

import json
from typing import Any

from .conversation import BackendError, Constraint

# Far deeper than any real tool schema (the product's deepest is 5), far below Python's recursion
# limit that json.dumps inside the chat template would hit.
MAX_SCHEMA_DEPTH = 48


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON value (a scalar is 0), walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_SCHEMA_DEPTH:
            # Deep enough to refuse: no need to walk a hostile tree to its bottom.
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def tool_name(tool: dict[str, Any], index: int) -> str:
    function = tool.get("function", tool)
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else f"tools.{index}"


def check_tools(tools: tuple[dict[str, Any], ...]) -> None:
    for index, tool in enumerate(tools):
        depth = json_depth(tool)
        if depth > MAX_SCHEMA_DEPTH:
            raise BackendError(
                400,
                f"tool {tool_name(tool, index)!r}: its definition nests more than {MAX_SCHEMA_DEPTH} levels deep; "
                "the model server renders tool schemas into the prompt and refuses deeper ones",
            )


def largest_tool_note(tools: tuple[dict[str, Any], ...]) -> str:
    """For a prompt over the window: which tool definition weighs most, so the client knows what to cut."""
    if not tools:
        return ""
    sizes = [(len(json.dumps(tool)), tool_name(tool, i)) for i, tool in enumerate(tools)]
    size, name = max(sizes)
    return f"; the largest of the {len(tools)} tool definitions is {name!r} ({size} characters of JSON)"


def ollama_format_constraint(value: Any) -> Constraint | None:
    """Ollama's `format`: "json" or a JSON schema asks for constrained output; empty means none."""
    if value in (None, "", {}):
        return None
    if isinstance(value, str):
        return Constraint("format", repr(value))
    return Constraint("format", "a JSON schema")


def openai_response_format_constraint(value: Any) -> Constraint | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else value
    if kind in (None, "text"):
        return None
    return Constraint("response_format", repr(kind))


def openai_tool_choice_constraint(value: Any) -> Constraint | None:
    """None and "auto" leave the choice to the model ("none" is handled by offering no tools)."""
    if value in (None, "auto", "none"):
        return None
    if isinstance(value, dict):
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else value.get("name")
        if isinstance(name, str):
            return Constraint("tool_choice", f"tool {name!r}")
    return Constraint("tool_choice", repr(value))


def refuse_constraint(constraint: Constraint, backend: str) -> BackendError:
    return BackendError(
        400,
        f"{constraint.field}: {constraint.detail} asks for constrained output, which the {backend} back end "
        "does not do (it builds no grammars); send the request without it and check the answer instead",
    )


__all__ = [
    "MAX_SCHEMA_DEPTH",
    "Constraint",
    "check_tools",
    "json_depth",
    "largest_tool_note",
    "ollama_format_constraint",
    "openai_response_format_constraint",
    "openai_tool_choice_constraint",
    "refuse_constraint",
    "tool_name",
]
