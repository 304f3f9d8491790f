"""The gateway's parts, built once at start-up, and the FastAPI dependencies that hand them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from redis.asyncio import Redis

from stacgis_common.http_errors import RateLimited, Unauthenticated

from .auth import NEW_IDENTITY_STATE, Authenticator, AuthError
from .clientaddr import client_address, trusted_networks
from .config import GatewaySettings
from .fanout import StreamHub
from .gate import ConcurrencyGate
from .history_writes import HistoryWriter
from .keys import RedisKeys
from .metrics import REJECTIONS
from .models import ModelCatalog
from .orchestrator import OrchestratorClient
from .ratelimit import RateLimiter
from .runs import RunManager
from .runstore import RunStore
from .sessions import SessionService
from .store import HistoryStore


@dataclass
class Gateway:
    settings: GatewaySettings
    redis: Redis
    keys: RedisKeys
    store: HistoryStore
    sessions: SessionService
    gate: ConcurrencyGate
    limiter: RateLimiter
    runs: RunStore
    manager: RunManager
    hub: StreamHub
    history: HistoryWriter
    orchestrator: OrchestratorClient
    models: ModelCatalog
    auth: Authenticator


def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def current_user(request: Request, gateway: Annotated[Gateway, Depends(get_gateway)]) -> str:
    try:
        user_id = await gateway.auth.authenticate(request)
    except AuthError as error:
        raise Unauthenticated(f"not authenticated: {error}", headers={"WWW-Authenticate": "Bearer"}) from None
    if getattr(request.state, NEW_IDENTITY_STATE, False):
        await limit_by_address(request, gateway)
    return user_id


async def limit_by_address(request: Request, gateway: Gateway) -> None:
    """A request without an identity counts against its client address (behind the trusted proxy)."""
    address = client_address(request, trusted_networks(tuple(gateway.settings.trusted_proxies)))
    limit = gateway.settings.anonymous_rate_limit_per_minute
    decision = await gateway.limiter.hit_address(address, limit)
    if not decision.allowed:
        REJECTIONS.labels("rate_limited").inc()
        raise RateLimited(
            f"at most {limit} requests without a session cookie per minute from one address; "
            "keep the cookie the gateway sets",
            headers={"Retry-After": str(decision.retry_after_seconds)},
        )


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
UserId = Annotated[str, Depends(current_user)]
