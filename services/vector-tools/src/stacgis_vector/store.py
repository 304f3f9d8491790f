"""Queries of the `vector` schema: datasets, hybrid search rankers, features by id and by box."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from stacgis_common.pgvector import EmbeddedTable, EmbeddingTarget, build_index, drop_index
from stacgis_vector.geometry import QueryBox
from stacgis_vector.names import like_prefix, or_tsquery

SCHEMA = "vector"
# The table whose rows carry the `embedding` column (added in code: its size follows the settings).
EMBEDDINGS = EmbeddedTable(
    schema=SCHEMA,
    name="features",
    text_expression="embedding_text",
    key_columns=("dataset", "id"),
    migrations=Path(__file__).parent / "migrations",
    migrate_module="stacgis_vector.migrate",
    rows="features",
)
FeatureKey = tuple[str, str]


@dataclass(frozen=True)
class Filters:
    dataset: str | None
    box: QueryBox | None


def _any_part(box: QueryBox, params: list[Any], *conditions: str) -> tuple[str, ...]:
    """Each condition ORed over the box's parts (two when it crosses the antimeridian), `{part}` standing
    for the part's parameter; each part is appended to `params` once, whatever the number of conditions."""
    refs = []
    for part in box.pg_boxes():
        params.append(part)
        refs.append(f"${len(params)}")
    return tuple("(" + " OR ".join(condition.format(part=ref) for ref in refs) + ")" for condition in conditions)


def _where(filters: Filters, params: list[Any]) -> str:
    """SQL conditions for the optional dataset and box filters, appending their parameters."""
    conditions = []
    if filters.dataset is not None:
        params.append(filters.dataset)
        conditions.append(f"dataset = ${len(params)}")
    if filters.box is not None:
        conditions.extend(_any_part(filters.box, params, "bbox && {part}"))
    return " AND ".join(conditions) if conditions else "true"


async def list_datasets(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        f"SELECT id, title, description, geometry_type, feature_count, extent, license, attribution,"
        f" sources, loaded_at FROM {SCHEMA}.datasets ORDER BY id"
    )
    return [
        {
            "id": row["id"],
            "title": row["title"],
            "description": row["description"],
            "geometry_type": row["geometry_type"],
            "feature_count": row["feature_count"],
            "extent": list(row["extent"]),
            "license": row["license"],
            "attribution": row["attribution"],
            "sources": json.loads(row["sources"]),
            "loaded_at": row["loaded_at"].isoformat(),
        }
        for row in rows
    ]


async def dataset_ids(pool: asyncpg.Pool) -> list[str]:
    return [row["id"] for row in await pool.fetch(f"SELECT id FROM {SCHEMA}.datasets ORDER BY id")]


NAME_TIER = 0
ALTERNATE_NAME_TIER = 1
PREFIX_TIER = 2


async def rank_by_name(
    pool: asyncpg.Pool, normalized: str, filters: Filters, limit: int
) -> list[tuple[FeatureKey, int]]:
    """Exact name, then exact alternate name, then name prefix (the tier); population breaks ties."""
    params: list[Any] = [normalized, like_prefix(normalized), limit]
    where = _where(filters, params)
    rows = await pool.fetch(
        f"SELECT dataset, id, CASE WHEN name_normalized = $1 THEN {NAME_TIER}"
        f" WHEN alternate_names @> ARRAY[$1] THEN {ALTERNATE_NAME_TIER} ELSE {PREFIX_TIER} END AS tier"
        f" FROM {SCHEMA}.features"
        f" WHERE (name_normalized = $1 OR alternate_names @> ARRAY[$1] OR name_normalized LIKE $2)"
        f" AND {where}"
        f" ORDER BY tier, population DESC NULLS LAST, length(name), name, dataset, id LIMIT $3",
        *params,
    )
    return [((row["dataset"], row["id"]), int(row["tier"])) for row in rows]


