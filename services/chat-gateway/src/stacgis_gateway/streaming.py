"""The SSE side: follow a run's Redis Stream (through the process's reader) and send each entry as an
event whose id is the entry id."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import AsyncIterator

from prometheus_client import Counter
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from .events import TERMINAL, make_event
from .fanout import BEHIND, SHUTDOWN, UNREADABLE, Delivery, StreamHub
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
            elif delivery.closed == SHUTDOWN:
                chunk += f": server shutting down; resume with Last-Event-ID {after}\n\n".encode()
            if chunk:
                yield bytes(chunk)
    finally:
        ACTIVE_STREAMS.dec()


RUN_ID_HEADER = "X-Run-Id"


class EventStream(EventSourceResponse):
    """sse-starlette's response without its task group per response (three tasks, cancel scopes, a lock and
    a timeout per send): the body is sent from the request's own task, and one small task notices the
    client leaving. What the other tasks did is done once per process: heartbeats by the hub's timer, the
    end of every stream at shutdown by the hub's exit watch."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        if scope["type"] != "http" or scope["method"] == "HEAD" or task is None:
            await super().__call__(scope, receive, send)
            return
        state = {"left": False, "ended": False}

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            if not state["ended"]:
                state["left"] = True
                task.cancel()

        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        watcher = asyncio.create_task(watch(), name="sse-disconnect")
        try:
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            state["ended"] = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            # The client left: the body's generator has been closed (its follower let go); nothing to send.
            if not state["left"] or task.uncancel() > 0:
                raise
        finally:
            state["ended"] = True
            watcher.cancel()
            # Cut off during a send, the generator still waits at its yield: close it (its follower lets go).
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()
        if self.background is not None:
            await self.background()


def sse_response(events: AsyncIterator[bytes], run_id: str | None = None) -> EventSourceResponse:
    headers = {"Cache-Control": "no-cache"}
    if run_id is not None:
        # A browser cut off before the first event still learns which run to resume.
        headers[RUN_ID_HEADER] = run_id
    return EventStream(
        events,
        headers=headers,
        ping=0,  # the hub's timer pings idle streams
        sep="\n",
    )
