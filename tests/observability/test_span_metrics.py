"""Metrics derived from spans (stacgis_common.telemetry.SpanMetricsProcessor): database and MCP server latency."""

from __future__ import annotations

import time

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind
from prometheus_client import REGISTRY

from stacgis_common.telemetry import SpanMetricsProcessor

SERVICE = "test-span-metrics"


def tracer_for(service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SpanMetricsProcessor(service))
    return provider


def db_count(system: str, operation: str) -> float:
    labels = {"service": SERVICE, "db_system": system, "db_operation": operation}
    return REGISTRY.get_sample_value("db_client_operation_duration_seconds_count", labels) or 0.0


def mcp_count(method: str, tool: str, error: str) -> float:
    labels = {"service": SERVICE, "mcp_method_name": method, "gen_ai_tool_name": tool, "error_type": error}
    return REGISTRY.get_sample_value("mcp_server_operation_duration_seconds_count", labels) or 0.0


def test_database_client_spans_are_timed_by_service_system_and_operation() -> None:
    tracer = tracer_for(SERVICE).get_tracer(__name__)
    before = db_count("postgresql", "SELECT")

    with tracer.start_as_current_span("SELECT", kind=SpanKind.CLIENT, attributes={"db.system": "postgresql"}):
        time.sleep(0.02)
    with tracer.start_as_current_span("XADD", kind=SpanKind.CLIENT, attributes={"db.system": "redis"}):
        pass
    with tracer.start_as_current_span("BEGIN;", kind=SpanKind.CLIENT, attributes={"db.system": "postgresql"}):
        pass
    with tracer.start_as_current_span("XADD EXPIRE", kind=SpanKind.CLIENT, attributes={"db.system": "redis"}):
        pass
    # An odd span name must not become a label value of its own.
    with tracer.start_as_current_span("$1::text", kind=SpanKind.CLIENT, attributes={"db.system": "postgresql"}):
        pass
    # Not database spans: an HTTP client call, and a server span that happens to carry db.system.
    with tracer.start_as_current_span("GET", kind=SpanKind.CLIENT, attributes={"http.request.method": "GET"}):
        pass
    with tracer.start_as_current_span("SELECT", kind=SpanKind.SERVER, attributes={"db.system": "postgresql"}):
        pass

    assert db_count("postgresql", "SELECT") == before + 1
    assert db_count("redis", "XADD") == 1
    assert db_count("postgresql", "BEGIN") == 1
    assert db_count("redis", "PIPELINE") == 1
    assert db_count("postgresql", "other") == 1
    total = REGISTRY.get_sample_value(
        "db_client_operation_duration_seconds_sum",
        {"service": SERVICE, "db_system": "postgresql", "db_operation": "SELECT"},
    )
    assert total is not None and total >= 0.02
    operations = {
        s.labels.get("db_operation")
        for m in REGISTRY.collect()
        for s in m.samples
        if s.labels.get("service") == SERVICE
    }
    assert "GET" not in operations


def test_mcp_server_spans_are_timed_by_method_tool_and_error() -> None:
    tracer = tracer_for(SERVICE).get_tracer(__name__)
    call = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_raster_info"}
    with tracer.start_as_current_span("tools/call get_raster_info", kind=SpanKind.SERVER, attributes=call):
        pass
    with tracer.start_as_current_span("tools/call get_raster_info", kind=SpanKind.SERVER, attributes=call) as span:
        span.set_attribute("error.type", "tool_error")
    with tracer.start_as_current_span(
        "resources/read", kind=SpanKind.SERVER, attributes={"mcp.method.name": "resources/read"}
    ):
        pass
    # The client side of the same call is not the server's work.
    with tracer.start_as_current_span("tools/call get_raster_info", kind=SpanKind.CLIENT, attributes=call):
        pass

    assert mcp_count("tools/call", "get_raster_info", "") == 1
    assert mcp_count("tools/call", "get_raster_info", "tool_error") == 1
    assert mcp_count("resources/read", "", "") == 1
