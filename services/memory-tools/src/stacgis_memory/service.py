"""The operations behind the memory tools. The user is always the verified caller passed in by
the server; no argument can name another user."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

import asyncpg
from mcp.server.mcpserver.exceptions import ToolError

from stacgis_common.arguments import ArgumentError, limit_argument, text_argument
from stacgis_common.embeddings import EmbeddingError, EmbeddingsClient
from stacgis_common.ranking import reciprocal_rank_fusion
from stacgis_memory import store
from stacgis_memory.settings import MemorySettings

KINDS = ("fact", "preference", "place", "note")
_SPACES = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def digest(text: str) -> str:
    """Hash of the content as a replay would send it again (case and spacing ignored)."""
    return hashlib.sha256(normalize(text).casefold().encode()).hexdigest()


class MemoryService:
    def __init__(self, settings: MemorySettings, pool: asyncpg.Pool, embedder: EmbeddingsClient) -> None:
        self.settings = settings
        self.pool = pool
        self.embedder = embedder

    @staticmethod
    def _kind(value: Any) -> str:
        kind = "fact" if value is None else value
        if kind not in KINDS:
            raise ArgumentError("kind", f"must be one of {', '.join(KINDS)}")
        return str(kind)

    @staticmethod
    def _memory_id(value: Any) -> uuid.UUID:
        try:
            return uuid.UUID(str(value))
        except ValueError:
            raise ArgumentError(
                "memory_id", "must be a memory id (a UUID) from add_memory or search_memories"
            ) from None

    async def _embed(self, text: str) -> list[float]:
        try:
            return await self.embedder.embed_one(text)
        except EmbeddingError as error:
            raise ToolError(f"the embedding server is unavailable, nothing was changed: {error}") from None

    async def add(self, user_id: str, content: Any, kind: Any) -> dict[str, Any]:
        text = text_argument(content, "content", self.settings.max_content_chars, normalize)
        clean_kind = self._kind(kind)
        vector = await self._embed(text)
        key = digest(text)
        async with self.pool.acquire() as connection, connection.transaction():
            await store.lock_user(connection, user_id)
            same = await store.by_hash(connection, user_id, key)
            if same is not None:
                row = await store.touch(connection, user_id, same["id"], clean_kind)
                return {"status": "unchanged", "memory": store.memory_json(row), "similarity": 1.0}
            closest = await store.nearest(connection, user_id, vector)
            if closest is not None and closest[1] >= self.settings.duplicate_similarity:
                previous, similarity = closest
                row = await store.replace(connection, user_id, previous["id"], clean_kind, text, key, vector)
                return {
                    "status": "updated",
                    "memory": store.memory_json(row),
                    "replaced": previous["content"],
                    "similarity": round(similarity, 4),
                }
            if await store.count(connection, user_id) >= self.settings.max_memories_per_user:
                raise ToolError(
                    f"this user already has {self.settings.max_memories_per_user} memories (the limit); "
                    "forget some with forget_memory first"
                )
            row = await store.insert(connection, user_id, clean_kind, text, key, vector)
        return {"status": "created", "memory": store.memory_json(row)}

    async def search(self, user_id: str, query: Any, limit: Any) -> dict[str, Any]:
        text = text_argument(query, "query", self.settings.max_query_chars, normalize)
        limit = limit_argument(limit, self.settings.max_limit)
        if not await store.has_any(self.pool, user_id):
            # The orchestrator searches before every run's first model call: a user with nothing
            # remembered (every new one) is answered without embedding the question.
            return {"query": text, "results": [], "count": 0}
        vector = await self._embed(text)
        candidates = max(self.settings.candidates_per_ranker, limit)
        by_vector = await store.rank_by_vector(self.pool, user_id, vector, candidates, self.settings.hnsw_ef_search)
        by_text = await store.rank_by_text(self.pool, user_id, text, candidates)
        similarity = dict(by_vector)
        fused = reciprocal_rank_fusion(
            {"semantic": [memory_id for memory_id, _ in by_vector], "full_text": by_text}, self.settings.rrf_k
        )[:limit]
        rows = await store.by_ids(self.pool, user_id, [entry.key for entry in fused])
        results = []
        for entry in fused:
            if entry.key not in rows:  # forgotten in between
                continue
            results.append({**store.memory_json(rows[entry.key]), **entry.result_fields(similarity)})
        return {"query": text, "results": results, "count": len(results)}

    async def forget(self, user_id: str, memory_id: Any) -> dict[str, Any]:
        identifier = self._memory_id(memory_id)
        row = await store.delete(self.pool, user_id, identifier)
        if row is None:
            # The same answer whether the id is unknown or another user's: nothing leaks.
            raise ArgumentError("memory_id", "you have no memory with this id")
        return {"status": "forgotten", "memory": store.memory_json(row)}

    async def recent(self, user_id: str) -> dict[str, Any]:
        rows = await store.recent(self.pool, user_id, self.settings.recent_limit)
        return {"memories": [store.memory_json(row) for row in rows], "count": len(rows)}
