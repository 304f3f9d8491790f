"""A run's events into its Redis Stream, in bursts: group commit, never a timer.

The first event of a burst is written at once (so the first token is never held back); events the run
task forwards while that write is in flight are queued and go together in the next pipeline, one round
trip for the lot. Events keep their order and each stays its own entry (and SSE id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from .runstore import RunStore

log = logging.getLogger(__name__)


class EventWriter:
    def __init__(self, runs: RunStore, run_id: str, max_batch: int = 256) -> None:
        self._runs = runs
        self._run_id = run_id
        self._max_batch = max_batch
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._error: Exception | None = None
        self.writes = 0  # pipelines sent (tests, benchmarks)

    def add(self, event: str, payload: dict[str, Any]) -> None:
        """Queue one event; it is written as soon as the previous write is done.

        Raises the error of a failed earlier write: the run must end (with an event) rather than go on
        with a gap in its stream.
        """
        if self._error is not None:
            raise self._error
        self._queue.append((event, payload))
        self._idle.clear()
        self._ready.set()
        if self._task is None:
            self._task = asyncio.create_task(self._write_forever(), name=f"events-{self._run_id}")

    async def flush(self) -> None:
        """Wait until everything queued so far is in Redis; raises the error of a failed write."""
        await self._idle.wait()
        if self._error is not None:
            raise self._error

    async def close(self) -> None:
        """Stop writing (what is queued is written first); never raises."""
        with contextlib.suppress(Exception):
            await self._idle.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _write_forever(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                try:
                    await self._runs.append_many(self._run_id, batch)
                    self.writes += 1
                except Exception as error:  # noqa: BLE001 - kept and raised by the next append or flush
                    log.warning("could not append events", extra={"run_id": self._run_id, "error": repr(error)})
                    self._error = error
                    self._queue = []
            self._idle.set()
