"""Tool calls in the text a Qwen-style model writes, found while it streams.

Qwen2.5 writes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; with long prompts it
often writes the same object in a ```` ```json ```` fence instead, and sometimes inside
``<tools>...</tools>``, the tag its chat template wraps the tool list in. Text outside calls is streamed at
once, except a tail that may be the start of a call, which is held until it is clear. A block that
does not hold a valid call (malformed JSON, a fence with ordinary code) goes out as text: a model's
mistake is never a crash. An object shaped exactly as a call but naming a tool that was not offered
is still a call (the client reports the unknown name back to the model).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from .conversation import ToolCall

TAG_OPEN = "<tool_call>"
TAG_CLOSE = "</tool_call>"
FENCE = "```"
# Each opener and its closer. Only <tool_call> is an explicit call; the others may hold ordinary
# text, so they count only when they hold calls of offered tools.
CLOSERS = {TAG_OPEN: TAG_CLOSE, "<tools>": "</tools>", FENCE: FENCE}
OPENERS = tuple(CLOSERS)
RECENT_CHARS = 400


def _held_tail(text: str) -> int:
    """Length of the longest suffix of `text` that could grow into an opener."""
    longest = 0
    for opener in OPENERS:
        for size in range(min(len(opener) - 1, len(text)), 0, -1):
            if opener.startswith(text[-size:]):
                longest = max(longest, size)
                break
    return longest


def _as_call(value: Any, names: Collection[str] | None) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return None
    if names is not None and name not in names:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        # Some models write the arguments as a JSON string, as on the OpenAI wire.
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(name=name, arguments=arguments)


def parse_calls(body: str, names: Collection[str] | None) -> list[ToolCall] | None:
    """The calls in a block body: one object, a list of objects or several objects in a row."""
    decoder = json.JSONDecoder(strict=False)
    values: list[Any] = []
    position = 0
    text = body.strip()
    while position < len(text):
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return None
        values.extend(value if isinstance(value, list) else [value])
        position = end
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
    calls = [_as_call(value, names) for value in values]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _misnamed_calls(body: str) -> list[ToolCall] | None:
    """Objects shaped exactly as calls ({"name", "arguments"} and nothing else) whose name is not an
    offered tool ("get_raster_point"): the model meant a call, so the client gets it and answers
    with its unknown-tool error, instead of the user getting the JSON as an answer."""
    try:
        value = json.loads(body.strip(), strict=False)
    except (ValueError, RecursionError):
        return None
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, dict) and set(v) == {"name", "arguments"} for v in values):
        return None
    return parse_calls(body, None)


@dataclass
class ToolCallStream:
    """Feed generated text; get back text that is safe to show and the calls found so far.

    `tool_names` limits fenced blocks to calls of offered tools (a fence may be ordinary code);
    a `<tool_call>` tag is explicit, so any name is accepted there and checked by the client.
    """

    tool_names: Collection[str] | None = None
    calls: list[ToolCall] = field(default_factory=list)
    _buffer: str = ""
    _opener: str | None = None
    # The text shown just before the current block: a fence of bare arguments may follow a sentence
    # that names the tool ("I'll use `get_raster_statistics` with these arguments: ```json {...}```").
    _recent: str = ""

    def feed(self, text: str) -> str:
        self._buffer += text
        shown: list[str] = []
        while True:
            if self._opener is None:
                starts = [(self._buffer.find(o), o) for o in OPENERS if o in self._buffer]
                if not starts:
                    keep = _held_tail(self._buffer)
                    cut = len(self._buffer) - keep
                    self._show(shown, self._buffer[:cut])
                    self._buffer = self._buffer[cut:]
                    break
                index, opener = min(starts)
                self._show(shown, self._buffer[:index])
                self._buffer = self._buffer[index:]
                self._opener = opener
            closer = CLOSERS[self._opener]
            end = self._buffer.find(closer, len(self._opener))
            if end < 0:
                break
            block = self._buffer[: end + len(closer)]
            self._buffer = self._buffer[end + len(closer) :]
            self._show(shown, self._close_block(block, self._opener, closer))
            self._opener = None
        return "".join(shown)

    def _show(self, shown: list[str], text: str) -> None:
        if text:
            shown.append(text)
            self._recent = (self._recent + text)[-RECENT_CHARS:]

    def finish(self) -> str:
        """End of generation: an unclosed block still counts when it holds a whole call."""
        rest, self._buffer = self._buffer, ""
        if self._opener is None:
            return rest
        opener, self._opener = self._opener, None
        return self._close_block(rest, opener, "")

    def _close_block(self, block: str, opener: str, closer: str) -> str:
        body = block[len(opener) : len(block) - len(closer)]
        names = None if opener == TAG_OPEN else self.tool_names
        if opener == FENCE:
            # Drop the fence's language line (```json).
            first, _, remainder = body.partition("\n")
            if first.strip() and not first.strip().startswith(("{", "[")):
                body = remainder
        found = parse_calls(body, names)
        if found is None and names is not None:
            found = _misnamed_calls(body)
        if found is None and opener == FENCE:
            found = self._bare_arguments(body)
        if found is None:
            return block
        self.calls.extend(found)
        return ""

    def _bare_arguments(self, body: str) -> list[ToolCall] | None:
        """A fenced object of arguments alone, after text naming exactly one offered tool."""
        if not self.tool_names:
            return None
        try:
            arguments = json.loads(body.strip(), strict=False)
        except (ValueError, RecursionError):
            return None
        if not isinstance(arguments, dict) or not arguments or "name" in arguments:
            return None
        named = {name for name in self.tool_names if re.search(rf"\b{re.escape(name)}\b", self._recent)}
        if len(named) != 1:
            return None
        return [ToolCall(name=named.pop(), arguments=arguments)]


def split_tool_calls(text: str, tool_names: Collection[str] | None = None) -> tuple[str, list[ToolCall]]:
    """The whole-text form: (text outside calls, calls)."""
    stream = ToolCallStream(tool_names)
    shown = stream.feed(text) + stream.finish()
    return shown, stream.calls
