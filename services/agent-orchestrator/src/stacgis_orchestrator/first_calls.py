"""The orchestrator's own first call of a run, made before the model's first step (`questions`): a
note to remember is saved, a concept question starts with a knowledge search, a question about what
the user told starts with a search of their memories."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .llm.types import ToolCall, new_call_id
from .prompts import KNOWLEDGE_ANSWER
from .questions import is_concept_question, is_recall_question, memory_note
from .tool_step import KNOWLEDGE_TOOL
from .tools.catalog import ToolCatalog

# How many passages a concept question's knowledge search reads.
KNOWLEDGE_FIRST_LIMIT = 3
MEMORY_TOOL = "add_memory"
RECALL_TOOL = "search_memories"


@dataclass(frozen=True)
class FirstCall:
    """The call, the line the activity feed shows for it, and `closing`, a line for the model after
    each of its results ("" for none)."""

    call: ToolCall
    why: str
    closing: str

    @property
    def concept_search(self) -> bool:
        """A concept question's knowledge search: its passages answer the question."""
        return self.call.name == KNOWLEDGE_TOOL


def first_call(message: str, catalog: ToolCatalog) -> FirstCall | None:
    """The call a concept question, a request to remember or a question about what the user told
    starts with; None for other messages or when the tool is not in the catalog."""
    note = memory_note(message)
    arguments: dict[str, Any]
    if note is not None:
        tool, arguments, why = MEMORY_TOOL, {"content": note[0], "kind": note[1]}, "A note to remember: saving it."
    elif is_concept_question(message):
        tool, arguments = KNOWLEDGE_TOOL, {"query": message, "limit": KNOWLEDGE_FIRST_LIMIT}
        why = "A question about a concept: searching the knowledge base."
    elif is_recall_question(message):
        tool, arguments = RECALL_TOOL, {"query": message}
        why = "A question about what you told me: searching your memories."
    else:
        return None
    if catalog.get(tool) is None:
        return None
    closing = KNOWLEDGE_ANSWER if tool == KNOWLEDGE_TOOL else ""
    return FirstCall(ToolCall(new_call_id(), tool, arguments), why, closing)


def with_note(content: str, note: str) -> str:
    """A tool result closed by a line for the model: a last `note` key of a JSON object (the result
    stays JSON for whoever reads it as such), else a last paragraph."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return f"{content}\n\n{note}"
    return json.dumps({**data, "note": note}, ensure_ascii=False, separators=(",", ":"))
