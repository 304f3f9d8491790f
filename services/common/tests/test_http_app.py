"""What every HTTP app runs around its own routes (`http_app`), through a real FastAPI app: the probes,
/metrics counting each request under its route, the app's own middleware inside the kernel's, and
the error table innermost (an unexpected error is the one error body's 500, counted as a 500)."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from stacgis_common.health import Notice, health_routes
from stacgis_common.http_app import kernel_middleware, kernel_routes
from stacgis_common.http_errors import REFUSAL_ROWS, ErrorTable

TABLE = ErrorTable(REFUSAL_ROWS, what="the kernel request")


class Tagging:
    """An app's own middleware: marks every answer it sees."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-tagged", b"1")]  # type: ignore[misc]
            await send(message)

        await self.app(scope, receive, tagged)


def kernel_app(service: str) -> FastAPI:
    async def fine() -> None:
        return None

    async def down() -> None:
        raise ConnectionError("refused")

    app = FastAPI(middleware=kernel_middleware(service, Middleware(Tagging), errors=TABLE))
    app.router.routes.extend(kernel_routes({"store": fine, "model": down}))

    @app.get("/bug")
    async def bug() -> None:
        raise KeyError("band")

    return app


def requests_counted(metrics: str, service: str, route: str, status: int) -> float:
    """http_server_requests_total of one service, route and status, from the /metrics text."""
    wanted = {"service": service, "route": route, "status": str(status)}
    total = 0.0
    for labels, value in re.findall(r"^http_server_requests_total\{([^}]*)\} (\S+)$", metrics, re.M):
        if wanted.items() <= dict(re.findall(r'(\w+)="([^"]*)"', labels)).items():
            total += float(value)
    return total


@pytest.mark.asyncio
async def test_the_kernel_serves_probes_metrics_and_the_one_error_body() -> None:
    service = f"kernel-{uuid.uuid4().hex[:8]}"  # its own metric labels: the registry is the process's
    transport = httpx.ASGITransport(app=kernel_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://kernel") as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = await client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["store"] == "ok"
        assert ready.json()["checks"]["model"].startswith("error: ConnectionError")
        answer = await client.get("/bug")
        # Innermost, the table answers what the handler raised; the app's own middleware sees that answer.
        assert answer.status_code == 500 and answer.headers["x-tagged"] == "1"
        assert answer.json()["code"] == "internal" and answer.json()["message"] == "the kernel request failed: KeyError"
        metrics = (await client.get("/metrics")).text
    assert requests_counted(metrics, service, "/bug", 500) == 1
    assert requests_counted(metrics, service, "/readyz", 503) == 1


@pytest.mark.asyncio
async def test_a_check_passing_with_a_notice_keeps_the_service_ready_and_says_it() -> None:
    async def fine() -> None:
        return None

    said = "loading cities (embedding 1,024 of 4,096)"

    async def arriving() -> Notice:
        return Notice(said)

    async def down() -> Notice:
        raise ConnectionError("refused")

    app = FastAPI()
    app.router.routes.extend(health_routes({"store": fine, "data": arriving}))
    failing = FastAPI()
    failing.router.routes.extend(health_routes({"data": arriving, "model": down}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kernel") as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ok", "checks": {"store": "ok", "data": said}}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=failing), base_url="http://kernel") as client:
        unready = await client.get("/readyz")
    # A notice never hides a failing check.
    assert unready.status_code == 503 and unready.json()["checks"]["model"].startswith("error: ConnectionError")
