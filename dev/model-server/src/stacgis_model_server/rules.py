"""Rules of the scripted back end: which conversation gets which streamed answer.

Rules are tried in order; the first whose every `match` condition holds answers. See
docs/model-server.md for the format with examples.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .conversation import ChatInput, Message


def _check_regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"not a valid regular expression: {error}") from None
    return value


class RuleMatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # re.search on the last user message.
    last_user: str | None = None
    # Assistant turns since the last user message (0: the model answers the user for the first time).
    step: int | None = Field(default=None, ge=0)
    # Tools whose results have all come back since the last user message.
    after_tools: list[str] = Field(default_factory=list)
    # The conversation ends with a result of this tool.
    last_tool: str | None = None
    # re.search on the content of the last message when it is a tool result.
    last_tool_content: str | None = None
    # re.search on the system messages joined by newlines.
    system: str | None = None
    # re.search on every message the model reads (system, context, history, tool results) joined by newlines.
    any_message: str | None = None
    # Tools the request must offer in `tools`.
    tools_offered: list[str] = Field(default_factory=list)
    # Whether the request asked for thinking.
    think: bool | None = None
    # re.fullmatch on the requested model name (several scripted names can share one rule file).
    model: str | None = None

    @field_validator("last_user", "last_tool_content", "system", "any_message", "model")
    @classmethod
    def _valid_regex(cls, value: str | None) -> str | None:
        return _check_regex(value)


class ToolCallSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class HttpErrorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=500, ge=400, le=599)
    message: str = "scripted failure"
    # Stream this many chunks first, then send the error as a stream line instead of an HTTP status.
    after_chunks: int | None = Field(default=None, ge=0)


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    match: RuleMatch = Field(default_factory=RuleMatch)
    thinking: str | None = None
    # auto: the `thinking` field when the request asked for thinking, else <think>..</think> in content.
    thinking_format: Literal["auto", "field", "tags"] = "auto"
    content: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    # Characters per streamed delta and the pause before each one.
    chunk_chars: int | None = Field(default=None, ge=1)
    delay_ms: float | None = Field(default=None, ge=0)
    done_reason: str = "stop"
    # Accept the request and never answer (after `stall_after_chunks` chunks, if given).
    stall: bool = False
    stall_after_chunks: int | None = Field(default=None, ge=0)
    error: HttpErrorSpec | None = None
    # Answer only this many times, then let later rules match.
    times: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _stall_needs_flag(self) -> Rule:
        if self.stall_after_chunks is not None and not self.stall:
            raise ValueError("stall_after_chunks needs stall: true")
        return self


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[Rule] = Field(default_factory=list)


def parse_rules(data: Any) -> list[Rule]:
    """Accept {"rules": [...]} or a bare list; raises pydantic.ValidationError naming the bad field."""
    if isinstance(data, list):
        data = {"rules": data}
    return RuleSet.model_validate(data).rules


def load_rules_file(path: Path) -> list[Rule]:
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) if path.suffix in {".yaml", ".yml"} else json.loads(text)
    try:
        return parse_rules(data)
    except ValidationError as error:
        raise ValueError(f"invalid rules file {path}: {error}") from None


class ConversationFacts:
    """What rules look at, computed once per request."""

    def __init__(self, chat: ChatInput) -> None:
        messages: list[Message] = list(chat.messages)
        last_user_index = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        since_user = messages[last_user_index + 1 :]
        self.last_user = messages[last_user_index].content if last_user_index >= 0 else ""
        self.step = sum(1 for m in since_user if m.role == "assistant")
        self.tools_returned = {m.tool_name for m in since_user if m.role == "tool" and m.tool_name}
        last = messages[-1] if messages else None
        self.last_tool = last.tool_name if last is not None and last.role == "tool" else None
        self.last_tool_content = last.content if last is not None and last.role == "tool" else None
        self.system = "\n".join(m.content for m in messages if m.role == "system")
        self.any_message = "\n".join(m.content for m in messages)
        self.tools_offered = set(chat.tool_names)
        self.think = chat.wants_thinking
        self.model = chat.model


def matches(rule: Rule, facts: ConversationFacts) -> bool:
    m = rule.match
    if m.last_user is not None and not re.search(m.last_user, facts.last_user):
        return False
    if m.step is not None and m.step != facts.step:
        return False
    if not set(m.after_tools) <= facts.tools_returned:
        return False
    if m.last_tool is not None and m.last_tool != facts.last_tool:
        return False
    if m.last_tool_content is not None and (
        facts.last_tool_content is None or not re.search(m.last_tool_content, facts.last_tool_content)
    ):
        return False
    if m.system is not None and not re.search(m.system, facts.system):
        return False
    if m.any_message is not None and not re.search(m.any_message, facts.any_message):
        return False
    if not set(m.tools_offered) <= facts.tools_offered:
        return False
    if m.think is not None and m.think != facts.think:
        return False
    return m.model is None or re.fullmatch(m.model, facts.model) is not None


class RuleBook:
    """The rules in force: those of the file, replaced or extended at run time through the API."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._file_rules = load_rules_file(path) if path is not None else []
        self._rules = list(self._file_rules)
        self._uses: dict[int, int] = {}

    @property
    def rules(self) -> list[Rule]:
        return list(self._rules)

    def replace(self, rules: list[Rule]) -> None:
        self._rules = list(rules)
        self._uses.clear()

    def add(self, rules: list[Rule], position: Literal["prepend", "append"]) -> None:
        self._rules = [*rules, *self._rules] if position == "prepend" else [*self._rules, *rules]

    def reset(self) -> None:
        self.replace(self._file_rules)

    def select(self, chat: ChatInput) -> Rule | None:
        facts = ConversationFacts(chat)
        for rule in self._rules:
            if rule.times is not None and self._uses.get(id(rule), 0) >= rule.times:
                continue
            if matches(rule, facts):
                self._uses[id(rule)] = self._uses.get(id(rule), 0) + 1
                return rule
        return None
