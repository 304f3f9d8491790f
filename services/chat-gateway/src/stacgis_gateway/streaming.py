"""The SSE side: tail a run's Redis Stream and send each entry as an event whose id is the entry id."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator

from redis.exceptions import RedisError
from sse_starlette import EventSourceResponse, ServerSentEvent

from .config import GatewaySettings
from .events import TERMINAL, make_event
from .metrics import ACTIVE_STREAMS, EVENTS_SENT, TIME_TO_FIRST_TOKEN
from .runs import RunManager
from .runstore import RunStore

# Longest single XREAD wait: also how often an idle stream checks that its run is still alive.
MAX_BLOCK_SECONDS = 5.0
# How long a stream waits out an unreachable Redis (a restart) before it ends with an error event.
STORE_OUTAGE_SECONDS = 15.0
STORE_RETRY_SECONDS = 0.5

log = logging.getLogger(__name__)


UNREADABLE = (
    f"the run's events could not be read for {STORE_OUTAGE_SECONDS:.0f} s (Redis unavailable); "
    "resume with Last-Event-ID {after} or ask again"
)
GONE = "the run's events are gone (expired or lost by Redis); ask again"


def _stream_ended(run_id: str, after: str, code: str, message: str) -> ServerSentEvent:
    """The final event of a stream whose run can no longer be followed: never a silently cut connection."""
    data = make_event(run_id, 0, 0, "error", {"code": code, "message": message.format(after=after)})
    return ServerSentEvent(data=json.dumps(data, separators=(",", ":")), event="error")


async def tail_run(
    runs: RunStore,
    manager: RunManager,
    settings: GatewaySettings,
    run_id: str,
    after: str,
    received_at: float | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """Events after entry id `after`, until the run's final event; `: ping` comments while idle.

    `received_at` (perf_counter of the chat request) makes the first `content` event observe the time to
    first token as the browser sees it.
    """
    block_ms = int(min(settings.heartbeat_seconds, MAX_BLOCK_SECONDS, settings.gate_refresh_seconds * 2) * 1000)
    last_write = time.monotonic()
    first_token = received_at is not None
    failing_since: float | None = None
    ACTIVE_STREAMS.inc()
    try:
        while True:
            try:
                entries = await runs.read(run_id, after, max(block_ms, 1))
                meta = None if entries else await runs.meta(run_id)
                rest = await runs.read(run_id, after, None) if meta is not None and meta.status == "finished" else []
            except (RedisError, OSError):
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since >= STORE_OUTAGE_SECONDS:
                    log.warning("run %s: event stream unreadable, ending the SSE stream", run_id, exc_info=True)
                    yield _stream_ended(run_id, after, "stream_unavailable", UNREADABLE)
                    return
                await asyncio.sleep(STORE_RETRY_SECONDS)
                continue
            failing_since = None
            for entry in entries:
                after = entry.id
                EVENTS_SENT.labels(entry.event).inc()
                if first_token and entry.event == "content" and received_at is not None:
                    TIME_TO_FIRST_TOKEN.observe(time.perf_counter() - received_at)
                    first_token = False
                yield ServerSentEvent(data=entry.data, event=entry.event, id=entry.id)
                if entry.event in TERMINAL:
                    return
            if entries:
                last_write = time.monotonic()
                continue
            if time.monotonic() - last_write >= settings.heartbeat_seconds:
                yield ServerSentEvent(comment="ping")
                last_write = time.monotonic()
            if meta is None:
                # Its record expired or Redis lost it: nothing more will ever come, and the browser must know.
                yield _stream_ended(run_id, after, "run_lost", GONE)
                return
            if meta.status == "finished":
                # The final event is written before the status: send what was left, then stop.
                for entry in rest:
                    EVENTS_SENT.labels(entry.event).inc()
                    yield ServerSentEvent(data=entry.data, event=entry.event, id=entry.id)
                return
            if time.time() - meta.heartbeat > settings.slot_ttl_seconds:
                with contextlib.suppress(RedisError, OSError):  # the next read retries or ends the stream
                    await manager.declare_lost(meta)
    finally:
        ACTIVE_STREAMS.dec()


RUN_ID_HEADER = "X-Run-Id"


def sse_response(events: AsyncIterator[ServerSentEvent], run_id: str | None = None) -> EventSourceResponse:
    headers = {"Cache-Control": "no-cache"}
    if run_id is not None:
        # A browser cut off before the first event still learns which run to resume.
        headers[RUN_ID_HEADER] = run_id
    return EventSourceResponse(
        events,
        headers=headers,
        ping=0,  # tail_run sends its own `: ping` when there is nothing else to send
        sep="\n",
    )
