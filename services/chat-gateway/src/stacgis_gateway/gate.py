"""The concurrency gate: a Redis sorted set of active runs, scored by the server time of their last refresh,
and one such set per user, so one client cannot take every slot.

Pruning stale entries, counting and admitting happen in one Lua script, so replicas never over-admit;
a replica that dies leaves slots that are pruned once they are older than the slot TTL.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import redis.exceptions
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from .keys import RedisKeys
from .metrics import GATE_CAPACITY, GATE_SLOTS_IN_USE

log = logging.getLogger(__name__)
# A slot whose release fails stays taken until the TTL prunes it, so a release is retried a few times.
RELEASE_ATTEMPTS = 4
RELEASE_FIRST_DELAY_SECONDS = 0.25

# Server time (not the replicas' clocks) scores every entry, so clock skew between replicas cannot
# prune live slots. Scripts replicate by effects (Redis >= 5), which makes TIME allowed here.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

# KEYS: all runs, the user's runs. ARGV: slot TTL, slots, run id, slots per user.
# Returns {admitted, active runs, 1 when the user's cap (not the total) refused it}.
ACQUIRE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[1]))
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('ZADD', KEYS[2], now, ARGV[3])
  return {1, n, 0}
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return {0, n, 1}
end
if n >= tonumber(ARGV[2]) then
  return {0, n, 0}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('ZADD', KEYS[2], now, ARGV[3])
redis.call('EXPIRE', KEYS[2], math.ceil(tonumber(ARGV[1]) * 2))
return {1, n + 1, 0}
"""
)

# XX: a slot that was already pruned is not brought back (that could exceed the limit).
REFRESH = (
    _NOW
    + """
redis.call('ZADD', KEYS[2], 'XX', now, ARGV[1])
redis.call('EXPIRE', KEYS[2], math.ceil(tonumber(ARGV[2]) * 2))
return redis.call('ZADD', KEYS[1], 'XX', 'CH', now, ARGV[1])
"""
)

RELEASE = (
    _NOW
    + """
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
"""
)

COUNT = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
"""
)


@dataclass(frozen=True)
class Capacity:
    active: int
    max: int

    @property
    def available(self) -> int:
        return max(0, self.max - self.active)

    def as_dict(self) -> dict[str, int]:
        return {"active": self.active, "max": self.max, "available": self.available}


@dataclass(frozen=True)
class Admission:
    admitted: bool
    capacity: Capacity
    user_limited: bool = False  # refused by the per-user cap, not because every slot is taken


class ConcurrencyGate:
    def __init__(
        self, redis: Redis, keys: RedisKeys, max_slots: int, slot_ttl_seconds: float, max_per_user: int
    ) -> None:
        self._redis = redis
        self._keys = keys
        self._key = keys.gate
        self.max_slots = max_slots
        self.max_per_user = max_per_user
        self._ttl = slot_ttl_seconds
        self._acquire = redis.register_script(ACQUIRE)
        self._refresh = redis.register_script(REFRESH)
        self._release = redis.register_script(RELEASE)
        self._count = redis.register_script(COUNT)
        GATE_CAPACITY.set(max_slots)

    def _observe(self, active: int) -> Capacity:
        GATE_SLOTS_IN_USE.set(active)
        return Capacity(active=active, max=self.max_slots)

    async def acquire(self, member: str, user_id: str) -> Admission:
        admitted, active, by_user = await self._acquire(
            keys=[self._key, self._keys.user_gate(user_id)], args=[self._ttl, self.max_slots, member, self.max_per_user]
        )
        return Admission(admitted=bool(admitted), capacity=self._observe(int(active)), user_limited=bool(by_user))

    async def refresh_in(self, pipe: Pipeline, member: str, user_id: str) -> None:
        """Queue keeping a slot alive on `pipe`; its reply is 0 when the slot had already been pruned."""
        await self._refresh(keys=[self._key, self._keys.user_gate(user_id)], args=[member, self._ttl], client=pipe)

    async def release(self, member: str, user_id: str) -> Capacity:
        keys = [self._key, self._keys.user_gate(user_id)]
        delay = RELEASE_FIRST_DELAY_SECONDS
        for attempt in range(1, RELEASE_ATTEMPTS + 1):
            try:
                return self._observe(int(await self._release(keys=keys, args=[self._ttl, member])))
            except redis.exceptions.RedisError as error:
                if attempt == RELEASE_ATTEMPTS:
                    raise
                log.warning("gate release failed; retrying", extra={"run_id": member, "error": repr(error)})
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    async def release_quietly(self, member: str, user_id: str) -> None:
        """Release on an error path: never raises, so the original error is what the caller sees."""
        try:
            await self.release(member, user_id)
        except Exception:
            log.exception("could not release a gate slot; the TTL will prune it", extra={"run_id": member})

    async def capacity(self) -> Capacity:
        return self._observe(int(await self._count(keys=[self._key], args=[self._ttl])))
