"""The context-length guard: before every model call, make the conversation fit the model's window.

Token counts are estimated (about 3.5 characters a token, slightly pessimistic for English and
JSON). When the estimate exceeds the budget, the oldest tool results are compacted first (the
message stays, so no call loses its result), then the oldest whole exchanges are dropped; the
system prompt, the current request and the latest step are never touched. Only when even that is
not enough does the run fail, with the numbers.
"""

from __future__ import annotations

import json

from .llm.types import Message, ModelError, ToolSpec

CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD_TOKENS = 4
COMPACTED = "[result removed to fit the model's context window: {chars} characters]"


def estimate_tokens(messages: list[Message], tools: list[ToolSpec]) -> int:
    chars = 0
    for message in messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(json.dumps(call.arguments, ensure_ascii=False))
    tool_chars = sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)
    return int((chars + tool_chars) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(messages)


def fit_to_context(
    messages: list[Message], tools: list[ToolSpec], num_ctx: int, reserve_output: int, protect_from: int
) -> tuple[list[Message], int]:
    """Return messages that fit `num_ctx - reserve_output` tokens and how many were compacted or
    dropped. `protect_from` is the index of the first message that must stay intact (the current
    user request onwards keeps its latest step; earlier history is fair game).
    Raises ModelError("context_too_long") when nothing more can be removed."""
    budget = num_ctx - reserve_output
    messages = list(messages)
    if estimate_tokens(messages, tools) <= budget:
        return messages, 0
    changed = 0
    latest_step = _latest_step_start(messages)
    # 1. Compact tool results, oldest first; the latest step's results last of all.
    candidates = [i for i, m in enumerate(messages) if m.role == "tool" and i < latest_step] + [
        i for i, m in enumerate(messages) if m.role == "tool" and i >= latest_step
    ]
    for index in candidates:
        message = messages[index]
        if message.content.startswith("[result removed"):
            continue
        messages[index] = Message(
            role="tool",
            content=COMPACTED.format(chars=len(message.content)),
            tool_call_id=message.tool_call_id,
            name=message.name,
        )
        changed += 1
        if estimate_tokens(messages, tools) <= budget:
            return messages, changed
    # 2. Drop the oldest exchanges of earlier history, a whole group at a time.
    while True:
        group = _oldest_droppable_group(messages, protect_from)
        if group is None:
            break
        start, end = group
        del messages[start:end]
        protect_from -= end - start
        changed += end - start
        if estimate_tokens(messages, tools) <= budget:
            return messages, changed
    needed = estimate_tokens(messages, tools)
    raise ModelError(
        "context_too_long",
        f"the request needs about {needed} tokens even after compacting the conversation, but the model's "
        f"context window leaves {budget} (num_ctx {num_ctx} minus {reserve_output} for the answer): "
        "shorten the message or start a new session",
    )


def _latest_step_start(messages: list[Message]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant" and messages[index].tool_calls:
            return index
    return len(messages)


def _oldest_droppable_group(messages: list[Message], protect_from: int) -> tuple[int, int] | None:
    """The first non-system message up to the next user message, if it lies before `protect_from`."""
    start = next((i for i, m in enumerate(messages) if m.role != "system"), None)
    if start is None or start >= protect_from:
        return None
    end = start + 1
    while end < protect_from and messages[end].role != "user":
        end += 1
    return start, end
