"""Tool calls written as text, for models without native tool calling.

Understood forms: `<tool_call>{"name": .., "arguments": {..}}</tool_call>` (Hermes/Qwen style),
an answer that is only a JSON object or list of them (optionally in a ```json fence), Mistral's
`[TOOL_CALLS] [...]`, the OpenAI shape `{"function": {"name": .., "arguments": ".."}}`, and the
XML-like form a small model borrows from its tool list:
`<tools><function name="zoom_to_location" arguments='{"place": "Tokyo"}'/></tools>`, or JSON in
`<tools>`. JSON a small model got slightly wrong (a bracket too many, a missing closing brace) is
repaired with `json_repair`; whether it is a call is still decided by the tool name.
"""

from __future__ import annotations

import json
import re
from typing import Any

from json_repair import repair_json

from .types import ToolCall, ToolSpec, new_call_id

FENCE = re.compile(r"^```(?:json|JSON|tool_call)?\s*\n?(.*?)\n?```$", re.DOTALL)
# <function name="x" arguments='{...}'/> or <function name="x">{...}</function>, optionally in <tools>.
XML_CALL = re.compile(
    r"""<function\s+name=["']([\w.-]+)["']\s*(?:arguments=(?:'(.*?)'|"(.*?)")\s*/>|>(.*?)</function>)""", re.DOTALL
)
XML_WRAPPER = re.compile(r"^(?:<tools>)?(?P<body>.*?)(?:</tools>)?$", re.DOTALL)
# JSON wrapped in the tag of the model's tool list: `<tools>{"name": .., "arguments": {..}}</tools>`.
JSON_IN_TOOLS = re.compile(r"^<tools>\s*(?P<body>[{\[].*?)\s*(?:</tools>)?$", re.DOTALL)


def _load(text: str) -> Any:
    text = text.strip()
    fenced = FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if text.startswith("[TOOL_CALLS]"):
        text = text.removeprefix("[TOOL_CALLS]").strip()
    wrapped = JSON_IN_TOOLS.match(text)
    if wrapped:
        text = wrapped.group("body")
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text.startswith(("<tools>", "<function")):
        return _xml_calls(text)
    if text.startswith("{{") and text.endswith("}}"):
        # Small models copy template syntax and double the braces around a call, sometimes with a
        # closing brace too many: the object inside, followed by nothing but braces, counts.
        try:
            value, end = json.JSONDecoder().raw_decode(text, 1)
        except ValueError:
            return None
        return value if not text[end:].strip("} \n") else None
    if text.startswith(("{", "[")):
        # Eval run 23: `"coordinates": [[..], .., [..]]]` (a bracket too many) made a whole call
        # the answer, so the user read its arguments instead of the result.
        repaired = repair_json(text, return_objects=True, skip_json_loads=True)
        return repaired if isinstance(repaired, dict | list) and repaired else None
    return None


def _xml_calls(text: str) -> list[dict[str, Any]] | None:
    """The calls of an answer made only of XML-like function elements, else None."""
    body = XML_WRAPPER.match(text)
    inner = body.group("body") if body else text
    calls = []
    for match in XML_CALL.finditer(inner):
        raw = next((g for g in match.groups()[1:] if g is not None), "")
        calls.append({"name": match.group(1), "arguments": raw.strip()})
    leftover = XML_CALL.sub("", inner).strip()
    return calls if calls and not leftover else None


def _one(item: Any, known: set[str] | None) -> ToolCall | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name") or item.get("tool") or item.get("tool_name")
    if not isinstance(name, str) or not name:
        return None
    has_arguments = any(key in item for key in ("arguments", "parameters", "args", "input"))
    if known is not None and name not in known:
        return None
    if known is None and not has_arguments:
        return None
    raw: Any = next((item[key] for key in ("arguments", "parameters", "args", "input") if key in item), {})
    error = None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            error = f"arguments are not valid JSON: {raw[:200]!r}"
            raw = {}
    if not isinstance(raw, dict):
        error = f"arguments must be a JSON object, got {type(raw).__name__}"
        raw = {}
    return ToolCall(id=new_call_id(), name=name, arguments=raw, arguments_error=error)


def _calls(value: Any, known: set[str] | None) -> list[ToolCall]:
    items = value if isinstance(value, list) else [value]
    calls = [_one(item, known) for item in items]
    return [call for call in calls if call is not None]


def parse_tool_blocks(blocks: list[str]) -> list[ToolCall]:
    """Calls inside explicit <tool_call> blocks: the model meant them, so unknown names are kept
    (the loop reports them back as unknown tools)."""
    calls: list[ToolCall] = []
    for block in blocks:
        value = _load(block)
        if value is None:
            calls.append(
                ToolCall(
                    id=new_call_id(), name="(unparsable)", arguments={}, arguments_error=f"not JSON: {block[:200]!r}"
                )
            )
            continue
        calls += _calls(value, None)
    return calls


def parse_json_answer(text: str, known: set[str]) -> list[ToolCall]:
    """Calls in an answer that is only JSON; only names of known tools count, so a JSON answer
    that merely has a "name" field stays an answer."""
    value = _load(text)
    if value is None:
        return []
    return _calls(value, known)


def describe_tools_for_prompt(tools: list[ToolSpec]) -> str:
    """Tool instructions for models that get no native `tools`."""
    lines = [
        "You can call tools. To call one, answer with only this, one block per call:",
        '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>',
        "You then get the result and can continue. Available tools:",
    ]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description}")
        lines.append(f"  arguments schema: {json.dumps(tool.parameters, separators=(',', ':'))}")
    return "\n".join(lines)
