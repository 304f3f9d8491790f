"""The embedding column of a pgvector table follows the settings: created at the configured size,
refused for another model, and moved to the configured model by re-embedding (real Postgres,
real embedding server)."""

import contextlib
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import pytest
from pydantic_settings import SettingsConfigDict

from stacgis_common.embeddings import embeddings_client
from stacgis_common.pgvector import (
    DROP_LOCK_TIMEOUT,
    EmbeddedTable,
    EmbeddingMismatch,
    _create_index,
    build_index,
    drop_index,
    ensure_embedding_column,
    reembed,
)
from stacgis_common.pgvector_runtime import connect, open_database
from stacgis_common.settings import PgvectorSettings

MIGRATION = """
CREATE TABLE embedding_config (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    model text NOT NULL,
    dimension integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE items (id integer PRIMARY KEY, title text NOT NULL, body text NOT NULL);
"""
ITEMS = [
    (1, "Rivers", "The Amazon carries more water to the sea than any other river."),
    (2, "Deserts", "The Atacama is one of the driest places on Earth."),
    (3, "Mountains", "Everest is the highest peak above sea level."),
]


class ExampleSettings(PgvectorSettings):
    model_config = SettingsConfigDict(env_prefix="PGVECTOR_EXAMPLE_", extra="ignore", frozen=True)


def example_table(schema: str, folder: Path) -> EmbeddedTable:
    (folder / "001_items.sql").write_text(MIGRATION)
    return EmbeddedTable(
        schema=schema,
        name="items",
        text_expression="title || ': ' || body",
        key_columns=("id",),
        migrations=folder,
        migrate_module="example.migrate",
        rows="items",
    )


@pytest.mark.asyncio
async def test_column_is_sized_from_the_settings_and_another_model_is_refused(
    pg_dsn: str, embedding_server: str, tmp_path: Path
) -> None:
    table = example_table("pgv_column", tmp_path)
    settings = ExampleSettings(
        database_url=pg_dsn, embedding_base_url=embedding_server, hnsw_m=8, hnsw_ef_construction=40
    )
    async with connect(settings, table) as (pool, embedder):
        column = await pool.fetchval(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'pgv_column.items'::regclass AND attname = 'embedding'"
        )
        assert column == "vector(384)"
        index = await pool.fetchval(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'pgv_column' AND indexname = 'items_embedding_hnsw'"
        )
        assert "USING hnsw (embedding vector_cosine_ops)" in index
        assert "m='8'" in index and "ef_construction='40'" in index
        recorded = await pool.fetchrow("SELECT model, dimension FROM pgv_column.embedding_config")
        assert (recorded["model"], recorded["dimension"]) == ("all-minilm", 384)
        assert len(await embedder.embed_one("Amazon")) == 384

    # The same settings start again; another model is refused, naming the fix, and changes nothing.
    await (await open_database(settings, table)).close()
    other = ExampleSettings(
        database_url=pg_dsn, embedding_model="nomic-embed-text", embedding_dimension=768, embedding_base_url="x"
    )
    with pytest.raises(EmbeddingMismatch) as refused:
        await open_database(other, table)
    message = str(refused.value)
    assert "vector(384)" in message and "'all-minilm'" in message
    assert "`python -m example.migrate --reembed`" in message
    async with connect(settings, table) as (pool, _):
        assert await pool.fetchval("SELECT dimension FROM pgv_column.embedding_config") == 384


