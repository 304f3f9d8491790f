"""A load swaps a dataset's features at once while readers query it, and search finds afterwards what it
found before, also when the load dropped the vector index and built it again after its copy."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import asyncpg
import pytest

from stacgis_common.db import create_pool
from stacgis_common.pgvector import EmbeddingTarget
from stacgis_common.testing import RunningService, call_tool
from stacgis_vector import store
from stacgis_vector.settings import VectorSettings

# The tests' load keeps fewer rows in the other datasets than this one holds, so replacing it takes
# bulk_load's path that drops the vector index and builds it after the copy.
DATASET = "us-counties"
# The replacement set: every id with this suffix, so a reader can tell the two sets apart.
MARK = "~reloaded"
INDEX = f"{store.SCHEMA}.{store.EMBEDDINGS.index_name}"
# A reader waiting on a lock that long would be blocked, not slow.
READER_LIMIT_SECONDS = 2.0
DATASET_COLUMNS = (
    "id, title, description, geometry_type, extent, license, attribution, sources::text AS sources,"
    " summary_properties, source_checksum"
)


async def dataset_state(pool: asyncpg.Pool) -> tuple[int, int, int]:
    """(stated feature count, rows, rows of the replacement set), read in one snapshot."""
    row = await pool.fetchrow(
        f"SELECT d.feature_count, count(f.id) AS total, count(f.id) FILTER (WHERE f.id LIKE '%' || $2) AS marked"
        f" FROM {store.SCHEMA}.datasets d LEFT JOIN {store.SCHEMA}.features f ON f.dataset = d.id"
        f" WHERE d.id = $1 GROUP BY d.feature_count",
        DATASET,
        MARK,
    )
    assert row is not None, f"{DATASET} vanished from the datasets"
    return int(row["feature_count"]), int(row["total"]), int(row["marked"])


async def replace_under_readers(
    owner: asyncpg.Pool,
    reader: asyncpg.Pool,
    target: EmbeddingTarget,
    dataset: dict[str, Any],
    rows: list[tuple[Any, ...]],
) -> tuple[set[tuple[int, int, int]], float, bool, bool]:
    """Replace the dataset inside bulk_load while a reader polls it: the states seen, the slowest read,
    whether the vector index was seen missing, and whether bulk_load says it built the index."""
    seen: set[tuple[int, int, int]] = set()
    slowest = 0.0
    index_missing = False
    done = asyncio.Event()

    async def read() -> None:
        nonlocal slowest, index_missing
        while not done.is_set():
            started = time.monotonic()
            seen.add(await dataset_state(reader))
            index_missing |= await reader.fetchval("SELECT to_regclass($1)", INDEX) is None
            slowest = max(slowest, time.monotonic() - started)
            await asyncio.sleep(0.005)

    reading = asyncio.create_task(read())
    try:
        await asyncio.sleep(0.2)
        async with store.bulk_load(owner, target, [DATASET], len(rows)) as index:
            await store.replace_dataset(owner, dataset, rows)
        await asyncio.sleep(0.2)
    finally:
        done.set()
        await reading
    return seen, slowest, index_missing, index.seconds is not None


async def top_refs(url: str, names: list[str]) -> dict[str, Any]:
    found = {}
    for name in names:
        error, result = await call_tool(url, "search_vector_features", {"query": name, "dataset": DATASET, "limit": 3})
        assert not error, result
        found[name] = [hit["ref"] for hit in result["results"]]
    return found


@pytest.mark.asyncio
async def test_replace_shows_readers_the_old_or_the_new_set_and_search_finds_the_same(
    vector_server: RunningService, vector_env: dict[str, str], app_dsn: str
) -> None:
    owner = await create_pool(vector_env["VECTOR_DATABASE_URL"], max_size=2)
    reader = await create_pool(app_dsn, max_size=2)
    settings = VectorSettings(database_url=vector_env["VECTOR_DATABASE_URL"])
    target = store.EMBEDDINGS.target(settings)
    columns = ", ".join(store.FEATURE_COLUMNS)
    old_rows = [
        tuple(row)
        for row in await owner.fetch(
            f"SELECT {columns} FROM {store.SCHEMA}.features WHERE dataset = $1 ORDER BY id", DATASET
        )
    ]
    record = await owner.fetchrow(f"SELECT {DATASET_COLUMNS} FROM {store.SCHEMA}.datasets WHERE id = $1", DATASET)
    assert record is not None
    dataset = {**dict(record), "sources": json.loads(record["sources"])}
    try:
        others = await owner.fetchval(f"SELECT count(*) FROM {store.SCHEMA}.features WHERE dataset <> $1", DATASET)
        assert len(old_rows) > others, "the dataset must outnumber the others for the index to be rebuilt"

        # Names only one feature has: search must put that feature first, before and after.
        id_column, name_column = store.FEATURE_COLUMNS.index("id"), store.FEATURE_COLUMNS.index("name")
        counts: dict[str, int] = {}
        for row in old_rows:
            counts[row[name_column]] = counts.get(row[name_column], 0) + 1
        unique = [row for row in old_rows if counts[row[name_column]] == 1]
        sample = unique[:: max(1, len(unique) // 12)]
        names = [row[name_column] for row in sample]
        before = await top_refs(vector_server.url, names)
        for row in sample:
            assert before[row[name_column]][0] == {"dataset": DATASET, "id": row[id_column]}

        n = len(old_rows)
        new_rows = [(*row[:id_column], row[id_column] + MARK, *row[id_column + 1 :]) for row in old_rows]
        seen, slowest, index_missing, rebuilt = await replace_under_readers(owner, reader, target, dataset, new_rows)
        assert seen == {(n, n, 0), (n, n, n)}, "a reader saw a mix, an empty set or a wrong count"
        assert slowest < READER_LIMIT_SECONDS
        assert index_missing, "the load should have dropped the vector index and built it after the copy"
        assert rebuilt, "bulk_load should report the index build it made"

        # Back to the stored rows: the same swap, and search finds what it found before.
        seen, slowest, _, _ = await replace_under_readers(owner, reader, target, dataset, old_rows)
        assert seen == {(n, n, n), (n, n, 0)}
        assert slowest < READER_LIMIT_SECONDS
        assert await owner.fetchval("SELECT to_regclass($1)", INDEX) is not None
        assert await top_refs(vector_server.url, names) == before
        # The rebuilt index finds each sampled feature by its own vector, first.
        embedding_column = store.FEATURE_COLUMNS.index("embedding")
        for row in sample:
            hits = await store.rank_by_vector(
                reader, row[embedding_column], store.Filters(DATASET, None), 1, settings.hnsw_ef_search
            )
            assert hits[0][0] == (DATASET, row[id_column])
    finally:
        # The other tests read the stored rows: put them back if a failure left the replacement set.
        if (await dataset_state(owner))[2]:
            async with store.bulk_load(owner, target, [DATASET], len(old_rows)):
                await store.replace_dataset(owner, dataset, old_rows)
        await owner.close()
        await reader.close()
