"""Queries of the `memory` schema. Every function takes the verified user id and filters on it:
there is no query here that can read or change another user's memories."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from stacgis_common.pgvector import EmbeddedTable

SCHEMA = "memory"
# The table whose rows carry the `embedding` column (added in code: its size follows the settings).
EMBEDDINGS = EmbeddedTable(
    schema=SCHEMA,
    name="memories",
    text_expression="content",
    key_columns=("id",),
    migrations=Path(__file__).parent / "migrations",
    migrate_module="stacgis_memory.migrate",
    rows="memories",
)
COLUMNS = "id, kind, content, created_at, updated_at, times_seen"


def as_vector(values: Sequence[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.asarray(values, dtype=np.float32)


def memory_json(row: asyncpg.Record) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "kind": row["kind"],
        "content": row["content"],
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
        "times_seen": row["times_seen"],
    }


async def lock_user(connection: asyncpg.Connection, user_id: str) -> None:
    """Serialise writes of one user (a replayed call racing the original must not insert twice)."""
    await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('stacgis-memory:' || $1, 0))", user_id)


async def by_hash(connection: asyncpg.Connection, user_id: str, digest: str) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await connection.fetchrow(
        f"SELECT {COLUMNS} FROM {SCHEMA}.memories WHERE user_id = $1 AND content_hash = $2", user_id, digest
    )
    return row


async def nearest(
    connection: asyncpg.Connection, user_id: str, vector: Sequence[float]
) -> tuple[asyncpg.Record, float] | None:
    """The user's memory closest to `vector` and its cosine similarity (exact: a user's set is small)."""
    row = await connection.fetchrow(
        f"SELECT {COLUMNS}, embedding <=> $2 AS distance FROM {SCHEMA}.memories WHERE user_id = $1"
        " ORDER BY distance LIMIT 1",
        user_id,
        as_vector(vector),
    )
    return (row, 1.0 - float(row["distance"])) if row else None


async def has_any(pool: asyncpg.Pool, user_id: str) -> bool:
    return bool(await pool.fetchval(f"SELECT EXISTS (SELECT 1 FROM {SCHEMA}.memories WHERE user_id = $1)", user_id))


async def count(connection: asyncpg.Connection, user_id: str) -> int:
    return int(await connection.fetchval(f"SELECT count(*) FROM {SCHEMA}.memories WHERE user_id = $1", user_id))


async def insert(
    connection: asyncpg.Connection, user_id: str, kind: str, content: str, digest: str, vector: Sequence[float]
) -> asyncpg.Record:
    row: asyncpg.Record = await connection.fetchrow(
        f"INSERT INTO {SCHEMA}.memories (user_id, kind, content, content_hash, embedding)"
        f" VALUES ($1, $2, $3, $4, $5) RETURNING {COLUMNS}",
        user_id,
        kind,
        content,
        digest,
        as_vector(vector),
    )
    return row


async def replace(
    connection: asyncpg.Connection,
    user_id: str,
    memory_id: uuid.UUID,
    kind: str,
    content: str,
    digest: str,
    vector: Sequence[float],
) -> asyncpg.Record:
    row: asyncpg.Record = await connection.fetchrow(
        f"UPDATE {SCHEMA}.memories SET kind = $3, content = $4, content_hash = $5, embedding = $6,"
        f" updated_at = now(), times_seen = times_seen + 1 WHERE id = $2 AND user_id = $1 RETURNING {COLUMNS}",
        user_id,
        memory_id,
        kind,
        content,
        digest,
        as_vector(vector),
    )
    return row


async def touch(connection: asyncpg.Connection, user_id: str, memory_id: uuid.UUID, kind: str) -> asyncpg.Record:
    row: asyncpg.Record = await connection.fetchrow(
        f"UPDATE {SCHEMA}.memories SET kind = $3, updated_at = now(), times_seen = times_seen + 1"
        f" WHERE id = $2 AND user_id = $1 RETURNING {COLUMNS}",
        user_id,
        memory_id,
        kind,
    )
    return row


async def rank_by_vector(
    pool: asyncpg.Pool, user_id: str, vector: Sequence[float], limit: int, ef_search: int
) -> list[tuple[uuid.UUID, float]]:
    async with pool.acquire() as connection, connection.transaction():
        # If the planner picks the HNSW index, the user filter must not starve the result:
        # the iterative scan keeps walking the graph until enough of this user's rows pass.
        await connection.execute(f"SET LOCAL hnsw.ef_search = {max(ef_search, limit)}")
        await connection.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        rows = await connection.fetch(
            f"SELECT id, embedding <=> $2 AS distance FROM {SCHEMA}.memories WHERE user_id = $1"
            " ORDER BY embedding <=> $2 LIMIT $3",
            user_id,
            as_vector(vector),
            limit,
        )
    return [(row["id"], 1.0 - float(row["distance"])) for row in rows]


async def rank_by_text(pool: asyncpg.Pool, user_id: str, query: str, limit: int) -> list[uuid.UUID]:
    rows = await pool.fetch(
        f"SELECT id FROM {SCHEMA}.memories,"
        " CAST(replace(plainto_tsquery('english', $2)::text, ' & ', ' | ') AS tsquery) AS query"
        " WHERE user_id = $1 AND query <> ''::tsquery AND search_tsv @@ query"
        " ORDER BY ts_rank_cd(search_tsv, query) DESC, updated_at DESC LIMIT $3",
        user_id,
        query,
        limit,
    )
    return [row["id"] for row in rows]


async def by_ids(pool: asyncpg.Pool, user_id: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, asyncpg.Record]:
    rows = await pool.fetch(
        f"SELECT {COLUMNS} FROM {SCHEMA}.memories WHERE user_id = $1 AND id = ANY($2::uuid[])", user_id, list(ids)
    )
    return {row["id"]: row for row in rows}


async def delete(pool: asyncpg.Pool, user_id: str, memory_id: uuid.UUID) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await pool.fetchrow(
        f"DELETE FROM {SCHEMA}.memories WHERE id = $2 AND user_id = $1 RETURNING {COLUMNS}", user_id, memory_id
    )
    return row


async def recent(pool: asyncpg.Pool, user_id: str, limit: int) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await pool.fetch(
        f"SELECT {COLUMNS} FROM {SCHEMA}.memories WHERE user_id = $1 ORDER BY updated_at DESC, id LIMIT $2",
        user_id,
        limit,
    )
    return rows
