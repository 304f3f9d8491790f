"""Embeddings client for Ollama (/api/embed) and OpenAI-compatible (/v1/embeddings) servers."""

from __future__ import annotations

import math
from typing import Literal

import httpx

from .settings import EmbeddingSettings

Provider = Literal["ollama", "openai"]


class EmbeddingError(RuntimeError):
    """The embedding server failed or answered with vectors of the wrong shape."""


class EmbeddingsClient:
    def __init__(
        self,
        provider: Provider,
        base_url: str,
        model: str,
        dimension: int,
        batch_size: int = 64,
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        if provider not in ("ollama", "openai"):
            raise ValueError(f"unknown embedding provider {provider!r}")
        self.provider = provider
        self.model = model
        self.dimension = dimension
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(await self._embed_batch(texts[start : start + self.batch_size]))
        return vectors

    async def embed_one(self, text: str) -> list[float]:
        return (await self.embed([text]))[0]

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        if not batch:
            return []
        try:
            if self.provider == "ollama":
                response = await self._client.post("/api/embed", json={"model": self.model, "input": batch})
                response.raise_for_status()
                vectors = response.json()["embeddings"]
            else:
                response = await self._client.post("/v1/embeddings", json={"model": self.model, "input": batch})
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda item: item["index"])
                vectors = [item["embedding"] for item in data]
        except httpx.HTTPStatusError as error:
            raise EmbeddingError(
                f"embedding server answered {error.response.status_code}: {error.response.text[:200]}"
            ) from None
        except (httpx.HTTPError, KeyError, ValueError) as error:
            raise EmbeddingError(f"embedding request failed: {type(error).__name__}: {error}") from None
        if len(vectors) != len(batch):
            raise EmbeddingError(f"asked for {len(batch)} embeddings, got {len(vectors)}")
        for vector in vectors:
            if len(vector) != self.dimension:
                raise EmbeddingError(
                    f"model {self.model!r} returned {len(vector)}-dimensional vectors; "
                    f"the configured dimension is {self.dimension}"
                )
        return [[float(value) for value in vector] for vector in vectors]

    async def aclose(self) -> None:
        await self._client.aclose()


def embeddings_client(settings: EmbeddingSettings) -> EmbeddingsClient:
    """The client of the embedding model the settings name."""
    api_key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
    return EmbeddingsClient(
        settings.embedding_provider,
        settings.embedding_base_url,
        settings.embedding_model,
        settings.embedding_dimension,
        batch_size=settings.embedding_batch_size,
        api_key=api_key,
        timeout=settings.embedding_timeout_seconds,
    )


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
