"""One fault under steady load: browsers chatting through the ingress, a prober starting a chat every
half second (some of which drop their connection on purpose and resume), readiness of every process
sampled, the fault injected and then repaired, and everything recorded for the checks."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from chat_client import Conversation, chat_with_resume, new_client
from loadgen import sample_gate
from private_stack import PrivateStack

PROBE_INTERVAL = 0.5
# Every third probe drops its connection after this many events and resumes (the browser reconnects).
DROP_AFTER_EVENTS = 2
READINESS_INTERVAL = 0.25
WINDOW_SECONDS = 4.0
# Throughput counts as back when a window after the repair has this share of the phase's own baseline
# (the window before the fault, same load, same machine: other jobs on a shared machine move both).
RECOVERED_FRACTION = 0.7
WARM_UP_SECONDS = 2.0
# A supervised process that is not answering again after this long has not come back by itself.
BACK_BY_ITSELF_BOUND_SECONDS = 180.0


@dataclass
class Fault:
    name: str
    inject: Callable[[PrivateStack], object]
    repair: Callable[[PrivateStack], object]
    # Processes whose /readyz must fail while the fault lasts (and pass again after the repair).
    unready: list[str] = field(default_factory=list)
    # What the probes ask (which tool server they exercise).
    probe_tags: tuple[str, ...] = ("load",)
    outage_seconds: float = 4.0
    # How long after the repair the service may take to be back to full throughput.
    recovery_bound_seconds: float = 30.0
    # For a process the supervisor restarts by itself: whether it answers again. Nothing is repaired
    # then; the phase waits for this and counts the repair as done when it holds.
    comes_back: Callable[[PrivateStack], bool] | None = None


@dataclass
class PhaseRecord:
    fault: Fault
    started: float = 0.0
    injected: float = 0.0
    repaired: float = 0.0
    ended: float = 0.0
    load: list[Conversation] = field(default_factory=list)
    probes: list[Conversation] = field(default_factory=list)
    readiness: dict[str, list[tuple[float, bool]]] = field(default_factory=dict)
    gate_samples: list[tuple[float, int]] = field(default_factory=list)

    @property
    def conversations(self) -> list[Conversation]:
        return self.load + self.probes

    def readiness_during(self, name: str, start: float, end: float) -> list[bool]:
        return [ok for at, ok in self.readiness.get(name, []) if start <= at <= end]

    def first_ready_after(self, name: str, moment: float) -> float | None:
        return next((at for at, ok in self.readiness.get(name, []) if at >= moment and ok), None)

    def clean_again_at(self) -> float | None:
        """When the probes became clean for good: the end of the first successful probe started after the
        repair from which every later probe succeeded too."""
        after = sorted((p for p in self.probes if p.started >= self.repaired), key=lambda p: p.started)
        clean_from: Conversation | None = None
        for probe in after:
            clean_from = (clean_from or probe) if probe.succeeded else None
        return clean_from.ended if clean_from else None

    @property
    def baseline_per_s(self) -> float:
        """Completed runs per second of the steady load before the fault."""
        start = self.started + WARM_UP_SECONDS
        span = max(self.injected - start, 1e-9)
        return sum(1 for c in self.load if c.succeeded and start <= c.ended < self.injected) / span

    def throughput_back_at(self, fraction: float = RECOVERED_FRACTION) -> float | None:
        """End of the first window after the repair with at least `fraction` of the baseline completions."""
        ends = sorted(c.ended for c in self.load if c.succeeded)
        start = self.repaired
        while start + WINDOW_SECONDS <= self.ended:
            count = sum(1 for end in ends if start <= end < start + WINDOW_SECONDS)
            if count >= fraction * self.baseline_per_s * WINDOW_SECONDS:
                return start + WINDOW_SECONDS
            start += 0.5
        return None


def readiness_targets(stack: PrivateStack) -> dict[str, str]:
    targets = {proc.name: f"{proc.url}/readyz" for proc in stack.processes() if proc.name not in ("ingress",)}
    targets["ingress"] = f"{stack.base_url}/api/v1/chat/capacity"
    return targets


async def sample_readiness(targets: dict[str, str], record: PhaseRecord, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=1.0) as client:

        async def check(url: str) -> bool:
            try:
                return (await client.get(url)).status_code == 200
            except httpx.HTTPError:
                return False

        while not stop.is_set():
            now = time.monotonic()
            results = await asyncio.gather(*(check(url) for url in targets.values()))
            for name, ok in zip(targets, results, strict=True):
                record.readiness.setdefault(name, []).append((now, ok))
            await asyncio.sleep(READINESS_INTERVAL)


async def browser(client: httpx.AsyncClient, base: str) -> None:
    """A browser's first page load: it gets its identity cookie before it sends any message (two
    messages sent at once by a browser without a cookie would get two identities)."""
    await client.get(f"{base}/api/v1/chat/sessions")


async def steady_user(base: str, index: int, record: PhaseRecord, stop: asyncio.Event, tags: list[str]) -> None:
    async with new_client() as client:
        await browser(client, base)
        for n in itertools.count():
            if stop.is_set():
                return
            tag = tags[(index + n) % len(tags)]
            conversation = await chat_with_resume(client, base, f"[{tag}] steady user {index} message {n}", timeout=60)
            record.load.append(conversation)
            if conversation.first.status == 503:
                await asyncio.sleep(float(conversation.first.retry_after or 1))


async def prober(base: str, record: PhaseRecord, stop: asyncio.Event, tags: tuple[str, ...]) -> None:
    async with new_client() as client:
        await browser(client, base)
        tasks: list[asyncio.Task[None]] = []

        async def probe(n: int) -> None:
            drop = DROP_AFTER_EVENTS if n % 3 == 2 else None
            message = f"[{tags[n % len(tags)]}] probe {n}"
            record.probes.append(await chat_with_resume(client, base, message, timeout=60, drop_after=drop))

        for n in itertools.count():
            if stop.is_set():
                break
            tasks.append(asyncio.create_task(probe(n)))
            await asyncio.sleep(PROBE_INTERVAL)
        await asyncio.gather(*tasks)


def wait_until_back(comes_back: Callable[[PrivateStack], bool], stack: PrivateStack) -> float:
    """The moment `comes_back` first holds (polled every 0.1 s; a process that never returns fails the phase)."""
    deadline = time.monotonic() + BACK_BY_ITSELF_BOUND_SECONDS
    while not comes_back(stack):
        if time.monotonic() > deadline:
            raise AssertionError(f"not back by itself {BACK_BY_ITSELF_BOUND_SECONDS:g} s after the kill")
        time.sleep(0.1)
    return time.monotonic()


async def run_phase(
    stack: PrivateStack,
    fault: Fault,
    users: int,
    tags: list[str],
    before_seconds: float = WARM_UP_SECONDS + 1.5 * WINDOW_SECONDS,
) -> PhaseRecord:
    record = PhaseRecord(fault, started=time.monotonic())
    stop_load, stop_watch = asyncio.Event(), asyncio.Event()
    watchers = [
        asyncio.create_task(sample_readiness(readiness_targets(stack), record, stop_watch)),
        asyncio.create_task(sample_gate(stack.infra.redis_url, "chat:active_slots", record.gate_samples, stop_watch)),
    ]
    workers = [asyncio.create_task(steady_user(stack.base_url, i, record, stop_load, tags)) for i in range(users)]
    workers.append(asyncio.create_task(prober(stack.base_url, record, stop_load, fault.probe_tags)))
    try:
        await asyncio.sleep(before_seconds)
        record.injected = time.monotonic()
        await asyncio.to_thread(fault.inject, stack)
        if fault.comes_back is not None:
            record.repaired = await asyncio.to_thread(wait_until_back, fault.comes_back, stack)
        else:
            await asyncio.sleep(fault.outage_seconds)
            record.repaired = time.monotonic()
            await asyncio.to_thread(fault.repair, stack)
        # Watch until the probes are clean and throughput is back, or the bound is over.
        deadline = record.repaired + fault.recovery_bound_seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            record.ended = time.monotonic()
            clean = record.clean_again_at()
            back = record.throughput_back_at()
            if clean is not None and back is not None:
                break
        stop_load.set()
        await asyncio.wait_for(asyncio.gather(*workers), timeout=90)
    finally:
        stop_load.set()
        stop_watch.set()
        for task in workers:
            task.cancel()
        for task in watchers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        record.ended = time.monotonic()
    return record
