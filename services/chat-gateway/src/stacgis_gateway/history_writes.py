"""A finished run's history write that survives a Postgres outage.

The write is retried with backoff for `history_retry_seconds`; if Postgres is still down it is parked
in a Redis hash keyed by run id and flushed, oldest first, once Postgres answers again (before the next
write and every `history_flush_seconds`). `HistoryStore.record_run` is idempotent by run id, so a write
flushed by two replicas at once, or parked after it committed but its answer was lost, is stored once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import datetime
from typing import Any, Literal

import redis.exceptions
from redis.asyncio import Redis

from .keys import RedisKeys
from .messages import ChatMessage
from .metrics import HISTORY_WRITES
from .store import POSTGRES_UNREACHABLE, HistoryStore, RunRecord

log = logging.getLogger(__name__)

# Errors that mean "Postgres cannot be reached right now" (worth retrying), not "this write is wrong".
POSTGRES_DOWN: tuple[type[BaseException], ...] = (OSError, TimeoutError, *POSTGRES_UNREACHABLE)
FIRST_DELAY_SECONDS = 0.2
MAX_DELAY_SECONDS = 2.0
# One attempt may not hang on a connect to an unreachable host for asyncpg's default minute.
ATTEMPT_TIMEOUT_SECONDS = 10.0

Outcome = Literal["stored", "duplicate", "parked", "failed"]


def _encode(record: RunRecord, messages: list[ChatMessage]) -> str:
    run = {**record.__dict__, "started_at": record.started_at.isoformat()}
    return json.dumps(
        {
            "parked_at": time.time(),
            "run": run,
            "messages": [
                {
                    "role": m.role,
                    "content": m.content,
                    "tool_calls": m.tool_calls,
                    "tool_call_id": m.tool_call_id,
                    "name": m.name,
                    "grounding": m.grounding,
                }
                for m in messages
            ],
        },
        ensure_ascii=False,
    )


def _decode(raw: str) -> tuple[float, RunRecord, list[ChatMessage]]:
    data: dict[str, Any] = json.loads(raw)
    run = dict(data["run"])
    run["started_at"] = datetime.fromisoformat(run["started_at"])
    return float(data.get("parked_at", 0)), RunRecord(**run), [ChatMessage(**m) for m in data["messages"]]


class HistoryWriter:
    def __init__(
        self, store: HistoryStore, redis: Redis, keys: RedisKeys, retry_seconds: float, flush_seconds: float
    ) -> None:
        self._store = store
        self._redis = redis
        self._key = keys.pending_history
        self._retry_seconds = retry_seconds
        self._flush_seconds = flush_seconds
        self._flushing = asyncio.Lock()

    async def _attempt(self, record: RunRecord, messages: list[ChatMessage]) -> bool:
        async with asyncio.timeout(ATTEMPT_TIMEOUT_SECONDS):
            return await self._store.record_run(record, messages)

    async def write(self, record: RunRecord, messages: list[ChatMessage]) -> Outcome:
        """Store the run (retrying while Postgres is down), or park it in Redis for a later flush."""
        # Earlier parked runs first, so a session's history keeps its order.
        await self.flush()
        outcome = await self._write(record, messages)
        HISTORY_WRITES.labels(outcome).inc()
        return outcome

    async def _write(self, record: RunRecord, messages: list[ChatMessage]) -> Outcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry_seconds
        delay = FIRST_DELAY_SECONDS
        try:
            while True:
                try:
                    return "stored" if await self._attempt(record, messages) else "duplicate"
                except POSTGRES_DOWN as error:
                    if loop.time() + delay > deadline:
                        log.warning(
                            "Postgres unavailable; parking the run's history in Redis",
                            extra={"run_id": record.run_id, "error": repr(error)},
                        )
                        break
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, MAX_DELAY_SECONDS)
                except Exception:
                    log.exception("could not store the run", extra={"run_id": record.run_id})
                    return "failed"
        except asyncio.CancelledError:
            # Shut down mid-retry: keep the write for another replica (or this one restarted).
            await self._park(record, messages)
            raise
        return "parked" if await self._park(record, messages) else "failed"

    async def _park(self, record: RunRecord, messages: list[ChatMessage]) -> bool:
        try:
            await self._redis.hset(self._key, record.run_id, _encode(record, messages))
        except redis.exceptions.RedisError:
            log.exception("could not park the run's history; it is lost", extra={"run_id": record.run_id})
            return False
        return True

    async def flush(self) -> int:
        """Store parked writes, oldest first, until Postgres fails again; returns how many were stored."""
        if self._flushing.locked():
            return 0  # another task of this replica is at it
        async with self._flushing:
            try:
                parked: dict[str, str] = await self._redis.hgetall(self._key)  # type: ignore[assignment]
            except redis.exceptions.RedisError as error:
                log.warning("could not read parked history writes", extra={"error": repr(error)})
                return 0
            entries = []
            for run_id, raw in parked.items():
                try:
                    entries.append((run_id, *_decode(raw)))
                except (ValueError, KeyError, TypeError):
                    log.exception("dropping a malformed parked history write", extra={"run_id": run_id})
                    await self._redis.hdel(self._key, run_id)
            stored = 0
            for run_id, _, record, messages in sorted(entries, key=lambda entry: entry[1]):
                try:
                    await self._attempt(record, messages)
                except POSTGRES_DOWN:
                    return stored  # still down: the rest waits for the next flush
                except Exception:
                    log.exception("dropping a parked history write Postgres refuses", extra={"run_id": run_id})
                await self._redis.hdel(self._key, run_id)
                stored += 1
                HISTORY_WRITES.labels("flushed").inc()
            if stored:
                log.info("stored parked history writes", extra={"count": stored})
            return stored

    async def pending(self) -> int:
        return int(await self._redis.hlen(self._key))

    async def flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._flush_seconds)
            try:
                await self.flush()
            except Exception:  # the next round retries; parked writes stay in Redis meanwhile
                log.exception("flushing parked history writes failed")
