"""A model server with a small context window, for the orchestrator's overflow tests.

It speaks the Ollama protocol in front of the real local model server (scripted back end): it counts
a prompt's tokens its own way (two characters a token: more than the orchestrator's estimate, as a
real tokenizer on JSON often is), answers HTTP 400 with the model server's overflow wording when a
prompt exceeds `WINDOW_TOKENS`, reports that window in `/api/show`, and otherwise forwards the
request (as model `scripted`, whatever model was asked), putting its own count into
`prompt_eval_count`. `/_window/log` lists every chat request (count, status, body);
`PUT /_window/size {"tokens": N}` changes the window.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

UPSTREAM = os.environ["WINDOW_UPSTREAM"]
STATE = {"window": int(os.environ.get("WINDOW_TOKENS", "4096"))}
PORT = int(os.environ["WINDOW_PORT"])
CHARS_PER_TOKEN = 2
LOG: list[dict[str, Any]] = []
client = httpx.AsyncClient(base_url=UPSTREAM, timeout=60)


def count_tokens(body: dict[str, Any]) -> int:
    chars = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or [])) for m in body["messages"])
    chars += len(json.dumps(body.get("tools") or []))
    return chars // CHARS_PER_TOKEN


async def chat(request: Request) -> Response:
    body = await request.json()
    tokens = count_tokens(body)
    window = STATE["window"]
    entry = {"tokens": tokens, "window": window, "status": 200, "model": body.get("model"), "body": body}
    LOG.append(entry)
    body = {**body, "model": "scripted"}
    if tokens > window:
        entry["status"] = 400
        message = f"the prompt is {tokens} tokens, more than the context window of {window} (options.num_ctx)"
        return JSONResponse({"error": message}, status_code=400)
    if not body.get("stream", True):
        response = await client.post("/api/chat", json=body)
        data = response.json()
        if isinstance(data, dict) and "prompt_eval_count" in data:
            data["prompt_eval_count"] = tokens
        return JSONResponse(data, status_code=response.status_code)

    upstream = client.build_request("POST", "/api/chat", json=body)
    response = await client.send(upstream, stream=True)

    async def lines() -> AsyncIterator[bytes]:
        try:
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                chunk = json.loads(line)
                if chunk.get("done"):
                    chunk["prompt_eval_count"] = tokens
                yield (json.dumps(chunk) + "\n").encode()
        finally:
            await response.aclose()

    return StreamingResponse(lines(), status_code=response.status_code, media_type="application/x-ndjson")


async def show(request: Request) -> Response:
    body = await request.json()
    return JSONResponse(
        {
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": STATE["window"]},
            "capabilities": ["completion", "tools"],
            "details": {"family": "qwen2"},
            "model": body.get("model"),
        }
    )


async def forward(request: Request) -> Response:
    response = await client.request(request.method, request.url.path, content=await request.body())
    return Response(response.content, status_code=response.status_code, media_type="application/json")


async def log(_: Request) -> Response:
    return JSONResponse(LOG)


async def size(request: Request) -> Response:
    STATE["window"] = int((await request.json())["tokens"])
    return JSONResponse(STATE)


async def healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


app = Starlette(
    routes=[
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/show", show, methods=["POST"]),
        Route("/api/version", forward),
        Route("/api/embed", forward, methods=["POST"]),
        Route("/_window/log", log),
        Route("/_window/size", size, methods=["PUT"]),
        Route("/healthz", healthz),
    ]
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
