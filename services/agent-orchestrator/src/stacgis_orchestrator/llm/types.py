"""The provider-neutral conversation and the events a model stream yields."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from .schema import sanitize_schema
from .wire import encode_json

Role = Literal["system", "user", "assistant", "tool"]


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:20]}"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model's arguments were not a JSON object; the call is then reported back as invalid.
    arguments_error: str | None = None


@dataclass
class Message:
    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    # For role "tool": the call answered and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model. The offered list is built once per tool snapshot
    (`prefix.all_tools`), so what every model call derives from a spec is computed once, here;
    `parameters` is never changed after the spec is made."""

    name: str
    description: str
    parameters: dict[str, Any]

    @cached_property
    def parameters_chars(self) -> int:
        """Length of `parameters` as JSON, for the context guard's estimate."""
        return len(json.dumps(self.parameters))

    @cached_property
    def sanitized_parameters(self) -> dict[str, Any]:
        """`parameters` as Ollama's parser accepts them (`schema.sanitize_schema`)."""
        return sanitize_schema(self.parameters)

    @cached_property
    def _encoded_forms(self) -> dict[Callable[[ToolSpec], Any], bytes]:
        return {}

    def encoded(self, form: Callable[[ToolSpec], Any]) -> bytes:
        """`form(self)`, a provider's entry for this tool in a request, as JSON, encoded once per
        form (`wire.tools_json`); `form` must read nothing but the spec."""
        forms = self._encoded_forms
        found = forms.get(form)
        if found is None:
            found = forms[form] = encode_json(form(self))
        return found


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ModelTurn:
    """End of one model call: everything it produced, with usage when the server reports it."""

    content: str
    thinking: str
    tool_calls: list[ToolCall]
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = "stop"


StreamEvent = ThinkingDelta | TextDelta | ModelTurn

ModelErrorCode = Literal["model_unavailable", "model_timeout", "model_error", "context_too_long", "tools_unsupported"]


class ModelError(Exception):
    """A model call failed in a way the run reports as an error event (never a hang)."""

    def __init__(self, code: ModelErrorCode, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code: ModelErrorCode = code
        self.message = message
        # The server could not be reached or said it is not ready (restarting, loading): worth waiting for.
        self.transient = transient