async def rank_by_text(pool: asyncpg.Pool, query: str, filters: Filters, limit: int) -> list[FeatureKey]:
    expression = or_tsquery(query)
    if expression is None:
        return []
    params: list[Any] = [expression, limit]
    where = _where(filters, params)
    rows = await pool.fetch(
        f"SELECT dataset, id FROM {SCHEMA}.features, to_tsquery('simple', $1) AS query"
        f" WHERE search_tsv @@ query AND {where}"
        f" ORDER BY ts_rank_cd(search_tsv, query) DESC, population DESC NULLS LAST, dataset, id LIMIT $2",
        *params,
    )
    return [(row["dataset"], row["id"]) for row in rows]


async def rank_by_vector(
    pool: asyncpg.Pool, vector: Sequence[float], filters: Filters, limit: int, ef_search: int
) -> list[tuple[FeatureKey, float]]:
    """Nearest by cosine distance through the HNSW index; returns keys with cosine similarity."""
    params: list[Any] = [vector, limit]
    where = _where(filters, params)
    async with pool.acquire() as connection, connection.transaction():
        # ef_search below LIMIT would cap the result count; filtered queries scan on
        # (iteratively) until enough rows pass the filter.
        await connection.execute(f"SET LOCAL hnsw.ef_search = {max(ef_search, limit)}")
        if where != "true":
            await connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = await connection.fetch(
            f"SELECT dataset, id, embedding <=> $1 AS distance FROM {SCHEMA}.features"
            f" WHERE {where} ORDER BY embedding <=> $1 LIMIT $2",
            *params,
        )
    # relaxed_order may return rows slightly out of order: restore it.
    ranked = sorted(rows, key=lambda row: float(row["distance"]))
    return [((row["dataset"], row["id"]), 1.0 - float(row["distance"])) for row in ranked]


SUMMARY_COLUMNS = (
    "f.dataset, f.id, f.name, f.embedding_text, f.geometry_type, f.population, f.bbox, f.anchor_lon,"
    " f.anchor_lat, f.properties, d.summary_properties"
)


async def summaries(pool: asyncpg.Pool, keys: Sequence[FeatureKey]) -> dict[FeatureKey, asyncpg.Record]:
    if not keys:
        return {}
    rows = await pool.fetch(
        f"SELECT {SUMMARY_COLUMNS} FROM {SCHEMA}.features f JOIN {SCHEMA}.datasets d ON d.id = f.dataset"
        f" JOIN unnest($1::text[], $2::text[]) AS k(dataset, id) ON k.dataset = f.dataset AND k.id = f.id",
        [key[0] for key in keys],
        [key[1] for key in keys],
    )
    return {(row["dataset"], row["id"]): row for row in rows}


async def feature(pool: asyncpg.Pool, dataset: str, feature_id: str) -> asyncpg.Record | None:
    row: asyncpg.Record | None = await pool.fetchrow(
        f"SELECT {SUMMARY_COLUMNS}, f.geometry::text AS geometry_json, f.vertex_count"
        f" FROM {SCHEMA}.features f JOIN {SCHEMA}.datasets d ON d.id = f.dataset"
        f" WHERE f.dataset = $1 AND f.id = $2",
        dataset,
        feature_id,
    )
    return row


async def box_candidates(pool: asyncpg.Pool, dataset: str, box: QueryBox) -> list[asyncpg.Record]:
    """Features whose bbox overlaps the query box, flagged when their bbox lies inside it.

    A feature whose bbox is inside the box surely intersects it; only the others need an
    exact test, so only their geometry is fetched.
    """
    params: list[Any] = [dataset]
    overlaps, inside = _any_part(box, params, "bbox && {part}", "bbox <@ {part}")
    rows: list[asyncpg.Record] = await pool.fetch(
        f"SELECT id, {inside} AS inside,"
        f" CASE WHEN {inside} THEN NULL ELSE geometry::text END AS geometry_json"
        f" FROM {SCHEMA}.features WHERE dataset = $1 AND {overlaps}"
        f" ORDER BY population DESC NULLS LAST, name, id",
        *params,
    )
    return rows


