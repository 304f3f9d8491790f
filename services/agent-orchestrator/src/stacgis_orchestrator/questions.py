"""What kind of message the user sent, where the loop acts on it before the model chooses.

A 1.5B model answers "What is a Cloud-Optimized GeoTIFF?" from its own memory or searches the raster
catalogue for it; the knowledge base has the answer. A question about a concept, a definition or
where data comes from is recognised by its form, and the loop searches the knowledge base for it
first (`knowledge_first`), so the model answers from the documents. Likewise "Remember that ..." and
"Note for later: ..." are saved as the user wrote them before the model answers (`memory_note`):
the model sometimes answered "Noted!" without saving anything. A question about what the user told
before ("Which city did I tell you is my home city?") starts with a search of the user's memories
(`is_recall_question`): with the memory only in its context message, the model looked the city up
in vector-tools by an invented id instead.

The forms are narrow on purpose: "What is the mean elevation of Luxembourg?" (a quantity of a place)
is not one of them, and a wrong match costs only one knowledge search.
"""

from __future__ import annotations

import re

# An optional lead-in such as "In STAC, ".
_LEAD = r"^(?:[\w\s-]{1,40},\s*)?"
_WHAT = r"what(?:'s|\s+is|\s+are)\s+"
# Words that tie a question to a place or a time ("What is elevation in Nairobi?"): a quantity asked.
_WHERE_WHEN = r"(?:in|at|of|over|for|near|on|during|inside|within|around)"
_CONCEPT = [
    # "What is a Cloud-Optimized GeoTIFF ...", "In STAC, what is an item?"
    re.compile(_LEAD + _WHAT + r"(?:a|an)\s+[\w\s.-]+(?:\?|$|\s+and\s)", re.I),
    # "What is NDVI?", "What are zonal statistics and how are border cells counted?"
    re.compile(
        _LEAD + _WHAT + r"(?!the\b)[\w.-]+(?:\s+(?!" + _WHERE_WHEN + r"\b)[\w.-]+){0,2}"
        r"\s*(?:\?|$|\s+and\s+(?:which|how|why|what|where))",
        re.I,
    ),
    re.compile(_LEAD + r"(?:explain|define|describe\s+what)\b", re.I),
    re.compile(_LEAD + r"what\s+does\s+[\w\s.-]+\s+mean\b", re.I),
    re.compile(r"\bhow\s+(?:does|do|is|are)\s+[\w\s.-]+\s+(?:work|computed|calculated|measured|made|counted)\b", re.I),
    re.compile(_LEAD + r"why\s+(?:is|are|do|does)\b", re.I),
    re.compile(_LEAD + r"who\s+(?:produced|made|created|publishes|published|maintains|provides|collected)\b", re.I),
    # "What NDVI values does open water usually have?": what things are like in general.
    re.compile(r"\b(?:usually|typically|in general|generally)\b", re.I),
]


def is_concept_question(text: str) -> bool:
    """Whether the question asks about a concept, a definition or a dataset's origin (module docstring)."""
    question = " ".join(text.split())
    return any(pattern.search(question) for pattern in _CONCEPT)


# "Please remember that ...", "Note for later: ...", "Keep in mind that ...", "Don't forget: ..."
_REMEMBER = re.compile(
    r"^(?:please\s+|ok(?:ay)?,?\s+|also,?\s+)?"
    r"(?:remember|note(?:\s+this)?\s+for\s+later|make\s+a\s+note|keep\s+in\s+mind|don'?t\s+forget)"
    r"(?:\s+that)?\s*[:,-]?\s+(?P<note>\S.{2,})$",
    re.I,
)
# "... and tell me its mean elevation": the request that follows is not part of what to remember.
_FOLLOW_UP = re.compile(r"[,;]?\s+(?:and|then)\s+(?:tell|show|give|compute|find|what|how|zoom|display|map)\b", re.I)
# "this", "that one", "it": what to remember is elsewhere in the conversation.
_POINTER = re.compile(r"^(?:this|that|it|these|those)(?:\s+\S+)?$", re.I)
_PREFERENCE = re.compile(r"\b(?:prefer|preferred|like|rather)\b", re.I)


def memory_note(text: str) -> tuple[str, str] | None:
    """(content, kind) to save for an explicit request to remember something, else None."""
    match = _REMEMBER.match(" ".join(text.split()))
    if match is None:
        return None
    note = _FOLLOW_UP.split(match.group("note"))[0].rstrip(" .!")
    if note.endswith("?") or _POINTER.match(note):
        return None  # "Remember what my study area is?", "Please remember this": nothing to save
    note = note[0].upper() + note[1:]
    kind = "preference" if _PREFERENCE.search(note) else "note" if text.lower().lstrip().startswith("note") else "fact"
    return note, kind


# "Which city did I tell you ...", "What did I say my study area was?", "Do you remember my units?"
_RECALL = re.compile(
    r"\b(?:did|have)\s+I\s+(?:ever\s+)?(?:tell|told|say|said|mention(?:ed)?|give|gave|share[d]?)\b"
    r"|\bdo\s+you\s+(?:still\s+)?(?:remember|recall|know)\s+(?:my|what\s+I|where\s+I|which)\b"
    r"|\bwhat\s+do\s+you\s+(?:know|remember)\s+about\s+me\b",
    re.I,
)


def is_recall_question(text: str) -> bool:
    """Whether the question asks what the user told before (module docstring)."""
    return memory_note(text) is None and _RECALL.search(" ".join(text.split())) is not None
