"""The embedding column of a pgvector table follows the settings: created at the configured size,
refused for another model, and moved to the configured model by re-embedding (real Postgres,
real embedding server)."""

from pathlib import Path

import numpy as np
import pytest
from pydantic_settings import SettingsConfigDict

from stacgis_common.embeddings import embeddings_client
from stacgis_common.pgvector import EmbeddedTable, EmbeddingMismatch, ensure_embedding_column, reembed
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
