"""The `embedding` column and its HNSW index of a pgvector table, sized from the settings.

Used by the services that store embedded text (vector-, knowledge- and memory-tools). Their
numbered SQL migrations are static, but the vector dimension follows the configured embedding
model, so this module adds the column and index in code (once, under an advisory lock, so
replicas starting together agree). The model and dimension the stored vectors come from are
recorded in `<schema>.embedding_config` (a table each service's first migration creates); a
server configured for another model refuses to start instead of comparing vectors from
different spaces. `reembed` moves the stored rows to the configured model (the migrate
command's `--reembed`).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import asyncpg

from .settings import PgvectorSettings

log = logging.getLogger(__name__)

REEMBED_BATCH = 256
# pgvector builds the HNSW graph in memory while it fits in maintenance_work_mem (64 MB by default),
# about twice as fast as on disk: the 37 500 place vectors of vector-tools (384 dimensions) fit in
# 128 MB, so this leaves room for 768-dimension models.
INDEX_BUILD_MEMORY = "512MB"
# The longest a DROP INDEX waits for running queries; new ones queue behind it meanwhile.
DROP_LOCK_TIMEOUT = "1s"


class Embedder(Protocol):
    async def embed(self, texts: list[str]) -> list[list[float]]: ...


class EmbeddingMismatch(RuntimeError):
    """Stored vectors come from another model or dimension than the settings ask for."""


@dataclass(frozen=True)
class EmbeddedTable:
    """What a service declares about its table whose rows carry an `embedding` column."""

    schema: str
    name: str
    # SQL expression (over the table's columns) giving the text each row's vector embeds.
    text_expression: str
    # Columns identifying a row, used to write re-embedded vectors back.
    key_columns: tuple[str, ...]
    # The schema's numbered SQL migrations (shipped as package data).
    migrations: Path
    # The service's migrate module, e.g. "stacgis_vector.migrate"; mismatch errors name it as the fix.
    migrate_module: str
    # What one row is, in the plural ("features"), for the migrate command's output.
    rows: str

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def index_name(self) -> str:
        return f"{self.name}_embedding_hnsw"

    @property
    def migrate_command(self) -> str:
        return f"python -m {self.migrate_module}"

    def lock_key(self, purpose: str = "") -> int:
        name = f"stacgis-embedding:{self.qualified}" + (f":{purpose}" if purpose else "")
        digest = hashlib.sha256(name.encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def target(self, settings: PgvectorSettings) -> EmbeddingTarget:
        """This table in the embedding space and with the index the settings ask for."""
        return EmbeddingTarget(
            self, settings.embedding_model, settings.embedding_dimension, settings.hnsw_m, settings.hnsw_ef_construction
        )


@dataclass(frozen=True)
class EmbeddingTarget:
    table: EmbeddedTable
    model: str
    dimension: int
    # HNSW build parameters; they apply when the index is (re)built, not to an existing index.
    hnsw_m: int = 32
    hnsw_ef_construction: int = 128


async def _column_type(connection: asyncpg.Connection, target: EmbeddingTarget) -> str | None:
    value = await connection.fetchval(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
        " WHERE attrelid = $1::regclass AND attname = 'embedding' AND NOT attisdropped",
        target.table.qualified,
    )
    return str(value) if value is not None else None


async def _add_column(connection: asyncpg.Connection, target: EmbeddingTarget) -> None:
    await connection.execute(f"ALTER TABLE {target.table.qualified} ADD COLUMN embedding vector({target.dimension})")
    # Cosine distance: the embedding servers return unit vectors, and cosine is what the
    # near-duplicate threshold and the similarity figures in results are expressed in.
    await _create_index(connection, target)


async def _create_index(connection: asyncpg.Connection, target: EmbeddingTarget) -> None:
    table = target.table
    statement = (
        f"CREATE INDEX IF NOT EXISTS {table.index_name} ON {table.qualified} USING hnsw (embedding vector_cosine_ops)"
        f" WITH (m = {int(target.hnsw_m)}, ef_construction = {int(target.hnsw_ef_construction)})"
    )
    async with connection.transaction():
        await connection.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
        try:
            async with connection.transaction():
                await connection.execute(statement, timeout=3600)
        except (asyncpg.DiskFullError, asyncpg.OutOfMemoryError):
            # A parallel build holds the graph in one shared memory segment of maintenance_work_mem, more
            # than a container's /dev/shm (64 MB by default) may hold: build it in this process alone.
            await connection.execute("SET LOCAL max_parallel_maintenance_workers = 0")
            await connection.execute(statement, timeout=3600)


async def drop_index(pool: asyncpg.Pool, table: EmbeddedTable) -> bool:
    """Drop the HNSW index ahead of a bulk load, which `build_index` then builds in one pass (inserting
    rows one by one into the graph costs several times more). Queries keep working meanwhile, by an
    exact scan. Readers queue behind the drop's lock, so it waits for them at most DROP_LOCK_TIMEOUT:
    False when they held the table longer and the index stays."""
    try:
        async with pool.acquire() as connection, connection.transaction():
            await connection.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
            await connection.execute(f"DROP INDEX IF EXISTS {table.schema}.{table.index_name}")
    except asyncpg.LockNotAvailableError:
        return False
    return True


async def build_index(pool: asyncpg.Pool, target: EmbeddingTarget) -> bool:
    """Build the HNSW index if it is missing (after `drop_index`, or a load cut short); True when built.
    The build locks out writers only: queries go on (by an exact scan until it commits)."""
    table = target.table
    async with pool.acquire() as connection, connection.transaction():
        # Not the column's lock: a server starting meanwhile checks the column and must not wait for the build.
        await connection.execute("SELECT pg_advisory_xact_lock($1)", table.lock_key("index"))
        if await connection.fetchval("SELECT to_regclass($1)", f"{table.schema}.{table.index_name}") is not None:
            return False
        await _create_index(connection, target)
    return True


async def _record(connection: asyncpg.Connection, target: EmbeddingTarget) -> None:
    await connection.execute(
        f"INSERT INTO {target.table.schema}.embedding_config (id, model, dimension) VALUES (true, $1, $2)"
        " ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, dimension = EXCLUDED.dimension,"
        " updated_at = now()",
        target.model,
        target.dimension,
    )


async def ensure_embedding_column(pool: asyncpg.Pool, target: EmbeddingTarget) -> None:
    table = target.table
    async with pool.acquire() as connection, connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", table.lock_key())
        column = await _column_type(connection, target)
        if column is None:
            await _add_column(connection, target)
            await _record(connection, target)
            log.info("created embedding column", extra={"table": table.qualified, "dimension": target.dimension})
            return
        stored = await connection.fetchrow(f"SELECT model, dimension FROM {table.schema}.embedding_config")
        stored_model = stored["model"] if stored else None
        if column != f"vector({target.dimension})" or stored_model != target.model:
            raise EmbeddingMismatch(
                f"{table.qualified} holds {column} embeddings from model {stored_model!r}, but the settings "
                f"ask for model {target.model!r} with {target.dimension} dimensions; run "
                f"`{table.migrate_command} --reembed` to re-embed the stored texts with the configured model"
            )
    # The pool's connections may predate the vector type's codec registration.
    await pool.expire_connections()


async def reembed(pool: asyncpg.Pool, target: EmbeddingTarget, embedder: Embedder) -> int:
    """Rebuild the column for the configured model in one transaction; returns rows re-embedded."""
    table = target.table
    keys = ", ".join(table.key_columns)
    async with pool.acquire() as connection, connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", table.lock_key())
        rows = await connection.fetch(
            f"SELECT {keys}, {table.text_expression} AS text FROM {table.qualified} ORDER BY {keys}"
        )
        vectors: list[list[float]] = []
        for start in range(0, len(rows), REEMBED_BATCH):
            vectors.extend(await embedder.embed([row["text"] for row in rows[start : start + REEMBED_BATCH]]))
        await connection.execute(f"DROP INDEX IF EXISTS {table.schema}.{table.index_name}")
        await connection.execute(f"ALTER TABLE {table.qualified} DROP COLUMN IF EXISTS embedding")
        await connection.execute(f"ALTER TABLE {table.qualified} ADD COLUMN embedding vector({target.dimension})")
        condition = " AND ".join(f"{column} = ${index + 2}" for index, column in enumerate(table.key_columns))
        await connection.executemany(
            f"UPDATE {table.qualified} SET embedding = $1::real[]::vector WHERE {condition}",
            [
                (vector, *(row[column] for column in table.key_columns))
                for row, vector in zip(rows, vectors, strict=True)
            ],
        )
        await _create_index(connection, target)
        await _record(connection, target)
    await pool.expire_connections()
    return len(rows)
