"""Place names resolved by vector-tools' `resolve_place` over MCP (with the run's headers, like any
tool call), and `PlaceError`, the error of a `place` argument that cannot be settled. An ambiguous or
unknown name is reported to the model as the tool's error, with the candidates."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .pool import ToolPool, ToolUnavailable
from .registry import RegisteredTool

RESOLVE_TOOL = "resolve_place"


class PlaceError(ValueError):
    """The place argument cannot be settled; the message names the argument and what to do."""


def _resolver(pool: ToolPool) -> RegisteredTool | None:
    for tool in pool.tools():
        if (tool.remote_name or tool.name) == RESOLVE_TOOL:
            return tool
    return None


async def resolve_place(place: str, pool: ToolPool, headers: Callable[[], Mapping[str, str]]) -> dict[str, Any]:
    """vector-tools' answer for a place name: name, ref, and a `point` or a `bbox`."""
    tool = _resolver(pool)
    if tool is None:
        raise PlaceError("place: place names cannot be resolved now (vector-tools is not available); give lat and lon")
    try:
        outcome = await pool.call(tool, {"place": place}, headers())
    except ToolUnavailable as error:
        raise PlaceError(f"place: could not resolve {place!r}: {error.message}; give lat and lon") from None
    if outcome.is_error:
        raise PlaceError(outcome.text)
    try:
        answer = json.loads(outcome.text)
    except ValueError:
        raise PlaceError(f"place: vector-tools gave no readable answer for {place!r}") from None
    if answer.get("status") == "ambiguous":
        raise PlaceError(f"place: {answer.get('message')}")
    resolved: dict[str, Any] = answer.get("place") or {}
    return resolved
