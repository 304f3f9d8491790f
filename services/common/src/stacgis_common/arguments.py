"""Tool argument errors and the checks the tool servers share: each error names the argument at
fault and what is allowed, as the model needs to correct its call."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError


class ArgumentError(ToolError):
    """Bad tool or HTTP input. The MCP SDK turns it into an `is_error` result; over HTTP it is a 400
    naming the field (`stacgis_common.http_errors`)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.detail = message

    def __reduce__(self) -> tuple[type[ArgumentError], tuple[str, str]]:
        # Raised in a read worker process, it comes back pickled: rebuild it from both parts
        # (the default would call __init__ with the joined message alone and fail).
        return (type(self), (self.argument, self.detail))


class NotFoundError(ArgumentError):
    """The argument is well-formed but names nothing that exists (a 404 over HTTP)."""


# The one change to a failed call that makes it work, written by a tool server into its error and
# read back by the orchestrator, which then makes that call itself: a 1.5B model told "Collections
# covering this point: ..., olinda-dem" guessed a number instead of calling again (eval run 23).
_RETRY_WITH = re.compile(r"Call it again with (?P<argument>\w+) '(?P<value>[^'\n]+)'\.")


def retry_with(argument: str, value: str) -> str:
    # Quoted by hand, not with repr(): a value holding a quote would change repr's quotes.
    return f"Call it again with {argument} '{value}'."


def retry_hint(error: str) -> tuple[str, str] | None:
    """The (argument, value) an error of `retry_with` names, when it names exactly one."""
    found = {(m["argument"], m["value"]) for m in _RETRY_WITH.finditer(error)}
    return found.pop() if len(found) == 1 else None


# Data a call needs that is still being loaded (a first start's place names), written by a tool server
# into its error and read back by the orchestrator, which then says so itself: the 1.5B model, told
# "place data is still being loaded", answered "I'm sorry, but I can't help with that".
_STILL_LOADING = re.compile(r"Still loading: (?P<what>[^\n]+?)\. Ask again in a few minutes\.")


def still_loading(what: str) -> str:
    """The sentence saying that `what` (e.g. "the place names of cities (embedding 5,120 of 34,006)") is
    still being loaded; `what` must not end with a full stop."""
    return f"Still loading: {what}. Ask again in a few minutes."


def still_loading_of(error: str) -> str | None:
    """What an error of `still_loading` says is still being loaded, or None."""
    found = _STILL_LOADING.search(error)
    return found["what"] if found else None


def text_argument(value: Any, argument: str, maximum: int, clean: Callable[[str], str] = str.strip) -> str:
    """A non-blank string of at most `maximum` characters once `clean`ed (stripped by default)."""
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(argument, "must be a non-empty string")
    text = clean(value)
    if len(text) > maximum:
        raise ArgumentError(argument, f"must be at most {maximum} characters (got {len(text)})")
    return text


def limit_argument(value: Any, maximum: int, argument: str = "limit") -> int:
    """An integer from 1 to `maximum` (booleans are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ArgumentError(argument, f"must be an integer from 1 to {maximum}")
    return value


BBox = tuple[float, float, float, float]


def bbox_argument(value: Any, argument: str = "bbox") -> BBox:
    """[west, south, east, north] in degrees, as 4 numbers or a "w,s,e,n" query string; west > east
    crosses the antimeridian."""
    if isinstance(value, str):
        texts = value.split(",")
        if len(texts) != 4:
            raise ArgumentError(argument, "must be west,south,east,north in degrees (4 numbers)")
        try:
            value = [float(text) for text in texts]
        except ValueError:
            raise ArgumentError(argument, "must hold 4 finite numbers west,south,east,north") from None
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise ArgumentError(argument, "must be [west, south, east, north] in degrees (4 numbers)")
    numbers: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
            raise ArgumentError(argument, "must hold 4 finite numbers [west, south, east, north]")
        numbers.append(float(item))
    west, south, east, north = numbers
    if not (-180 <= west <= 180 and -180 <= east <= 180):
        raise ArgumentError(argument, "west and east must be longitudes between -180 and 180")
    if not (-90 <= south <= 90 and -90 <= north <= 90):
        raise ArgumentError(argument, "south and north must be latitudes between -90 and 90")
    if south > north:
        raise ArgumentError(argument, f"south ({south}) must not be greater than north ({north})")
    return west, south, east, north
