"""Tool argument errors and the checks the tool servers share: each error names the argument at
fault and what is allowed, as the model needs to correct its call."""

from __future__ import annotations

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
