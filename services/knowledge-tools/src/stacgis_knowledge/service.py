"""The operations behind the knowledge tools and the ingest command, independent of MCP.

Writes embed first and store in one transaction afterwards: a failed call stores nothing.
A user's additions are private to them unless the user is one of `KNOWLEDGE_ADMIN_USERS`;
the ingest command adds shared documents. Search reads a user's own and the shared documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import asyncpg
from mcp.server.mcpserver.exceptions import ToolError

from stacgis_common.arguments import ArgumentError, limit_argument, text_argument
from stacgis_common.embeddings import EmbeddingError, EmbeddingsClient
from stacgis_common.ranking import reciprocal_rank_fusion
from stacgis_knowledge import store
from stacgis_knowledge.chunking import Chunk, chunk_markdown, content_hash, normalize_content
from stacgis_knowledge.settings import KnowledgeSettings

TAG = re.compile(r"^[\w][\w .:/+-]*$")


@dataclass(frozen=True)
class IngestOutcome:
    status: str  # "added" | "replaced" | "unchanged" | "duplicate"
    document_id: str
    chunks: int


def duplicate(document: asyncpg.Record, note: str) -> dict[str, Any]:
    """The add_knowledge answer for content already stored as `document`."""
    return {
        "status": "duplicate",
        "document_id": str(document["id"]),
        "title": document["title"],
        "chunks": document["chunk_count"],
        "note": note,
    }


class KnowledgeService:
    def __init__(self, settings: KnowledgeSettings, pool: asyncpg.Pool, embedder: EmbeddingsClient) -> None:
        self.settings = settings
        self.pool = pool
        self.embedder = embedder

    # -- validation --------------------------------------------------------------------------

    def _tags(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or len(value) > self.settings.max_tags:
            raise ArgumentError("tags", f"must be a list of at most {self.settings.max_tags} strings")
        tags: dict[str, None] = {}
        for tag in value:
            if not isinstance(tag, str) or not TAG.match(tag.strip()) or len(tag.strip()) > self.settings.max_tag_chars:
                raise ArgumentError(
                    "tags",
                    f"each tag must be 1 to {self.settings.max_tag_chars} letters, digits, spaces or .:/+-_ "
                    f"(got {tag!r})",
                )
            tags.setdefault(tag.strip().lower(), None)
        return list(tags)

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        try:
            return await self.embedder.embed(texts)
        except EmbeddingError as error:
            raise ToolError(f"the embedding server is unavailable, nothing was stored: {error}") from None

    def _chunks(self, title: str, content: str) -> list[Chunk]:
        return chunk_markdown(content, title, self.settings.chunk_max_tokens)

    # -- tools -------------------------------------------------------------------------------

    async def search(self, query: Any, limit: Any, user_id: str) -> dict[str, Any]:
        text = text_argument(query, "query", self.settings.max_query_chars)
        limit = limit_argument(limit, self.settings.max_limit)
        vector = (await self._embed([text]))[0]
        candidates = max(self.settings.candidates_per_ranker, limit)
        by_vector = await store.rank_by_vector(self.pool, user_id, vector, candidates, self.settings.hnsw_ef_search)
        by_text = await store.rank_by_text(self.pool, user_id, text, candidates)
        similarity = dict(by_vector)
        fused = reciprocal_rank_fusion(
            {"semantic": [chunk_id for chunk_id, _ in by_vector], "full_text": by_text}, self.settings.rrf_k
        )[:limit]
        details = await store.chunk_details(self.pool, user_id, [entry.key for entry in fused])
        hits = []
        for entry in fused:
            row = details[entry.key]
            hit: dict[str, Any] = {
                "title": row["title"],
                "source": row["source"],
                "heading": row["heading"],
                "chunk": row["content"],
                "chunk_index": row["ordinal"],
                "chunk_count": row["chunk_count"],
                "document_id": str(row["document_id"]),
                "tags": list(row["tags"]),
                "shared": row["shared"],
                **entry.result_fields(similarity),
            }
            hits.append(hit)
        return {"query": text, "results": hits, "count": len(hits)}

    async def add(self, title: Any, content: Any, source: Any, tags: Any, user_id: str) -> dict[str, Any]:
        clean_title = text_argument(title, "title", self.settings.max_title_chars)
        clean_content = normalize_content(text_argument(content, "content", self.settings.max_content_chars))
        clean_source = None if source is None else text_argument(source, "source", self.settings.max_source_chars)
        clean_tags = self._tags(tags)
        digest = content_hash(clean_content)
        owner = None if user_id in self.settings.admin_users else user_id
        existing = await store.document_by_hash(self.pool, digest, None)
        if existing is None and owner is not None:
            existing = await store.document_by_hash(self.pool, digest, owner)
        if existing is not None:
            return duplicate(existing, "the same content is already in the knowledge base; nothing was added")
        chunks = self._chunks(clean_title, clean_content)
        vectors = await self._embed([chunk.embedding_text() for chunk in chunks])
        document = store.NewDocument(
            clean_title, clean_source, clean_tags, clean_content, digest, "tool", user_id, owner
        )
        try:
            async with self.pool.acquire() as connection, connection.transaction():
                stored = await store.insert_document(connection, document, chunks, vectors)
        except asyncpg.UniqueViolationError:
            # The same content added concurrently: the other call stored it.
            raced = await store.document_by_hash(self.pool, digest, owner)
            if raced is None:
                raise
            return duplicate(raced, "the same content was added at the same time")
        return {
            "status": "added",
            "document_id": str(stored.document_id),
            "title": clean_title,
            "shared": owner is None,
            "chunks": stored.chunks_stored,
            "chunks_already_known": stored.chunks_already_known,
        }

    async def list_documents(self, user_id: str) -> dict[str, Any]:
        documents = await store.list_documents(self.pool, user_id)
        return {"documents": documents, "count": len(documents)}

    # -- ingest ------------------------------------------------------------------------------

    async def ingest(self, title: str, content: str, source: str, tags: list[str]) -> IngestOutcome:
        """Add or replace the document ingested from `source`; unchanged content is skipped."""
        clean = normalize_content(content)
        digest = content_hash(clean)
        previous = await store.ingested_by_source(self.pool, source)
        if previous is not None and previous["content_hash"] == digest:
            return IngestOutcome("unchanged", str(previous["id"]), 0)
        same = await store.document_by_hash(self.pool, digest, None)
        if same is not None:
            return IngestOutcome("duplicate", str(same["id"]), 0)
        chunks = self._chunks(title, clean)
        vectors = await self.embedder.embed([chunk.embedding_text() for chunk in chunks])
        document = store.NewDocument(title, source, tags, clean, digest, "ingest", None, None)
        async with self.pool.acquire() as connection, connection.transaction():
            if previous is not None:
                await store.delete_document(connection, previous["id"])
            stored = await store.insert_document(connection, document, chunks, vectors)
        return IngestOutcome("replaced" if previous else "added", str(stored.document_id), stored.chunks_stored)

    async def prune(self, prefix: str, keep_sources: set[str]) -> list[str]:
        """Remove documents ingested from under `prefix` whose file is gone; returns their sources."""
        removed = []
        for source, document_id in (await store.ingested_sources(self.pool)).items():
            if source.startswith(prefix) and source not in keep_sources:
                async with self.pool.acquire() as connection:
                    await store.delete_document(connection, document_id)
                removed.append(source)
        return removed
