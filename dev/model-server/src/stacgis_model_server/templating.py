"""Placeholders in scripted answers and tool-call arguments, filled from the conversation so far.

- ``{{tool:NAME}}`` / ``{{tool:NAME:a.0.b}}``: the latest result of tool NAME, parsed as JSON,
  optionally narrowed by a dotted path (list items by index, negative counts from the end).
- ``{{system}}`` / ``{{system:REGEX}}``: the system messages, or the first match of REGEX in them
  (its first group when it has groups).
- ``{{last_user}}`` / ``{{last_user:REGEX}}``: the same for the last user message.

A value that is a whole string on its own (``"{{tool:x:ref}}"``) is replaced by the raw JSON value
(object, number, ...); inside longer text it is written as text (JSON for non-strings).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .conversation import Message

# The argument runs to the first "}}", so a regex inside a placeholder cannot contain "}}".
PLACEHOLDER = re.compile(r"\{\{\s*(tool|system|last_user)(?::((?:(?!\}\}).)*?))?\s*\}\}", re.DOTALL)


class TemplateError(ValueError):
    pass


class TemplateContext:
    def __init__(self, messages: tuple[Message, ...] | list[Message]) -> None:
        self.messages = list(messages)

    def system_text(self) -> str:
        return "\n".join(m.content for m in self.messages if m.role == "system")

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    def tool_result(self, name: str) -> Any:
        for message in reversed(self.messages):
            if message.role == "tool" and message.tool_name == name:
                try:
                    return json.loads(message.content)
                except ValueError:
                    return message.content
        seen = sorted({m.tool_name or "?" for m in self.messages if m.role == "tool"})
        raise TemplateError(f"no result of tool {name!r} in the conversation (tool results present: {seen})")

    def lookup(self, kind: str, argument: str | None) -> Any:
        if kind == "tool":
            if not argument:
                raise TemplateError("{{tool:...}} needs a tool name")
            name, _, path = argument.partition(":")
            return follow_path(self.tool_result(name.strip()), path.strip(), name.strip())
        text = self.system_text() if kind == "system" else self.last_user_text()
        if not argument:
            return text
        try:
            match = re.search(argument, text)
        except re.error as error:
            raise TemplateError(f"bad regex in {{{{{kind}:{argument}}}}}: {error}") from None
        if match is None:
            raise TemplateError(f"regex {argument!r} does not match the {kind.replace('_', ' ')} text")
        return match.group(1) if match.groups() else match.group(0)


def follow_path(value: Any, path: str, tool: str) -> Any:
    if not path:
        return value
    current = value
    walked: list[str] = []
    for part in path.split("."):
        walked.append(part)
        if isinstance(current, list):
            try:
                current = current[int(part)]
            except (ValueError, IndexError):
                raise TemplateError(
                    f"tool {tool!r} result: {'.'.join(walked)} is not an index of a list of {len(current)}"
                ) from None
        elif isinstance(current, dict):
            if part not in current:
                keys = sorted(current)[:20]
                raise TemplateError(f"tool {tool!r} result: no key {'.'.join(walked)} (keys there: {keys})")
            current = current[part]
        else:
            raise TemplateError(
                f"tool {tool!r} result: {'.'.join(walked[:-1]) or 'the result'} is not an object or list"
            )
    return current


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render(value: Any, context: TemplateContext) -> Any:
    """Fill placeholders in strings nested anywhere inside `value`."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value.strip())
        if whole is not None:
            return context.lookup(whole.group(1), whole.group(2))
        return PLACEHOLDER.sub(lambda m: _as_text(context.lookup(m.group(1), m.group(2))), value)
    if isinstance(value, list):
        return [render(item, context) for item in value]
    if isinstance(value, dict):
        return {key: render(item, context) for key, item in value.items()}
    return value


def render_text(value: str, context: TemplateContext) -> str:
    return _as_text(render(value, context))
