"""Runs' events into their Redis Streams, in group commits across every run of the process; never a timer.

One task writes for the whole process: whatever the run tasks queued while the previous write was in flight
goes in the next pipeline, one round trip for all runs' events (a pipeline per event cost more than the
rest of forwarding it). The first event after a quiet spell is written at once, so the first token is never
held back. Each run's events keep their order and each stays its own entry (and SSE id).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from typing import Any

from .runstore import RunStore

log = logging.getLogger(__name__)


class EventLog:
    """The process's one writer of run events (EventWriter is a run's handle on it)."""

    def __init__(self, runs: RunStore, max_batch: int = 1024) -> None:
        self._runs = runs
        self._max_batch = max_batch
        self._queue: list[tuple[EventWriter, str, dict[str, Any]]] = []
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.writes = 0  # pipelines sent (tests, benchmarks)

    def writer(self, run_id: str) -> EventWriter:
        return EventWriter(self, run_id)

    def _enqueue(self, writer: EventWriter, event: str, payload: dict[str, Any]) -> None:
        self._queue.append((writer, event, payload))
        self._ready.set()
        if self._task is None or self._task.done():
            # A context of its own: not the (trace) context of the run that happened to start it.
            self._task = asyncio.create_task(self._write_forever(), name="run-events", context=contextvars.Context())

    async def _write_forever(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._queue:
                # A run whose write failed gets nothing more written: its stream must not go on after a gap.
                queue = []
                for item in self._queue:
                    if item[0].error is None:
                        queue.append(item)
                    else:
                        item[0].done(None)
                batch, self._queue = queue[: self._max_batch], queue[self._max_batch :]
                if not batch:
                    break
                try:
                    results: list[str | Exception] = list(
                        await self._runs.append_batch([(w.run_id, event, payload) for w, event, payload in batch])
                    )
                    self.writes += 1
                except Exception as error:  # noqa: BLE001 - kept and raised by each run's next add or flush
                    log.warning("could not append events", extra={"events": len(batch), "error": repr(error)})
                    results = [error] * len(batch)
                written: set[EventWriter] = set()
                for (writer, _, _), result in zip(batch, results, strict=True):
                    writer.done(result)
                    written.add(writer)
                for writer in written:
                    writer.writes += 1

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class EventWriter:
    """One run's events on their way to its stream, through the process's EventLog."""

    def __init__(self, events: EventLog, run_id: str) -> None:
        self._events = events
        self.run_id = run_id
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.error: Exception | None = None
        self.writes = 0  # pipelines that carried events of this run (tests, benchmarks)

    def add(self, event: str, payload: dict[str, Any]) -> None:
        """Queue one event; it is written with the next write of the process's events.

        Raises the error of a failed earlier write: the run must end (with an event) rather than go on
        with a gap in its stream.
        """
        if self.error is not None:
            raise self.error
        self._pending += 1
        self._idle.clear()
        self._events._enqueue(self, event, payload)

    def done(self, result: str | Exception | None) -> None:
        """One queued event was written (its entry id), failed (the error) or dropped after a failure (None)."""
        if isinstance(result, Exception) and self.error is None:
            log.warning("could not append events", extra={"run_id": self.run_id, "error": repr(result)})
            self.error = result
        self._pending -= 1
        if self._pending <= 0:
            self._idle.set()

    async def flush(self) -> None:
        """Wait until everything queued so far is in Redis; raises the error of a failed write."""
        await self._idle.wait()
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        """Wait for what is queued to be written; never raises."""
        with contextlib.suppress(Exception):
            await self._idle.wait()
