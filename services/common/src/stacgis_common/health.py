"""Liveness and readiness endpoints: /healthz says the process runs, /readyz that its dependencies answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Check = Callable[[], Awaitable[object]]
CHECK_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Notice:
    """What a check returns to pass with something said: ready, but part of the data is still arriving
    (place names being loaded). Reported as its text; the service stays ready and gets traffic."""

    text: str


async def run_checks(checks: Mapping[str, Check]) -> tuple[bool, dict[str, str]]:
    failed: set[str] = set()

    async def one(name: str, check: Check) -> str:
        try:
            result = await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
        except Exception as error:  # noqa: BLE001 - readiness reports any failure
            failed.add(name)
            return f"error: {type(error).__name__}: {error}"[:300]
        return result.text[:300] if isinstance(result, Notice) else "ok"

    names = list(checks)
    results = await asyncio.gather(*(one(name, checks[name]) for name in names))
    return not failed, dict(zip(names, results, strict=True))


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
