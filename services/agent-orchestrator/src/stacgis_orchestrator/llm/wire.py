"""Model request bodies as bytes, with the parts that repeat encoded once.

Every model call sends the offered tools' schemas, the largest part of a request and the same on
every turn of every run of a tool snapshot. Each `ToolSpec` encodes its entry once per provider
format (`ToolSpec.encoded`) and a body is assembled around those bytes, byte for byte what httpx's
`json=` would send for the same dictionary.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import ToolSpec

# What httpx's `json=` sends with a body; `content=` sends none.
JSON_HEADERS = {"Content-Type": "application/json"}


class RawJSON(bytes):
    """A value already encoded as JSON, put into a body as it is."""


def encode_json(value: Any) -> bytes:
    """`value` as httpx's `json=` encodes it (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def encode_body(body: Mapping[str, Any]) -> bytes:
    """A JSON object with its `RawJSON` values put in as they are: the bytes `encode_json` gives for
    the same object with those values decoded (same keys, same order)."""
    members: list[bytes] = []
    plain: dict[str, Any] = {}
    for key, value in body.items():
        if isinstance(value, RawJSON):
            if plain:
                members.append(encode_json(plain)[1:-1])
                plain = {}
            members.append(encode_json(key) + b":" + value)
        else:
            plain[key] = value
    if plain:
        members.append(encode_json(plain)[1:-1])
    return b"{" + b",".join(members) + b"}"


# The last arrays built, per form and list of specs (by identity: the entry holds the specs, so
# their ids are not reused while it is kept). With `tool_selection=all` every turn of every run of
# a snapshot offers the same spec objects; a dynamic selection varies, hence a few entries.
_ARRAYS: dict[tuple[Callable[[ToolSpec], Any], tuple[int, ...]], tuple[tuple[ToolSpec, ...], RawJSON]] = {}
MAX_ARRAYS = 16


def tools_json(tools: list[ToolSpec], form: Callable[[ToolSpec], Any]) -> RawJSON:
    """The JSON array of `form(spec)` for each spec, from each spec's bytes encoded once."""
    key = (form, tuple(map(id, tools)))
    found = _ARRAYS.get(key)
    if found is None:
        found = tuple(tools), RawJSON(b"[" + b",".join(spec.encoded(form) for spec in tools) + b"]")
        if len(_ARRAYS) >= MAX_ARRAYS:
            del _ARRAYS[next(iter(_ARRAYS))]
        _ARRAYS[key] = found
    return found[1]
