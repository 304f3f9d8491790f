"""The orchestrator's FastAPI application."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError

from stacgis_common.http_app import kernel_middleware, kernel_routes
from stacgis_common.http_errors import Unavailable, answer_errors
from stacgis_common.telemetry import setup_telemetry

from .api import approvals, models, runs, tools
from .api.errors import ERRORS
from .services import Services
from .settings import OrchestratorSettings

SERVICE_NAME = "agent-orchestrator"


def create_app(settings: OrchestratorSettings) -> FastAPI:
    setup_telemetry(SERVICE_NAME, settings, trace_file=settings.trace_file)
    # One line per model, embedding and MCP request drowns the log; failures are logged where handled.
    for noisy in ("httpx", "httpx2", "mcp.client"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await Services.start(settings)
        app.state.services = services
        try:
            yield
        finally:
            await services.aclose()

    app = FastAPI(
        title="stacgis agent-orchestrator",
        version="0.1.0",
        description=(
            "Runs the geospatial agent and streams stacgis.v1.AgentEvent over SSE. "
            "Every /v1 call needs an internal token."
        ),
        lifespan=lifespan,
        middleware=kernel_middleware(SERVICE_NAME, errors=ERRORS),
    )

    async def redis_ready() -> None:
        await app.state.services.coordinator.ping()

    async def model_ready() -> None:
        await app.state.services.ready_model()

    async def tools_ready() -> None:
        await app.state.services.ready_tools()

    answer_errors(app, ERRORS)

    @app.exception_handler(RedisError)
    async def redis_unavailable(_: Request, error: RedisError) -> JSONResponse:
        # Runs, cancels and approvals are coordinated through Redis: without it, say so plainly.
        message = f"the coordination store (Redis) is unavailable: {type(error).__name__}"
        return ERRORS.response(Unavailable(message, headers={"Retry-After": "5"}))

    app.router.routes.extend(kernel_routes({"redis": redis_ready, "model": model_ready, "tools": tools_ready}))
    for api in (runs, approvals, tools, models):
        app.include_router(api.router)
    return app
