"""Checks a model's tool arguments against the tool's JSON Schema before anything runs.

Small models often send numbers as strings or `null` for optional arguments; those are repaired
when the schema leaves no doubt. Everything else wrong is reported back to the model, argument by
argument, so it can correct the call.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import SchemaError

MAX_PROBLEMS = 6


def _types(schema: dict[str, Any]) -> set[str]:
    kinds: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
    elif isinstance(kind, list):
        kinds.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for variant in schema.get(key, []) or []:
            if isinstance(variant, dict):
                kinds |= _types(variant)
    return kinds


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    kinds = _types(schema)
    if not kinds or not isinstance(value, str):
        return value
    text = value.strip()
    if "string" in kinds:
        return value
    if "integer" in kinds:
        try:
            number = float(text)
            if number.is_integer():
                return int(number)
        except ValueError:
            pass
    if "number" in kinds:
        try:
            return float(text)
        except ValueError:
            pass
    if "boolean" in kinds and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kinds & {"array", "object"} and text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return value


def repair_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Coerce scalar strings to the declared types; drop `null` for optional arguments that do not allow it,
    and an optional argument given as an empty string (the 1.5B model fills every optional argument of
    visualize_collection with "", and `datetime: ""` failed the call)."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    repaired: dict[str, Any] = {}
    for name, value in arguments.items():
        sub = properties.get(name)
        if not isinstance(sub, dict):
            repaired[name] = value
            continue
        if value is None and name not in required and "null" not in _types(sub):
            continue
        if isinstance(value, str) and not value.strip() and name not in required:
            continue
        repaired[name] = _coerce(value, sub)
    return repaired


def _where(error: ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    return path or "arguments"


def validate_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Problems with `arguments`, each naming the argument; empty when valid."""
    try:
        validator = Draft202012Validator(schema)
    except SchemaError:
        return []
    problems = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        message = error.message
        if error.validator == "required":
            message = message.replace("is a required property", "is required")
        problems.append(f"{_where(error)}: {message}")
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems


def invalid_call_message(tool: str, problems: list[str], schema: dict[str, Any]) -> str:
    """What the model reads after an invalid call: the problems and the expected arguments."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    expected = ", ".join(
        f"{name}{'' if name in required else '?'}: {(sub or {}).get('type', 'any')}" for name, sub in properties.items()
    )
    return (
        f"Invalid arguments for {tool}: " + "; ".join(problems) + f". Expected arguments: {{{expected}}}. "
        "Fix the arguments and call the tool again."
    )
