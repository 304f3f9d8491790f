"""Tool results shaped for small context windows.

A long JSON result is cut as JSON, never in the middle of its text: scalar fields stay, long lists
keep their first items plus a note of how many were left out, long strings are shortened, deep
nesting is summarised. Text results are cut at the limit with a notice the model reads.
"""

from __future__ import annotations

import json
import re
from typing import Any

NOTICE = re.compile(r"\n\[truncated: showing the first \d+ of \d+ characters[^\]]*\]$")
SHAPED_KEY = "_shaped"
# Tried in order until the result fits: list items kept, characters per string, nesting depth.
LEVELS = [(20, 400, 6), (10, 200, 5), (5, 120, 4), (3, 80, 3), (1, 60, 2), (0, 40, 1)]


def truncate_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut `text` to `limit` characters, saying so. A result cut before (history sent back by the
    caller) is left as it is."""
    if len(text) <= limit:
        return text, False
    already = NOTICE.search(text)
    if already is not None and already.start() <= limit:
        return text, False
    notice = (
        f"\n[truncated: showing the first {limit} of {len(text)} characters; ask for less data if you need the rest]"
    )
    return text[:limit] + notice, True


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shape(value: Any, items: int, chars: int, depth: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + "…"
    if isinstance(value, dict):
        if depth <= 0:
            scalars = {k: v for k, v in value.items() if not isinstance(v, dict | list)}
            left_out = len(value) - len(scalars)
            shaped = {k: _shape(v, items, chars, 0) for k, v in scalars.items()}
            if left_out:
                shaped["_omitted_fields"] = left_out
            return shaped
        return {key: _shape(item, items, chars, depth - 1) for key, item in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return f"[{len(value)} items]"
        kept = [_shape(item, items, chars, depth - 1) for item in value[:items]]
        if len(value) > items:
            kept.append(f"... {len(value) - items} more items not shown")
        return kept
    return value


def shape_json(data: Any, limit: int, original_chars: int) -> str | None:
    """The largest shaping of `data` that fits `limit` characters, marked as shaped; None if none fits."""
    for items, chars, depth in LEVELS:
        shaped = _shape(data, items, chars, depth)
        if isinstance(shaped, dict):
            shaped = {
                SHAPED_KEY: f"shortened from {original_chars} characters: lists cut to {items} items",
                **shaped,
            }
        text = _dumps(shaped)
        if len(text) <= limit:
            return text
    return None


def shape_result(text: str, limit: int) -> tuple[str, bool]:
    """`text` if it fits `limit` characters, else a valid shorter form; returns (text, shortened)."""
    if len(text) <= limit:
        return text, False
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if data is not None:
            shaped = shape_json(data, limit, len(text))
            if shaped is not None:
                return shaped, True
    return truncate_text(text, limit)
