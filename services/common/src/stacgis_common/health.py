"""Liveness and readiness endpoints: /healthz says the process runs, /readyz that its dependencies answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Check = Callable[[], Awaitable[object]]
CHECK_TIMEOUT_SECONDS = 2.0


async def run_checks(checks: Mapping[str, Check]) -> tuple[bool, dict[str, str]]:
    async def one(check: Check) -> str:
        try:
            await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
            return "ok"
        except Exception as error:  # noqa: BLE001 - readiness reports any failure
            return f"error: {type(error).__name__}: {error}"[:300]

    names = list(checks)
    results = await asyncio.gather(*(one(checks[name]) for name in names))
    report = dict(zip(names, results, strict=True))
    return all(result == "ok" for result in results), report


def health_routes(readiness: Mapping[str, Check] | None = None) -> list[Route]:
    checks = dict(readiness or {})

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> JSONResponse:
        ready, report = await run_checks(checks)
        return JSONResponse(
            {"status": "ok" if ready else "unavailable", "checks": report}, status_code=200 if ready else 503
        )

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
