"""The FastAPI application: routes under /api/v1, health, metrics, and the parts built at start-up."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import redis.exceptions
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.middleware import Middleware

from stacgis_common.http_app import kernel_middleware, kernel_routes
from stacgis_common.http_errors import Unavailable, answer_errors
from stacgis_common.redis_client import redis_client
from stacgis_common.telemetry import setup_telemetry

from .api import chat, mcp_proxy, meta, models, places, runs, sessions, tokens
from .api.errors import ERRORS
from .auth import CookieMiddleware, build_authenticator
from .bodylimit import BodyLimitMiddleware
from .config import GatewaySettings
from .deps import Gateway
from .fanout import StreamHub
from .gate import ConcurrencyGate
from .history_writes import HistoryWriter
from .keys import RedisKeys
from .models import ModelCatalog
from .orchestrator import OrchestratorClient
from .ratelimit import RateLimiter
from .runs import RunManager
from .runstore import RunStore
from .sessions import SessionService
from .store import POSTGRES_UNREACHABLE, HistoryStore
from .streaming import MAX_BLOCK_SECONDS
from .tokens import TokenStore

SERVICE = "chat-gateway"
API_PREFIX = "/api/v1"
STARTUP_WAIT_SECONDS = 30.0
# Suggested wait before retrying when Redis or Postgres is unavailable.
UNAVAILABLE_RETRY_AFTER_SECONDS = 2
log = logging.getLogger(__name__)


async def _open_store(settings: GatewaySettings) -> HistoryStore:
    """Postgres may come up after the gateway (compose, a fresh cluster): wait a little for it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_WAIT_SECONDS
    while True:
        try:
            return await HistoryStore.open(settings.database_url, settings.db_pool_max_size)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            if loop.time() > deadline:
                raise
            log.warning("waiting for Postgres", extra={"error": repr(error)})
            await asyncio.sleep(1.0)


async def build_gateway(settings: GatewaySettings) -> Gateway:
    keys = RedisKeys(settings.redis_key_prefix)
    # SSE streams hold no connection (the process's reader below follows every run); when the pool is
    # exhausted a command waits for a free connection rather than failing at once.
    client = redis_client(
        settings.redis_url,
        max_connections=settings.redis_max_connections,
        pool_timeout_seconds=settings.redis_pool_timeout_seconds,
        socket_timeout=MAX_BLOCK_SECONDS + 10,
        health_check_interval=30,
    )
    store = await _open_store(settings)
    session_service = SessionService(
        client,
        keys,
        store,
        settings.session_ttl_seconds,
        lock_ttl_seconds=settings.slot_ttl_seconds,
        history_limit=settings.history_max_messages,
    )
    gate = ConcurrencyGate(
        client, keys, settings.max_concurrent_runs, settings.slot_ttl_seconds, settings.max_concurrent_runs_per_user
    )
    run_store = RunStore(client, keys, settings.run_stream_maxlen, settings.run_stream_ttl_seconds)
    orchestrator = OrchestratorClient(
        settings.orchestrator_url, settings.orchestrator_read_timeout_seconds, settings.max_concurrent_runs + 16
    )
    history = HistoryWriter(store, client, keys, settings.history_retry_seconds, settings.history_flush_seconds)
    manager = RunManager(settings, run_store, session_service, history, gate, orchestrator)
    # The process's one stream reader has a connection of its own, outside the pool: its blocking XREAD
    # never waits for a pooled connection and never holds one.
    reader = redis_client(
        settings.redis_url, name=f"stacgis-gateway-reader-{os.getpid()}", socket_timeout=MAX_BLOCK_SECONDS + 10
    )
    hub = StreamHub(
        client,
        reader,
        keys,
        run_store,
        block_seconds=MAX_BLOCK_SECONDS,
        heartbeat_seconds=settings.heartbeat_seconds,
        check_seconds=min(settings.heartbeat_seconds, MAX_BLOCK_SECONDS, settings.gate_refresh_seconds * 2),
        slot_ttl_seconds=settings.slot_ttl_seconds,
        queue_max_events=settings.stream_queue_max_events,
        read_count=settings.stream_read_count,
        on_lost=manager.declare_lost,
    )
    return Gateway(
        settings=settings,
        redis=client,
        keys=keys,
        store=store,
        sessions=session_service,
        gate=gate,
        limiter=RateLimiter(client, keys, settings.rate_limit_per_minute),
        runs=run_store,
        manager=manager,
        hub=hub,
        history=history,
        orchestrator=orchestrator,
        models=ModelCatalog(settings, orchestrator),
        auth=build_authenticator(settings),
    )


async def _unavailable(_: Request, error: Exception) -> Response:
    store = "Redis" if isinstance(error, redis.exceptions.RedisError) else "Postgres"
    log.warning("dependency unavailable", extra={"store": store, "error": repr(error)})
    retry = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER_SECONDS)}
    return ERRORS.response(Unavailable(f"{store} is unavailable; retry shortly", headers=retry))


def create_app(settings: GatewaySettings) -> FastAPI:
    setup_telemetry(SERVICE, settings, trace_file=settings.trace_file)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        gateway = await build_gateway(settings)
        app.state.gateway = gateway
        app.state.mcp = mcp_proxy.McpProxy(settings, TokenStore(gateway.store.pool), gateway.auth)
        gateway.hub.start()
        flusher = asyncio.create_task(gateway.history.flush_periodically(), name="history-flush")
        adopter = asyncio.create_task(gateway.manager.take_over_orphans_forever(), name="orphan-runs")
        log.info("chat-gateway ready", extra={"auth_mode": settings.auth_mode, "port": settings.port})
        try:
            yield
        finally:
            flusher.cancel()
            adopter.cancel()
            await gateway.manager.shutdown(settings.shutdown_grace_seconds)
            await gateway.hub.stop()
            await gateway.orchestrator.aclose()
            await app.state.mcp.aclose()
            await gateway.store.close()
            await gateway.redis.aclose()

    app = FastAPI(
        title="stacgis chat-gateway",
        version="1.0.0",
        description="The public chat API of stacgis: streamed runs (SSE), sessions, capacity, approvals.",
        lifespan=lifespan,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        middleware=kernel_middleware(
            SERVICE,
            Middleware(
                BodyLimitMiddleware,
                max_bytes=settings.max_body_bytes,
                read_timeout_seconds=settings.body_read_timeout_seconds,
                deadline_seconds=settings.body_deadline_seconds,
            ),
            Middleware(CookieMiddleware),
            errors=ERRORS,
        ),
    )
    for router in (chat.router, sessions.router, runs.router, meta.router, models.router, tokens.router, places.router):
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(mcp_proxy.router)
    # Every error in one body (stacgis_common.http_errors); validation errors never echo the input.
    answer_errors(app, ERRORS)
    unavailable: tuple[type[Exception], ...] = (
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        *POSTGRES_UNREACHABLE,
        ConnectionError,
    )
    for kind in unavailable:
        app.add_exception_handler(kind, _unavailable)

    async def check_redis() -> Any:
        return await app.state.gateway.redis.ping()

    async def check_postgres() -> None:
        await app.state.gateway.store.ping()

    async def check_orchestrator() -> None:
        await app.state.gateway.orchestrator.ping()

    app.router.routes.extend(
        kernel_routes({"redis": check_redis, "postgres": check_postgres, "orchestrator": check_orchestrator})
    )
    return app
