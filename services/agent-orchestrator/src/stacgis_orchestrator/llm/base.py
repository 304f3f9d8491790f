"""What every chat provider offers the agent loop."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from .types import Message, StreamEvent, ToolSpec


class ChatProvider(Protocol):
    # GenAI semantic-convention provider name ("ollama", "openai").
    provider_name: str

    def stream(
        self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream raw deltas (content may still hold <think> tags), then one ModelTurn."""
        ...

    async def context_length(self, model: str) -> int | None:
        """The model's context window as the server reports it, or None when it does not say."""
        ...

    async def warm(self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None) -> int | None:
        """Have the server read this prompt (to cache it), generating one token; returns the prompt
        tokens it counted, when it reports them."""
        ...

    async def ready(self) -> None:
        """Raise when the model server does not answer."""
        ...

    async def models(self) -> list[str]:
        """Names of the models the server offers, as it lists them (embedding models included)."""
        ...

    async def aclose(self) -> None: ...
