"""Which model names exist here, what each one is, and which back end answers it."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from .conversation import BackendError, ChatEvent, ChatInput
from .embeddings import DIMENSION, Embedder
from .request_log import LogEntry

STARTED_AT = datetime.now(UTC).isoformat().replace("+00:00", "Z")


class ChatBackend(Protocol):
    name: str

    def generate(self, chat: ChatInput, entry: LogEntry) -> AsyncIterator[ChatEvent]: ...


def canonical(name: str) -> str:
    """Ollama treats `name` and `name:latest` as the same model."""
    return name if ":" in name else f"{name}:latest"


@dataclass
class ModelCard:
    name: str
    kind: Literal["chat", "embedding"]
    family: str
    parameter_size: str
    quantization: str
    context_length: int
    capabilities: list[str]
    file: Path | None = None
    aliases: list[str] = field(default_factory=list)
    embedding_length: int | None = None

    @property
    def size(self) -> int:
        if self.file is None or not self.file.exists():
            return 0
        if self.file.is_dir():
            return sum(p.stat().st_size for p in self.file.rglob("*") if p.is_file())
        return self.file.stat().st_size

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{self.name}:{self.file}".encode()).hexdigest()

    def details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf"
            if self.file is not None and self.file.suffix == ".gguf"
            else ("safetensors" if self.kind == "embedding" else "scripted"),
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization,
        }

    def tag(self) -> dict[str, Any]:
        return {
            "name": canonical(self.name),
            "model": canonical(self.name),
            "modified_at": STARTED_AT,
            "size": self.size,
            "digest": self.digest,
            "details": self.details(),
        }

    def show(self) -> dict[str, Any]:
        model_info: dict[str, Any] = {
            "general.architecture": self.family,
            "general.basename": self.name.split(":")[0],
            f"{self.family}.context_length": self.context_length,
        }
        if self.embedding_length is not None:
            model_info[f"{self.family}.embedding_length"] = self.embedding_length
        return {
            "modelfile": f"FROM {self.file or self.name}\n",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": self.details(),
            "model_info": model_info,
            "capabilities": self.capabilities,
            "modified_at": STARTED_AT,
        }


class ModelRegistry:
    def __init__(
        self,
        scripted: ChatBackend,
        scripted_names: list[str],
        real: ChatBackend | None,
        real_card: ModelCard,
        real_problem: str | None,
        embedder: Embedder | None,
        embedding_card: ModelCard,
        embedding_problem: str | None,
    ) -> None:
        self.scripted = scripted
        self.real = real
        self.real_card = real_card
        self.real_problem = real_problem
        self.embedder = embedder
        self.embedding_card = embedding_card
        self.embedding_problem = embedding_problem
        self.scripted_cards = [
            ModelCard(
                name=name,
                kind="chat",
                family="scripted",
                parameter_size="0",
                quantization="none",
                context_length=131072,
                capabilities=["completion", "tools", "thinking"],
            )
            for name in scripted_names
        ]

    def cards(self) -> list[ModelCard]:
        cards = list(self.scripted_cards)
        if self.real is not None:
            cards.append(self.real_card)
        if self.embedder is not None:
            cards.append(self.embedding_card)
        return cards

    def _names(self, card: ModelCard) -> set[str]:
        return {canonical(card.name), *(canonical(alias) for alias in card.aliases)}

    def find(self, name: str) -> ModelCard:
        wanted = canonical(name)
        for card in [*self.scripted_cards, self.real_card, self.embedding_card]:
            if wanted in self._names(card):
                problem = self.real_problem if card is self.real_card else None
                if card is self.embedding_card:
                    problem = self.embedding_problem
                if problem is not None:
                    raise BackendError(404, f'model "{name}" is not available here: {problem}')
                return card
        raise BackendError(404, f'model "{name}" not found, try pulling it first')

    def chat_backend(self, name: str) -> ChatBackend:
        card = self.find(name)
        if card.kind != "chat":
            raise BackendError(400, f'"{name}" does not support chat')
        if card is self.real_card:
            assert self.real is not None
            return self.real
        return self.scripted

    def embedder_for(self, name: str) -> Embedder:
        card = self.find(name)
        if card.kind != "embedding" or self.embedder is None:
            raise BackendError(400, f'"{name}" does not support embeddings')
        return self.embedder


__all__ = ["DIMENSION", "ChatBackend", "ModelCard", "ModelRegistry", "canonical"]
