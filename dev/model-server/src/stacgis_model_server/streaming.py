"""The ASGI response that runs a chat generation and notices when the client goes away.

It waits for the back end's first event before sending headers, so a failure before any output is
a real HTTP status (what Ollama does), and a stalled back end leaves the client with nothing at all.
A watcher on the ASGI receive channel cancels the generation the moment the client disconnects and
records that in the request log, whether or not anything was being written at the time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .conversation import BackendError, ChatEvent
from .request_log import LogEntry
from .wire_common import ChatRenderer


async def _wait_for_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class ChatResponse(Response):
    def __init__(self, events: AsyncIterator[ChatEvent], renderer: ChatRenderer, entry: LogEntry, stream: bool) -> None:
        # Like StreamingResponse: no body attribute, so no Content-Length header. No caching or proxy
        # buffering either: each chunk must reach the client when it is written.
        self.status_code = 200
        self.media_type = renderer.media_type
        self.background = None
        self.init_headers({"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.events = events
        self.renderer = renderer
        self.entry = entry
        self.stream = stream
        self.scope: Scope = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        pump = asyncio.create_task(self._pump(send))
        watcher = asyncio.create_task(_wait_for_disconnect(receive))
        try:
            done, _ = await asyncio.wait({pump, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if pump not in done:
                self.entry.finish("client_disconnected")
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await pump
            else:
                try:
                    pump.result()
                except OSError:
                    # Writing to a closed connection: the client left between two chunks.
                    self.entry.finish("client_disconnected")
        finally:
            if not pump.done():
                pump.cancel()
            watcher.cancel()
            aclose = getattr(self.events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    async def _send_response(self, send: Send, response: Response) -> None:
        async def no_receive() -> dict[str, str]:
            return {"type": "http.disconnect"}

        await response(self.scope, no_receive, send)

    async def _pump(self, send: Send) -> None:
        renderer = self.renderer
        try:
            first = await anext(self.events)
        except BackendError as error:
            self.entry.finish("error", error.message, error.status)
            await self._send_response(send, renderer.error_response(error))
            return
        except StopAsyncIteration:
            empty = BackendError(500, "the back end produced no output")
            self.entry.finish("error", empty.message, empty.status)
            await self._send_response(send, renderer.error_response(empty))
            return

        if not self.stream:
            await self._pump_whole(send, first)
            return

        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        event: ChatEvent | None = first
        try:
            while event is not None:
                for chunk in renderer.render(event):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    self.entry.chunks_sent += 1
                event = await anext(self.events, None)
        except BackendError as error:
            # Headers are out: Ollama reports a late failure as an {"error": ...} line.
            self.entry.finish("error", error.message, error.status)
            await send({"type": "http.response.body", "body": renderer.error_line(error), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        for chunk in renderer.closing():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        self.entry.finish("completed")

    async def _pump_whole(self, send: Send, first: ChatEvent) -> None:
        renderer = self.renderer
        renderer.collect(first)
        try:
            async for event in self.events:
                renderer.collect(event)
        except BackendError as error:
            self.entry.finish("error", error.message, error.status)
            await self._send_response(send, renderer.error_response(error))
            return
        body = json.dumps(renderer.collected(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})
        self.entry.chunks_sent = 1
        self.entry.finish("completed")
