"""Tool schemas as Ollama's parser accepts them.

Ollama reads a narrow subset of JSON Schema: no `anyOf`/`oneOf`/`$ref`, and `title`, `default: null`
or an empty `required` confuse small models for nothing. The MCP SDK emits all of these (Optional
parameters become `anyOf: [X, null]`, nested models become `$defs` references), so every schema is
rewritten before it is offered. Validation of the model's arguments still uses the original schema.
"""

from __future__ import annotations

import copy
from typing import Any

MAX_REF_DEPTH = 8
DROPPED_KEYS = ("title", "$schema", "$defs", "definitions", "$id", "$comment", "x_requires_approval")
NESTED_SCHEMA_KEYS = ("items", "additionalProperties", "not", "contains")


def sanitize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` without anyOf/oneOf/allOf/$ref/title/`default: null`/empty `required`."""
    definitions = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    cleaned: dict[str, Any] = _clean(copy.deepcopy(schema), definitions, depth=0)
    cleaned.setdefault("type", "object")
    if cleaned.get("type") == "object":
        cleaned.setdefault("properties", {})
    return cleaned


def _resolve_ref(ref: str, definitions: dict[str, Any]) -> dict[str, Any]:
    name = ref.rsplit("/", 1)[-1]
    target = definitions.get(name)
    return copy.deepcopy(target) if isinstance(target, dict) else {}


def _type_label(variant: dict[str, Any]) -> str:
    kind = variant.get("type")
    if isinstance(kind, str):
        return kind
    return "value"


def _flatten_union(node: dict[str, Any], key: str, definitions: dict[str, Any], depth: int) -> dict[str, Any]:
    variants = [v for v in node.pop(key) if isinstance(v, dict)]
    resolved = [_clean(v, definitions, depth + 1) for v in variants]
    non_null = [v for v in resolved if v.get("type") != "null"]
    if not non_null:
        return node
    chosen, others = non_null[0], non_null[1:]
    merged = {**chosen, **{k: v for k, v in node.items() if k not in chosen or k == "description"}}
    if others:
        # The first variant is what the model sees; tell it the others exist.
        alternatives = ", ".join(_type_label(v) for v in others)
        merged["description"] = f"{merged.get('description', '').rstrip('. ')} (may also be: {alternatives})".lstrip()
    return merged


def _clean(node: Any, definitions: dict[str, Any], depth: int) -> Any:
    if isinstance(node, list):
        return [_clean(item, definitions, depth) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node and isinstance(node["$ref"], str):
        ref = node.pop("$ref")
        target = _resolve_ref(ref, definitions) if depth < MAX_REF_DEPTH else {"type": "object"}
        node = {**target, **node}
        return _clean(node, definitions, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in node and isinstance(node[key], list):
            node = _flatten_union(node, key, definitions, depth)
    if isinstance(node.get("allOf"), list):
        parts = [_clean(part, definitions, depth + 1) for part in node.pop("allOf") if isinstance(part, dict)]
        for part in parts:
            for k, v in part.items():
                node.setdefault(k, v)
    if isinstance(node.get("type"), list):
        # ["string", "null"] -> "string": Ollama takes one type.
        kinds = [k for k in node["type"] if k != "null"]
        node["type"] = kinds[0] if kinds else "string"
    for key in DROPPED_KEYS:
        node.pop(key, None)
    if "default" in node and node["default"] is None:
        del node["default"]
    if "required" in node and not node["required"]:
        del node["required"]
    if isinstance(node.get("properties"), dict):
        node["properties"] = {name: _clean(sub, definitions, depth) for name, sub in node["properties"].items()}
    for key in NESTED_SCHEMA_KEYS:
        if isinstance(node.get(key), dict):
            node[key] = _clean(node[key], definitions, depth)
    if isinstance(node.get("prefixItems"), list):
        node["prefixItems"] = [_clean(item, definitions, depth) for item in node["prefixItems"]]
    return node


FORBIDDEN_KEYS = frozenset({"anyOf", "oneOf", "allOf", "$ref", "title", "$defs"})


def schema_problems(schema: Any, path: str = "$") -> list[str]:
    """Everything in a sanitised schema Ollama would trip over (empty when clean)."""
    problems: list[str] = []
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            problems += schema_problems(item, f"{path}[{index}]")
        return problems
    if not isinstance(schema, dict):
        return problems
    for key in FORBIDDEN_KEYS & schema.keys():
        problems.append(f"{path}.{key}")
    if "default" in schema and schema["default"] is None:
        problems.append(f"{path}.default=null")
    if schema.get("required") == []:
        problems.append(f"{path}.required=[]")
    if isinstance(schema.get("type"), list):
        problems.append(f"{path}.type is a list")
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                problems += schema_problems(sub, f"{path}.properties.{name}")
        elif key in NESTED_SCHEMA_KEYS or key == "prefixItems":
            problems += schema_problems(value, f"{path}.{key}")
    return problems
