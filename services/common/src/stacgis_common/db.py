"""asyncpg pool with the pgvector codec, and a migration runner of numbered SQL files per schema."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from pathlib import Path

import asyncpg
from pgvector.asyncpg import register_vector

log = logging.getLogger(__name__)

MIGRATION_NAME = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")
IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


async def _init_connection(connection: asyncpg.Connection) -> None:
    # The extension is created by the first migration; connections opened before it lack the type.
    with contextlib.suppress(ValueError):
        await register_vector(connection)


async def create_pool(dsn: str, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, command_timeout=60
    )
    assert pool is not None
    return pool


def migration_files(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name} must be named NNN_name.sql")
        found.append((int(match.group(1)), path))
    versions = [version for version, _ in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"duplicate migration numbers in {directory}")
    return found


async def _up_to_date(pool: asyncpg.Pool, schema: str, files: list[tuple[int, Path]]) -> bool:
    """Whether every file is applied, found with reads only: the services connect as an application
    role that may not create anything (the owner role applies migrations), and start on a current schema."""
    if await pool.fetchval("SELECT to_regclass($1)", f"{schema}.schema_migrations") is None:
        return False
    try:
        rows = await pool.fetch(f"SELECT version, name, checksum FROM {schema}.schema_migrations")
    except asyncpg.InsufficientPrivilegeError:
        return False
    done = {row["version"]: row for row in rows}
    for version, path in files:
        if version not in done:
            return False
        if done[version]["checksum"] != hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest():
            log.warning("migration %s changed after it was applied", path.name)
    return True


async def apply_migrations(pool: asyncpg.Pool, schema: str, directory: Path) -> list[str]:
    """Apply the not yet applied files in order; returns the names applied.

    A transaction-scoped advisory lock per schema serialises replicas starting together;
    each file runs in the same transaction as its bookkeeping row, so a failure leaves nothing half-done.
    A schema already up to date is only read, so a role without DDL rights starts on it.
    """
    if not IDENTIFIER.match(schema):
        raise ValueError(f"invalid schema name {schema!r}")
    files = migration_files(directory)
    if await _up_to_date(pool, schema, files):
        return []
    lock_key = int.from_bytes(hashlib.sha256(f"stacgis-migrations:{schema}".encode()).digest()[:8], "big", signed=True)
    applied: list[str] = []
    async with pool.acquire() as connection, connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", lock_key)
        await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        rows = await connection.fetch(f"SELECT version, name, checksum FROM {schema}.schema_migrations")
        done = {row["version"]: row for row in rows}
        for version, path in files:
            sql = path.read_text(encoding="utf-8")
            checksum = hashlib.sha256(sql.encode()).hexdigest()
            if version in done:
                if done[version]["checksum"] != checksum:
                    log.warning("migration %s changed after it was applied", path.name)
                continue
            await connection.execute(f"SET LOCAL search_path TO {schema}, public")
            await connection.execute(sql)
            await connection.execute(
                f"INSERT INTO {schema}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                version,
                path.name,
                checksum,
            )
            applied.append(path.name)
    # Connections opened before the vector extension existed lack its codec: replace them.
    await pool.expire_connections()
    if applied:
        log.info("applied migrations", extra={"schema": schema, "migrations": applied})
    return applied


async def migrate_dsn(dsn: str, schema: str, directory: Path) -> list[str]:
    """One-shot migration run (the chart's migration Job and `make up` use it)."""
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        return await apply_migrations(pool, schema, directory)
    finally:
        await pool.close()
