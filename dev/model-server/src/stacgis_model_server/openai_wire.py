"""The OpenAI-compatible dialect (`/v1/chat/completions`, `/v1/embeddings`) over the same back ends."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response

from .capabilities import openai_response_format_constraint, openai_tool_choice_constraint
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

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionIn(_Lenient):
    name: str = Field(min_length=1)
    arguments: str = "{}"


class ToolCallIn(_Lenient):
    id: str | None = None
    type: str = "function"
    function: FunctionIn


class ContentPart(_Lenient):
    type: str
    text: str | None = None


class MessageIn(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content if part.type == "text")
        return self.content or ""


class ToolFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str = "function"
    function: ToolFunction


class StreamOptions(_Lenient):
    include_usage: bool = False


class ChatCompletionRequest(_Lenient):
    model: str = Field(min_length=1)
    messages: list[MessageIn] = Field(min_length=1)
    tools: list[Tool] | None = None
    tool_choice: Any = None
    response_format: Any = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    reasoning_effort: str | None = None

    def to_chat_input(self) -> ChatInput:
        messages: list[Message] = []
        for i, m in enumerate(self.messages):
            calls = []
            for j, call in enumerate(m.tool_calls or []):
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                except ValueError as error:
                    raise BackendError(
                        400, f"invalid request: messages.{i}.tool_calls.{j}.function.arguments: not JSON ({error})"
                    ) from None
                if not isinstance(arguments, dict):
                    raise BackendError(
                        400, f"invalid request: messages.{i}.tool_calls.{j}.function.arguments: must be a JSON object"
                    )
                calls.append(
                    ToolCall(name=call.function.name, arguments=arguments, **({"id": call.id} if call.id else {}))
                )
            messages.append(
                Message(
                    role="system" if m.role == "developer" else m.role,
                    content=m.text(),
                    thinking=m.reasoning or "",
                    tool_calls=tuple(calls),
                    tool_name=m.name if m.role == "tool" else None,
                    tool_call_id=m.tool_call_id,
                )
            )
        stop = [self.stop] if isinstance(self.stop, str) else self.stop or []
        constraints = [
            openai_response_format_constraint(self.response_format),
            openai_tool_choice_constraint(self.tool_choice),
        ]
        # tool_choice "none": the model may not call a tool, so none is offered.
        tools = [] if self.tool_choice == "none" else self.tools or []
        return ChatInput(
            model=self.model,
            messages=tuple(infer_tool_names(messages)),
            tools=tuple(t.model_dump(exclude_none=True) for t in tools),
            think=self.reasoning_effort,
            options=GenerationOptions(
                num_predict=self.max_completion_tokens or self.max_tokens,
                temperature=self.temperature,
                top_p=self.top_p,
                seed=self.seed,
                stop=tuple(stop),
            ),
            constraints=tuple(c for c in constraints if c is not None),
        )


class EmbeddingsRequest(_Lenient):
    model: str = Field(min_length=1)
    input: str | list[str]
    dimensions: int | None = Field(default=None, ge=1)
    encoding_format: Literal["float"] = "float"


def openai_error(error: BackendError) -> Response:
    body = {
        "error": {
            "message": error.message,
            "type": ERROR_TYPES.get(error.status, "api_error"),
            "param": None,
            "code": "model_not_found" if error.status == 404 else None,
        }
    }
    return JSONResponse(body, status_code=error.status)


def _sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


class OpenAIRenderer:
    media_type = "text/event-stream"

    def __init__(self, model: str, include_usage: bool, argument_chunk_chars: int = 16) -> None:
        self.model = model
        self.include_usage = include_usage
        self.argument_chunk_chars = argument_chunk_chars
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.role_sent = False
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.finish = Finish()

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        if not self.role_sent:
            delta = {"role": "assistant", **delta}
            self.role_sent = True
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse(
            {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [choice],
            }
        )

    def _usage(self, finish: Finish) -> dict[str, int]:
        return {
            "prompt_tokens": finish.prompt_tokens,
            "completion_tokens": finish.completion_tokens,
            "total_tokens": finish.prompt_tokens + finish.completion_tokens,
        }

    def _finish_reason(self, finish: Finish) -> str:
        if self.calls:
            return "tool_calls"
        return "length" if finish.done_reason == "length" else "stop"

    def render(self, event: ChatEvent) -> list[bytes]:
        if isinstance(event, TextDelta):
            delta: dict[str, Any] = {}
            if event.content:
                delta["content"] = event.content
            if event.thinking:
                delta["reasoning"] = event.thinking
            return [self._chunk(delta)]
        if isinstance(event, ToolCalls):
            out = []
            for index, call in enumerate(event.calls, start=len(self.calls)):
                # Name first, then the arguments in fragments, as OpenAI streams them.
                head = {
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
                out.append(self._chunk({"tool_calls": [head]}))
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                size = self.argument_chunk_chars
                for start in range(0, len(arguments), size):
                    fragment = {"index": index, "function": {"arguments": arguments[start : start + size]}}
                    out.append(self._chunk({"tool_calls": [fragment]}))
            self.calls.extend(event.calls)
            return out
        out = [self._chunk({}, self._finish_reason(event))]
        if self.include_usage:
            out.append(
                _sse(
                    {
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": self._usage(event),
                    }
                )
            )
        return out

    def closing(self) -> list[bytes]:
        return [_sse("[DONE]")]

    def error_line(self, error: BackendError) -> bytes:
        return _sse({"error": {"message": error.message, "type": ERROR_TYPES.get(error.status, "api_error")}})

    def error_response(self, error: BackendError) -> Response:
        return openai_error(error)

    def collect(self, event: ChatEvent) -> None:
        if isinstance(event, TextDelta):
            self.content.append(event.content)
            self.reasoning.append(event.thinking)
        elif isinstance(event, ToolCalls):
            self.calls.extend(event.calls)
        else:
            self.finish = event

    def collected(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if "".join(self.reasoning):
            message["reasoning"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in self.calls
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason(self.finish)}],
            "usage": self._usage(self.finish),
        }
