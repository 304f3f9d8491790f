"""The context-length guard: before every model call, make the conversation fit the model's window.

Token counts are estimated (about 3.5 characters a token), then calibrated per model by the counts
the provider reports (`prompt_eval_count` against the estimate of the same prompt). The window is
the smaller of `llm_num_ctx` and what the model server says the model has (`/api/show`).

When the estimate exceeds the budget: the oldest tool results are shortened to a short summary,
then removed (the message stays, so no call loses its result), the latest step's last; then the
oldest whole exchanges are dropped. The system prompt and the current request are never touched.
After an overflow reported by the model itself, the loop retries with a smaller budget (`level`).
Only when nothing more can be removed does the run fail, with the numbers.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

from .llm.types import Message, ModelError, ToolSpec
from .result_shaping import shape_result

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD_TOKENS = 4
COMPACTED = "[result removed to fit the model's context window: {chars} characters]"
# First, gentler stage: an old result keeps this many characters of its (shaped) summary.
SUMMARY_CHARS = 400
# Each retry after an overflow shrinks the budget by this factor.
RETRY_SHRINK = 0.75
# Calibration ratios outside this range are not believed (e.g. a server that counts only the
# tokens it did not have cached).
RATIO_RANGE = (0.5, 4.0)
OVERFLOW_NUMBERS = re.compile(r"(\d+) tokens.*?context (?:window|length) of (\d+)", re.IGNORECASE | re.DOTALL)


def estimate_tokens(messages: list[Message], tools: list[ToolSpec], ratio: float = 1.0) -> int:
    chars = 0
    for message in messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(json.dumps(call.arguments, ensure_ascii=False))
    tool_chars = sum(len(t.name) + len(t.description) + t.parameters_chars for t in tools)
    raw = int((chars + tool_chars) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * len(messages)
    return int(raw * ratio)


def parse_overflow(message: str) -> tuple[int, int] | None:
    """(prompt tokens, context window) from an overflow error such as "the prompt is 4570 tokens,
    more than the context window of 4096"."""
    match = OVERFLOW_NUMBERS.search(message)
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclass
class ModelBudget:
    """What the process has learnt about each model's tokens and window; shared by all runs."""

    default_window: int
    ratios: dict[str, float] = field(default_factory=dict)
    windows: dict[str, int] = field(default_factory=dict)
    # Models whose window was already asked of the server.
    asked: set[str] = field(default_factory=set)

    def ratio(self, model: str) -> float:
        return self.ratios.get(model, 1.0)

    def window(self, model: str) -> int:
        return min(self.default_window, self.windows.get(model, self.default_window))

    def learn_window(self, model: str, window: int | None) -> None:
        if window and window > 0 and window < self.window(model):
            log.info("model %s has a context window of %d tokens (smaller than the setting)", model, window)
            self.windows[model] = window

    def calibrate(self, model: str, raw_estimate: int, actual: int | None) -> None:
        """Learn the ratio of counted to estimated tokens from a prompt the provider counted."""
        if not actual or raw_estimate <= 0:
            return
        ratio = actual / raw_estimate
        if RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]:
            self.ratios[model] = ratio


def fit_to_context(
    messages: list[Message],
    tools: list[ToolSpec],
    num_ctx: int,
    reserve_output: int,
    protect_from: int,
    ratio: float = 1.0,
    level: int = 0,
) -> tuple[list[Message], int]:
    """Return messages that fit `(num_ctx - reserve_output) * RETRY_SHRINK**level` tokens and how
    many were compacted or dropped. `protect_from` is the index of the first message that must stay
    (the current user request onwards keeps its messages; earlier history is fair game).
    Raises ModelError("context_too_long") when nothing more can be removed."""
    budget = int((num_ctx - reserve_output) * RETRY_SHRINK**level)

    def fits() -> bool:
        return estimate_tokens(messages, tools, ratio) <= budget

    messages = list(messages)
    if fits():
        return messages, 0
    changed = 0
    latest_step = _latest_step_start(messages)
    # 1. Tool results, oldest first, the latest step's last: first to a short summary, then removed.
    older = [i for i, m in enumerate(messages) if m.role == "tool" and i < latest_step]
    latest = [i for i, m in enumerate(messages) if m.role == "tool" and i >= latest_step]
    for group in (older, latest):
        for summary in (True, False):
            for index in group:
                message = messages[index]
                if message.content.startswith("[result removed"):
                    continue
                if summary:
                    content, shortened = shape_result(message.content, SUMMARY_CHARS)
                    if not shortened:
                        continue
                else:
                    content = COMPACTED.format(chars=len(message.content))
                messages[index] = Message(
                    role="tool", content=content, tool_call_id=message.tool_call_id, name=message.name
                )
                changed += 1
                if fits():
                    return messages, changed
    # 2. Drop the oldest exchanges of earlier history, a whole group at a time.
    while True:
        group_span = _oldest_droppable_group(messages, protect_from)
        if group_span is None:
            break
        start, end = group_span
        del messages[start:end]
        protect_from -= end - start
        changed += end - start
        if fits():
            return messages, changed
    needed = estimate_tokens(messages, tools, ratio)
    raise ModelError(
        "context_too_long",
        f"the request needs about {needed} tokens even after compacting the conversation, but the model's "
        f"context window leaves {budget} (num_ctx {num_ctx} minus {reserve_output} for the answer"
        + (f", shrunk after {level} overflow(s)" if level else "")
        + "): shorten the message or start a new session",
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