async def most_populous_in(pool: asyncpg.Pool, dataset: str, box: QueryBox, limit: int) -> list[asyncpg.Record]:
    """The `limit` most populous features whose anchor lies in the box (a map's place names). `bbox &&`
    lets the GiST index find the candidates; the anchor test keeps areas whose point is outside."""
    params: list[Any] = [dataset, limit]
    (inside,) = _any_part(box, params, "(bbox && {part}::box AND point(anchor_lon, anchor_lat) <@ {part}::box)")
    rows: list[asyncpg.Record] = await pool.fetch(
        f"SELECT id, name, population, anchor_lon, anchor_lat, properties->>'country' AS country"
        f" FROM {SCHEMA}.features WHERE dataset = $1 AND {inside}"
        f" ORDER BY population DESC NULLS LAST, name, id LIMIT $2",
        *params,
    )
    return rows


async def record_load(pool: asyncpg.Pool, dataset: str, stage: str, done: int, total: int) -> None:
    """Where the load of `dataset` is (vector.loads), for services serving while it runs."""
    await pool.execute(
        f"INSERT INTO {SCHEMA}.loads (dataset, stage, done, total) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (dataset) DO UPDATE SET stage = EXCLUDED.stage, done = EXCLUDED.done,"
        " total = EXCLUDED.total, updated_at = now()",
        dataset,
        stage,
        done,
        total,
    )


async def forget_loads(pool: asyncpg.Pool, datasets: Collection[str]) -> None:
    """Drop the progress rows of loads that end without swapping their dataset in (an error)."""
    await pool.execute(f"DELETE FROM {SCHEMA}.loads WHERE dataset = ANY($1)", list(datasets))


LOADS_QUERY = (
    f"SELECT dataset, stage, done, total, extract(epoch FROM clock_timestamp() - updated_at) AS idle"
    f" FROM {SCHEMA}.loads ORDER BY dataset"
)


