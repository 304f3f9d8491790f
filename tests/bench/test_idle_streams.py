"""The idle-stream client of bench_stack against a real HTTP server (uvicorn, chunked SSE on loopback):
what it counts as pinged, never pinged and failed is what the server did to each stream."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator

import pytest
import uvicorn
from idle_streams import PATH, IdleClients
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from stacgis_common.testing import free_port

PING_EVERY = 0.3
# What the server does to stream i: PLAN[i % len(PLAN)].
PLAN = ("pinged", "quiet", "refused", "split", "error", "ended", "pinged")
STREAMS = 30
HOLD = 2.0


async def stream(request: Request) -> Response:
    kind = PLAN[int(request.headers["X-Forwarded-User"].rsplit("-", 1)[1]) % len(PLAN)]
    if kind == "refused":
        return Response("busy", status_code=503)

    async def body() -> AsyncIterator[bytes]:
        yield b'id: 1-0\nevent: content\ndata: {"text": "a"}\n\n'
        if kind == "error":
            yield b'id: 2-0\nevent: error\ndata: {"code": "x"}\n\n'
        if kind in ("error", "ended"):
            return
        while True:
            await asyncio.sleep(PING_EVERY)
            if kind == "pinged":
                yield b": ping\n\n"
            elif kind == "split":  # one ping in two chunks (two writes): the client must join them
                yield b": pi"
                await asyncio.sleep(0.02)
                yield b"ng\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    app = Starlette(routes=[Route(PATH, stream, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.mark.asyncio
async def test_counts_what_the_server_did_to_each_stream(server_url: str) -> None:
    kinds = Counter(PLAN[i % len(PLAN)] for i in range(STREAMS))
    async with IdleClients(server_url, "idle-test-", STREAMS, workers=2) as clients:
        opened = await clients.open(timeout=20)
        # Refused streams never open; the others read their first event (the error and ended ones too).
        assert opened.opened == STREAMS - kinds["refused"]
        await clients.hold(HOLD)
        seen = await clients.report()

    pinged = kinds["pinged"] + kinds["split"]
    assert seen.pinged == pinged
    assert seen.never_pinged == kinds["quiet"]
    assert seen.alive == pinged + kinds["quiet"]
    assert seen.failures == Counter(
        {"HTTP 503": kinds["refused"], "error event": kinds["error"], "stream ended": kinds["ended"]}
    )
    # Every pinged stream's first ping came within one ping interval of the hold's start (plus scheduling).
    assert len(seen.first_ping) == pinged
    assert all(0 <= delay <= PING_EVERY + 0.5 for delay in seen.first_ping), seen.first_ping
    assert 0 < seen.client_rss_mb < 2 * 100  # two bare interpreters holding a few streams
