"""Ollama's native chat API: `/api/chat` streaming NDJSON with native tools and thinking."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
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

WARM_TIMEOUT_SECONDS = 900.0


def format_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": spec.sanitized_parameters},
    }


def format_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [format_tool(t) for t in tools]


def as_arguments_object(arguments: Any) -> dict[str, Any]:
    """Ollama wants tool-call arguments as objects, never JSON strings."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def format_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [
                {"id": call.id, "function": {"name": call.name, "arguments": as_arguments_object(call.arguments)}}
                for call in message.tool_calls
            ]
        if message.role == "tool":
            if message.name:
                item["tool_name"] = message.name
            if message.tool_call_id:
                item["tool_call_id"] = message.tool_call_id
        out.append(item)
    return out


def parse_tool_call(raw: Any) -> ToolCall:
    function = raw.get("function", {}) if isinstance(raw, dict) else {}
    name = function.get("name") if isinstance(function, dict) else None
    arguments = function.get("arguments", {}) if isinstance(function, dict) else {}
    error = None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            error = f"arguments are not valid JSON: {arguments[:200]!r}"
            arguments = {}
    if not isinstance(arguments, dict):
        error = f"arguments must be a JSON object, got {type(arguments).__name__}"
        arguments = {}
    call_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw.get("id") else None
    return ToolCall(id=call_id or new_call_id(), name=str(name or ""), arguments=arguments, arguments_error=error)


class OllamaProvider:
    provider_name = "ollama"

    def __init__(
        self,
        base_url: str,
        timeout_seconds: float,
        num_ctx: int,
        keep_alive: str | None,
        temperature: float | None = None,
        num_predict: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.num_ctx = num_ctx
        self.keep_alive = keep_alive
        self.temperature = temperature
        self.num_predict = num_predict
        timeout = httpx.Timeout(timeout_seconds, connect=min(10.0, timeout_seconds))
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=timeout)

    def _body(self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None) -> dict[str, Any]:
        options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.num_predict is not None:
            options["num_predict"] = self.num_predict
        body: dict[str, Any] = {
            "model": model,
            "messages": format_messages(messages),
            "stream": True,
            "options": options,
        }
        if tools:
            # Each tool's entry encoded once (`wire`): the same bytes on every turn of every run.
            body["tools"] = tools_json(tools, format_tool)
        if think is not None:
            body["think"] = think
        if self.keep_alive:
            body["keep_alive"] = self.keep_alive
        return body

    async def stream(
        self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None
    ) -> AsyncGenerator[StreamEvent, None]:
        body = self._body(messages, tools, model, think)
        content: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        final: ModelTurn | None = None
        try:
            async with self._client.stream(
                "POST", "/api/chat", content=encode_body(body), headers=JSON_HEADERS
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise model_http_error(response.status_code, _error_text(response), model, self.base_url)
                async for line in response.aiter_lines():
                    if not line.strip() or final is not None:
                        continue
                    try:
                        chunk = json.loads(line)
                    except ValueError:
                        raise ModelError(
                            "model_error", f"the model server sent a line that is not JSON: {line[:200]!r}"
                        ) from None
                    if "error" in chunk:
                        raise ModelError("model_error", f"the model failed while answering: {chunk['error']}")
                    message = chunk.get("message") or {}
                    if message.get("thinking"):
                        thinking.append(message["thinking"])
                        yield ThinkingDelta(message["thinking"])
                    if message.get("content"):
                        content.append(message["content"])
                        yield TextDelta(message["content"])
                    for raw in message.get("tool_calls") or []:
                        calls.append(parse_tool_call(raw))
                    if chunk.get("done") and final is None:
                        # Keep reading to the end of the response so the connection goes back to the pool.
                        final = ModelTurn(
                            content="".join(content),
                            thinking="".join(thinking),
                            tool_calls=calls,
                            input_tokens=chunk.get("prompt_eval_count"),
                            output_tokens=chunk.get("eval_count"),
                            finish_reason=str(chunk.get("done_reason") or "stop"),
                        )
        except httpx.HTTPError as error:
            raise transport_error(error, self.base_url, self.timeout_seconds) from None
        if final is None:
            raise ModelError("model_error", "the model server closed the stream before it was done")
        yield final

    async def context_length(self, model: str) -> int | None:
        """`model_info["<family>.context_length"]` of `/api/show`."""
        try:
            response = await self._client.post("/api/show", json={"model": model}, timeout=10.0)
            if response.status_code >= 400:
                return None
            info = response.json().get("model_info") or {}
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        lengths = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int) and v > 0]
        return min(lengths) if lengths else None

    async def warm(self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None) -> int | None:
        body = self._body(messages, tools, model, think)
        body["stream"] = False
        body["options"]["num_predict"] = 1
        # A cold prompt on a CPU takes minutes; this runs in the background, so wait for it.
        timeout = httpx.Timeout(max(self.timeout_seconds, WARM_TIMEOUT_SECONDS), connect=10.0)
        try:
            response = await self._client.post(
                "/api/chat", content=encode_body(body), headers=JSON_HEADERS, timeout=timeout
            )
        except httpx.HTTPError as error:
            raise transport_error(error, self.base_url, timeout.read or 0) from None
        if response.status_code >= 400:
            raise model_http_error(response.status_code, _error_text(response), model, self.base_url)
        count = response.json().get("prompt_eval_count")
        return count if isinstance(count, int) else None

    async def ready(self) -> None:
        response = await self._client.get("/api/version", timeout=3.0)
        response.raise_for_status()

    async def models(self) -> list[str]:
        # A CPU model server busy with a long prompt answers slowly; the list is cached by the gateway.
        response = await self._client.get("/api/tags", timeout=15.0)
        response.raise_for_status()
        listed = response.json().get("models") or []
        return [str(item["name"]) for item in listed if isinstance(item, dict) and item.get("name")]

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        if isinstance(data, dict) and "error" in data:
            return str(data["error"])
    except ValueError:
        pass
    return response.text[:300]
