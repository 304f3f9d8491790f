"""The history writer keeps a finished run whatever Postgres does: retried, else parked in Redis."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from stacgis_gateway.history_writes import HistoryWriter
from stacgis_gateway.keys import RedisKeys
from stacgis_gateway.messages import ChatMessage
from stacgis_gateway.store import RunRecord


class BrokenConnectionStore:
    """A store whose pooled connection was left mid-operation by a Postgres that died under it."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.stored: list[str] = []

    async def record_run(self, record: RunRecord, messages: list[ChatMessage]) -> bool:
        if self.failures:
            self.failures -= 1
            raise asyncpg.exceptions.InternalClientError("cannot switch to state 15; another operation is in progress")
        self.stored.append(record.run_id)
        return True


def record() -> RunRecord:
    return RunRecord(str(uuid.uuid4()), "u", "s", "done", "completed", None, 1, 1, 0, 1, datetime.now(UTC))


@pytest.mark.asyncio
@pytest.mark.parametrize(("failures", "outcome"), [(2, "stored"), (10_000, "parked")])
async def test_a_connection_left_mid_operation_is_retried_then_parked_never_dropped(
    redis_url: str, failures: int, outcome: str
) -> None:
    client: Any = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = RedisKeys(prefix=f"hw-{uuid.uuid4().hex[:6]}:")
    store = BrokenConnectionStore(failures)
    writer = HistoryWriter(store, client, keys, retry_seconds=1.0, flush_seconds=60)  # type: ignore[arg-type]
    run = record()
    try:
        assert await writer.write(run, [ChatMessage("user", "hi")]) == outcome
        if outcome == "stored":
            assert store.stored == [run.run_id]
        else:
            assert await client.hexists(keys.pending_history, run.run_id)
    finally:
        await client.delete(keys.pending_history)
        await client.aclose()
