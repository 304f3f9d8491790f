"""GDAL reads in a bounded pool of worker processes that can be stopped.

A thread stuck in a GDAL read cannot be interrupted: after a deadline it keeps its CPU, memory and
pool slot until the read ends on its own (minutes for a pathological warp or a stalled remote
asset). A worker process can be killed. Each read here runs in one of `io_workers` processes; a read
past its deadline, or whose caller went away, has its process terminated and replaced, so the slot
is free again at once.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from .rasterops import in_gdal_env

T = TypeVar("T")

# Workers are forked from a server process that has these imported already, so a replacement
# worker starts in milliseconds and shares their pages; forking the threaded service itself is unsafe.
PRELOAD = ["stacgis_raster.reads", "stacgis_raster.tile_reads", "stacgis_raster.scene_tiles"]

_gdal_env: dict[str, str | int] = {}


class DeadlineExceeded(Exception):
    """A read ran past its deadline; its worker was stopped."""

    def __init__(self, what: str, seconds: float, setting: str) -> None:
        self.seconds = seconds
        self.limit = setting  # the setting that was exceeded, named in an HTTP error body
        super().__init__(f"{what} took longer than {seconds:g} s (the limit {setting}) and was stopped")


class WorkerCrashed(RuntimeError):
    """A worker process died during a read (killed for memory, a crash in GDAL): our failure, a 500."""


def _init_worker(env: dict[str, str | int]) -> None:
    # pebble's SIGTERM handler is Python code, which cannot run while GDAL blocks in C (a stalled HTTP
    # read): the worker would linger until pebble's SIGKILL 3 s later. A read worker holds nothing
    # to clean up, so it may simply die.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _gdal_env.update(env)


def _call_in_env(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    return in_gdal_env(_gdal_env, fn, *args)


class ReadPool:
    def __init__(self, workers: int, gdal_env: dict[str, str | int]) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self.workers = workers
        self._pool = ProcessPool(max_workers=workers, initializer=_init_worker, initargs=(gdal_env,), context=context)

    async def call(self, fn: Callable[..., T], *args: Any, deadline_s: float, what: str, setting: str) -> T:
        """Run `fn(*args)` in a worker; past `deadline_s` (queueing included) the worker is killed."""
        future = self._pool.schedule(_call_in_env, args=(fn, args), timeout=deadline_s)
        try:
            # Cancelling the wrapper (deadline, client gone) cancels the pebble future, which
            # terminates a running worker and drops a queued task.
            async with asyncio.timeout(deadline_s):
                return await asyncio.wrap_future(future)
        except (TimeoutError, FutureTimeout) as exc:
            future.cancel()  # type: ignore[no-untyped-call]
            raise DeadlineExceeded(what, deadline_s, setting) from exc
        except FutureCancelled as exc:
            raise asyncio.CancelledError() from exc
        except ProcessExpired as exc:
            raise WorkerCrashed(f"the raster read's worker process died ({exc})") from exc

    def close(self) -> None:
        self._pool.stop()  # type: ignore[no-untyped-call]
        self._pool.join(timeout=5)
