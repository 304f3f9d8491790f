"""Bootstrap shared by every MCP tool server: stateless streamable HTTP behind internal-token auth,
with /healthz, /readyz and /metrics beside /mcp."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from .auth import InternalTokenVerifier
from .health import Check
from .http_app import kernel_middleware, kernel_routes
from .settings import ServiceSettings
from .telemetry import setup_telemetry
from .tool_metrics import MeteredMCPServer, ToolMetrics

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]
# Tool errors often quote the offending argument; a 1 MB argument must not come back as a 1 MB error.
MAX_ERROR_CHARS = 2000


def _bounded(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}... [error truncated: {len(text)} characters]"


class BoundedToolErrors:
    """MCP server middleware that caps the size of every error a client gets back."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            result = await call_next(ctx)
        except MCPError as error:
            if len(error.message) <= MAX_ERROR_CHARS:
                raise
            raise MCPError(error.code, _bounded(error.message)) from None
        # Context-tier middleware sees results in wire form.
        if isinstance(result, dict) and result.get("isError"):
            for item in result.get("content", []):
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    item["text"] = _bounded(item["text"])
        return result


def create_mcp_server(
    name: str, settings: ServiceSettings, instructions: str | None = None, tool_metrics: ToolMetrics | None = None
) -> MCPServer[Any]:
    """An MCP server whose every request must carry a valid internal token. With `tool_metrics` (every
    service passes its own), each tool registered on it is counted and timed there (MeteredMCPServer);
    without (test and benchmark servers), nothing is counted."""
    options: dict[str, Any] = {
        "name": name,
        "instructions": instructions,
        "token_verifier": InternalTokenVerifier(settings),
        "middleware": [BoundedToolErrors()],
        "auth": AuthSettings(
            issuer_url="http://stacgis-gateway",  # type: ignore[arg-type]
            resource_server_url=None,
        ),
    }
    if tool_metrics is None:
        return MCPServer(**options)
    return MeteredMCPServer(tool_metrics, **options)


def compact_result(result: dict[str, Any]) -> CallToolResult:
    """Structured content plus the same JSON without indentation as text: what reaches the model's
    context (coordinates pretty-printed one number per line would triple it)."""
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result)


def transport_security(settings: ServiceSettings) -> TransportSecuritySettings:
    if "*" in settings.allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [f"http://{host}" for host in settings.allowed_hosts] + [
        f"https://{host}" for host in settings.allowed_hosts
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=settings.allowed_hosts, allowed_origins=origins
    )


def build_tool_server_app(
    server: MCPServer[Any],
    settings: ServiceSettings,
    readiness: Mapping[str, Check] | None = None,
    extra_routes: Sequence[BaseRoute] | None = None,
    lifespan: Lifespan | None = None,
    trace_file: str | None = None,
) -> Starlette:
    service = server.name
    setup_telemetry(service, settings, trace_file=trace_file)
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        # No tool reports progress, so a call's answer is one JSON body: no SSE framing to write and parse.
        json_response=True,
        transport_security=transport_security(settings),
        host=settings.host,
    )

    @contextlib.asynccontextmanager
    async def combined_lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if lifespan is not None:
                await stack.enter_async_context(lifespan(app))
            await stack.enter_async_context(mcp_app.router.lifespan_context(mcp_app))
            yield

    routes: list[BaseRoute] = [*kernel_routes(readiness), *(extra_routes or []), Mount("", app=mcp_app)]
    return Starlette(routes=routes, lifespan=combined_lifespan, middleware=kernel_middleware(service))
