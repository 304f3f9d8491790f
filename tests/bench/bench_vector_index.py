"""HNSW against exact scan on real place-name embeddings (pgvector), at several hnsw.ef_search values.

    .venv/bin/python tests/bench/bench_vector_index.py [--queries 200] [--embedding-url URL]

Embeds the sentences vector-tools indexes for all GeoNames cities (about 34 000, cached after the
first run), stores them in a scratch database with the same HNSW index as vector-tools
(vector_cosine_ops, m=32, ef_construction=128; --m/--ef-construction to compare others), then
runs place-name queries ("Berlin",
"Campinas") embedded by the same model. For each query the exact top 10 (sequential scan) is
the truth; recall@10 and p50/p95 latency are printed side by side for every ef_search value,
with the smallest value reaching the recall target marked as the default.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import numpy as np

from stacgis_common.db import create_pool
from stacgis_common.embeddings import EmbeddingsClient
from stacgis_common.packages import PackageCache
from stacgis_common.testing import free_port, run_service
from stacgis_vector.loader.datasets import LoadOptions, cities

ROOT = Path(__file__).resolve().parents[2]
ADMIN_DSN = os.environ.get("STACGIS_BENCH_PG_DSN", "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis")
EF_SEARCH = (10, 20, 40, 64, 100, 200, 400)
# Distances equal to the 10th exact one within this are ties: either place is a right answer
# (GeoNames has many same-named places in one country, e.g. "San Isidro, a city in Argentina").
TIE_EPSILON = 1e-5
K = 10
RECALL_TARGET = 0.97


@contextlib.contextmanager
def embedding_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted", "HF_HUB_OFFLINE": "1"}
    with run_service("stacgis_model_server", env, port) as service:
        yield service.url


@contextlib.asynccontextmanager
async def scratch_database() -> AsyncIterator[str]:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    finally:
        admin = await asyncpg.connect(ADMIN_DSN)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def embed_cached(client: EmbeddingsClient, texts: list[str], cache: Path) -> np.ndarray:
    if cache.exists():
        cached: np.ndarray = np.load(cache)
        if cached.shape == (len(texts), client.dimension):
            return cached
    started = time.monotonic()
    out: list[list[float]] = []
    for start in range(0, len(texts), 1024):
        out.extend(await client.embed(texts[start : start + 1024]))
        print(f"  embedded {len(out)}/{len(texts)}", file=sys.stderr, flush=True)
    seconds = time.monotonic() - started
    print(f"embedding {len(texts)} sentences took {seconds:.0f} s ({len(texts) / seconds:.0f}/s)", flush=True)
    vectors = np.asarray(out, dtype=np.float32)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def timed_top_k(connection: asyncpg.Connection, vector: np.ndarray) -> tuple[list[float], float]:
    """Cosine distances of the top K, and the query's latency in milliseconds."""
    started = time.perf_counter()
    rows = await connection.fetch(
        "SELECT embedding <=> $1 AS distance FROM places ORDER BY embedding <=> $1 LIMIT $2", vector, K
    )
    return [float(row["distance"]) for row in rows], (time.perf_counter() - started) * 1000


def recall_at_k(found: list[float], exact: list[float]) -> float:
    """Share of the true top K found; a result as close as the K-th true neighbour counts (ties)."""
    return sum(1 for distance in found if distance <= exact[-1] + TIE_EPSILON) / K


async def run(queries: int, embedding_url: str, cache_dir: Path, m: int, ef_construction: int) -> None:
    records = cities(PackageCache(cache_dir), LoadOptions()).records
    texts = [record.embedding_text for record in records]
    client = EmbeddingsClient("ollama", embedding_url, "all-minilm", 384)
    try:
        vectors = await embed_cached(client, texts, cache_dir / "bench" / "geonames-cities-all-minilm.npy")
        sample = random.Random(42).sample(records, queries)
        query_vectors = np.asarray(await client.embed([record.name for record in sample]), dtype=np.float32)
    finally:
        await client.aclose()

    async with scratch_database() as dsn:
        setup = await asyncpg.connect(dsn)
        await setup.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await setup.close()
        pool = await create_pool(dsn, min_size=1, max_size=1)
        async with pool.acquire() as connection:
            await connection.execute("CREATE TABLE places (id integer PRIMARY KEY, embedding vector(384))")
            await connection.copy_records_to_table(
                "places", records=[(index, vector) for index, vector in enumerate(vectors)]
            )
            started = time.monotonic()
            await connection.execute(
                "CREATE INDEX ON places USING hnsw (embedding vector_cosine_ops)"
                f" WITH (m = {int(m)}, ef_construction = {int(ef_construction)})",
                timeout=1800,
            )
            build_seconds = time.monotonic() - started
            await connection.execute("ANALYZE places")

            # Ground truth: exact scan with the index switched off.
            await connection.execute("SET enable_indexscan = off")
            truth, exact_ms = [], []
            for vector in query_vectors:
                distances, ms = await timed_top_k(connection, vector)
                truth.append(distances)
                exact_ms.append(ms)
            await connection.execute("SET enable_indexscan = on")

            rows = []
            for ef in EF_SEARCH:
                await connection.execute(f"SET hnsw.ef_search = {ef}")
                recalls, latencies = [], []
                for vector, exact in zip(query_vectors, truth, strict=True):
                    distances, ms = await timed_top_k(connection, vector)
                    recalls.append(recall_at_k(distances, exact))
                    latencies.append(ms)
                rows.append((ef, statistics.mean(recalls), min(recalls), latencies))
        await pool.close()

    print(f"\n{len(vectors)} GeoNames place embeddings (384 dims), {queries} place-name queries, top {K}")
    print(f"HNSW build (m={m}, ef_construction={ef_construction}): {build_seconds:.1f} s\n")
    print(f"{'search':<22}{'recall@10':>10}{'worst':>8}{'p50 ms':>9}{'p95 ms':>9}{'speed-up p50':>14}")
    exact_p50 = percentile(exact_ms, 50)
    print(f"{'exact scan':<22}{1.0:>10.3f}{1.0:>8.2f}{exact_p50:>9.2f}{percentile(exact_ms, 95):>9.2f}{1.0:>13.1f}x")
    chosen = next((ef for ef, recall, _, _ in rows if recall >= RECALL_TARGET), EF_SEARCH[-1])
    for ef, recall, worst, latencies in rows:
        p50 = percentile(latencies, 50)
        mark = "  <- default" if ef == chosen else ""
        label = f"hnsw ef_search={ef}"
        print(
            f"{label:<22}{recall:>10.3f}{worst:>8.2f}{p50:>9.2f}{percentile(latencies, 95):>9.2f}"
            f"{exact_p50 / p50:>13.1f}x{mark}"
        )
    print(f"\nsmallest ef_search with mean recall@10 >= {RECALL_TARGET}: {chosen}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedding-url", default=None, help="a running model server (default: start one)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".local" / "cache")
    # The services' index parameters (*_HNSW_M, *_HNSW_EF_CONSTRUCTION); pgvector's defaults are 16 and 64.
    parser.add_argument("--m", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=128)
    arguments = parser.parse_args()
    with embedding_server(arguments.embedding_url) as url:
        asyncio.run(run(arguments.queries, url, arguments.cache, arguments.m, arguments.ef_construction))


if __name__ == "__main__":
    main()
