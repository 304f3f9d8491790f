"""Reading an answer: its text from a run's `content` events (proto `ContentDelta`), and whether it
says that the data cannot answer.

Deltas append; a delta with `replace` withdraws the text before it (a draft answer that quoted
numbers no tool gave). Every reader of a stream folds content the same way: the gateway (partial
answers of cancelled or lost runs) and every test client. Refusals are read the same way by the
orchestrator (is a draft already the refusal it needs?) and by `make eval` (is an answer a refusal?).
"""

from __future__ import annotations

import re
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


_REFUSAL = re.compile(
    r"\b("
    # "no data", "no snow data", "no sea ice values": up to two words naming what is missing.
    r"no (?:[\w.]+ ){0,2}?(?:data|dataset|datasets|collection|collections|layer|information|"
    r"raster|values?|coverage|records?|band|variable)"
    r"|not (?:available|covered|included|present|part of|in (?:the|any|our|my)|found|possible|contain)"
    r"|(?:isn't|aren't|is not|are not|was not|wasn't) (?:available|covered|included|present|in (?:the|any))"
    r"|(?:does|do|did)(?: not|n't) (?:cover|contain|include|have|extend|reach|hold|exist|offer|provide)"
    r"|(?:don't|do not|doesn't|does not) have"
    r"|(?:can ?not|can't|cannot|unable to|not able to) (?:answer|provide|compute|calculate|determine|give|find|"
    r"tell|report|say|be answered)"
    r"|outside (?:the|of|its|their|any|every|all)"
    r"|beyond (?:the|its)"
    r"|only (?:covers?|has|holds|contains|spans|for|includes?)"
    r"|there is no|there are no|none of the"
    r"|lacks?|missing"
    r")\b",
    re.IGNORECASE,
)


def refusal_phrases(text: str) -> list[str]:
    """The phrases of the text that say the data cannot answer."""
    return [m.group(0) for m in _REFUSAL.finditer(text)]


def is_refusal(text: str) -> bool:
    return bool(refusal_phrases(text))


def _plain_words(text: str) -> str:
    return " ".join(re.sub(r"[-‐‑–_/]", " ", text.lower()).split())


def mentions(text: str, term: str) -> bool:
    """Whether the text holds the term, or one of its `|`-separated spellings ("near infrared|NIR"),
    case, hyphens and spacing aside."""
    plain = _plain_words(text)
    return any(_plain_words(option) in plain for option in term.split("|") if option.strip())
