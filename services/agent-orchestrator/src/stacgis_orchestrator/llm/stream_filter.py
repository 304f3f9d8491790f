"""Splits a model's streamed content into the answer, its reasoning and tool calls written as text.

Reasoning arrives either in a dedicated field or inline as `<think>..</think>` (also `<thought>`);
both end up as thinking, never in the answer. Tool calls written as text (`<tool_call>..</tool_call>`,
or an answer that is only JSON) are held back so they never reach the user as prose; the caller
decides at the end of the turn whether they were tool calls. Tags may be split across chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .types import TextDelta, ThinkingDelta

THINK_TAGS = {"<think>": "</think>", "<thought>": "</thought>", "<thinking>": "</thinking>"}
TOOL_TAGS = {"<tool_call>": "</tool_call>", "<function_call>": "</function_call>"}
OPENERS = {**THINK_TAGS, **TOOL_TAGS}
# Answers starting like this may be a tool call written as JSON: hold them until the turn ends.
JSON_STARTS = ("{", "[", "```", "[TOOL_CALLS]", "<tools>", "<function")


def _partial_suffix(text: str, candidates: list[str]) -> int:
    """Length of the longest end of `text` that could begin one of `candidates`."""
    best = 0
    for candidate in candidates:
        for size in range(min(len(candidate) - 1, len(text)), 0, -1):
            if text.endswith(candidate[:size]):
                best = max(best, size)
                break
    return best


@dataclass
class ContentFilter:
    detect_text_tools: bool
    thinking: list[str] = field(default_factory=list)
    visible: list[str] = field(default_factory=list)
    tool_blocks: list[str] = field(default_factory=list)
    _pending: str = ""
    _closer: str | None = None
    _inside: str = ""
    _held: list[str] | None = None
    _started: bool = False
    _leading: str = ""

    def feed(self, text: str) -> list[ThinkingDelta | TextDelta]:
        out: list[ThinkingDelta | TextDelta] = []
        buffer = self._pending + text
        self._pending = ""
        while buffer:
            if self._closer is not None:
                index = buffer.find(self._closer)
                if index < 0:
                    keep = _partial_suffix(buffer, [self._closer])
                    self._take_inside(buffer[: len(buffer) - keep], out)
                    self._pending = buffer[len(buffer) - keep :]
                    return out
                self._take_inside(buffer[:index], out)
                if self._closer in TOOL_TAGS.values():
                    self.tool_blocks.append(self._inside)
                self._inside = ""
                buffer = buffer[index + len(self._closer) :]
                self._closer = None
                continue
            positions = [(buffer.find(tag), tag) for tag in OPENERS if tag in buffer]
            if positions:
                index, tag = min(positions)
                self._emit_visible(buffer[:index], out)
                self._closer = OPENERS[tag]
                buffer = buffer[index + len(tag) :]
                continue
            keep = _partial_suffix(buffer, list(OPENERS))
            self._emit_visible(buffer[: len(buffer) - keep], out)
            self._pending = buffer[len(buffer) - keep :]
            return out
        return out

    def _take_inside(self, text: str, out: list[ThinkingDelta | TextDelta]) -> None:
        if not text:
            return
        if self._closer in THINK_TAGS.values():
            self.thinking.append(text)
            out.append(ThinkingDelta(text))
        else:
            self._inside += text

    def _emit_visible(self, text: str, out: list[ThinkingDelta | TextDelta]) -> None:
        if not text:
            return
        if self._held is not None:
            self._held.append(text)
            return
        if not self._started:
            stripped = text.lstrip()
            if not stripped:
                # Leading whitespace waits until we know what the answer starts with.
                self._leading += text
                return
            self._started = True
            # The answer starts at its first visible character (models often open with blank lines).
            text, self._leading = stripped, ""
            if self.detect_text_tools and stripped.startswith(JSON_STARTS):
                self._held = [text]
                return
        self.visible.append(text)
        out.append(TextDelta(text))

    def held_text(self) -> str:
        """Text withheld because it looked like a tool call written as JSON."""
        return "".join(self._held or [])

    def finish(self) -> list[ThinkingDelta | TextDelta]:
        """Flush what is left; an unterminated think block counts as thinking."""
        out: list[ThinkingDelta | TextDelta] = []
        rest, self._pending = self._pending, ""
        if self._closer is not None:
            self._take_inside(rest, out)
            if self._closer in TOOL_TAGS.values():
                self.tool_blocks.append(self._inside)
            self._closer = None
        elif rest:
            self._emit_visible(rest, out)
        return out

    def release_held(self) -> list[ThinkingDelta | TextDelta]:
        """The held text was not a tool call after all: it is answer."""
        text = self.held_text()
        self._held = None
        if not text:
            return []
        self.visible.append(text)
        return [TextDelta(text)]

    @property
    def answer(self) -> str:
        return "".join(self.visible)
