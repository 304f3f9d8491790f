"""What every chat provider offers the agent loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from .types import Message, StreamEvent, ToolSpec


class ChatProvider(Protocol):
    # GenAI semantic-convention provider name ("ollama", "openai").
    provider_name: str

    def stream(
        self, messages: list[Message], tools: list[ToolSpec], model: str, think: bool | None
    ) -> AsyncIterator[StreamEvent]:
        """Stream raw deltas (content may still hold <think> tags), then one ModelTurn."""
        ...

    async def ready(self) -> None:
        """Raise when the model server does not answer."""
        ...

    async def aclose(self) -> None: ...
