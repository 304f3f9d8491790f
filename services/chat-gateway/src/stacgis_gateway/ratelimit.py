"""Per-user limit on started runs, and per-address limit on requests without an identity: a fixed
one-minute window counted in Redis, shared by all replicas."""

from __future__ import annotations

import time
from dataclasses import dataclass

from redis.asyncio import Redis

from .keys import RedisKeys

WINDOW_SECONDS = 60

INCREMENT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    retry_after_seconds: int


class RateLimiter:
    def __init__(self, redis: Redis, keys: RedisKeys, per_minute: int) -> None:
        self._keys = keys
        self._per_minute = per_minute
        self._increment = redis.register_script(INCREMENT)

    async def hit(self, user_id: str) -> RateDecision:
        return await self._hit(user_id, self._per_minute)

    async def hit_address(self, address: str, per_minute: int) -> RateDecision:
        # A space never occurs in a user id (USER_ID), so an address bucket cannot be a user's.
        return await self._hit(f"ip {address}", per_minute)

    async def _hit(self, subject: str, per_minute: int) -> RateDecision:
        if per_minute <= 0:
            return RateDecision(True, 0)
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        count = int(await self._increment(keys=[self._keys.rate(subject, window)], args=[WINDOW_SECONDS + 5]))
        if count <= per_minute:
            return RateDecision(True, 0)
        return RateDecision(False, max(1, int((window + 1) * WINDOW_SECONDS - now) + 1))
