"""What every HTTP app of stacgis runs around its own routes (the gateway's and the orchestrator's
FastAPI apps, the tool servers' Starlette apps): OpenTelemetry, the HTTP metrics, the one error
table, /healthz, /readyz and /metrics; and how each process serves its app."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import uvicorn
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from .health import Check, health_routes
from .http_errors import ErrorMiddleware, ErrorTable
from .settings import ServiceSettings
from .telemetry import OTEL_ASGI_OPTIONS, MetricsMiddleware, metrics_endpoint


def kernel_middleware(service: str, *inner: Middleware, errors: ErrorTable | None = None) -> list[Middleware]:
    """The middleware stack, outermost first: OpenTelemetry (so an unexpected error's log line and 500
    carry the request's trace id), the HTTP metrics, the app's own `inner` middleware, then innermost
    the error table: whatever no handler answered gets the one error body."""
    stack = [
        Middleware(OpenTelemetryMiddleware, **OTEL_ASGI_OPTIONS),
        Middleware(MetricsMiddleware, service=service),
        *inner,
    ]
    if errors is not None:
        stack.append(Middleware(ErrorMiddleware, table=errors))
    return stack


def kernel_routes(readiness: Mapping[str, Check] | None = None) -> list[BaseRoute]:
    """/healthz, /readyz (running the `readiness` checks) and /metrics (the Prometheus registry)."""
    return [*health_routes(readiness), Route("/metrics", metrics_endpoint, methods=["GET"], include_in_schema=False)]


def serve(
    app: Any,
    settings: ServiceSettings,
    *,
    proxy_headers: bool = True,
    http: Literal["auto", "h11", "httptools"] = "auto",
    graceful_seconds: int = 10,
) -> None:
    """Serve `app` on the service's host and port with the JSON logs already set up (no uvicorn log
    config). `proxy_headers=False` keeps the peer address the real one (the gateway decides on it)."""
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        proxy_headers=proxy_headers,
        http=http,
        timeout_graceful_shutdown=graceful_seconds,
    )
