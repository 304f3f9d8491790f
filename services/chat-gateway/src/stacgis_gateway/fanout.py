"""One reader per gateway process: a single task `XREAD`s every run stream some SSE response of this
process follows, and fans the entries out in memory to each response's bounded queue.

Redis connections no longer grow with browsers: the reader holds one connection of its own (so its
blocking read never waits for, or starves, the shared pool), and each response only waits on an
in-memory event. A response that cannot keep up (its queue full) is closed at the last event it was
sent, from which the browser resumes; it never slows the reader or other responses. Heartbeats and the
liveness checks of quiet runs (expired, finished, owner dead) come from timers, in batches, rather
than from one blocked read per stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sse_starlette.sse import AppStatus

from stacgis_common.telemetry import untraced_db_call

from .keys import RedisKeys
from .metrics import SERVICE
from .runstore import RunMeta, RunStore, StreamEntry

log = logging.getLogger(__name__)

# Why a follower stopped before its run's final event.
BEHIND = "behind"  # its queue overflowed: the client was too slow
UNREADABLE = "unreadable"  # Redis could not be read
EXPIRED = "expired"  # the run's keys are gone: nothing more will ever come
FINISHED = "finished"  # the run is finished and everything after the cursor was delivered
SHUTDOWN = "shutdown"  # the server is shutting down: the browser resumes on another replica

# How often the server's exit flag is looked at (as sse-starlette's own watcher does).
EXIT_POLL_SECONDS = 0.5
# A run's liveness is checked in batches of this many keys per pipeline.
CHECK_BATCH = 500


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s stopped", task.get_name(), exc_info=task.exception())


def entry_key(entry_id: str) -> tuple[int, int]:
    """Stream ids compare as (milliseconds, sequence); "0" and "0-0" are the start."""
    millis, _, serial = entry_id.partition("-")
    return int(millis or 0), int(serial or 0)


@dataclass
class Delivery:
    """What a follower gets in one wake-up: every entry queued since, a ping due, or why it ended."""

    entries: list[StreamEntry]
    ping: bool = False
    closed: str | None = None


@dataclass(eq=False)
class Follower:
    """One SSE response following one run."""

    run_id: str
    cursor_id: str  # the last entry queued for it (exclusive lower bound of what it still needs)
    limit: int
    cursor: tuple[int, int] = (0, 0)
    pending: deque[StreamEntry] = field(default_factory=deque)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    last_write: float = field(default_factory=time.monotonic)
    ping_due: bool = False
    closed: str | None = None

    def offer(self, entry: StreamEntry, key: tuple[int, int], read_from: tuple[int, int]) -> None:
        """Queue `entry`, read after `read_from`: only if it is new to this follower and leaves no gap."""
        if self.closed is not None or key <= self.cursor or read_from > self.cursor:
            return  # already queued, or read from past this follower's cursor (it joined during the read)
        if len(self.pending) >= self.limit:
            self.close(BEHIND)
            return
        self.pending.append(entry)
        self.cursor = key
        self.cursor_id = entry.id

    def __post_init__(self) -> None:
        self.cursor = entry_key(self.cursor_id)

    def close(self, reason: str) -> None:
        if self.closed is None:
            self.closed = reason
        self.wakeup.set()

    async def next(self) -> Delivery:
        """Wait for entries, a ping or the end; entries queued before a close are delivered first."""
        while not self.pending and not self.ping_due and self.closed is None:
            self.wakeup.clear()
            await self.wakeup.wait()
        entries = list(self.pending)
        self.pending.clear()
        ping, self.ping_due = self.ping_due and not entries, False
        self.last_write = time.monotonic()
        return Delivery(entries, ping, self.closed)


@dataclass(eq=False)
class _Followed:
    """A run stream the reader includes in its XREAD, and the followers it fans out to."""

    run_id: str
    key: str
    cursor: str  # XREAD id: the oldest cursor of its followers
    followers: set[Follower] = field(default_factory=set)
    last_entry: float = field(default_factory=time.monotonic)


class StreamHub:
    def __init__(
        self,
        redis: Redis,
        reader: Redis,
        keys: RedisKeys,
        runs: RunStore,
        *,
        block_seconds: float,
        heartbeat_seconds: float,
        check_seconds: float,
        slot_ttl_seconds: float,
        queue_max_events: int,
        read_count: int,
        on_lost: Callable[[RunMeta], Awaitable[bool]],
    ) -> None:
        self._redis = redis  # shared pool: wake-ups, liveness checks, draining finished runs
        self._reader = reader  # the reader's own connection, used by nothing else
        self._keys = keys
        self._runs = runs
        self._block_ms = max(1, int(block_seconds * 1000))
        self._heartbeat = heartbeat_seconds
        self._check = check_seconds
        self._slot_ttl = slot_ttl_seconds
        self._queue_max = queue_max_events
        self._count = read_count
        self._on_lost = on_lost
        self._followed: dict[str, _Followed] = {}
        self._by_key: dict[str, _Followed] = {}
        # A stream of this process's own: a new follower appends to it so a blocked XREAD returns at once
        # and the next one includes the new run. Its cursor makes a wake-up sent just before the XREAD
        # count too, so none is missed.
        self._wake_key = keys.reader_wake(uuid.uuid4().hex)
        self._wake_cursor = "0-0"
        self._wake_sent = False
        self._losing: dict[str, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.reads = 0  # XREAD calls (tests and metrics)
        self.restarts = 0  # reader connections that failed and were reopened

    @property
    def followers(self) -> int:
        return sum(len(followed.followers) for followed in self._followed.values())

    @property
    def followed_runs(self) -> int:
        return len(self._followed)

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._read_forever(), name="stream-reader"),
            asyncio.create_task(self._ping_forever(), name="stream-heartbeats"),
            asyncio.create_task(self._check_forever(), name="stream-liveness"),
            asyncio.create_task(self._end_at_exit(), name="stream-exit-watch"),
        ]
        for task in self._tasks:
            task.add_done_callback(_report_crash)

    async def stop(self) -> None:
        tasks = [*self._tasks, *self._losing.values()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        self._tasks = []
        for followed in list(self._followed.values()):
            for follower in followed.followers:
                follower.close(UNREADABLE)
        with contextlib.suppress(RedisError, OSError):
            await self._redis.delete(self._wake_key)
        await self._reader.aclose()

    @contextlib.asynccontextmanager
    async def follow(self, run_id: str, after: str, check_now: bool = False) -> AsyncIterator[Follower]:
        """Follow `run_id` from entry id `after` (exclusive) for as long as the context is open.

        `check_now` looks at the run's status at once (a resume may come after the run ended), instead of
        at the next liveness round.
        """
        follower = Follower(run_id, after, self._queue_max)
        followed = self._followed.get(run_id)
        if followed is None:
            followed = _Followed(run_id, self._keys.run_events(run_id), after)
            self._followed[run_id] = followed
            self._by_key[followed.key] = followed
        elif follower.cursor < entry_key(followed.cursor):
            followed.cursor = after  # read again from the older cursor; the others skip what they have
        followed.followers.add(follower)
        try:
            try:
                await self._wake()
                if check_now:
                    await self._check_runs([followed])
            except (RedisError, OSError) as error:
                # Redis went away between the request and its stream: the stream ends with the error event
                # that says how to resume, not with a cut connection.
                log.warning("run %s cannot be followed now: %r", run_id, error)
                follower.close(UNREADABLE)
            yield follower
        finally:
            followed.followers.discard(follower)
            if not followed.followers and self._followed.get(run_id) is followed:
                del self._followed[run_id]
                del self._by_key[followed.key]

    async def _wake(self) -> None:
        if self._wake_sent:
            return  # one wake-up per XREAD is enough: the next read includes every follower
        self._wake_sent = True
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.xadd(self._wake_key, {"w": "1"}, maxlen=16, approximate=True)
                pipe.expire(self._wake_key, 3600)
                await pipe.execute()
        except (RedisError, OSError):
            self._wake_sent = False
            raise

    # The reader.

    async def _read_forever(self) -> None:
        failures = 0
        while True:
            streams: dict[Any, Any] = {self._wake_key: self._wake_cursor}
            for followed in self._followed.values():
                streams[followed.key] = followed.cursor
            read_from = dict(streams)
            self._wake_sent = False
            try:
                # No span per read: it would be one per event per run stream, and mostly a wait.
                with untraced_db_call(SERVICE, "redis", "XREAD"):
                    response: Any = await self._reader.xread(streams, count=self._count, block=self._block_ms)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as error:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise asyncio.CancelledError from error  # redis-py turns a cancelled read into an error
                failures += 1
                self.restarts += 1
                # redis-py reopens the connection on the next command: one retry at once covers a dropped
                # connection; after that Redis is really unavailable and every follower is told so.
                if failures > 1:
                    log.warning("run streams cannot be read: %r", error)
                    self._close_all(UNREADABLE)
                    await asyncio.sleep(min(0.2 * failures, 2.0))
                continue
            failures = 0
            self.reads += 1
            for key, entries in response or []:  # RESP2: a list of [key, entries]
                if key == self._wake_key:
                    self._wake_cursor = entries[-1][0]
                    continue
                target = self._by_key.get(key)
                if target is not None and entries:
                    self._dispatch(target, read_from[key], entries)

    def _dispatch(self, followed: _Followed, read_from: str, entries: list[Any]) -> None:
        start = entry_key(read_from)
        for entry_id, fields in entries:
            entry = StreamEntry(entry_id, fields.get("event", ""), fields.get("data", ""))
            key = entry_key(entry_id)
            for follower in followed.followers:
                follower.offer(entry, key, start)
        followed.last_entry = time.monotonic()
        open_followers = [follower for follower in followed.followers if follower.closed is None]
        if open_followers:
            # The next read starts at the oldest cursor of them (one that joined meanwhile may be behind).
            followed.cursor = min(open_followers, key=lambda follower: follower.cursor).cursor_id
        for follower in followed.followers:
            follower.wakeup.set()

    def _close_all(self, reason: str) -> None:
        for followed in self._followed.values():
            for follower in followed.followers:
                follower.close(reason)

    # Timers.

    async def _end_at_exit(self) -> None:
        """End every stream once the server is told to stop (uvicorn's exit, as sse-starlette records it),
        so open streams do not hold up its graceful shutdown; new ones are ended as they come."""
        while not AppStatus.should_exit:  # noqa: ASYNC110 - a flag set by a signal handler, not an event
            await asyncio.sleep(EXIT_POLL_SECONDS)
        while True:
            self._close_all(SHUTDOWN)
            await asyncio.sleep(EXIT_POLL_SECONDS)

    async def _ping_forever(self) -> None:
        """One timer for every stream: a follower with nothing written for a heartbeat gets a ping."""
        # At most a second late: a ping sent a quarter heartbeat late can arrive after a proxy's read timeout.
        tick = max(0.05, min(1.0, self._heartbeat / 4))
        while True:
            await asyncio.sleep(tick)
            due = time.monotonic() - self._heartbeat
            for followed in self._followed.values():
                for follower in followed.followers:
                    if follower.last_write <= due and not follower.ping_due:
                        follower.ping_due = True
                        follower.wakeup.set()

    async def _check_forever(self) -> None:
        while True:
            await asyncio.sleep(self._check)
            try:
                await self._check_quiet_runs()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - a Redis hiccup: the next round tries again
                log.warning("liveness check of followed runs failed", extra={"error": repr(error)})

    async def _check_quiet_runs(self) -> None:
        """Runs with nothing new for a while: expired, finished (drain and end) or owned by a dead replica."""
        quiet_since = time.monotonic() - self._check
        await self._check_runs([followed for followed in self._followed.values() if followed.last_entry <= quiet_since])

    async def _check_runs(self, quiet: list[_Followed]) -> None:
        for start in range(0, len(quiet), CHECK_BATCH):
            batch = quiet[start : start + CHECK_BATCH]
            async with self._redis.pipeline(transaction=False) as pipe:
                for followed in batch:
                    pipe.hgetall(self._keys.run_meta(followed.run_id))
                hashes = await pipe.execute()
            for followed, data in zip(batch, hashes, strict=True):
                if not data:
                    self._end(followed, EXPIRED)
                    continue
                meta = RunMeta.from_hash(followed.run_id, data)
                if meta.status == "finished":
                    # The final event is written before the status: what is left ends the stream.
                    cursor = followed.cursor
                    rest = await self._runs.read(followed.run_id, cursor, None, count=self._count)
                    if rest:
                        self._dispatch(
                            followed,
                            cursor,
                            [(entry.id, {"event": entry.event, "data": entry.data}) for entry in rest],
                        )
                    if len(rest) < self._count:
                        self._end(followed, FINISHED)
                elif time.time() - meta.heartbeat > self._slot_ttl and meta.run_id not in self._losing:
                    # Its error event then arrives like any other entry.
                    task = asyncio.create_task(self._declare_lost(meta), name=f"lost-{meta.run_id}")
                    self._losing[meta.run_id] = task

    async def _declare_lost(self, meta: RunMeta) -> None:
        try:
            await self._on_lost(meta)
        except Exception:
            log.exception("could not declare a run lost", extra={"run_id": meta.run_id})
        finally:
            self._losing.pop(meta.run_id, None)

    def _end(self, followed: _Followed, reason: str) -> None:
        for follower in followed.followers:
            follower.close(reason)
