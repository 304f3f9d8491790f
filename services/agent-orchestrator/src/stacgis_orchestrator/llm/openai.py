"""OpenAI-compatible chat completions (`/v1/chat/completions`), streamed, tool-call deltas assembled."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import httpx

from .errors import model_http_error, transport_error
from .types import (
    Message,
    ModelError,
    ModelTurn,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolSpec,
    new_call_id,
)
from .wire import JSON_HEADERS, encode_body, tools_json


def format_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                }
                for call in message.tool_calls
            ]
            item["content"] = message.content or None
        if message.role == "tool":
            item["tool_call_id"] = message.tool_call_id or ""
        out.append(item)
    return out


def format_tool(spec: ToolSpec) -> dict[str, Any]:
    parameters = {key: value for key, value in spec.parameters.items() if key != "x_requires_approval"}
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": parameters},
    }


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def finish(self) -> ToolCall:
        text = "".join(self.arguments)
        try:
            arguments = json.loads(text) if text.strip() else {}
            error = None if isinstance(arguments, dict) else f"arguments must be a JSON object, got {text[:200]!r}"
        except ValueError:
            arguments, error = {}, f"arguments are not valid JSON: {text[:200]!r}"
        return ToolCall(
            id=self.id or new_call_id(),
            name=self.name,
            arguments=arguments if isinstance(arguments, dict) else {},
            arguments_error=error,
        )


class OpenAIProvider:
    provider_name = "openai"

    def __init__(
        self,
        base_url: str,
        timeout_seconds: float,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        self.base_url = base
        self.path = "/chat/completions" if base.endswith("/v1") else "/v1/chat/completions"
        self.timeout_seconds = timeout_seconds
        self.temperature = temperature
        self.max_tokens = max_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(timeout_seconds, connect=min(10.0, timeout_seconds))
        self._client = httpx.AsyncClient(base_url=base, timeout=timeout, headers=headers)

    def _body(self, messages: list[Message], tools: list[ToolSpec], model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": format_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            # Each tool's entry encoded once (`wire`): the same bytes on every turn of every run.
            body["tools"] = tools_json(tools, format_tool)
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    async def stream(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        model: str,
        think: bool | None,  # noqa: ARG002 - ChatProvider's signature; the OpenAI API has no thinking switch
    ) -> AsyncGenerator[StreamEvent, None]:
        body = self._body(messages, tools, model)
        content: list[str] = []
        thinking: list[str] = []
        partial: dict[int, _PartialCall] = {}
        usage: dict[str, Any] = {}
        finish = "stop"
        try:
            async with self._client.stream(
                "POST", self.path, content=encode_body(body), headers=JSON_HEADERS
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise model_http_error(response.status_code, _error_text(response), model, self.base_url)
                finished = False
                # Read to the end of the response (not just [DONE]) so the connection is reused.
                async for line in response.aiter_lines():
                    if finished or not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        finished = True
                        continue
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise ModelError(
                            "model_error", f"the model server sent an event that is not JSON: {data[:200]!r}"
                        ) from None
                    if "error" in chunk:
                        error = chunk["error"]
                        text = error.get("message") if isinstance(error, dict) else error
                        raise ModelError("model_error", f"the model failed while answering: {text}")
                    if isinstance(chunk.get("usage"), dict):
                        usage = chunk["usage"]
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                        if reasoning:
                            thinking.append(reasoning)
                            yield ThinkingDelta(reasoning)
                        if delta.get("content"):
                            content.append(delta["content"])
                            yield TextDelta(delta["content"])
                        for raw in delta.get("tool_calls") or []:
                            index = int(raw.get("index", len(partial)))
                            call = partial.setdefault(index, _PartialCall())
                            call.id = call.id or str(raw.get("id") or "")
                            function = raw.get("function") or {}
                            call.name += str(function.get("name") or "")
                            if function.get("arguments"):
                                arguments = function["arguments"]
                                call.arguments.append(
                                    arguments if isinstance(arguments, str) else json.dumps(arguments)
                                )
                        if choice.get("finish_reason"):
                            finish = str(choice["finish_reason"])
        except httpx.HTTPError as error:
            raise transport_error(error, self.base_url, self.timeout_seconds) from None
        yield ModelTurn(
            content="".join(content),
            thinking="".join(thinking),
            tool_calls=[partial[index].finish() for index in sorted(partial)],
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            finish_reason=finish,
        )

    async def context_length(self, model: str) -> int | None:  # noqa: ARG002 - ChatProvider's signature
        return None  # the OpenAI API does not say

    async def warm(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        model: str,
        think: bool | None,  # noqa: ARG002 - ChatProvider's signature; the OpenAI API has no thinking switch
    ) -> int | None:
        body: dict[str, Any] = {"model": model, "messages": format_messages(messages), "max_tokens": 1}
        if tools:
            body["tools"] = tools_json(tools, format_tool)
            body["tool_choice"] = "auto"
        timeout = httpx.Timeout(max(self.timeout_seconds, 900.0), connect=10.0)
        try:
            response = await self._client.post(
                self.path, content=encode_body(body), headers=JSON_HEADERS, timeout=timeout
            )
        except httpx.HTTPError as error:
            raise transport_error(error, self.base_url, timeout.read or 0) from None
        if response.status_code >= 400:
            raise model_http_error(response.status_code, _error_text(response), model, self.base_url)
        usage = response.json().get("usage") or {}
        count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return count if isinstance(count, int) else None

    async def ready(self) -> None:
        response = await self._client.get(self.path.replace("/chat/completions", "/models"), timeout=3.0)
        response.raise_for_status()

    async def models(self) -> list[str]:
        response = await self._client.get(self.path.replace("/chat/completions", "/models"), timeout=15.0)
        response.raise_for_status()
        listed = response.json().get("data") or []
        return [str(item["id"]) for item in listed if isinstance(item, dict) and item.get("id")]

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            return str(error.get("message", error))
        if error:
            return str(error)
    except ValueError:
        pass
    return response.text[:300]
