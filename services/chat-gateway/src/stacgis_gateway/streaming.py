"""The SSE side: follow a run's Redis Stream (through the process's reader) and send each entry as an
event whose id is the entry id."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import AsyncIterator

from prometheus_client import Counter
from sse_starlette import EventSourceResponse, ServerSentEvent

from .events import TERMINAL, make_event
from .fanout import BEHIND, UNREADABLE, Delivery, StreamHub
from .metrics import ACTIVE_STREAMS, EVENTS_SENT, TIME_TO_FIRST_TOKEN

# Longest single XREAD wait of the process's reader; quiet runs are checked at most this often too.
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


PING = b": ping\n\n"


@functools.cache
def _sent(event: str) -> Counter:
    """EVENTS_SENT's child for one event name (a handful of names), looked up once rather than per event."""
    return EVENTS_SENT.labels(event)


async def follow_entries(hub: StreamHub, run_id: str, after: str, check_now: bool = False) -> AsyncIterator[Delivery]:
    """The run's entries after `after`, in batches, until its final event (which ends the last batch);
    pings due and the reason the stream ends early come in the same deliveries."""
    async with hub.follow(run_id, after, check_now) as follower:
        while True:
            delivery = await follower.next()
            for index, entry in enumerate(delivery.entries):
                if entry.event in TERMINAL:
                    yield Delivery(delivery.entries[: index + 1])
                    return
            yield delivery
            if delivery.closed is not None:
                return


async def tail_run(
    hub: StreamHub,
    run_id: str,
    after: str,
    received_at: float | None = None,
    check_now: bool = False,
) -> AsyncIterator[bytes]:
    """Events after entry id `after` as SSE, until the run's final event; `: ping` comments while idle.

    Whatever arrived together is written in one send. `received_at` (perf_counter of the chat request)
    makes the first `content` event observe the time to first token as the browser sees it.
    """
    first_token = received_at is not None
    ACTIVE_STREAMS.inc()
    try:
        async for delivery in follow_entries(hub, run_id, after, check_now):
            chunk = bytearray()
            for entry in delivery.entries:
                after = entry.id
                _sent(entry.event).inc()
                if first_token and entry.event == "content" and received_at is not None:
                    TIME_TO_FIRST_TOKEN.observe(time.perf_counter() - received_at)
                    first_token = False
                chunk += entry.frame
            if delivery.ping and not chunk:
                chunk += PING
            if delivery.closed == UNREADABLE:
                log.warning("run %s: its events cannot be read, ending the stream", run_id)
                chunk += _unreadable(run_id, after).encode()
            elif delivery.closed == BEHIND:
                # Closed at the last event sent: the browser resumes from it, as after any cut connection.
                chunk += f": too far behind; resume with Last-Event-ID {after}\n\n".encode()
            if chunk:
                yield bytes(chunk)
    finally:
        ACTIVE_STREAMS.dec()


RUN_ID_HEADER = "X-Run-Id"


def sse_response(events: AsyncIterator[bytes], run_id: str | None = None) -> EventSourceResponse:
    headers = {"Cache-Control": "no-cache"}
    if run_id is not None:
        # A browser cut off before the first event still learns which run to resume.
        headers[RUN_ID_HEADER] = run_id
    return EventSourceResponse(
        events,
        headers=headers,
        ping=0,  # the hub's timer pings idle streams
        sep="\n",
    )
