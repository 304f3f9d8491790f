"""Start-up shared by the pgvector tool servers (vector-, knowledge-, memory-tools), their loaders
and their migrate commands: a pool on a migrated schema with the embedding column in place, and
the embeddings client of the configured model."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

import asyncpg
from starlette.applications import Starlette

from .db import apply_migrations, create_pool
from .embeddings import EmbeddingsClient, embeddings_client
from .health import Check
from .pgvector import EmbeddedTable, ensure_embedding_column
from .settings import PgvectorSettings

S = TypeVar("S", bound=PgvectorSettings)
T = TypeVar("T")


async def migrate(pool: asyncpg.Pool, settings: PgvectorSettings, table: EmbeddedTable) -> None:
    """Apply the schema's SQL migrations, then add (or check) the embedding column."""
    await apply_migrations(pool, table.schema, table.migrations)
    await ensure_embedding_column(pool, table.target(settings))


async def open_database(settings: PgvectorSettings, table: EmbeddedTable) -> asyncpg.Pool:
    pool = await create_pool(settings.database_url, min_size=1, max_size=settings.db_pool_size)
    try:
        await migrate(pool, settings, table)
    except BaseException:
        await pool.close()
        raise
    return pool


@contextlib.asynccontextmanager
async def connect(
    settings: PgvectorSettings, table: EmbeddedTable
) -> AsyncIterator[tuple[asyncpg.Pool, EmbeddingsClient]]:
    """The migrated pool and the embeddings client, both closed on exit."""
    pool = await open_database(settings, table)
    embedder = embeddings_client(settings)
    try:
        yield pool, embedder
    finally:
        await embedder.aclose()
        await pool.close()


class PgvectorRuntime(Generic[S, T]):
    """Process-wide state of a tool server, set up by the Starlette lifespan (the MCP transport is
    per request): the service object built on the pool and the embeddings client."""

    def __init__(
        self,
        name: str,
        settings: S,
        table: EmbeddedTable,
        make_service: Callable[[S, asyncpg.Pool, EmbeddingsClient], T],
    ) -> None:
        self.name = name
        self.settings = settings
        self.table = table
        self.make_service = make_service
        self.service: T | None = None
        self.pool: asyncpg.Pool | None = None

    def get(self) -> T:
        if self.service is None:
            raise RuntimeError(f"{self.name} is not started")
        return self.service

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Starlette) -> AsyncIterator[None]:
        async with connect(self.settings, self.table) as (pool, embedder):
            self.service = self.make_service(self.settings, pool, embedder)
            self.pool = pool
            try:
                yield
            finally:
                self.service = None
                self.pool = None

    async def postgres_ready(self) -> None:
        if self.pool is None:
            raise RuntimeError(f"{self.name} is not started")
        await self.pool.fetchval("SELECT 1")

    def readiness(self) -> dict[str, Check]:
        return {"postgres": self.postgres_ready}