@pytest.mark.asyncio
async def test_reembed_moves_every_row_to_the_configured_model(
    pg_dsn: str, embedding_server: str, tmp_path: Path
) -> None:
    table = example_table("pgv_reembed", tmp_path)
    tiny = ExampleSettings(database_url=pg_dsn, embedding_model="tiny", embedding_dimension=3)
    configured = ExampleSettings(database_url=pg_dsn, embedding_base_url=embedding_server)
    pool = await open_database(tiny, table)
    client = embeddings_client(configured)
    try:
        await pool.executemany(
            "INSERT INTO pgv_reembed.items (id, title, body, embedding) VALUES ($1, $2, $3, $4)",
            [(*item, [0.1, 0.2, 0.3]) for item in ITEMS],
        )
        assert await reembed(pool, table.target(configured), client) == len(ITEMS)
        # Each row now holds the configured model's vector of its text expression.
        expected = await client.embed([f"{title}: {body}" for _, title, body in ITEMS])
        stored = await pool.fetch("SELECT id, embedding FROM pgv_reembed.items ORDER BY id")
        for row, vector in zip(stored, expected, strict=True):
            assert np.allclose(row["embedding"].to_numpy(), vector, atol=1e-5)
        recorded = await pool.fetchrow("SELECT model, dimension FROM pgv_reembed.embedding_config")
        assert (recorded["model"], recorded["dimension"]) == ("all-minilm", 384)
        # The configured settings are accepted now, and the rebuilt index answers by meaning.
        await ensure_embedding_column(pool, table.target(configured))
        query = await client.embed_one("which river has the largest flow of water?")
        nearest = await pool.fetchval("SELECT id FROM pgv_reembed.items ORDER BY embedding <=> $1 LIMIT 1", query)
        assert nearest == 1
    finally:
        await client.aclose()
        await pool.close()


@pytest.mark.asyncio
async def test_drop_index_gives_way_to_readers_and_build_index_restores_it(
    pg_dsn: str, embedding_server: str, tmp_path: Path
) -> None:
    table = example_table("pgv_bulk", tmp_path)
    settings = ExampleSettings(
        database_url=pg_dsn, embedding_base_url=embedding_server, hnsw_m=8, hnsw_ef_construction=40
    )
    index = f"pgv_bulk.{table.index_name}"
    async with connect(settings, table) as (pool, _):
        # A reader's open transaction holds the table: the drop waits for it only so long, then gives up.
        reader = await asyncpg.connect(pg_dsn)
        try:
            async with reader.transaction():
                await reader.fetch("SELECT id FROM pgv_bulk.items")
                started = time.monotonic()
                assert not await drop_index(pool, table)
                waited = time.monotonic() - started
        finally:
            await reader.close()
        # It returned while the reader still held the table, so it gave up rather than waited the reader out.
        assert waited >= float(DROP_LOCK_TIMEOUT.removesuffix("s"))
        assert await pool.fetchval("SELECT to_regclass($1)", index) is not None

        assert await drop_index(pool, table)
        assert await pool.fetchval("SELECT to_regclass($1)", index) is None
        assert await build_index(pool, table.target(settings))
        definition = await pool.fetchval("SELECT pg_get_indexdef($1::regclass)", index)
        assert "USING hnsw (embedding vector_cosine_ops)" in definition and "m='8'" in definition
        assert not await build_index(pool, table.target(settings))


class SmallSharedMemory:
    """A connection whose first CREATE INDEX fails as a parallel HNSW build does when the shared memory
    segment of maintenance_work_mem does not fit in /dev/shm."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def transaction(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    async def execute(self, statement: str, timeout: float | None = None) -> str:
        self.statements.append(statement)
        if statement.startswith("CREATE INDEX") and sum(s.startswith("CREATE INDEX") for s in self.statements) == 1:
            raise asyncpg.DiskFullError('could not resize shared memory segment "/PostgreSQL.1" to 536870912 bytes')
        return "OK"


@pytest.mark.asyncio
async def test_index_build_falls_back_to_one_process_when_shared_memory_is_short(tmp_path: Path) -> None:
    connection: Any = SmallSharedMemory()
    await _create_index(connection, example_table("pgv_shm", tmp_path).target(ExampleSettings()))
    creates = [i for i, statement in enumerate(connection.statements) if statement.startswith("CREATE INDEX")]
    assert len(creates) == 2
    assert "SET LOCAL max_parallel_maintenance_workers = 0" in connection.statements[creates[0] : creates[1]]
