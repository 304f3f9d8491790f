"""The scripted chat back end: deterministic answers chosen by rules, for tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .conversation import BackendError, ChatEvent, ChatInput, Finish, TextDelta, ToolCall, ToolCalls
from .request_log import LogEntry
from .rules import Rule, RuleBook
from .templating import TemplateContext, TemplateError, render, render_text


def split_chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def estimate_tokens(chat: ChatInput) -> int:
    # About four characters a token: enough for clients that read the usage figures.
    return max(1, sum(len(m.content) + len(m.thinking) for m in chat.messages) // 4)


async def stall_forever() -> None:
    await asyncio.Event().wait()


class ScriptedBackend:
    name = "scripted"

    def __init__(self, rulebook: RuleBook, chunk_chars: int, delay_ms: float) -> None:
        self.rulebook = rulebook
        self.chunk_chars = chunk_chars
        self.delay_ms = delay_ms

    async def generate(self, chat: ChatInput, entry: LogEntry) -> AsyncIterator[ChatEvent]:
        rule = self.rulebook.select(chat)
        if rule is None:
            last_user = TemplateContext(chat.messages).last_user_text()
            rule = Rule(
                name="(no rule matched)", content=f"No scripted rule matched the last user message: {last_user!r}."
            )
        entry.rule = rule.name

        if rule.error is not None and rule.error.after_chunks is None:
            raise BackendError(rule.error.status, rule.error.message)
        try:
            context = TemplateContext(chat.messages)
            thinking = render_text(rule.thinking, context) if rule.thinking else ""
            content = render_text(rule.content, context) if rule.content else ""
            calls = tuple(ToolCall(name=c.name, arguments=render(c.arguments, context)) for c in rule.tool_calls)
        except TemplateError as error:
            raise BackendError(500, f"scripted rule {rule.name!r}: {error}") from None

        size = rule.chunk_chars or self.chunk_chars
        delay = (rule.delay_ms if rule.delay_ms is not None else self.delay_ms) / 1000
        as_field = rule.thinking_format == "field" or (rule.thinking_format == "auto" and chat.wants_thinking)
        deltas: list[TextDelta] = []
        if thinking and as_field:
            deltas += [TextDelta(thinking=part) for part in split_chunks(thinking, size)]
        elif thinking:
            content = f"<think>{thinking}</think>\n{content}"
        deltas += [TextDelta(content=part) for part in split_chunks(content, size)]

        for index, delta in enumerate(deltas):
            await self._before_chunk(rule, index, delay)
            entry.generated += 1
            yield delta
        # Limits beyond the chunk count take effect once the text is out, before the tool calls.
        await self._before_chunk(rule, len(deltas), 0, final=True)
        if calls:
            yield ToolCalls(calls)
        yield Finish(
            done_reason=rule.done_reason,
            prompt_tokens=estimate_tokens(chat),
            completion_tokens=len(deltas) + len(calls),
        )

    async def _before_chunk(self, rule: Rule, index: int, delay: float, final: bool = False) -> None:
        def due(limit: int | None) -> bool:
            return limit is not None and (limit == index or (final and limit >= index))

        if rule.stall and due(rule.stall_after_chunks or 0):
            await stall_forever()
        if rule.error is not None and due(rule.error.after_chunks):
            raise BackendError(rule.error.status, rule.error.message)
        if delay:
            await asyncio.sleep(delay)
