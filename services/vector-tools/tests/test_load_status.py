"""A server that serves while a dataset load runs says what is still arriving: GET /places/status, /readyz
and the tools' answers. The load is held at its write (the test holds a lock on the features table that
the loader's DELETE waits for), so what the server says meanwhile is seen every run, not raced for."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import pytest
import pytest_asyncio
from vector_helpers import CACHE, MIN_POPULATION, loader_args, run_loader, source_cities

from stacgis_common.arguments import still_loading_of
from stacgis_common.testing import REPO_ROOT, RunningService, call_tool, free_port, run_service, token_for
from stacgis_vector import store

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def status_of(client: httpx.AsyncClient, server: RunningService) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token_for('chat-gateway')}"}
    response = await client.get(f"{server.url}/places/status", headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def loaded_counts(dsn: str) -> dict[str, int]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch("SELECT dataset, count(*) AS n FROM vector.features GROUP BY dataset")
    finally:
        await connection.close()
    return {row["dataset"]: row["n"] for row in rows}


async def test_status_lists_every_loaded_dataset_with_its_features(
    vector_server: RunningService, vector_env: dict[str, str]
) -> None:
    counts = await loaded_counts(vector_env["VECTOR_DATABASE_URL"])
    async with httpx.AsyncClient(timeout=30) as client:
        status = await status_of(client, vector_server)
        ready = await client.get(f"{vector_server.url}/readyz")
    assert status == {
        "loading": False,
        "datasets": [{"id": name, "state": "loaded", "features": counts[name]} for name in sorted(counts)],
    }
    assert ready.status_code == 200 and ready.json()["checks"]["datasets"] == "ok"


async def test_status_needs_the_internal_token(vector_server: RunningService) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"{vector_server.url}/places/status")
    assert response.status_code == 401


@pytest_asyncio.fixture(loop_scope="session")
async def held_writes(vector_env: dict[str, str]) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Holds vector.features in SHARE mode (reads go on, the loader's DELETE waits) until the yielded
    release() is awaited, or the test ends."""
    connection = await asyncpg.connect(vector_env["VECTOR_DATABASE_URL"])
    transaction = connection.transaction()
    await transaction.start()
    await connection.execute("LOCK TABLE vector.features IN SHARE MODE")

    async def release() -> None:
        if not connection.is_closed():
            await transaction.rollback()
            await connection.close()

    try:
        yield release
    finally:
        await release()


