"""The gateway's parts, built once at start-up, and the FastAPI dependencies that hand them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from redis.asyncio import Redis

from .auth import Authenticator, AuthError
from .config import GatewaySettings
from .gate import ConcurrencyGate
from .history_writes import HistoryWriter
from .keys import RedisKeys
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
    history: HistoryWriter
    orchestrator: OrchestratorClient
    auth: Authenticator


def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def current_user(request: Request, gateway: Annotated[Gateway, Depends(get_gateway)]) -> str:
    try:
        return await gateway.auth.authenticate(request)
    except AuthError as error:
        raise HTTPException(
            status_code=401, detail=f"not authenticated: {error}", headers={"WWW-Authenticate": "Bearer"}
        ) from None


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
UserId = Annotated[str, Depends(current_user)]
