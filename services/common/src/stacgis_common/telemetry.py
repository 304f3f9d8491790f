"""Tracing (OpenTelemetry, W3C trace context) and HTTP golden-signal metrics (Prometheus)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.instrumentation.redis import RedisInstrumentor
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .logs import configure_logging
from .settings import ServiceSettings

HTTP_REQUESTS = Counter("http_server_requests_total", "HTTP requests served", ["service", "method", "route", "status"])
HTTP_DURATION = Histogram(
    "http_server_request_duration_seconds",
    "Time to the response headers of HTTP requests",
    ["service", "method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)

# Metrics derived from spans (see SpanMetricsProcessor), named after OpenTelemetry's
# db.client.operation.duration and mcp.server.operation.duration.
DB_DURATION = Histogram(
    "db_client_operation_duration_seconds",
    "Time of database client operations (Postgres and Redis), from their client spans",
    ["service", "db_system", "db_operation"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
MCP_DURATION = Histogram(
    "mcp_server_operation_duration_seconds",
    "Time MCP servers take to handle a request (tools/call, resources/read, ...), from the MCP SDK's server spans",
    ["service", "mcp_method_name", "gen_ai_tool_name", "error_type"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)

# Options for OpenTelemetry's ASGI middleware in every service: no spans for probes and scrapes, and
# none per streamed chunk (a span per send halved the token rate of streamed responses).
OTEL_ASGI_OPTIONS: dict[str, Any] = {
    "excluded_urls": "healthz,readyz,metrics",
    "exclude_spans": ["send", "receive"],
}


@contextlib.contextmanager
def untraced_db_call(service: str, system: str, operation: str) -> Iterator[None]:
    """A database call on a streaming hot path (one per streamed token or per read of every stream) with
    no client span of its own, which cost more than the call; still timed into DB_DURATION."""
    started = time.perf_counter()
    try:
        with suppress_instrumentation():
            yield
    finally:
        DB_DURATION.labels(service, system, operation).observe(time.perf_counter() - started)


_configured = False
_lock = threading.Lock()


class JsonLinesSpanExporter(SpanExporter):
    """Appends finished spans as JSON lines; lets tests and local runs inspect whole traces."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            context = span.get_span_context()
            parent = span.parent
            lines.append(
                json.dumps(
                    {
                        "name": span.name,
                        "service": span.resource.attributes.get("service.name"),
                        "trace_id": format(context.trace_id, "032x") if context else None,
                        "span_id": format(context.span_id, "016x") if context else None,
                        "parent_span_id": format(parent.span_id, "016x") if parent else None,
                        "kind": span.kind.name,
                        "start_ns": span.start_time,
                        "end_ns": span.end_time,
                        "status": span.status.status_code.name,
                        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
                    }
                )
            )
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
        return SpanExportResult.SUCCESS


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


class SpanMetricsProcessor(SpanProcessor):
    """Turns finished spans into Prometheus histograms, so every service gets the same views for free.

    - database client spans (asyncpg, redis) -> DB_DURATION, by operation (SELECT, XADD, PIPELINE, ...);
      anything that does not look like one is counted as "other" to keep labels bounded.
    - MCP server spans of the MCP SDK ("tools/call <tool>") -> MCP_DURATION, with the SDK's error.type.
    """

    def __init__(self, service: str) -> None:
        self.service = service

    def on_end(self, span: ReadableSpan) -> None:
        if span.start_time is None or span.end_time is None:
            return
        seconds = (span.end_time - span.start_time) / 1e9
        attributes = span.attributes or {}
        system = attributes.get("db.system") or attributes.get("db.system.name")
        if span.kind is SpanKind.CLIENT and system:
            words = span.name.upper().split()
            # asyncpg names a span after the statement's first word ("BEGIN;"); redis names a
            # pipeline after all its commands ("XADD EXPIRE").
            operation = "PIPELINE" if len(words) > 1 else (words[0].rstrip(";") if words else "")
            if not _OPERATION.fullmatch(operation):
                operation = "other"
            DB_DURATION.labels(self.service, str(system), operation).observe(seconds)
            return
        method = attributes.get("mcp.method.name")
        if span.kind is SpanKind.SERVER and method:
            tool = str(attributes.get("gen_ai.tool.name") or "")
            error = str(attributes.get("error.type") or "")
            MCP_DURATION.labels(self.service, str(method), tool, error).observe(seconds)


_OPERATION = re.compile(r"[A-Z][A-Z_.]{0,23}")


def setup_telemetry(service: str, settings: ServiceSettings, trace_file: str | None = None) -> None:
    """Configure JSON logs and the tracer provider once per process.

    Spans go to the OTLP endpoint when one is set, and to ``trace_file`` (default: the
    ``<PREFIX>TRACE_FILE`` setting) as JSON lines when one is given.
    """
    global _configured
    trace_file = trace_file or settings.trace_file
    with _lock:
        configure_logging(service, settings.log_level)
        if _configured:
            return
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        if settings.otlp_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            endpoint = settings.otlp_endpoint.rstrip("/")
            if not endpoint.endswith("/v1/traces"):
                endpoint += "/v1/traces"
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        if trace_file:
            provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(trace_file)))
        provider.add_span_processor(SpanMetricsProcessor(service))
        trace.set_tracer_provider(provider)
        HTTPXClientInstrumentor().instrument()
        AsyncPGInstrumentor().instrument()  # type: ignore[no-untyped-call]
        RedisInstrumentor().instrument()
        _configured = True


def _route_template(scope: Scope) -> str:
    app = scope.get("app")
    router = getattr(app, "router", None)
    return _match_routes(getattr(router, "routes", []), scope, "") or "unmatched"


def _match_routes(routes: Sequence[BaseRoute], scope: Scope, prefix: str) -> str | None:
    """The template of the route that serves `scope`; looks inside mounts (the MCP app is mounted at "").
    A route matching all but the method (answered 405) still names the request."""
    method_mismatch = None
    for route in routes:
        match, child = route.matches(scope)
        path = prefix + str(getattr(route, "path", ""))
        included = _included_routes(route)
        if included is not None and match != Match.NONE:
            inner = _match_routes(included, scope, prefix)
            if inner:
                return inner
            continue
        if match == Match.PARTIAL and method_mismatch is None:
            method_mismatch = path
        if match != Match.FULL:
            continue
        if isinstance(route, Mount):
            inner = _match_routes(route.routes, {**scope, **child}, path)
            return inner or path or None
        return path
    return method_mismatch


def _included_routes(route: BaseRoute) -> list[BaseRoute] | None:
    """FastAPI wraps each included router in one route without a path; its effective routes carry the full paths."""
    candidates = getattr(route, "effective_candidates", None)
    if candidates is None:
        return None
    found: list[BaseRoute] = []
    for candidate in candidates():
        inner = getattr(candidate, "starlette_route", None) or candidate
        if hasattr(inner, "matches"):
            found.append(inner)
    return found


class MetricsMiddleware:
    """Counts requests and times them to the response headers, labelled by route template."""

    def __init__(self, app: ASGIApp, service: str) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        route = _route_template(scope)
        method = scope["method"]
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                HTTP_DURATION.labels(self.service, method, route).observe(time.perf_counter() - start)
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            HTTP_REQUESTS.labels(self.service, method, route, str(status)).inc()


async def metrics_endpoint(_: Request) -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
