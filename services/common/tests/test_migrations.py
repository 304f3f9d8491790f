import asyncio
from pathlib import Path

import asyncpg
import pytest

from stacgis_common.db import apply_migrations, create_pool


def write_migrations(folder: Path) -> None:
    (folder / "001_items.sql").write_text("CREATE TABLE items (id serial PRIMARY KEY, embedding vector(3));")
    (folder / "002_counter.sql").write_text("CREATE TABLE counter (n integer); INSERT INTO counter VALUES (1);")


@pytest.mark.asyncio
async def test_applied_once_and_rerun_is_noop(pg_dsn: str, tmp_path: Path) -> None:
    write_migrations(tmp_path)
    pool = await create_pool(pg_dsn)
    try:
        assert await apply_migrations(pool, "mig_once", tmp_path) == ["001_items.sql", "002_counter.sql"]
        assert await apply_migrations(pool, "mig_once", tmp_path) == []
        assert await pool.fetchval("SELECT count(*) FROM mig_once.counter") == 1
        (tmp_path / "003_more.sql").write_text("INSERT INTO counter VALUES (2);")
        assert await apply_migrations(pool, "mig_once", tmp_path) == ["003_more.sql"]
        assert await pool.fetchval("SELECT count(*) FROM mig_once.counter") == 2
    finally:
        await pool.close()


@pytest.mark.asyncio
async def test_concurrent_runners_do_not_collide(pg_dsn: str, tmp_path: Path) -> None:
    write_migrations(tmp_path)
    pools = [await create_pool(pg_dsn, max_size=1) for _ in range(4)]
    try:
        results = await asyncio.gather(*(apply_migrations(pool, "mig_race", tmp_path) for pool in pools))
        applied = [name for result in results for name in result]
        assert sorted(applied) == ["001_items.sql", "002_counter.sql"]
        assert await pools[0].fetchval("SELECT count(*) FROM mig_race.counter") == 1
    finally:
        for pool in pools:
            await pool.close()


@pytest.mark.asyncio
async def test_failed_migration_leaves_nothing_behind(pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "001_ok.sql").write_text("CREATE TABLE ok_table (id int);")
    (tmp_path / "002_broken.sql").write_text("CREATE TABLE broken (id int); SELECT no_such_function();")
    pool = await create_pool(pg_dsn)
    try:
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await apply_migrations(pool, "mig_fail", tmp_path)
        tables = await pool.fetchval("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'mig_fail'")
        assert tables == 0
    finally:
        await pool.close()


@pytest.mark.asyncio
async def test_vector_columns_round_trip(pg_dsn: str, tmp_path: Path) -> None:
    write_migrations(tmp_path)
    pool = await create_pool(pg_dsn)
    try:
        await apply_migrations(pool, "mig_vec", tmp_path)
        await pool.execute("INSERT INTO mig_vec.items (embedding) VALUES ($1)", [1.0, 2.0, 3.0])
        value = await pool.fetchval("SELECT embedding FROM mig_vec.items")
        assert value.to_list() == [1.0, 2.0, 3.0]
    finally:
        await pool.close()