async def test_a_load_under_way_is_reported_until_its_dataset_is_in(
    vector_server: RunningService, vector_env: dict[str, str], held_writes: Callable[[], Awaitable[None]]
) -> None:
    expected_cities = len(source_cities(CACHE, MIN_POPULATION))
    loader = subprocess.Popen(
        [sys.executable, "-m", "stacgis_vector.load", *loader_args("--datasets", "cities", "--force")],
        env={**os.environ, **vector_env},
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            deadline = time.monotonic() + 600
            while True:  # the loader reads, embeds, then waits at the write the lock holds
                status = await status_of(client, vector_server)
                cities = next(entry for entry in status["datasets"] if entry["id"] == "cities")
                if cities.get("stage") == "writing" or loader.poll() is not None or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            assert loader.poll() is None, loader.communicate()
            assert status["loading"] is True
            assert cities["state"] == "loading"
            assert cities["done"] == cities["total"] == expected_cities
            assert 0 <= cities["updated_seconds_ago"] < 300
            others = [entry for entry in status["datasets"] if entry["id"] != "cities"]
            assert others and all(entry["state"] == "loaded" for entry in others)

            ready = await client.get(f"{vector_server.url}/readyz")
            # Still ready (what is in is served), with the load named.
            assert ready.status_code == 200, ready.text
            said = ready.json()["checks"]["datasets"]
            assert said == f"loading cities (writing {expected_cities:,} of {expected_cities:,})"

        # The previous cities are served meanwhile; a name nothing has says the data is still arriving.
        failed, found = await call_tool(vector_server.url, "resolve_place", {"place": "Tokyo"})
        assert not failed and found["status"] == "resolved" and found["place"]["name"] == "Tokyo"
        failed, message = await call_tool(vector_server.url, "resolve_place", {"place": "Qxzyville"})
        assert failed and "Qxzyville" in message
        loading = f"the place names of cities (writing {expected_cities:,} of {expected_cities:,})"
        assert still_loading_of(message) == loading
        failed, searched = await call_tool(vector_server.url, "search_vector_features", {"query": "port city"})
        assert not failed and still_loading_of(searched["note"]) == loading
    finally:
        await held_writes()  # the loader's DELETE goes ahead
    out, err = await asyncio.to_thread(loader.communicate, timeout=600)
    assert loader.returncode == 0, out + err
    assert "cities: loaded" in out

    counts = await loaded_counts(vector_env["VECTOR_DATABASE_URL"])
    async with httpx.AsyncClient(timeout=30) as client:
        status = await status_of(client, vector_server)
        ready = await client.get(f"{vector_server.url}/readyz")
    assert status["loading"] is False
    cities = next(entry for entry in status["datasets"] if entry["id"] == "cities")
    assert cities == {"id": "cities", "state": "loaded", "features": counts["cities"]}
    assert counts["cities"] == expected_cities
    assert ready.json()["checks"]["datasets"] == "ok"
    failed, searched = await call_tool(vector_server.url, "search_vector_features", {"query": "port city"})
    assert not failed and "note" not in searched


async def test_a_failed_load_leaves_nothing_reading_as_loading(
    vector_server: RunningService, vector_env: dict[str, str]
) -> None:
    before = await loaded_counts(vector_env["VECTOR_DATABASE_URL"])
    # Nothing answers embeddings on a port just found free: the load fails after recording its start.
    dead = {**vector_env, "VECTOR_EMBEDDING_BASE_URL": f"http://127.0.0.1:{free_port()}"}
    failed = run_loader(dead, "--datasets", "cities", "--force")
    assert failed.returncode == 1 and "load failed" in failed.stderr, failed.stdout + failed.stderr
    async with httpx.AsyncClient(timeout=30) as client:
        status = await status_of(client, vector_server)
    assert status["loading"] is False
    assert all(entry["state"] == "loaded" for entry in status["datasets"])
    assert await loaded_counts(vector_env["VECTOR_DATABASE_URL"]) == before


async def test_a_load_cut_short_reads_as_stalled_once_silent(vector_env: dict[str, str], app_dsn: str) -> None:
    """A loader killed outright leaves its row; past VECTOR_LOAD_STALLED_SECONDS it is reported stalled,
    not loading forever. The row is the loader's own write (store.record_load), aged by the test."""
    port = free_port()
    env = {**vector_env, "VECTOR_PORT": str(port), "VECTOR_DATABASE_URL": app_dsn, "VECTOR_LOAD_STALLED_SECONDS": "60"}
    pool = await asyncpg.create_pool(vector_env["VECTOR_DATABASE_URL"], min_size=1, max_size=1)
    assert pool is not None
    try:
        await store.record_load(pool, "us-states", "embedding", 10, 56)
        with run_service("stacgis_vector", env, port) as server:
            async with httpx.AsyncClient(timeout=30) as client:
                fresh = await status_of(client, server)
                await pool.execute("UPDATE vector.loads SET updated_at = now() - interval '61 seconds'")
                stale = await status_of(client, server)
                ready = await client.get(f"{server.url}/readyz")
        states = {entry["id"]: entry for entry in fresh["datasets"]}
        assert fresh["loading"] is True and states["us-states"]["state"] == "loading"
        assert (states["us-states"]["done"], states["us-states"]["total"]) == (10, 56)
        aged = {entry["id"]: entry for entry in stale["datasets"]}["us-states"]
        assert stale["loading"] is False and aged["state"] == "stalled" and aged["updated_seconds_ago"] >= 61
        assert ready.status_code == 200 and ready.json()["checks"]["datasets"].startswith("stalled us-states")
    finally:
        await store.forget_loads(pool, ["us-states"])
        await pool.close()
