"""Queries of the `knowledge` schema: documents, chunks and the two search rankers.

A document's `owner` is the user who added it (private to them) or NULL (shared, added by an
operator). Every read that serves a user is limited to that user's own and the shared rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from stacgis_common.pgvector import EmbeddedTable
from stacgis_knowledge.chunking import Chunk

SCHEMA = "knowledge"
# The table whose rows carry the `embedding` column (added in code: its size follows the settings).
EMBEDDINGS = EmbeddedTable(
    schema=SCHEMA,
    name="chunks",
    text_expression="heading || chr(10) || content",
    key_columns=("id",),
    migrations=Path(__file__).parent / "migrations",
    migrate_module="stacgis_knowledge.migrate",
    rows="chunks",
)


@dataclass(frozen=True)
class NewDocument:
    title: str
    source: str | None
    tags: list[str]
    content: str
    content_hash: str
    origin: str
    added_by: str | None
    # None: shared with every user.
    owner: str | None


@dataclass(frozen=True)
class Stored:
    document_id: uuid.UUID
    chunks_stored: int
    chunks_already_known: int


# Rows a user may read: their own and the shared ones.
VISIBLE = "(owner IS NULL OR owner = $%d)"


async def document_by_hash(
    connection: asyncpg.Connection | asyncpg.Pool, digest: str, owner: str | None
) -> asyncpg.Record | None:
    """The document with this content owned by `owner` (None: the shared one)."""
    row: asyncpg.Record | None = await connection.fetchrow(
        f"SELECT id, title, source, origin, (SELECT count(*) FROM {SCHEMA}.chunks c WHERE c.document_id = d.id)"
        f" AS chunk_count FROM {SCHEMA}.documents d WHERE content_hash = $1 AND coalesce(owner, '') = $2",
        digest,
        owner or "",
    )
    return row


async def ingested_by_source(pool: asyncpg.Pool, source: str) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await pool.fetchrow(
        f"SELECT id, content_hash FROM {SCHEMA}.documents WHERE origin = 'ingest' AND owner IS NULL AND source = $1",
        source,
    )
    return row


async def insert_document(
    connection: asyncpg.Connection, document: NewDocument, chunks: Sequence[Chunk], vectors: Sequence[list[float]]
) -> Stored:
    """Insert a document and those of its chunks its owner cannot already find (inside the caller's
    transaction): a passage of a shared document is not stored again for a user, nor one of another
    document of the same owner."""
    document_id: uuid.UUID = await connection.fetchval(
        f"INSERT INTO {SCHEMA}.documents (title, source, tags, content, content_hash, origin, added_by, owner)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        document.title,
        document.source,
        document.tags,
        document.content,
        document.content_hash,
        document.origin,
        document.added_by,
        document.owner,
    )
    stored = 0
    for ordinal, (chunk, vector) in enumerate(zip(chunks, vectors, strict=True)):
        inserted = await connection.fetchval(
            f"INSERT INTO {SCHEMA}.chunks (document_id, ordinal, heading, content, content_hash, token_count,"
            " embedding, owner) SELECT $1::uuid, $2::integer, $3::text, $4::text, $5::text, $6::integer,"
            " $7::vector, $8::text"
            f" WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.chunks WHERE content_hash = $5 AND {VISIBLE % 8})"
            " ON CONFLICT ((coalesce(owner, '')), content_hash) DO NOTHING RETURNING id",
            document_id,
            ordinal,
            chunk.heading,
            chunk.content,
            chunk.content_hash(),
            chunk.tokens,
            np.asarray(vector, dtype=np.float32),
            document.owner,
        )
        stored += inserted is not None
    return Stored(document_id, stored, len(chunks) - stored)


async def delete_document(connection: asyncpg.Connection, document_id: uuid.UUID) -> None:
    await connection.execute(f"DELETE FROM {SCHEMA}.documents WHERE id = $1", document_id)


async def ingested_sources(pool: asyncpg.Pool) -> dict[str, uuid.UUID]:
    rows = await pool.fetch(f"SELECT source, id FROM {SCHEMA}.documents WHERE origin = 'ingest'")
    return {row["source"]: row["id"] for row in rows}


async def rank_by_vector(
    pool: asyncpg.Pool, user_id: str, vector: Sequence[float], limit: int, ef_search: int
) -> list[tuple[int, float]]:
    async with pool.acquire() as connection, connection.transaction():
        await connection.execute(f"SET LOCAL hnsw.ef_search = {max(ef_search, limit)}")
        # Other users' chunks are filtered out after the index: keep walking until enough pass.
        await connection.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        rows = await connection.fetch(
            f"SELECT id, embedding <=> $1 AS distance FROM {SCHEMA}.chunks WHERE {VISIBLE % 3}"
            " ORDER BY embedding <=> $1 LIMIT $2",
            np.asarray(vector, dtype=np.float32),
            limit,
            user_id,
        )
    return [(row["id"], 1.0 - float(row["distance"])) for row in rows]


async def rank_by_text(pool: asyncpg.Pool, user_id: str, query: str, limit: int) -> list[int]:
    """Chunks sharing any (stemmed, non-stop) word with the query, ranked by cover density.

    Any-word matching suits questions: "how is greenness measured" should still reach a
    passage that never says "how" or "measured".
    """
    rows = await pool.fetch(
        f"SELECT id FROM {SCHEMA}.chunks,"
        " CAST(replace(plainto_tsquery('english', $1)::text, ' & ', ' | ') AS tsquery) AS query"
        f" WHERE {VISIBLE % 3} AND query <> ''::tsquery AND search_tsv @@ query"
        " ORDER BY ts_rank_cd(search_tsv, query) DESC, id LIMIT $2",
        query,
        limit,
        user_id,
    )
    return [row["id"] for row in rows]


async def chunk_details(pool: asyncpg.Pool, user_id: str, chunk_ids: Sequence[int]) -> dict[int, asyncpg.Record]:
    rows = await pool.fetch(
        f"SELECT c.id, c.ordinal, c.heading, c.content, d.id AS document_id, d.title, d.source, d.tags,"
        f" d.owner IS NULL AS shared,"
        f" (SELECT count(*) FROM {SCHEMA}.chunks n WHERE n.document_id = d.id) AS chunk_count"
        f" FROM {SCHEMA}.chunks c JOIN {SCHEMA}.documents d ON d.id = c.document_id"
        " WHERE c.id = ANY($1::bigint[]) AND (d.owner IS NULL OR d.owner = $2)",
        list(chunk_ids),
        user_id,
    )
    return {row["id"]: row for row in rows}


async def list_documents(pool: asyncpg.Pool, user_id: str) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        f"SELECT d.id, d.title, d.source, d.tags, d.origin, d.updated_at, d.owner IS NULL AS shared,"
        f" (SELECT count(*) FROM {SCHEMA}.chunks c WHERE c.document_id = d.id) AS chunks"
        f" FROM {SCHEMA}.documents d WHERE {VISIBLE % 1} ORDER BY d.title",
        user_id,
    )
    return [
        {
            "document_id": str(row["id"]),
            "title": row["title"],
            "source": row["source"],
            "tags": list(row["tags"]),
            "origin": row["origin"],
            "shared": row["shared"],
            "chunks": row["chunks"],
            "updated_at": row["updated_at"].isoformat(),
        }
        for row in rows
    ]
