"""`make infra-up` is idempotent and keeps data across restarts (run on private ports and folders)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import redis

from stacgis_common.testing import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def infra(private_local: Path) -> Iterator[tuple[dict[str, str], int, int]]:
    pg_port, redis_port = free_port(), free_port()
    env = {
        **os.environ,
        "STACGIS_LOCAL_DIR": str(private_local),
        "STACGIS_PG_PORT": str(pg_port),
        "STACGIS_REDIS_PORT": str(redis_port),
    }
    yield env, pg_port, redis_port
    subprocess.run([sys.executable, "scripts/local_infra.py", "down"], cwd=ROOT, env=env, check=False)


def infra_command(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "scripts/local_infra.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


async def query(port: int, sql: str) -> object:
    connection = await asyncpg.connect(f"postgresql://stacgis:stacgis@127.0.0.1:{port}/stacgis")
    try:
        return await connection.fetchval(sql)
    finally:
        await connection.close()


def test_up_twice_is_harmless_and_data_survives_restart(infra: tuple[dict[str, str], int, int]) -> None:
    env, pg_port, redis_port = infra
    first = infra_command(env, "up", "--no-model-server")
    assert first.returncode == 0, first.stderr
    second = infra_command(env, "up", "--no-model-server")
    assert second.returncode == 0, second.stderr
    assert "already listening" in second.stdout

    assert asyncio.run(query(pg_port, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"))
    asyncio.run(query(pg_port, "CREATE TABLE kept AS SELECT 'still here'::text AS value"))
    assert redis.Redis(port=redis_port).ping()

    down = infra_command(env, "down")
    assert down.returncode == 0, down.stderr
    assert infra_command(env, "status").returncode != 0

    again = infra_command(env, "up", "--no-model-server")
    assert again.returncode == 0, again.stderr
    assert asyncio.run(query(pg_port, "SELECT value FROM kept")) == "still here"


def test_postgres_listens_on_loopback_only(infra: tuple[dict[str, str], int, int]) -> None:
    env, pg_port, _ = infra
    assert infra_command(env, "up", "--no-model-server").returncode == 0
    listen = asyncio.run(query(pg_port, "SHOW listen_addresses"))
    assert listen == "127.0.0.1"
