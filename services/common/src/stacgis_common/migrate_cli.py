"""The migrate command of a pgvector tool server, `python -m stacgis_<pkg>.migrate [--reembed]`
(the chart's migration Job): applies the schema and adds or checks the embedding column.

--reembed re-embeds every stored row with the configured model, after the model or dimension
setting changed; without it a changed model is refused with a message naming --reembed (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from .db import apply_migrations, create_pool
from .embeddings import embeddings_client
from .pgvector import EmbeddedTable, EmbeddingMismatch, reembed
from .pgvector_runtime import migrate
from .settings import PgvectorSettings, load_settings


async def run(settings_cls: type[PgvectorSettings], table: EmbeddedTable, reembed_rows: bool) -> int:
    settings = load_settings(settings_cls)
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    try:
        if reembed_rows:
            await apply_migrations(pool, table.schema, table.migrations)
            client = embeddings_client(settings)
            try:
                count = await reembed(pool, table.target(settings), client)
            finally:
                await client.aclose()
            print(f"re-embedded {count} {table.rows} with {settings.embedding_model}")
        else:
            await migrate(pool, settings, table)
            print(f"schema {table.schema} is up to date")
    except EmbeddingMismatch as error:
        print(str(error), file=sys.stderr)
        return 2
    finally:
        await pool.close()
    return 0


def describe(settings_cls: type[PgvectorSettings], table: EmbeddedTable) -> str:
    prefix = str(settings_cls.model_config.get("env_prefix", "")).upper()
    return (
        f"`{table.migrate_command} [--reembed]`: apply the schema (the chart's migration Job). "
        f"--reembed re-embeds all stored {table.rows} with the configured model, after changing "
        f"{prefix}EMBEDDING_MODEL or {prefix}EMBEDDING_DIMENSION."
    )


def main(settings_cls: type[PgvectorSettings], table: EmbeddedTable) -> None:
    """Parse the command line (`--reembed`) and exit with the command's status."""
    parser = argparse.ArgumentParser(prog=table.migrate_command, description=describe(settings_cls, table))
    parser.add_argument(
        "--reembed", action="store_true", help=f"re-embed stored {table.rows} with the configured model"
    )
    arguments = parser.parse_args()
    sys.exit(asyncio.run(run(settings_cls, table, arguments.reembed)))
