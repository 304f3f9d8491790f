"""The `route` label of the HTTP golden-signal metrics: route templates, also inside mounted apps."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from stacgis_common.telemetry import MetricsMiddleware

SERVICE = "test-route-labels"


async def ok(_: Request) -> Response:
    return PlainTextResponse("ok")


def app() -> Starlette:
    # Shaped like a tool server: probes and tiles beside an MCP app mounted at "".
    mcp = Starlette(routes=[Route("/mcp", ok, methods=["POST"])])
    return Starlette(
        routes=[Route("/metrics", ok), Route("/tiles/{collection}/{z}/{x}/{y}.png", ok), Mount("", app=mcp)],
        middleware=[Middleware(MetricsMiddleware, service=SERVICE)],
    )


def count(method: str, route: str, status: str) -> float:
    labels = {"service": SERVICE, "method": method, "route": route, "status": status}
    return REGISTRY.get_sample_value("http_server_requests_total", labels) or 0.0


@pytest.mark.parametrize(
    ("method", "path", "route", "status"),
    [
        ("POST", "/mcp", "/mcp", "200"),
        ("GET", "/tiles/dem/3/4/5.png", "/tiles/{collection}/{z}/{x}/{y}.png", "200"),
        ("GET", "/metrics", "/metrics", "200"),
        ("GET", "/mcp", "/mcp", "405"),
        ("GET", "/wp-login.php", "unmatched", "404"),
    ],
)
def test_requests_are_counted_by_route_template(method: str, path: str, route: str, status: str) -> None:
    client = TestClient(app())
    before = count(method, route, status)
    response = client.request(method, path)
    assert response.status_code == int(status)
    assert count(method, route, status) == before + 1
