"""A step's tool calls made ready to run: names checked (a misremembered one mapped to the tool its
arguments fit), arguments repaired and validated against the schema, frontend commands built.
What cannot run carries the error the model reads and its kind (metrics and the loop's retries)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..llm.types import ToolCall, ToolSpec, new_call_id
from .catalog import ToolCatalog
from .frontend import FrontendCommand, FrontendToolError, prepare_frontend_command
from .registry import RegisteredTool
from .validation import invalid_call_message, repair_arguments, validate_arguments

# Words of tool names that say what a tool does, not what it is about.
_GENERIC_NAME_WORDS = frozenset({"get", "query", "list", "search", "compute", "find", "show", "set", "add", "of", "by"})


@dataclass
class PreparedCall:
    call: ToolCall
    tool: RegisteredTool | None
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str = ""
    ui: FrontendCommand | None = None  # frontend tools only


def renamed(call: ToolCall, offered: Sequence[ToolSpec], catalog: ToolCatalog) -> str | None:
    """For a call of a tool that does not exist ("get_raster_point"): the offered tool whose arguments
    it has and whose name shares the most words with it (query_raster_point: "raster" and "point",
    where get_raster_statistics shares only "raster"), else None (no word shared, or a tie)."""
    if catalog.get(call.name) is not None or call.arguments_error is not None:
        return None
    words = _name_words(call.name)
    shared = [(len(words & _name_words(s.name)), s.name) for s in offered if _fits(call.arguments, s.parameters)]
    best = max((count for count, _ in shared), default=0)
    matches = [name for count, name in shared if count == best]
    return matches[0] if best > 0 and len(matches) == 1 else None


def prepare_call(
    call: ToolCall, offered: Sequence[ToolSpec], catalog: ToolCatalog, style_hosts: Sequence[str] = ()
) -> PreparedCall:
    tool = catalog.get(call.name)
    if tool is None:
        offered_names = [spec.name for spec in offered]
        names = ", ".join(offered_names) or "none this step"
        # Small models misremember names: point at the nearest one, among those the arguments fit.
        fitting = [spec.name for spec in offered if _fits(call.arguments, spec.parameters)]
        near = difflib.get_close_matches(call.name, fitting, n=1, cutoff=0.5) or difflib.get_close_matches(
            call.name, offered_names, n=1, cutoff=0.75
        )
        hint = f" Did you mean {near[0]}?" if near else ""
        return PreparedCall(
            call,
            None,
            error=f"Unknown tool {call.name!r}.{hint} Tools you can call: {names}. Call one of these, or answer.",
            error_kind="unknown_tool",
        )
    if call.arguments_error is not None:
        return PreparedCall(
            call,
            tool,
            error=f"Invalid arguments for {tool.name}: {call.arguments_error}",
            error_kind="invalid_arguments",
        )
    arguments = repair_arguments(call.arguments, tool.input_schema)
    problems = validate_arguments(arguments, tool.input_schema)
    if problems:
        return PreparedCall(
            call,
            tool,
            error=invalid_call_message(tool.name, problems, tool.input_schema),
            error_kind="invalid_arguments",
        )
    prepared = PreparedCall(call, tool, arguments=arguments)
    if tool.kind == "frontend":
        try:
            prepared.ui = prepare_frontend_command(tool.name, arguments, style_hosts)
        except FrontendToolError as error:
            prepared.error = f"Invalid arguments for {tool.name}: {error}. Fix them and call it again."
            prepared.error_kind = "invalid_arguments"
    return prepared


def unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Some models reuse call ids (or send none); results are matched by id, so make them unique."""
    seen: set[str] = set()
    unique = []
    for call in calls:
        if not call.id or call.id in seen:
            call = ToolCall(new_call_id(), call.name, call.arguments, call.arguments_error)
        seen.add(call.id)
        unique.append(call)
    return unique


def _name_words(name: str) -> set[str]:
    return set(re.split(r"[_\W]+", name.lower())) - _GENERIC_NAME_WORDS - {""}


def _fits(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Every argument is one of the schema's and every required one is there."""
    properties = schema.get("properties") or {}
    return all(key in properties for key in arguments) and all(key in arguments for key in schema.get("required", []))
