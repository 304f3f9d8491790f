"""A run's shared state in Redis: its event stream (a Redis Stream) and its metadata (a hash).

Any replica can tail a run's events by entry id, which is also the SSE id the browser resumes from.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from stacgis_common.telemetry import untraced_db_call

from .keys import RedisKeys
from .metrics import SERVICE

STREAM_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


@dataclass(frozen=True)
class StreamEntry:
    id: str
    event: str
    data: str

    @cached_property
    def frame(self) -> bytes:
        """The entry as one SSE event whose id is the entry id; encoded once, however many streams send it.

        Entry data is the gateway's own compact JSON (no raw line breaks), so one data line is exact.
        """
        return f"id: {self.id}\nevent: {self.event}\ndata: {self.data}\n\n".encode()


@dataclass(frozen=True)
class RunMeta:
    run_id: str
    user_id: str
    session_id: str
    status: str  # "running" or "finished"
    heartbeat: float
    message: str
    started_at: float
    cancel_requested: bool

    @classmethod
    def from_hash(cls, run_id: str, data: dict[str, str]) -> RunMeta:
        return cls(
            run_id=run_id,
            user_id=data.get("user_id", ""),
            session_id=data.get("session_id", ""),
            status=data.get("status", "running"),
            heartbeat=float(data.get("heartbeat", "0") or 0),
            message=data.get("message", ""),
            started_at=float(data.get("started_at", "0") or 0),
            cancel_requested="cancel_at" in data,
        )


def _entries(response: Any) -> list[tuple[str, dict[str, str]]]:
    """XREAD reply (RESP2, which the gateway's client speaks): a list of [key, entries]."""
    return [entry for _, entries in response or [] for entry in entries]


class RunStore:
    def __init__(self, redis: Redis, keys: RedisKeys, maxlen: int, ttl_seconds: int) -> None:
        self._redis = redis
        self._keys = keys
        self._maxlen = maxlen
        self._ttl = ttl_seconds

    async def create(self, run_id: str, user_id: str, session_id: str, message: str) -> None:
        now = time.time()
        key = self._keys.run_meta(run_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "user_id": user_id,
                    "session_id": session_id,
                    "status": "running",
                    "heartbeat": repr(now),
                    "started_at": repr(now),
                    "message": message,
                },
            )
            pipe.expire(key, self._ttl)
            pipe.zadd(self._keys.live_runs, {run_id: now})
            await pipe.execute()

    async def meta(self, run_id: str) -> RunMeta | None:
        data: dict[str, str] = await self._redis.hgetall(self._keys.run_meta(run_id))  # type: ignore[assignment]
        return RunMeta.from_hash(run_id, data) if data else None

    async def append(self, run_id: str, event: str, payload: dict[str, Any]) -> str:
        """Add one event; the stream is bounded and its expiry pushed back while the run goes on."""
        key = self._keys.run_events(run_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xadd(
                key,
                {"event": event, "data": json.dumps(payload, separators=(",", ":"), ensure_ascii=False)},
                maxlen=self._maxlen,
                approximate=True,
            )
            pipe.expire(key, self._ttl)
            entry_id, _ = await pipe.execute()
        return str(entry_id)

    async def append_batch(self, events: list[tuple[str, str, dict[str, Any]]]) -> list[str | Exception]:
        """Add (run id, event, payload)s of any runs in one round trip, each its own entry, in order per run;
        each run's stream expiry is pushed back. Returns each event's entry id, or the error of its XADD.

        One per group commit of streamed events: timed, but without a span of its own.
        """
        expire: dict[str, None] = {}
        with untraced_db_call(SERVICE, "redis", "PIPELINE"):
            async with self._redis.pipeline(transaction=False) as pipe:
                for run_id, event, payload in events:
                    key = self._keys.run_events(run_id)
                    expire[key] = None
                    pipe.xadd(
                        key,
                        {"event": event, "data": json.dumps(payload, separators=(",", ":"), ensure_ascii=False)},
                        maxlen=self._maxlen,
                        approximate=True,
                    )
                for key in expire:
                    pipe.expire(key, self._ttl)
                results = await pipe.execute(raise_on_error=False)
        return [result if isinstance(result, Exception) else str(result) for result in results[: len(events)]]

    def pipeline(self) -> Pipeline:
        return self._redis.pipeline(transaction=False)

    # Replies of heartbeat_in, and the one of them that says when a requested cancel takes effect.
    HEARTBEAT_REPLIES = 5
    _CANCEL_AT_REPLY = 1

    def heartbeat_in(self, pipe: Pipeline, run_id: str) -> None:
        """Queue marking the run alive and pushing back its expiry on `pipe` (HEARTBEAT_REPLIES replies)."""
        meta = self._keys.run_meta(run_id)
        now = time.time()
        pipe.hset(meta, "heartbeat", repr(now))
        pipe.hget(meta, "cancel_at")
        pipe.expire(meta, self._ttl)
        pipe.expire(self._keys.run_events(run_id), self._ttl)
        pipe.zadd(self._keys.live_runs, {run_id: now}, xx=True)

    @classmethod
    def cancel_at(cls, replies: list[Any]) -> float | None:
        """When a requested cancel takes effect (epoch seconds), from heartbeat_in's replies."""
        cancel_at = replies[cls._CANCEL_AT_REPLY]
        return float(cancel_at) if cancel_at else None

    async def request_cancel(self, run_id: str, not_before: float) -> None:
        """Ask the replica running the run to stop it itself from `not_before` (epoch seconds) on."""
        await self._redis.hset(self._keys.run_meta(run_id), "cancel_at", repr(not_before))

    async def finish(self, run_id: str, outcome: str) -> None:
        meta = self._keys.run_meta(run_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(meta, mapping={"status": "finished", "outcome": outcome})
            pipe.expire(meta, self._ttl)
            pipe.expire(self._keys.run_events(run_id), self._ttl)
            pipe.zrem(self._keys.live_runs, run_id)
            await pipe.execute()

    async def orphans(self, silent_seconds: float, limit: int) -> list[str]:
        """Unfinished runs whose heartbeat is older than `silent_seconds`: their replica stopped."""
        ids: list[str] = await self._redis.zrangebyscore(  # type: ignore[assignment]
            self._keys.live_runs, "-inf", time.time() - silent_seconds, start=0, num=limit
        )
        return ids

    async def forget_live(self, run_id: str) -> None:
        """Drop a run from the live set (it finished, expired, or was declared lost)."""
        await self._redis.zrem(self._keys.live_runs, run_id)

    async def read(self, run_id: str, after: str, block_ms: int | None, count: int = 200) -> list[StreamEntry]:
        """Entries after `after` (exclusive), waiting up to `block_ms` for the first one."""
        response = await self._redis.xread({self._keys.run_events(run_id): after}, count=count, block=block_ms)
        return [
            StreamEntry(entry_id, fields.get("event", ""), fields.get("data", ""))
            for entry_id, fields in _entries(response)
        ]

    async def all_entries(self, run_id: str) -> list[StreamEntry]:
        rows: list[tuple[str, dict[str, str]]] = await self._redis.xrange(  # type: ignore[assignment]
            self._keys.run_events(run_id)
        )
        return [StreamEntry(entry_id, fields.get("event", ""), fields.get("data", "")) for entry_id, fields in rows]

    async def claim_lost(self, run_id: str) -> bool:
        """True for exactly one caller: the one that declares the run's owner dead."""
        return bool(await self._redis.set(self._keys.run_lost(run_id), "1", nx=True, ex=self._ttl))

    async def remember_approval(self, approval_id: str, run_id: str, user_id: str) -> None:
        await self._redis.set(
            self._keys.approval(approval_id), json.dumps({"run_id": run_id, "user_id": user_id}), ex=self._ttl
        )

    async def approval_owner(self, approval_id: str) -> tuple[str, str] | None:
        raw = await self._redis.get(self._keys.approval(approval_id))
        if raw is None:
            return None
        data = json.loads(raw)
        return str(data["run_id"]), str(data["user_id"])
