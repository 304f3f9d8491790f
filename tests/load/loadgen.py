"""A bounded load generator on loopback: N virtual browsers chatting for a fixed time, each waiting
Retry-After when the gate is full, plus a sampler of the gate's Redis sorted set."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis.asyncio as aioredis
from chat_client import ChatResult, chat, new_client, percentile

# A browser that got no usable Retry-After waits this long (the frontend's queue mode polls too).
FALLBACK_WAIT_SECONDS = 2.0


@dataclass
class LoadRun:
    results: list[ChatResult] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    gate_samples: list[tuple[float, int]] = field(default_factory=list)

    @property
    def completed(self) -> list[ChatResult]:
        return [r for r in self.results if r.complete]

    @property
    def refused(self) -> list[ChatResult]:
        return [r for r in self.results if r.status == 503]

    @property
    def other(self) -> list[ChatResult]:
        return [r for r in self.results if not r.complete and not r.refused]

    @property
    def max_gate(self) -> int:
        return max((count for _, count in self.gate_samples), default=0)

    def completions_between(self, start: float, end: float) -> int:
        return sum(1 for r in self.completed if start <= r.ended < end)

    def summary(self) -> dict[str, float]:
        done = self.completed
        duration = max(self.ended - self.started, 1e-9)
        first = [e.at - r.started for r in done if (e := r.first("content")) is not None]
        return {
            "requests": len(self.results),
            "completed": len(done),
            "refused_503": len(self.refused),
            "other": len(self.other),
            "runs_per_s": len(done) / duration,
            "ttft_p50_s": percentile(first, 0.5),
            "ttft_p95_s": percentile(first, 0.95),
            "run_p50_s": percentile([r.ended - r.started for r in done], 0.5),
            "run_p95_s": percentile([r.ended - r.started for r in done], 0.95),
            "max_gate": self.max_gate,
        }


async def virtual_user(
    base: str,
    deadline: float,
    message: Callable[[int], str],
    results: list[ChatResult],
    timeout: float,
    stop: asyncio.Event,
) -> None:
    """One browser: chat, read the whole answer, pause a little; on 503 wait Retry-After; until the deadline."""
    async with new_client(timeout) as client:
        count = 0
        while time.monotonic() < deadline and not stop.is_set():
            result = await chat(client, base, message(count), timeout=timeout)
            count += 1
            results.append(result)
            if result.status == 503:
                wait = float(result.retry_after) if result.refused and result.retry_after else FALLBACK_WAIT_SECONDS
                # Browsers do not retry in lock step: spread the retries a little.
                wait *= random.uniform(0.8, 1.2)
            elif result.complete:
                wait = random.uniform(0.0, 0.3)
            else:
                wait = 1.0
            await asyncio.sleep(max(0.0, min(wait, deadline - time.monotonic())))


async def sample_gate(
    redis_url: str, key: str, samples: list[tuple[float, int]], stop: asyncio.Event, interval: float = 0.05
) -> None:
    """How many slots the gate's sorted set holds, every `interval` seconds."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        while not stop.is_set():
            with contextlib.suppress(OSError, aioredis.RedisError):  # Redis itself may be the fault under test
                samples.append((time.monotonic(), int(await client.zcard(key))))
            await asyncio.sleep(interval)
    finally:
        await client.aclose()


async def run_load(
    base: str,
    users: int,
    seconds: float,
    message: Callable[[int, int], str],
    *,
    timeout: float = 90.0,
    redis_url: str | None = None,
    gate_key: str = "chat:active_slots",
    ramp_seconds: float = 0.0,
) -> LoadRun:
    """`users` browsers for `seconds`; requests under way at the deadline finish (bounded by `timeout`)."""
    run = LoadRun(started=time.monotonic())
    deadline = run.started + seconds
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_gate(redis_url, gate_key, run.gate_samples, stop)) if redis_url else None

    async def user(index: int) -> None:
        if ramp_seconds:
            await asyncio.sleep(ramp_seconds * index / users)
        await virtual_user(base, deadline, lambda n: message(index, n), run.results, timeout, stop)

    try:
        await asyncio.gather(*(user(i) for i in range(users)))
    finally:
        stop.set()
        if sampler is not None:
            await sampler
        run.ended = time.monotonic()
    return run
