"""The answer text of a run from its `content` events (proto `ContentDelta`).

Deltas append; a delta with `replace` withdraws the text before it (a draft answer that quoted
numbers no tool gave). Every reader of a stream folds content the same way: the gateway (partial
answers of cancelled or lost runs) and every test client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def fold_content(parts: list[str], payload: Mapping[str, Any]) -> None:
    """Add one content payload (`{"text": ..., "replace": ...}`) to the answer so far."""
    if payload.get("replace"):
        parts.clear()
    parts.append(str(payload.get("text") or ""))


def answer_text(payloads: Iterable[Mapping[str, Any]]) -> str:
    """The answer as the user last saw it, from a run's content payloads in order."""
    parts: list[str] = []
    for payload in payloads:
        fold_content(parts, payload)
    return "".join(parts)
