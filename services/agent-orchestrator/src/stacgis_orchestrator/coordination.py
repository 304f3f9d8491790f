"""Runs, cancellations and approvals across replicas, through Redis.

A run is recorded in Redis (owner, replica) so that a cancel or an approval decision can arrive at
any replica: the receiving replica checks the caller owns the run, records the decision atomically
(Lua) and publishes it on a channel keyed by run id or approval id. Every replica listens to those
channels and wakes the run it holds. Waiters also re-read the record every second, so a pub/sub
message lost in a reconnect delays a decision by at most that, never loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from stacgis_common.redis_client import redis_client

log = logging.getLogger(__name__)

PREFIX = "stacgis:orchestrator"
RUN_TTL_SECONDS = 3600
POLL_SECONDS = 1.0

DECIDE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or redis.call('HGET', KEYS[1], 'user_id') ~= ARGV[1] then return 'missing' end
if status ~= 'pending' then return status end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'reason', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 'ok'
"""
EXPIRE_APPROVAL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if status == 'pending' then redis.call('HSET', KEYS[1], 'status', 'expired') return 'expired' end
return status
"""
REGISTER = """
if redis.call('HSETNX', KEYS[1], 'user_id', ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'session_id', ARGV[2], 'replica', ARGV[3], 'started_at', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
CANCEL = """
if redis.call('HGET', KEYS[1], 'user_id') ~= ARGV[1] then return 'missing' end
redis.call('HSET', KEYS[1], 'cancel', '1')
redis.call('PUBLISH', ARGV[2], '1')
return 'ok'
"""

DecisionStatus = Literal["approved", "rejected", "expired"]


@dataclass(frozen=True)
class Decision:
    status: DecisionStatus
    reason: str = ""


class NotFound(Exception):
    """No such run or approval for this caller (another user's ids look the same as unknown ones)."""


class Conflict(Exception):
    """The approval was already decided or expired."""


def run_key(run_id: str) -> str:
    return f"{PREFIX}:run:{run_id}"


def approval_key(approval_id: str) -> str:
    return f"{PREFIX}:approval:{approval_id}"


def cancel_channel(run_id: str) -> str:
    return f"{PREFIX}:cancel:{run_id}"


def decision_channel(approval_id: str) -> str:
    return f"{PREFIX}:decision:{approval_id}"


class Coordinator:
    def __init__(self, redis_url: str) -> None:
        self.redis: aioredis.Redis = redis_client(redis_url)
        self.replica = uuid.uuid4().hex[:12]
        self._cancel_handlers: dict[str, Callable[[], None]] = {}
        self._waiters: dict[str, asyncio.Future[Decision]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._decide = self.redis.register_script(DECIDE)
        self._expire = self.redis.register_script(EXPIRE_APPROVAL)
        self._cancel = self.redis.register_script(CANCEL)
        self._register = self.redis.register_script(REGISTER)

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen(), name="coordination-listener")

    async def wait_subscribed(self, seconds: float = 5.0) -> None:
        await asyncio.wait_for(self._subscribed.wait(), seconds)

    async def _listen(self) -> None:
        delay = 0.2
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.psubscribe(f"{PREFIX}:cancel:*", f"{PREFIX}:decision:*")
                self._subscribed.set()
                delay = 0.2
                async for message in pubsub.listen():
                    if message.get("type") == "pmessage":
                        self._dispatch(str(message["channel"]), str(message["data"]))
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as error:
                self._subscribed.clear()
                log.warning("coordination listener lost Redis (%s); reconnecting in %.1f s", error, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _dispatch(self, channel: str, data: str) -> None:
        if channel.startswith(f"{PREFIX}:cancel:"):
            handler = self._cancel_handlers.get(channel.removeprefix(f"{PREFIX}:cancel:"))
            if handler is not None:
                handler()
        elif channel.startswith(f"{PREFIX}:decision:"):
            waiter = self._waiters.get(channel.removeprefix(f"{PREFIX}:decision:"))
            if waiter is not None and not waiter.done():
                payload = json.loads(data)
                waiter.set_result(Decision(payload["status"], payload.get("reason", "")))

    # Runs.

    async def register_run(
        self, run_id: str, user_id: str, session_id: str | None, on_cancel: Callable[[], None]
    ) -> bool:
        """Record a new run held by this replica; False when the id is already taken."""
        # One round trip: the run waits for this before its first event.
        arguments: list[str | int] = [user_id, session_id or "", self.replica, str(time.time()), RUN_TTL_SECONDS]
        if not await self._register(keys=[run_key(run_id)], args=arguments):
            return False
        self._cancel_handlers[run_id] = on_cancel
        return True

    async def cancel_requested(self, run_id: str) -> bool:
        """Read the cancel flag; also keeps the record of a long run alive (checked every step)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hget(run_key(run_id), "cancel")
            pipe.expire(run_key(run_id), RUN_TTL_SECONDS)
            flag, _ = await pipe.execute()
        return bool(flag == "1")

    async def finish_run(self, run_id: str) -> None:
        self._cancel_handlers.pop(run_id, None)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.delete(run_key(run_id))

    async def request_cancel(self, run_id: str, user_id: str) -> None:
        result = await self._cancel(keys=[run_key(run_id)], args=[user_id, cancel_channel(run_id)])
        if result != "ok":
            raise NotFound(run_id)

    # Approvals.

    async def open_approval(self, run_id: str, user_id: str, tool: str, timeout_seconds: float) -> str:
        approval_id = f"apr_{uuid.uuid4().hex}"
        loop = asyncio.get_running_loop()
        self._waiters[approval_id] = loop.create_future()
        key = approval_key(approval_id)
        await self.redis.hset(key, mapping={"run_id": run_id, "user_id": user_id, "tool": tool, "status": "pending"})
        await self.redis.expire(key, int(timeout_seconds) + 300)
        return approval_id

    async def wait_for_decision(self, approval_id: str, timeout_seconds: float) -> Decision:
        waiter = self._waiters[approval_id]
        deadline = time.monotonic() + timeout_seconds
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    status = await self._expire(keys=[approval_key(approval_id)])
                    if status in ("approved", "rejected"):
                        reason = await self.redis.hget(approval_key(approval_id), "reason") or ""
                        return Decision("approved" if status == "approved" else "rejected", str(reason))
                    return Decision("expired", f"no decision within {timeout_seconds:g} s")
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(waiter), min(POLL_SECONDS, remaining))
                record = await self.redis.hgetall(approval_key(approval_id))
                if record.get("status") == "approved":
                    return Decision("approved", str(record.get("reason", "")))
                if record.get("status") == "rejected":
                    return Decision("rejected", str(record.get("reason", "")))
        finally:
            self._waiters.pop(approval_id, None)

    async def decide(self, approval_id: str, user_id: str, approved: bool, reason: str) -> DecisionStatus:
        status: DecisionStatus = "approved" if approved else "rejected"
        payload = json.dumps({"status": status, "reason": reason})
        result = await self._decide(
            keys=[approval_key(approval_id)], args=[user_id, status, reason, decision_channel(approval_id), payload]
        )
        if result == "missing":
            raise NotFound(approval_id)
        if result != "ok":
            raise Conflict(str(result))
        return status

    async def ping(self) -> None:
        await self.redis.ping()

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await self.redis.aclose()
