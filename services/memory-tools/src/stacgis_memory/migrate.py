"""`python -m stacgis_memory.migrate [--reembed]`: apply the schema (the chart's migration Job).

--reembed re-embeds every stored memory with the configured model, after changing
MEMORY_EMBEDDING_MODEL or MEMORY_EMBEDDING_DIMENSION.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from stacgis_common.db import apply_migrations, create_pool
from stacgis_common.settings import load_settings
from stacgis_memory.embedding_column import EmbeddingMismatch, reembed
from stacgis_memory.runtime import MIGRATIONS, embedding_target, embeddings_client, migrate
from stacgis_memory.settings import MemorySettings
from stacgis_memory.store import SCHEMA


async def run(reembed_rows: bool) -> int:
    settings = load_settings(MemorySettings)
    pool = await create_pool(settings.database_url, min_size=1, max_size=2)
    try:
        if reembed_rows:
            await apply_migrations(pool, SCHEMA, MIGRATIONS)
            client = embeddings_client(settings)
            try:
                count = await reembed(pool, embedding_target(settings), client)
            finally:
                await client.aclose()
            print(f"re-embedded {count} memories with {settings.embedding_model}")
        else:
            await migrate(pool, settings)
            print(f"schema {SCHEMA} is up to date")
    except EmbeddingMismatch as error:
        print(str(error), file=sys.stderr)
        return 2
    finally:
        await pool.close()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stacgis_memory.migrate", description=__doc__)
    parser.add_argument("--reembed", action="store_true", help="re-embed stored memories with the configured model")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(run(arguments.reembed)))


if __name__ == "__main__":
    main()
