"""Refuses request bodies above `GATEWAY_MAX_BODY_BYTES` with a 422 naming the body, before any parsing,
and slow ones with a 408: a body must keep arriving (`GATEWAY_BODY_READ_TIMEOUT_SECONDS` between two
reads at most) and be complete by `GATEWAY_BODY_DEADLINE_SECONDS`, so a client trickling bytes cannot
hold a connection and a worker for long."""

from __future__ import annotations

import asyncio
import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stacgis_common.http_errors import error_body


class BodyLimitMiddleware:
    def __init__(
        self, app: ASGIApp, max_bytes: int, read_timeout_seconds: float = 10.0, deadline_seconds: float = 30.0
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_seconds = read_timeout_seconds
        self.deadline_seconds = deadline_seconds

    async def _refuse(self, send: Send, size: str) -> None:
        message = f"request body is {size} bytes; at most {self.max_bytes} are allowed"
        await self._problem(send, 422, "invalid_argument", message)

    async def _problem(self, send: Send, status: int, code: str, message: str) -> None:
        # Outside the app's error handling: the one error body (stacgis_common.http_errors), written here.
        body = json.dumps(error_body("body", f"body: {message}", code)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 408:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await self._refuse(send, str(declared))
                    return
        # Read the body (bounded) before the app sees it, so a chunked body cannot slip past the limit.
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.deadline_seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                async with asyncio.timeout(min(self.read_timeout_seconds, max(remaining, 0.0))):
                    message = await receive()
            except TimeoutError:
                slow = (
                    f"request body not complete within {self.deadline_seconds:g} s"
                    if remaining <= self.read_timeout_seconds
                    else f"request body stalled for more than {self.read_timeout_seconds:g} s"
                )
                await self._problem(send, 408, "body_timeout", slow)
                return
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send, f"more than {self.max_bytes}")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
