"""Batched events: the first event of a burst is written at once, the rest of the burst (and what other
runs of the process queued meanwhile) in one pipeline, in order, each its own entry; a failed write ends
the run instead of leaving a gap."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from redis.asyncio import Redis

from stacgis_gateway.eventwriter import EventLog
from stacgis_gateway.keys import RedisKeys
from stacgis_gateway.runstore import RunStore


class GatedStore:
    """A RunStore whose writes wait for the test to let them through, recording each batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.fail = False

    async def append_batch(self, events: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
        self.batches.append([f"{run_id}:{payload['seq']}" for run_id, _, payload in events])
        self.started.set()
        await self.gate.wait()
        if self.fail:
            raise ConnectionError("Redis went away")
        return [f"0-{index}" for index in range(len(events))]


def content(seq: int) -> dict[str, Any]:
    return {"seq": str(seq), "content": {"text": f"t{seq} "}}


@pytest.mark.asyncio
async def test_the_first_token_is_written_at_once_and_the_burst_behind_it_in_one_pipeline() -> None:
    store = GatedStore()
    events = EventLog(store)  # type: ignore[arg-type]
    writer = events.writer("a")
    writer.add("content", content(1))
    # The first event's write starts without waiting for anything else to arrive.
    await asyncio.wait_for(store.started.wait(), 10)
    assert store.batches == [["a:1"]]
    # While it is in flight, a burst of deltas queues up, and another run's ...
    other = events.writer("b")
    for seq in range(2, 40):
        writer.add("content", content(seq))
        if seq % 10 == 0:
            other.add("content", content(seq))
    store.gate.set()
    await asyncio.wait_for(asyncio.gather(writer.flush(), other.flush()), 10)
    # ... and all go in one write, each run's in order.
    assert len(store.batches) == 2
    assert [item for item in store.batches[1] if item.startswith("a:")] == [f"a:{seq}" for seq in range(2, 40)]
    assert [item for item in store.batches[1] if item.startswith("b:")] == ["b:10", "b:20", "b:30"]
    writer.add("content", content(40))
    await asyncio.wait_for(writer.flush(), 10)
    assert store.batches[-1] == ["a:40"] and writer.writes == 3 and other.writes == 1 and events.writes == 3
    await writer.close()
    await events.stop()


@pytest.mark.asyncio
async def test_a_failed_write_is_raised_to_the_run_task() -> None:
    store = GatedStore()
    store.fail = True
    store.gate.set()
    events = EventLog(store)  # type: ignore[arg-type]
    writer = events.writer("run-2")
    writer.add("content", content(1))
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(writer.flush(), 10)
    with pytest.raises(ConnectionError):
        writer.add("content", content(2))
    await writer.close()
    await events.stop()


@pytest.mark.asyncio
async def test_a_batch_lands_as_one_entry_per_event_in_order(redis_url: str) -> None:
    redis = Redis.from_url(redis_url, decode_responses=True, protocol=2)
    keys = RedisKeys(f"batch-{uuid.uuid4().hex[:8]}:")
    store = RunStore(redis, keys, 10_000, 60)
    # Two runs' events interleaved in one pipeline: each run's stream gets its own, in order.
    batch = [(run_id, "content", content(seq)) for seq in range(1, 101) for run_id in ("r", "s")]
    ids = await store.append_batch(batch)
    entries = await store.all_entries("r")
    assert [entry.id for entry in entries] == ids[::2] and len(entries) == 100
    assert [entry.data for entry in await store.all_entries("s")] == [entry.data for entry in entries]
    assert [entry.data for entry in entries][:2] == [
        '{"seq":"1","content":{"text":"t1 "}}',
        '{"seq":"2","content":{"text":"t2 "}}',
    ]
    assert await redis.ttl(keys.run_events("r")) > 0 and await redis.ttl(keys.run_events("s")) > 0
    await redis.aclose()
