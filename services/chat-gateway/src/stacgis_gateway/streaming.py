"""The SSE side: tail a run's Redis Stream and send each entry as an event whose id is the entry id."""

from __future__ import annotations

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

log = logging.getLogger(__name__)


def _unreadable(run_id: str, after: str) -> ServerSentEvent:
    """The final event of a stream whose events Redis cannot give now: an error, not a cut connection."""
    message = f"the run's events cannot be read (Redis unavailable); resume with Last-Event-ID {after} or ask again"
    data = make_event(run_id, 0, 0, "error", {"code": "stream_unavailable", "message": message})
    # An id of its own, just after the last one sent: without one, SSE clients repeat the previous event's id.
    millis, _, serial = after.partition("-")
    return ServerSentEvent(
        data=json.dumps(data, separators=(",", ":")), event="error", id=f"{millis}-{int(serial or 0) + 1}"
    )


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
    ACTIVE_STREAMS.inc()
    try:
        while True:
            try:
                entries = await runs.read(run_id, after, max(block_ms, 1))
            except (RedisError, OSError):
                log.warning("run %s: its events cannot be read, ending the stream", run_id, exc_info=True)
                yield _unreadable(run_id, after)
                return
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
            meta = await runs.meta(run_id)
            if meta is None:
                return  # expired: nothing more will ever come
            if meta.status == "finished":
                # The final event is written before the status: read what is left, then stop.
                for entry in await runs.read(run_id, after, None):
                    EVENTS_SENT.labels(entry.event).inc()
                    yield ServerSentEvent(data=entry.data, event=entry.event, id=entry.id)
                return
            if time.time() - meta.heartbeat > settings.slot_ttl_seconds:
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