async def loads(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """The loads under way, with seconds since their last progress (one read of a table empty but
    during a load: cheap enough for every search)."""
    return list(await pool.fetch(LOADS_QUERY))


async def loads_and_datasets(pool: asyncpg.Pool) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    """The loads under way and the datasets in, by id, as of one moment."""
    async with pool.acquire() as connection, connection.transaction(isolation="repeatable_read", readonly=True):
        under_way = await connection.fetch(LOADS_QUERY)
        datasets = await connection.fetch(f"SELECT id, feature_count FROM {SCHEMA}.datasets ORDER BY id")
    return list(under_way), list(datasets)


async def dataset_checksum(pool: asyncpg.Pool, dataset: str) -> str | None:
    value = await pool.fetchval(f"SELECT source_checksum FROM {SCHEMA}.datasets WHERE id = $1", dataset)
    return str(value) if value is not None else None


FEATURE_COLUMNS = [
    "dataset",
    "id",
    "name",
    "name_normalized",
    "alternate_names",
    "population",
    "properties",
    "geometry",
    "geometry_type",
    "vertex_count",
    "bbox",
    "anchor_lon",
    "anchor_lat",
    "embedding_text",
    "search_document",
    "embedding",
]


@dataclass
class IndexBuild:
    """What `bulk_load` did to the vector index on leaving: the seconds its build took, None if none."""

    seconds: float | None = None


@contextlib.asynccontextmanager
async def bulk_load(
    pool: asyncpg.Pool, target: EmbeddingTarget, replacing: Collection[str], incoming: int
) -> AsyncIterator[IndexBuild]:
    """Around the `replace_dataset` calls of one load, which replace the datasets `replacing` with
    `incoming` rows in all. When those outnumber the rows kept (a first load, or the cities again),
    the HNSW index is dropped first and built once at the end: inserting tens of thousands of rows into
    the graph one by one takes several times longer. Searches meanwhile scan exactly, and nothing
    waits for the build but writers. Whatever happens, the index is there afterwards (also when an
    earlier load was cut short before building it)."""
    kept = await pool.fetchval(f"SELECT count(*) FROM {SCHEMA}.features WHERE dataset <> ALL($1)", list(replacing))
    if incoming > kept:
        await drop_index(pool, target.table)
    build = IndexBuild()
    try:
        yield build
    finally:
        started = time.monotonic()
        if await build_index(pool, target):
            build.seconds = time.monotonic() - started


async def replace_dataset(pool: asyncpg.Pool, dataset: dict[str, Any], rows: list[tuple[Any, ...]]) -> None:
    """Swap a dataset's features for `rows` in one transaction: readers see the old or the new set."""
    async with pool.acquire() as connection, connection.transaction():
        await connection.execute(f"DELETE FROM {SCHEMA}.features WHERE dataset = $1", dataset["id"], timeout=600)
        await connection.execute(
            f"INSERT INTO {SCHEMA}.datasets (id, title, description, geometry_type, feature_count, extent,"
            " license, attribution, sources, summary_properties, source_checksum, loaded_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now())"
            " ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, description = EXCLUDED.description,"
            " geometry_type = EXCLUDED.geometry_type, feature_count = EXCLUDED.feature_count,"
            " extent = EXCLUDED.extent, license = EXCLUDED.license, attribution = EXCLUDED.attribution,"
            " sources = EXCLUDED.sources, summary_properties = EXCLUDED.summary_properties,"
            " source_checksum = EXCLUDED.source_checksum, loaded_at = now()",
            dataset["id"],
            dataset["title"],
            dataset["description"],
            dataset["geometry_type"],
            len(rows),
            dataset["extent"],
            dataset["license"],
            dataset["attribution"],
            json.dumps(dataset["sources"]),
            dataset["summary_properties"],
            dataset["source_checksum"],
        )
        # With the HNSW index in place every row also goes into it: thousands take a minute, not the pool's 60 s.
        await connection.copy_records_to_table(
            "features", schema_name=SCHEMA, columns=FEATURE_COLUMNS, records=rows, timeout=3600
        )
        # In with its features: no longer a load under way.
        await connection.execute(f"DELETE FROM {SCHEMA}.loads WHERE dataset = $1", dataset["id"])


async def name_matches(pool: asyncpg.Pool, normalized: str, dataset: str | None, limit: int) -> list[asyncpg.Record]:
    """Features whose name (tier 0) or an alternate name (tier 1) is exactly `normalized`."""
    params: list[Any] = [normalized, limit]
    where = "true"
    if dataset is not None:
        params.append(dataset)
        where = "f.dataset = $3"
    rows: list[asyncpg.Record] = await pool.fetch(
        f"SELECT {SUMMARY_COLUMNS}, CASE WHEN f.name_normalized = $1 THEN {NAME_TIER} ELSE {ALTERNATE_NAME_TIER}"
        f" END AS tier FROM {SCHEMA}.features f JOIN {SCHEMA}.datasets d ON d.id = f.dataset"
        f" WHERE (f.name_normalized = $1 OR f.alternate_names @> ARRAY[$1]) AND {where}"
        f" ORDER BY tier, f.population DESC NULLS LAST, f.dataset, f.id LIMIT $2",
        *params,
    )
    return rows


async def candidates_with_geometry(pool: asyncpg.Pool, dataset: str, box: QueryBox) -> list[asyncpg.Record]:
    """Features whose bbox overlaps the box, each with its geometry (for an exact test against a shape)."""
    params: list[Any] = [dataset]
    (overlaps,) = _any_part(box, params, "bbox && {part}")
    rows: list[asyncpg.Record] = await pool.fetch(
        f"SELECT id, geometry::text AS geometry_json FROM {SCHEMA}.features"
        f" WHERE dataset = $1 AND {overlaps} ORDER BY population DESC NULLS LAST, name, id",
        *params,
    )
    return rows
