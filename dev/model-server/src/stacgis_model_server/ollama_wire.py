"""Ollama's native HTTP dialect: request bodies in, NDJSON chunks (or one JSON object) out."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response

from .capabilities import ollama_format_constraint
from .conversation import (
    BackendError,
    ChatEvent,
    ChatInput,
    Finish,
    GenerationOptions,
    Message,
    TextDelta,
    ToolCall,
    ToolCalls,
    infer_tool_names,
)


class _Lenient(BaseModel):
    # Ollama ignores fields it does not know; so do we.
    model_config = ConfigDict(extra="ignore")


class FunctionCall(_Lenient):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    index: int | None = None


class ToolCallIn(_Lenient):
    id: str | None = None
    function: FunctionCall


class MessageIn(_Lenient):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    images: list[str] | None = None


class ToolFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str = "function"
    function: ToolFunction


class Options(_Lenient):
    num_ctx: int | None = Field(default=None, ge=1)
    num_predict: int | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: list[str] | None = None


class ChatRequest(_Lenient):
    model: str = Field(min_length=1)
    messages: list[MessageIn] = Field(default_factory=list)
    tools: list[Tool] | None = None
    stream: bool = True
    think: bool | Literal["low", "medium", "high"] | None = None
    format: Any = None
    options: Options | None = None
    keep_alive: str | float | None = None

    def to_chat_input(self) -> ChatInput:
        messages = [
            Message(
                role=m.role,
                content=m.content or "",
                thinking=m.thinking or "",
                tool_calls=tuple(
                    ToolCall(name=c.function.name, arguments=c.function.arguments, **({"id": c.id} if c.id else {}))
                    for c in m.tool_calls or []
                ),
                tool_name=m.tool_name,
                tool_call_id=m.tool_call_id,
            )
            for m in self.messages
        ]
        options = self.options or Options()
        return ChatInput(
            model=self.model,
            messages=tuple(infer_tool_names(messages)),
            tools=tuple(t.model_dump(exclude_none=True) for t in self.tools or []),
            think=self.think,
            options=GenerationOptions(
                num_predict=options.num_predict,
                temperature=options.temperature,
                top_p=options.top_p,
                top_k=options.top_k,
                seed=options.seed,
                stop=tuple(options.stop or ()),
                num_ctx=options.num_ctx,
            ),
            constraints=tuple(c for c in [ollama_format_constraint(self.format)] if c is not None),
        )


class EmbedRequest(_Lenient):
    model: str = Field(min_length=1)
    input: str | list[str]
    truncate: bool = True
    dimensions: int | None = Field(default=None, ge=1)
    keep_alive: str | float | None = None


class LegacyEmbeddingsRequest(_Lenient):
    model: str = Field(min_length=1)
    prompt: str


class ModelRequest(_Lenient):
    model: str | None = None
    name: str | None = None

    def model_name(self) -> str:
        name = self.model or self.name
        if not name:
            raise BackendError(400, "invalid request: model: field required")
        return name


def timestamp() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def render_tool_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [
        {"id": call.id, "function": {"index": index, "name": call.name, "arguments": call.arguments}}
        for index, call in enumerate(calls)
    ]


def _line(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class OllamaRenderer:
    media_type = "application/x-ndjson"

    def __init__(self, model: str) -> None:
        self.model = model
        self.started_ns = time.monotonic_ns()
        self.first_token_ns: int | None = None
        self.content: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.finish = Finish()

    def _timing(self, finish: Finish) -> dict[str, Any]:
        now = time.monotonic_ns()
        first = self.first_token_ns or now
        prompt_ns = max(0, first - self.started_ns - finish.load_duration_ns)
        eval_ns = now - first
        if finish.prompt_duration_ns:
            # The back end timed its first token itself: text held back (a tool call being written)
            # reaches this renderer later than the token did.
            prompt_ns = finish.prompt_duration_ns
            eval_ns = max(0, now - self.started_ns - finish.load_duration_ns - prompt_ns)
        return {
            "done_reason": finish.done_reason,
            "total_duration": now - self.started_ns,
            "load_duration": finish.load_duration_ns,
            "prompt_eval_count": finish.prompt_tokens,
            "prompt_eval_duration": prompt_ns,
            "eval_count": finish.completion_tokens,
            "eval_duration": eval_ns,
        }

    def _note_token(self) -> None:
        if self.first_token_ns is None:
            self.first_token_ns = time.monotonic_ns()

    def render(self, event: ChatEvent) -> list[bytes]:
        base = {"model": self.model, "created_at": timestamp()}
        if isinstance(event, TextDelta):
            self._note_token()
            message: dict[str, Any] = {"role": "assistant", "content": event.content}
            if event.thinking:
                message["thinking"] = event.thinking
            return [_line({**base, "message": message, "done": False})]
        if isinstance(event, ToolCalls):
            self._note_token()
            message = {"role": "assistant", "content": "", "tool_calls": render_tool_calls(event.calls)}
            return [_line({**base, "message": message, "done": False})]
        return [_line({**base, "message": {"role": "assistant", "content": ""}, "done": True, **self._timing(event)})]

    def closing(self) -> list[bytes]:
        return []

    def error_line(self, error: BackendError) -> bytes:
        return _line({"error": error.message})

    def error_response(self, error: BackendError) -> Response:
        return JSONResponse({"error": error.message}, status_code=error.status)

    def collect(self, event: ChatEvent) -> None:
        if isinstance(event, TextDelta):
            self._note_token()
            self.content.append(event.content)
            self.thinking.append(event.thinking)
        elif isinstance(event, ToolCalls):
            self._note_token()
            self.calls.extend(event.calls)
        else:
            self.finish = event

    def collected(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content)}
        if "".join(self.thinking):
            message["thinking"] = "".join(self.thinking)
        if self.calls:
            message["tool_calls"] = render_tool_calls(tuple(self.calls))
        return {
            "model": self.model,
            "created_at": timestamp(),
            "message": message,
            "done": True,
            **self._timing(self.finish),
        }
