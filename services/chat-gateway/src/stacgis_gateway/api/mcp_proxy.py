"""The MCP tool servers for outside clients (an IDE, a desktop assistant): `/mcp/<server>`.

A client presents a personal access token (or, in jwt mode, an access token of the identity provider).
The gateway checks it, mints the internal token for that user exactly as it does for a chat run, and
forwards the MCP request to the tool server, passing its answer (JSON or an SSE stream) through as it
comes. The client's own Authorization, Cookie, Origin and Host never reach the tool server.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, StreamingResponse
from opentelemetry import propagate
from prometheus_client import Counter
from starlette.background import BackgroundTask
from starlette.responses import Response

from stacgis_common.arguments import ArgumentError
from stacgis_common.auth import Identity, mint_for
from stacgis_common.http_errors import (
    Forbidden,
    Missing,
    RateLimited,
    Refusal,
    TimedOut,
    Unauthenticated,
    UpstreamFailed,
)

from ..auth import Authenticator, AuthError, JwtAuth
from ..config import GatewaySettings
from ..deps import Gateway, get_gateway
from ..ratelimit import RateLimiter
from ..tokens import TokenRefused, TokenStore, looks_like_token

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

ServerName = Annotated[str, Path(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]
METADATA_PATH = "/.well-known/oauth-protected-resource"
# What a client may tell the tool server; everything else (Authorization, Cookie, Origin, Host) stays here.
REQUEST_HEADERS = ("accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id")
RESPONSE_HEADERS = ("content-type", "cache-control", "mcp-session-id", "mcp-protocol-version")
# Tool servers answering these to the gateway's own token are misconfigured (secret, allowed hosts).
UPSTREAM_REFUSALS = (401, 403, 421)
UNSAFE_HEADER_TEXT = re.compile(r'[^\x20-\x7e]|["\\]')

MCP_REQUESTS = Counter(
    "stacgis_gateway_mcp_requests_total",
    "Requests of outside MCP clients, by server and outcome",
    ["server", "outcome"],
)


class McpProxy:
    """Per process: the token store, the JWT check (jwt mode) and one pooled HTTP client."""

    def __init__(self, settings: GatewaySettings, tokens: TokenStore, auth: Authenticator) -> None:
        self.settings = settings
        self.tokens = tokens
        self.jwt = auth if isinstance(auth, JwtAuth) else None
        self._limiter: RateLimiter | None = None
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=5.0, read=settings.mcp_timeout_seconds, write=30.0, pool=10.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    @property
    def issuer(self) -> str | None:
        return self.settings.jwt_issuer if self.jwt is not None else None

    def limiter(self, gateway: Gateway) -> RateLimiter:
        # Built on first use, over the gateway's Redis: the same fixed window as the chat limits.
        if self._limiter is None:
            self._limiter = RateLimiter(gateway.redis, gateway.keys, self.settings.mcp_requests_per_minute)
        return self._limiter


def proxy_of(request: Request) -> McpProxy:
    """The process's MCP proxy (built at start-up beside the Gateway): its pooled HTTP client for the
    tool servers and the access-token store."""
    proxy: McpProxy = request.app.state.mcp
    return proxy


def _base_url(request: Request, settings: GatewaySettings) -> str:
    return (settings.public_base_url or str(request.base_url)).rstrip("/")


def _refuse(
    request: Request, proxy: McpProxy, server: str, status: int, error: str | None, description: str
) -> Refusal:
    """401/403 with the RFC 6750 challenge, and the metadata URL when an issuer can grant tokens."""
    challenge = 'Bearer realm="stacgis-mcp"'
    if error is not None:
        text = UNSAFE_HEADER_TEXT.sub("", description)[:200]
        challenge += f', error="{error}", error_description="{text}"'
    if proxy.issuer is not None:
        metadata = f"{_base_url(request, proxy.settings)}{METADATA_PATH}/mcp/{server}"
        challenge += f', resource_metadata="{metadata}"'
    if status == 403:
        challenge += f', scope="{server}"'
    MCP_REQUESTS.labels(server, "refused").inc()
    kind = Forbidden if status == 403 else Unauthenticated
    return kind(description, headers={"WWW-Authenticate": challenge})


async def _user(request: Request, proxy: McpProxy, server: str) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        # No error code for a request without credentials (RFC 6750 section 3.1).
        raise _refuse(request, proxy, server, 401, None, "missing bearer token")
    if looks_like_token(value):
        try:
            info = await proxy.tokens.verify(value)
        except TokenRefused as refused:
            raise _refuse(request, proxy, server, 401, "invalid_token", str(refused)) from None
        if server not in info.servers:
            raise _refuse(request, proxy, server, 403, "insufficient_scope", f"this token is not valid for {server}")
        return info.user_id
    if proxy.jwt is not None:
        try:
            return await proxy.jwt.authenticate(request)
        except AuthError as error:
            raise _refuse(request, proxy, server, 401, "invalid_token", str(error)) from None
    raise _refuse(request, proxy, server, 401, "invalid_token", "malformed access token")


def _too_large(limit: int, size: str) -> ArgumentError:
    return ArgumentError("body", f"request body is {size} bytes; at most {limit} are allowed")


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, declared)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit, f"more than {limit}")
    return bytes(body)


async def _relay(response: httpx.Response, deadline: float, server: str) -> AsyncIterator[bytes]:
    """The tool server's bytes as they come, until the request's total time is up."""
    loop = asyncio.get_running_loop()
    chunks = response.aiter_raw()
    try:
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError
            try:
                chunk = await asyncio.wait_for(anext(chunks), remaining)
            except StopAsyncIteration:
                return
            yield chunk
    except TimeoutError:
        # Headers are gone already: the stream just ends, and the client sees an unfinished answer.
        log.warning("MCP request over its time limit; stream cut", extra={"server": server})
        MCP_REQUESTS.labels(server, "timeout").inc()
    except httpx.HTTPError as error:
        log.warning("MCP upstream stream failed", extra={"server": server, "error": repr(error)})
        MCP_REQUESTS.labels(server, "upstream_error").inc()
    finally:
        await response.aclose()  # also when the client left mid-stream


@router.api_route("/mcp/{server}", methods=["GET", "POST", "DELETE"])
async def forward(server: ServerName, request: Request) -> Response:
    proxy = proxy_of(request)
    settings = proxy.settings
    upstream = settings.mcp_servers.get(server)
    if upstream is None:
        known = ", ".join(sorted(settings.mcp_servers))
        raise Missing(f"unknown MCP server; one of: {known}")
    user_id = await _user(request, proxy, server)
    gateway = get_gateway(request)
    # "mcp <user>": a space never occurs in a user id, so this bucket is apart from the chat limits.
    decision = await proxy.limiter(gateway).hit(f"mcp {user_id}")
    if not decision.allowed:
        MCP_REQUESTS.labels(server, "rate_limited").inc()
        raise RateLimited(
            f"more than {settings.mcp_requests_per_minute} MCP requests a minute; retry later",
            headers={"Retry-After": str(decision.retry_after_seconds)},
        )
    body = await _body(request, settings.mcp_max_body_bytes) if request.method == "POST" else b""
    headers = {name: value for name in REQUEST_HEADERS if (value := request.headers.get(name)) is not None}
    headers["authorization"] = f"Bearer {mint_for(settings, Identity(user_id=user_id))}"
    propagate.inject(headers)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.mcp_timeout_seconds
    outgoing = proxy.http.build_request(request.method, upstream, content=body or None, headers=headers)
    try:
        response = await asyncio.wait_for(proxy.http.send(outgoing, stream=True), settings.mcp_timeout_seconds)
    except (TimeoutError, httpx.TimeoutException):
        MCP_REQUESTS.labels(server, "timeout").inc()
        raise TimedOut(f"MCP server {server} did not answer in time") from None
    except httpx.HTTPError as error:
        log.warning("MCP server unreachable", extra={"server": server, "error": repr(error)})
        MCP_REQUESTS.labels(server, "unavailable").inc()
        raise UpstreamFailed(
            f"MCP server {server} is unavailable; retry shortly", headers={"Retry-After": "2"}
        ) from None
    if response.status_code in UPSTREAM_REFUSALS:
        await response.aclose()
        log.error(
            "MCP server refused the gateway's internal token (secret, audience or allowed hosts differ)",
            extra={"server": server, "status": response.status_code},
        )
        MCP_REQUESTS.labels(server, "upstream_error").inc()
        raise UpstreamFailed(f"MCP server {server} refused the gateway")
    MCP_REQUESTS.labels(server, "forwarded").inc()
    out: dict[str, Any] = {name: value for name in RESPONSE_HEADERS if (value := response.headers.get(name))}
    if out.get("content-type", "").startswith("text/event-stream"):
        out["x-accel-buffering"] = "no"  # proxies in front must pass events at once
    return StreamingResponse(
        _relay(response, deadline, server),
        status_code=response.status_code,
        headers=out,
        background=BackgroundTask(response.aclose),
    )


def _metadata(request: Request, resource_path: str) -> Response:
    """RFC 9728 protected-resource metadata; only an auth mode with an issuer has any to give."""
    proxy = proxy_of(request)
    if proxy.issuer is None:
        raise Missing("no authorization server: use a personal access token (POST /api/v1/tokens)")
    base = _base_url(request, proxy.settings)
    return JSONResponse(
        {
            "resource": f"{base}{resource_path}",
            "authorization_servers": [proxy.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "stacgis MCP tool servers",
        },
        headers={"Cache-Control": "max-age=300"},
    )


@router.get(METADATA_PATH)
async def resource_metadata(request: Request) -> Response:
    return _metadata(request, "")


@router.get(METADATA_PATH + "/mcp/{server}")
async def server_metadata(server: ServerName, request: Request) -> Response:
    if server not in proxy_of(request).settings.mcp_servers:
        raise Missing("unknown MCP server")
    return _metadata(request, f"/mcp/{server}")
