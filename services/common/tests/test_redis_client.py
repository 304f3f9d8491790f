"""The one Redis client of the services, against a real Redis: RESP2 with text replies, a bounded pool
that waits for a free connection, and a named client of one connection of its own."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.asyncio import BlockingConnectionPool

from stacgis_common.redis_client import PROTOCOL, redis_client


@pytest.mark.asyncio
async def test_every_client_speaks_resp2_with_text_replies(redis_url: str) -> None:
    client = redis_client(redis_url)
    try:
        key = f"test:redis-client:{uuid.uuid4().hex}"
        await client.set(key, "ü")
        assert await client.get(key) == "ü"  # decoded, not bytes
        # redis-py 8 would speak RESP3 unless told: the server says which protocol this connection uses.
        assert str((await client.client_info())["resp"]) == str(PROTOCOL) == "2"
        await client.delete(key)
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_a_bounded_pool_waits_for_a_free_connection(redis_url: str) -> None:
    client = redis_client(redis_url, max_connections=1, pool_timeout_seconds=5.0, health_check_interval=30)
    try:
        pool = client.connection_pool
        assert isinstance(pool, BlockingConnectionPool) and pool.max_connections == 1
        key = f"test:redis-client:{uuid.uuid4().hex}"
        # The one connection blocks for 0.3 s; a second command waits for it instead of failing.
        blocked = asyncio.create_task(client.blpop([key], timeout=0.3))
        await asyncio.sleep(0.05)
        assert await client.ping() is True
        assert blocked.done() and await blocked is None
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_a_named_client_has_one_connection_shown_under_its_name(redis_url: str) -> None:
    name = f"stacgis-test-reader-{uuid.uuid4().hex[:8]}"
    client = redis_client(redis_url, name=name, socket_timeout=5.0)
    try:
        assert (await client.client_info())["name"] == name
        assert [entry["name"] for entry in await client.client_list()].count(name) == 1
    finally:
        await client.aclose()
