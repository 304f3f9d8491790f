"""Start-up shared by the server, the loader and the migrate command."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from stacgis_common.db import apply_migrations, create_pool
from stacgis_common.embeddings import EmbeddingsClient
from stacgis_knowledge.embedding_column import EmbeddingTarget, ensure_embedding_column
from stacgis_knowledge.settings import KnowledgeSettings
from stacgis_knowledge.store import SCHEMA

MIGRATIONS = Path(__file__).parent / "migrations"


def embedding_target(settings: KnowledgeSettings) -> EmbeddingTarget:
    return EmbeddingTarget(
        schema=SCHEMA,
        table="chunks",
        text_expression="heading || chr(10) || content",
        key_columns=("id",),
        model=settings.embedding_model,
        dimension=settings.embedding_dimension,
        hnsw_m=settings.hnsw_m,
        hnsw_ef_construction=settings.hnsw_ef_construction,
        migrate_command="python -m stacgis_knowledge.migrate",
    )


def embeddings_client(settings: KnowledgeSettings) -> EmbeddingsClient:
    api_key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
    return EmbeddingsClient(
        settings.embedding_provider,
        settings.embedding_base_url,
        settings.embedding_model,
        settings.embedding_dimension,
        batch_size=settings.embedding_batch_size,
        api_key=api_key,
    )


async def migrate(pool: asyncpg.Pool, settings: KnowledgeSettings) -> None:
    await apply_migrations(pool, SCHEMA, MIGRATIONS)
    await ensure_embedding_column(pool, embedding_target(settings))


async def open_database(settings: KnowledgeSettings) -> asyncpg.Pool:
    pool = await create_pool(settings.database_url, min_size=1, max_size=settings.db_pool_size)
    try:
        await migrate(pool, settings)
    except BaseException:
        await pool.close()
        raise
    return pool
