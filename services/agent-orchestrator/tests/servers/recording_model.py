"""A model server front that records each chat request's bytes, for the request-encoding tests.

It forwards `/api/chat` and `/v1/chat/completions` to the real local model server
(`RECORD_UPSTREAM`, scripted back end) with the body exactly as received, streams the answer back,
and keeps the request's path, `Content-Type` and body bytes (base64) for `GET /_recorded`;
`DELETE /_recorded` clears them.
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

UPSTREAM = os.environ["RECORD_UPSTREAM"]
PORT = int(os.environ["RECORD_PORT"])
RECORDED: list[dict[str, Any]] = []
client = httpx.AsyncClient(base_url=UPSTREAM, timeout=60)


async def chat(request: Request) -> Response:
    raw = await request.body()
    content_type = request.headers.get("content-type", "")
    RECORDED.append(
        {"path": request.url.path, "content_type": content_type, "body": base64.b64encode(raw).decode("ascii")}
    )
    upstream = client.build_request("POST", request.url.path, content=raw, headers={"Content-Type": content_type})
    response = await client.send(upstream, stream=True)

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        finally:
            await response.aclose()

    return StreamingResponse(relay(), status_code=response.status_code, media_type=response.headers.get("content-type"))


async def recorded(request: Request) -> Response:
    if request.method == "DELETE":
        RECORDED.clear()
    return JSONResponse(RECORDED)


async def healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


app = Starlette(
    routes=[
        Route("/api/chat", chat, methods=["POST"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/_recorded", recorded, methods=["GET", "DELETE"]),
        Route("/healthz", healthz),
    ]
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
